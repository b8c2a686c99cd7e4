// What the sandbox's platform was asked to do, as plain values a test asserts on: read on every
// access from the simulator's request log and state, so a view taken early stays current.
import type { Simulator } from "../../simulator/index.js";

/** One installation token the broker minted (`POST /app/installations/{id}/access_tokens`). */
export interface Mint {
  installationId: number;
  /** The HTTP status the platform answered. */
  status: number;
  /**
   * The repositories the token covers, in the simulator's form (`IssuedToken.repositories`): the
   * names in the installation's account (`["app"]`), or `"all"` for a token over the whole
   * installation; `[]` when the platform refused (no token).
   */
  repositories: string[] | "all";
  /** The permissions asked for. */
  permissions?: Record<string, string>;
  /** Why the broker minted it, read from what it asked for (see {@link mintPurpose}). */
  purpose: MintPurpose;
}

/**
 * `policy-reader`: the broker's own token for reading trust policies (the whole installation,
 * `contents: read` only); `installation-wide`: another token over the whole installation (the
 * `/releases` crawl); `repositories`: one scoped to named repositories (a job's token, a push's).
 */
export type MintPurpose = "policy-reader" | "installation-wide" | "repositories";

/** The purpose of a mint request's JSON body (`POST /app/installations/{id}/access_tokens`). */
export function mintPurpose(body: unknown): MintPurpose {
  const asked = (body ?? {}) as { repositories?: unknown; repository_ids?: unknown; permissions?: Record<string, unknown> };
  if (asked.repositories !== undefined || asked.repository_ids !== undefined) return "repositories";
  const permissions = Object.entries(asked.permissions ?? {});
  return permissions.length === 1 && permissions[0]![0] === "contents" && permissions[0]![1] === "read" ? "policy-reader" : "installation-wide";
}

/** For a fault that must spare the broker's policy reads: `body: (b) => !isPolicyReaderMint(b)`. */
export const isPolicyReaderMint = (body: unknown): boolean => mintPurpose(body) === "policy-reader";

/** One token revoked (`DELETE /installation/token`), e.g. by the action's post step. */
export interface Revocation {
  status: number;
}

/** One commit made through `/sign` (GraphQL `createCommitOnBranch`), signed by the platform. */
export interface SignedCommit {
  oid: string;
  repository: string;
  headline: string;
  parents: string[];
  signedByGitHub: boolean;
}

/** One update-branch call the webhook's push job made on an open pull request. */
export interface BranchUpdate {
  repository: string;
  number: number;
  status: number;
}

export interface Release {
  repository: string;
  tag: string;
  prerelease: boolean;
  draft: boolean;
}

export interface PlatformView {
  readonly mints: Mint[];
  readonly revocations: Revocation[];
  readonly commits: SignedCommit[];
  readonly updates: BranchUpdate[];
  /** Every release of every repository the world has, oldest first per repository. */
  readonly releases: Release[];
  /** Every request the platform received, raw (method, path, body, answer). */
  readonly requests: Simulator["requests"];
}

const MINT_PATH = /\/app\/installations\/(\d+)\/access_tokens$/;

export function createPlatformView(sim: Simulator): PlatformView {
  return {
    get mints() {
      return sim.requests.flatMap((r) => {
        const id = r.method === "POST" ? MINT_PATH.exec(r.path)?.[1] : undefined;
        if (!id) return [];
        const asked = (r.body ?? {}) as { permissions?: Record<string, string> };
        const status = r.response?.status ?? 0;
        const answer = (r.response?.body ?? {}) as { repositories?: Array<{ name?: string }> };
        const repositories = status !== 201 ? [] : Array.isArray(answer.repositories) ? answer.repositories.map((repo) => String(repo.name)) : "all" as const;
        return [{ installationId: Number(id), status, repositories, permissions: asked.permissions, purpose: mintPurpose(r.body) }];
      });
    },
    get revocations() {
      return sim.requests.filter((r) => r.method === "DELETE" && r.path.endsWith("/installation/token")).map((r) => ({ status: r.response?.status ?? 0 }));
    },
    get commits() {
      return sim.git.mutationCommits.map((c) => ({ oid: c.oid, repository: c.repository, headline: c.headline, parents: [...c.parents], signedByGitHub: c.signedByGitHub }));
    },
    get updates() {
      return sim.git.updateBranchCalls.map((u) => ({ repository: u.repository, number: u.number, status: u.status }));
    },
    get releases() {
      const names = new Set<string>();
      for (const inst of sim.installations.values()) {
        if (inst.repositories !== "all") for (const name of inst.repositories) names.add(`${inst.account}/${name}`);
      }
      return [...names].flatMap((repository) =>
        [...sim.releases.list(repository)].sort((a, b) => a.sequence - b.sequence).map((r) => ({ repository, tag: r.tagName, prerelease: r.isPrerelease, draft: r.isDraft })),
      );
    },
    get requests() {
      return sim.requests;
    },
  };
}
