// Jest runs each test file in a VM context of its own. On Node 22 that context's `Symbol` lacks
// `asyncDispose` and `dispose`, which Node gives only its main context (as
// `Symbol.for("nodejs.asyncDispose")`, `Symbol.for("nodejs.dispose")`), so `await using` and the
// sandbox's `[Symbol.asyncDispose]` would break under jest alone. The same symbols here; Node 24
// has them natively and this does nothing there.
const symbols = Symbol as unknown as { asyncDispose?: symbol; dispose?: symbol };
symbols.asyncDispose ??= Symbol.for("nodejs.asyncDispose");
symbols.dispose ??= Symbol.for("nodejs.dispose");
export {};
