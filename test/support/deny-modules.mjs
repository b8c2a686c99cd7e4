// Loaded into a child process with `--import`: the packages named in TOKENSMITH_DENY_MODULES (comma-
// separated) cannot be loaded there. A test then shows a process runs without loading them.
// In-thread hooks (module.registerHooks, Node 22.15 and later) see require() as well as import: a
// native addon such as pkcs11js is loaded with createRequire, which the off-thread hooks of
// module.register (the fallback, import only) never see.
import module from "node:module";

const denied = (process.env.TOKENSMITH_DENY_MODULES ?? "").split(",").filter(Boolean);
if (typeof module.registerHooks === "function") {
  module.registerHooks({
    resolve(specifier, context, next) {
      const resolved = next(specifier, context);
      const name = denied.find((denial) => resolved.url.includes(`/node_modules/${denial}/`));
      if (name !== undefined) throw new Error(`${name} may not be loaded in this process (TOKENSMITH_DENY_MODULES)`);
      return resolved;
    },
  });
} else {
  module.register(new URL("./deny-modules-hooks.mjs", import.meta.url), { data: { denied } });
}
