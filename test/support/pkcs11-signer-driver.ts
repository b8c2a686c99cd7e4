// Runs the step sequences of test/pkcs11-signer-model.test.ts in a process of its own (the SoftHSM2
// module reads SOFTHSM2_CONF from the real environment at C_Initialize, which a jest test file
// cannot set): `node build/test/support/pkcs11-signer-driver.js`, then one sequence a line on stdin
// as JSON; answers each with one line: per signing step, each signature (base64) or the failed step,
// as JSON. One process for the file's sequences (a process each cost about 0.1 s of CPU): each
// sequence has a fresh signer on a token re-created with the key imported again, as the one before
// it may have left the token removed; the library stays loaded, as in a broker whose token was
// replaced.
import { createInterface } from "node:readline";
import { createPkcs11Signer, SignerError } from "../../server/signing/pkcs11-signer.js";
import { parsePkcs11Uri } from "../../server/signing/pkcs11-uri.js";
import { createSoftHsmToken, type SoftHsmToken } from "./softhsm.js";

export type DriverStep = { kind: "sign"; count: number } | { kind: "remove" } | { kind: "restore" } | { kind: "wait"; ms: number };
export type DriverResult = { clock: number; data: string[]; results: Array<{ ok: true; signature: string } | { ok: false; step: string }>; lastFailure: boolean };

async function run(hsm: SoftHsmToken, steps: DriverStep[], pem: string): Promise<DriverResult[]> {
  let clock = 1_000_000;
  const parsed = parsePkcs11Uri("HOST_APP_KEY_URI", hsm.uri({ object: "app-key", id: "07" }));
  if (!parsed.ok) throw new Error(parsed.problem);
  const signer = createPkcs11Signer({ ref: parsed.ref, pin: hsm.pin, now: () => clock });
  const out: DriverResult[] = [];
  let present = true;
  try {
    for (const step of steps) {
      if (step.kind === "remove") {
        hsm.remove();
        present = false;
      } else if (step.kind === "restore") {
        if (!present) {
          hsm.reinit();
          hsm.importKey(pem, "app-key", "07");
          present = true;
        }
      } else if (step.kind === "wait") {
        clock += step.ms;
      } else {
        const data = Array.from({ length: step.count }, (_, i) => `jwt-input-${clock}-${i}`);
        const settled = await Promise.allSettled(data.map((d) => signer.sign(Buffer.from(d))));
        out.push({
          clock,
          data,
          results: settled.map((r) => (r.status === "fulfilled" ? { ok: true as const, signature: r.value.toString("base64") } : { ok: false as const, step: r.reason instanceof SignerError ? r.reason.step : `not a SignerError: ${String(r.reason)}` })),
          lastFailure: signer.lastFailure !== null,
        });
      }
    }
  } finally {
    signer.close();
  }
  return out;
}

async function main() {
  const hsm = createSoftHsmToken({ label: "model", pin: "model-pin-8841" });
  process.env.SOFTHSM2_CONF = hsm.conf;
  let first = true;
  try {
    for await (const line of createInterface({ input: process.stdin })) {
      const { steps, pem } = JSON.parse(line) as { steps: DriverStep[]; pem: string };
      if (!first) hsm.reinit();
      first = false;
      hsm.importKey(pem, "app-key", "07");
      process.stdout.write(`${JSON.stringify(await run(hsm, steps, pem))}\n`);
    }
  } finally {
    hsm.dispose();
  }
}

await main();
