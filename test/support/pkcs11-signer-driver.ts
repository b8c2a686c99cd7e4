// Runs one step sequence of test/pkcs11-signer-model.test.ts in a process of its own (the SoftHSM2
// module reads SOFTHSM2_CONF from the real environment at C_Initialize, which a jest test file
// cannot set): `node build/test/support/pkcs11-signer-driver.js` with the sequence as JSON on
// stdin; prints, per signing step, each signature (base64) or the failed step, as JSON.
import { readFileSync } from "node:fs";
import { createPkcs11Signer, SignerError } from "../../server/signing/pkcs11-signer.js";
import { parsePkcs11Uri } from "../../server/signing/pkcs11-uri.js";
import { createSoftHsmToken } from "./softhsm.js";

export type DriverStep = { kind: "sign"; count: number } | { kind: "remove" } | { kind: "restore" } | { kind: "wait"; ms: number };
export type DriverResult = { clock: number; data: string[]; results: Array<{ ok: true; signature: string } | { ok: false; step: string }>; lastFailure: boolean };

async function main() {
  const { steps, pem } = JSON.parse(readFileSync(0, "utf8")) as { steps: DriverStep[]; pem: string };
  const hsm = createSoftHsmToken({ label: "model", pin: "model-pin-8841" });
  process.env.SOFTHSM2_CONF = hsm.conf;
  hsm.importKey(pem, "app-key", "07");
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
    hsm.dispose();
  }
  process.stdout.write(JSON.stringify(out));
}

await main();
