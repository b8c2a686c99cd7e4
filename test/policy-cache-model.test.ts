// The policy file cache (server/policy/policy-files.ts) against a model, with fast-check: within
// POLICY_CACHE_SECONDS a read costs no platform request; after it, one conditional request with the
// ETag last seen (a 304 renews); a drop (a push that touched the file) makes the very next read
// fetch the current file; a read under way when the drop came is never kept.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import type { FileRead } from "../server/policy/fetch-policy-file.js";
import { createPolicyFiles } from "../server/policy/policy-files.js";

type Op = { kind: "read" } | { kind: "edit"; text: string | null } | { kind: "drop" } | { kind: "tick"; ms: number } | { kind: "readDuringDrop" };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.constant<Op>({ kind: "read" }),
  fc.record({ kind: fc.constant("edit" as const), text: fc.option(fc.constantFrom("a", "b", "c"), { nil: null }) }),
  fc.constant<Op>({ kind: "drop" }),
  fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 2000 }) }),
  fc.constant<Op>({ kind: "readDuringDrop" }),
);

describe("policy file cache (model)", () => {
  it("reads, edits, drops and clock ticks in any order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const TTL = 1000;
        let clock = 0;
        const files = createPolicyFiles({ now: () => clock });
        let platform: string | null = "a";
        const etagOf = (text: string) => `W/"${text}"`;
        let fetches = 0;
        const fetch = async (etag: string | undefined): Promise<FileRead> => {
          fetches += 1;
          if (platform === null) return { kind: "absent" };
          if (etag === etagOf(platform)) return { kind: "unchanged" };
          return { kind: "file", text: platform, sha: platform.repeat(40).slice(0, 40).replace(/[^0-9a-f]/g, "a"), etag: etagOf(platform) };
        };
        const seen = (state: { text?: string; absent?: true }) => (state.absent ? null : state.text!);
        // The model: what was last fetched and when (null: nothing kept).
        let kept: { text: string | null; at: number } | null = null;
        for (const step of ops) {
          if (step.kind === "edit") platform = step.text;
          else if (step.kind === "tick") clock += step.ms;
          else if (step.kind === "drop") {
            await files.drop("k", TTL, null);
            kept = null;
          } else if (step.kind === "read") {
            const before = fetches;
            const state = await files.read("k", TTL, null, fetch);
            if (kept && clock - kept.at < TTL) {
              expect(fetches).toBe(before);
              expect(seen(state)).toBe(kept.text);
            } else {
              expect(fetches).toBe(before + 1);
              expect(seen(state)).toBe(platform);
              kept = { text: platform, at: clock };
            }
          } else {
            // A read that is under way when the push's drop arrives: its callers get its answer, nobody after them.
            let release!: () => void;
            const gate = new Promise<void>((resolve) => (release = resolve));
            const stale = platform;
            const slow = files.read("k", 0, null, async (etag) => {
              await gate;
              return etag === (stale === null ? undefined : etagOf(stale)) && stale !== null ? { kind: "unchanged" } : fetch(undefined);
            });
            await files.drop("k", TTL, null);
            release();
            await slow;
            kept = null;
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
