// The broker's reader tokens (server/policy/reader-tokens.ts) against a model, with fast-check:
// a kept token is reused while more than 10 minutes are left, simultaneous callers share one mint,
// a failed mint is not kept, a 401's drop and an installation change force the next mint, and a
// mint under way when an installation change arrives serves its callers but is not kept.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { createReaderTokens, READER_RENEW_BEFORE_MS, type ReaderToken } from "../server/policy/reader-tokens.js";

type Op =
  | { kind: "get"; installation: number; callers: number; fail: boolean }
  | { kind: "tick"; ms: number }
  | { kind: "drop401"; installation: number }
  | { kind: "installationChanged"; installation: number }
  | { kind: "installationChangedDuringMint"; installation: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("get" as const), installation: fc.integer({ min: 1, max: 3 }), callers: fc.integer({ min: 1, max: 4 }), fail: fc.boolean() }),
  fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 30 * 60_000 }) }),
  fc.record({ kind: fc.constant("drop401" as const), installation: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant("installationChanged" as const), installation: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant("installationChangedDuringMint" as const), installation: fc.integer({ min: 1, max: 3 }) }),
);

describe("reader tokens (model)", () => {
  it("reuse, sharing, renewal and drops in any order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 30 }), async (ops) => {
        let clock = 0;
        const readers = createReaderTokens({ now: () => clock });
        const model = new Map<number, ReaderToken>();
        let minted = 0;
        for (const step of ops) {
          if (step.kind === "tick") clock += step.ms;
          else if (step.kind === "drop401") {
            const kept = model.get(step.installation);
            readers.drop(readers.key("api", "1", step.installation), kept?.token ?? "none");
            model.delete(step.installation);
          } else if (step.kind === "installationChanged") {
            readers.dropInstallation(step.installation);
            model.delete(step.installation);
          } else if (step.kind === "installationChangedDuringMint") {
            // Only when a mint is due: a kept token is dropped by the change itself.
            readers.dropInstallation(step.installation);
            model.delete(step.installation);
            let release!: () => void;
            const gate = new Promise<void>((resolve) => (release = resolve));
            const key = readers.key("api", "1", step.installation);
            const waiting = readers.get(key, async () => {
              minted += 1;
              await gate;
              return { token: `t${minted}`, expiresAtMs: clock + 60 * 60_000, covers: "all" as const, mintedAtMs: clock };
            });
            await new Promise((resolve) => setImmediate(resolve));
            readers.dropInstallation(step.installation);
            release();
            expect((await waiting).token).toBe(`t${minted}`);
            // Not kept: the next get mints again.
          } else {
            const key = readers.key("api", "1", step.installation);
            const before = minted;
            const mint = async () => {
              minted += 1;
              await Promise.resolve();
              if (step.fail) throw new Error("mint failed");
              return { token: `t${minted}`, expiresAtMs: clock + 60 * 60_000, covers: "all" as const, mintedAtMs: clock };
            };
            const answers = await Promise.allSettled(Array.from({ length: step.callers }, () => readers.get(key, mint)));
            const kept = model.get(step.installation);
            if (kept && kept.expiresAtMs - clock > READER_RENEW_BEFORE_MS) {
              expect(minted).toBe(before);
              for (const answer of answers) expect(answer).toEqual({ status: "fulfilled", value: kept });
            } else {
              expect(minted).toBe(before + 1); // one mint for every simultaneous caller
              if (step.fail) {
                expect(answers.every((a) => a.status === "rejected")).toBe(true);
                model.delete(step.installation);
              } else {
                const fresh = (answers[0] as PromiseFulfilledResult<ReaderToken>).value;
                for (const answer of answers) expect(answer).toEqual({ status: "fulfilled", value: fresh });
                model.set(step.installation, fresh);
              }
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
