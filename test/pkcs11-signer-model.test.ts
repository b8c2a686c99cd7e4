// The PKCS#11 signer's recovery as a state machine (server/signing/pkcs11-signer.ts), against a
// real SoftHSM2 token (in a process of its own: test/support/pkcs11-signer-driver.ts): any
// sequence of signatures (several at once), the token removed, the token re-created with the key
// imported again, and steps of the signer's clock. Model: a signature succeeds exactly when the
// token holds the key and no failure's pause (RETRY_MS on the signer's clock) is running; a success
// is a valid RSASSA-PKCS1-v1_5 SHA-256 signature of the data under the App's public key; a failure
// names a step.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { generateKeyPairSync, verify } from "node:crypto";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { RETRY_MS } from "../server/signing/pkcs11-signer.js";
import type { DriverResult, DriverStep } from "./support/pkcs11-signer-driver.js";

const DRIVER = fileURLToPath(new URL("../build/test/support/pkcs11-signer-driver.js", import.meta.url));
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
// As text: a KeyObject does not cross jest's module realms intact.
const publicPem = publicKey.export({ type: "spki", format: "pem" }).toString();
const STEPS = ["module", "slot", "login", "object", "sign"];

// One driver process for the file's sequences, answering each line with one line (a process each
// cost about 0.1 s of CPU): each sequence on a fresh signer and a token re-created for it.
let driver: ChildProcessWithoutNullStreams;
const answers: Array<(line: string) => void> = [];
let stderr = "";
let exited: Promise<number | string | null>;
beforeAll(() => {
  driver = spawn(process.execPath, [DRIVER], { env: { PATH: process.env.PATH, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } });
  driver.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  driver.stdin.on("error", () => undefined); // EPIPE once it has exited: the exit answers
  createInterface({ input: driver.stdout }).on("line", (line) => answers.shift()?.(line));
  exited = new Promise((resolve) => driver.once("exit", (code, signal) => resolve(code ?? signal)));
  void exited.then((code) => {
    for (const answer of answers.splice(0)) answer(JSON.stringify({ failed: `driver exited (${code}): ${stderr}` }));
  });
});
afterAll(async () => {
  driver.stdin.end();
  // Ends once its input does; one that does not is killed, and fails here.
  const timer = setTimeout(() => driver.kill("SIGKILL"), 10_000);
  expect(await exited).toBe(0);
  clearTimeout(timer);
});

async function drive(steps: DriverStep[]): Promise<DriverResult[]> {
  if (driver.exitCode !== null || driver.signalCode !== null) throw new Error(`driver exited (${driver.exitCode ?? driver.signalCode}): ${stderr}`);
  // A sequence not answered within 60 s (a hung token): the driver is killed, which answers it.
  const timer = setTimeout(() => driver.kill("SIGKILL"), 60_000);
  const line = await new Promise<string>((resolve) => {
    answers.push(resolve);
    driver.stdin.write(`${JSON.stringify({ steps, pem })}\n`);
  });
  clearTimeout(timer);
  const answer = JSON.parse(line) as DriverResult[] | { failed: string };
  if (!Array.isArray(answer)) throw new Error(`driver failed: ${answer.failed}`);
  return answer;
}

describe("the PKCS#11 signer, modelled", () => {
  it("signs exactly when the token holds the key and no pause runs; recovers after any removal", async () => {
    const step = fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 1, max: 6 }).map((count): DriverStep => ({ kind: "sign", count })) },
      { weight: 1, arbitrary: fc.constant<DriverStep>({ kind: "remove" }) },
      { weight: 1, arbitrary: fc.constant<DriverStep>({ kind: "restore" }) },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 2 * RETRY_MS }).map((ms): DriverStep => ({ kind: "wait", ms })) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 14 }), async (steps) => {
        const observed = await drive(steps);
        const model = { present: true, pausedUntil: Number.NEGATIVE_INFINITY, clock: 1_000_000 };
        let signing = 0;
        for (const s of steps) {
          if (s.kind === "remove") model.present = false;
          else if (s.kind === "restore") model.present = true;
          else if (s.kind === "wait") model.clock += s.ms;
          else {
            const got = observed[signing++]!;
            expect(got.clock).toBe(model.clock);
            const expectOk = model.present && model.clock >= model.pausedUntil;
            for (const [i, result] of got.results.entries()) {
              if (expectOk) {
                expect(result).toMatchObject({ ok: true });
                expect(verify("sha256", Buffer.from(got.data[i]!), publicPem, Buffer.from((result as { signature: string }).signature, "base64"))).toBe(true);
              } else {
                expect(result.ok).toBe(false);
                expect(STEPS).toContain((result as { step: string }).step);
              }
            }
            // A failure that was tried (not one answered from the pause) starts a pause.
            if (!expectOk && model.clock >= model.pausedUntil) model.pausedUntil = model.clock + RETRY_MS;
            expect(got.lastFailure).toBe(!expectOk);
          }
        }
        expect(signing).toBe(observed.length);
      }),
      { numRuns: 25 },
    );
  }, 240_000);
});
