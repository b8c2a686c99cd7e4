// What the broker keeps for trust policies (one per broker context, docs/design.md#layers: no module-level
// caches): the schema compiled once, reader tokens per installation, the files as last read (and
// the key that seals them in the shared store), and each file version compiled once (by blob SHA:
// the same text compiles the same).
import { createLoadingCache } from "../cache/loading-cache.js";
import { createPolicyCompiler, type PolicyCompile } from "./compile-policy.js";
import { sameSealSecret } from "../kv/store-seal.js";
import { createPolicyFiles, derivePolicySealKey } from "./policy-files.js";
import type { PolicyKind } from "./policy-types.js";
import { createReaderTokens } from "./reader-tokens.js";
import { createTargetRepositories } from "./target-repositories.js";

/** A compiled file version is kept a day (its text never changes under its SHA; at most 1 000 kept). */
const COMPILED_LIFETIME_MS = 24 * 60 * 60_000;

export function createPolicyService(options: { now: () => number; onFileLookup?: (hit: boolean) => void }) {
  let compiler: ReturnType<typeof createPolicyCompiler> | undefined;
  // On the cache primitive (docs/design.md#caches); nothing invalidates it: the SHA names the text.
  const compiledBySha = createLoadingCache<PolicyCompile>({ max: 1000, now: options.now });
  let sealKeyFor: { secret: string | Buffer; key: Buffer } | undefined;
  return {
    readers: createReaderTokens({ now: options.now }),
    files: createPolicyFiles({ now: options.now, onLookup: options.onFileLookup }),
    /** Other repositories a /token request names, by name → id (target-repositories.ts). */
    targets: createTargetRepositories({ now: options.now }),
    /** The key that seals policy states in the shared store (policy-files.ts), derived once per App key. */
    sealKey(sealSecret: string | Buffer): Buffer {
      if (!sameSealSecret(sealKeyFor?.secret, sealSecret)) sealKeyFor = { secret: sealSecret, key: derivePolicySealKey(sealSecret) };
      return sealKeyFor!.key;
    },
    compiled(sha: string, kind: PolicyKind, text: string, file: string): PolicyCompile {
      const key = `${kind}\u0000${sha}\u0000${file}`;
      let result = compiledBySha.peek(key);
      if (!result) {
        // The schema is compiled on the first policy read, not at start: a broker with TOKEN_POLICY=off never pays for it.
        compiler ??= createPolicyCompiler();
        result = compiler.compile(text, kind, file);
        compiledBySha.set(key, result, COMPILED_LIFETIME_MS);
      }
      return result;
    },
  };
}

export type PolicyService = ReturnType<typeof createPolicyService>;
