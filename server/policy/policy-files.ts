// The policy files as last read, per platform and repository **id** (a renamed or re-created
// repository never inherits another's policy) or, for the owner policy, per owner id.
// Cache (docs/policies.md "Cache"): fresh for POLICY_CACHE_SECONDS, then asked again by
// conditional GET (a 304 renews it: the file's ETag, or for "no file" the ETag of the directory
// listing that showed it absent); dropped at once by a verified push that touches a policy file.
// In the shared store (SERVICE_JWKS_CACHE) when configured, so every instance sees one read and one
// drop; in process otherwise. Concurrent misses for one key share one read; a failure is not kept;
// a read under way when a push drops the file is not kept (the cache primitive's rule,
// docs/design.md#caches).
// In the shared store each state is sealed (server/kv/store-seal.ts): whoever can write the store
// cannot turn a policy into "no file" (the whole grant); a state whose seal does not check is a
// miss, read again from the platform.
import { createLoadingCache } from "../cache/loading-cache.js";
import type { KeyValueStore } from "../kv/key-value-store.js";
import { deriveSealKey, openValue, sealValue } from "../kv/store-seal.js";
import type { DirectoryEtag, FileRead } from "./fetch-policy-file.js";

/** A file as last read: `text` when it exists and is readable, `absent` on 404, `problem` otherwise. */
export interface FileState {
  at: number;
  etag?: string;
  sha?: string;
  text?: string;
  absent?: true;
  /** With `absent`: the directory listing that showed it absent, and its ETag (re-checked by it, conditionally). */
  listing?: DirectoryEtag;
  problem?: string;
}

/** A drop, kept in the shared store so that no instance uses what it read before the push. */
interface Dropped {
  dropped: true;
}

/** The shared store of this request's settings, and the key its policy states are sealed with. */
export interface SharedPolicyStore {
  store: KeyValueStore;
  sealKey: Buffer;
}

const SEAL_LABEL = "tokensmith policy cache v1";

/** The seal key of the policy cache, from the App private key of the platform whose files it holds. */
export function derivePolicySealKey(sealSecret: string | Buffer): Buffer {
  return deriveSealKey(sealSecret, SEAL_LABEL);
}

export function policyFileKey(apiBase: string, subject: { repositoryId: number } | { ownerId: number }): string {
  return "repositoryId" in subject ? `${apiBase}\u0000repo:${subject.repositoryId}` : `${apiBase}\u0000owner:${subject.ownerId}`;
}

/** How long a state read in process is kept past its freshness, for the conditional re-read (bounded by `maxEntries` too). */
const LOCAL_STATE_LIFETIME_MS = 24 * 60 * 60_000;

export function createPolicyFiles(options: { now: () => number; maxEntries?: number; onLookup?: (hit: boolean) => void }) {
  const max = options.maxEntries ?? 10_000;
  // The states as last read, in process (without a shared store): kept past their freshness, which
  // each read judges by its own POLICY_CACHE_SECONDS, so that a stale one is re-read conditionally.
  const local = createLoadingCache<FileState>({ max, now: options.now });
  // The reads under way: one per key for concurrent misses, nothing kept here. A drop invalidates
  // both: a read that was already under way when a push arrived is not kept (it may be the old
  // file), in process or in the shared store, nor shared with a request that comes after the push.
  const reads = createLoadingCache<FileState>({ max, now: options.now });

  return {
    /**
     * The file's state, read through `fetch(etag)` when nothing fresh is kept. `shared`: the shared
     * store of this request's settings and its seal key, or null.
     */
    async read(key: string, ttlMs: number, shared: SharedPolicyStore | null, fetch: (etag: string | undefined, known: FileState | undefined) => Promise<FileRead>): Promise<FileState> {
      const now = options.now();
      let known: FileState | undefined;
      if (shared) {
        // A drop's marker, an unsealed or a tampered entry: nothing known, the file is read afresh.
        known = openValue<FileState>(shared.sealKey, SEAL_LABEL, key, await shared.store.get<unknown>(key));
      } else {
        known = local.peek(key);
      }
      const fresh = known !== undefined && now - known.at < ttlMs;
      options.onLookup?.(fresh); // a miss joining a read under way is a miss too: it waits for the platform
      if (fresh) return known!;
      return reads.get(
        key,
        async (current) => {
          const read = await fetch(known?.etag, known);
          const at = options.now();
          const state: FileState =
            read.kind === "unchanged" && known ? { ...known, at }
            : read.kind === "file" ? { at, sha: read.sha, text: read.text, ...(read.etag ? { etag: read.etag } : {}) }
            : read.kind === "unreadable" ? { at, problem: read.problem, ...(read.sha ? { sha: read.sha } : {}), ...(read.etag ? { etag: read.etag } : {}) }
            : { at, absent: true, ...(read.kind === "absent" && read.listing ? { listing: read.listing } : {}) };
          if (!current()) return state; // used once by its own callers, never kept
          if (shared) await shared.store.set(key, sealValue(shared.sealKey, SEAL_LABEL, key, state), Math.max(ttlMs * 10, 60_000));
          else local.set(key, state, LOCAL_STATE_LIFETIME_MS);
          return state;
        },
        () => 0,
      );
    },
    /** A push touched the file: forget it here and in the shared store. */
    async drop(key: string, ttlMs: number, store: KeyValueStore | null): Promise<void> {
      local.invalidate(key);
      reads.invalidate(key);
      if (store) await store.set<Dropped>(key, { dropped: true }, Math.max(ttlMs * 10, 60_000));
    },
  };
}

