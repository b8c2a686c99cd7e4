// What the broker keeps for trust policies (one per broker context, docs/design.md#layers: no module-level
// caches): the schema compiled once, reader tokens per installation, the files as last read (and
// the key that seals them in the shared store), and each file version compiled once (by blob SHA:
// the same text compiles the same).
import { createPolicyCompiler, type PolicyCompile } from "./compile-policy.js";
import { sameSealSecret } from "../kv/store-seal.js";
import { createPolicyFiles, derivePolicySealKey } from "./policy-files.js";
import type { PolicyKind } from "./policy-types.js";
import { createReaderTokens } from "./reader-tokens.js";
import { createTargetRepositories } from "./target-repositories.js";

export function createPolicyService(options: { now: () => number; onFileLookup?: (hit: boolean) => void }) {
  let compiler: ReturnType<typeof createPolicyCompiler> | undefined;
  const compiledBySha = new Map<string, PolicyCompile>();
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
      let result = compiledBySha.get(key);
      if (!result) {
        // The schema is compiled on the first policy read, not at start: a broker with TOKEN_POLICY=off never pays for it.
        compiler ??= createPolicyCompiler();
        result = compiler.compile(text, kind, file);
        if (compiledBySha.size >= 1000) compiledBySha.delete(compiledBySha.keys().next().value as string);
        compiledBySha.set(key, result);
      }
      return result;
    },
  };
}

export type PolicyService = ReturnType<typeof createPolicyService>;
