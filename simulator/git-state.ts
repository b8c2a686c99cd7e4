// Branches, commits and pull requests of the simulated platform: the state behind
// createCommitOnBranch (git-graphql.ts) and the pull request routes (rest-pull-routes.ts), plus
// helpers tests use to arrange it (create a branch, push as someone else, open pull requests…).
import { createHash } from "node:crypto";
import { registerGitGraphql } from "./git-graphql.js";
import { GitObjects } from "./git-objects.js";
import { registerChecksRoutes, type CheckRunState } from "./rest-checks-routes.js";
import { registerContentsRoutes } from "./rest-contents-routes.js";
import { registerContentsWriteRoutes } from "./rest-contents-write-routes.js";
import { registerGitDataRoutes } from "./rest-git-data-routes.js";
import { registerReleaseRoutes } from "./rest-release-routes.js";
import { registerPullRoutes } from "./rest-pull-routes.js";
import type { Simulator } from "./types.js";

export interface CommitState {
  oid: string;
  /** owner/name */
  repository: string;
  parents: string[];
  headline: string;
  body: string;
  /** The whole tree after this commit: path → base64 contents. */
  files: ReadonlyMap<string, string>;
  committedDate: Date;
  author: { name: string; email: string };
  /** Made through the API by an App (createCommitOnBranch, update-branch): GitHub signs those. */
  signedByGitHub: boolean;
}

export interface PullRequestState {
  number: number;
  /** owner/name */
  repository: string;
  state: "open" | "closed";
  title: string;
  base: string;
  head: string;
  headSha: string;
  /** The base head last merged into the head branch (at opening, or by update-branch). */
  mergedBaseSha: string;
  /** When set, update-branch answers 422 with this message (e.g. a merge conflict). */
  updateBranchFailure?: string;
  createdAt: Date;
}

export interface UpdateBranchCall {
  repository: string;
  number: number;
  expectedHeadSha: string | undefined;
  status: number;
  /** The simulator's clock when it answered (sim.now()). */
  at: number;
  installationId: number;
  /** Refused by the content-creation secondary limit. */
  rateLimited?: boolean;
}

export interface GitApi {
  /** Creates `branch` with one commit holding `files` (UTF-8 text), or at `from`'s head. Returns the head oid. */
  createBranch(repository: string, branch: string, opts?: { files?: Record<string, string>; from?: string }): string;
  /** The branch's head oid, or undefined when there is no such branch. */
  head(repository: string, branch: string): string | undefined;
  /** The branch's tree as UTF-8 text per path. */
  files(repository: string, branch: string): Record<string, string>;
  commit(oid: string): CommitState | undefined;
  /**
   * Sets one file on a branch (default `main`, created when missing) in a new commit, or deletes it
   * with `null`: what a policy test arranges (`.github/tokensmith.yml`). Returns the new head oid.
   */
  setFile(repository: string, path: string, text: string | null, opts?: { branch?: string }): string;
  /** Advances the branch by one commit, as if someone pushed. Returns the new head oid. */
  push(repository: string, branch: string, opts?: { files?: Record<string, string>; message?: string }): string;
  deleteBranch(repository: string, branch: string): void;
  /** Opens a pull request from a new branch `head` (default `pr-<n>`) cut from `base`'s head. */
  addPullRequest(repository: string, opts: { base: string; head?: string; state?: "open" | "closed"; title?: string }): number;
  pullRequest(repository: string, number: number): PullRequestState;
  /** Makes update-branch on that pull request answer 422 with `message`. */
  failUpdateBranch(repository: string, number: number, message?: string): void;
  /** Check runs created through the REST API, in order. */
  readonly checkRuns: readonly CheckRunState[];
  /** Commits made through createCommitOnBranch, in order. */
  readonly mutationCommits: readonly CommitState[];
  /** Every update-branch call that reached a pull request, with its answer. */
  readonly updateBranchCalls: readonly UpdateBranchCall[];
  /**
   * Successful update-branch calls an installation may make in any 60 s of the simulator's clock
   * before a 403 secondary limit (`retry-after: 60`). GitHub's content-creation limit: 80.
   */
  contentCreationPerMinute: number;
  /**
   * The same in any hour of the simulator's clock (`retry-after`: until the oldest of them is an
   * hour old). GitHub's content-creation limit: 500 an hour.
   */
  contentCreationPerHour: number;
}

export const MERGE_CONFLICT = "merge conflict between base and head";

/** The mutable store; the GraphQL and REST modules share it. */
export class GitStore {
  readonly commits = new Map<string, CommitState>();
  /** repository (lower case) → branch → head oid */
  readonly branches = new Map<string, Map<string, string>>();
  readonly pulls = new Map<string, Map<number, PullRequestState>>();
  /** repository (lower case) → tag name → the oid it points at (a commit, or an annotated tag object) */
  readonly tagRefs = new Map<string, Map<string, string>>();
  /** Blobs, trees and annotated tags of the git data API. */
  readonly objects = new GitObjects();
  readonly mutationCommits: CommitState[] = [];
  readonly updateBranchCalls: UpdateBranchCall[] = [];
  contentCreationPerMinute = 80;
  contentCreationPerHour = 500;
  private counter = 0;

  constructor(private readonly now: () => number) {}

  branchesOf(repository: string): Map<string, string> {
    return perRepository(this.branches, repository);
  }

  tagsOf(repository: string): Map<string, string> {
    return perRepository(this.tagRefs, repository);
  }

  pullsOf(repository: string): Map<number, PullRequestState> {
    return perRepository(this.pulls, repository);
  }

  head(repository: string, branch: string): string | undefined {
    return this.branchesOf(repository).get(branch);
  }

  /** Records a commit and returns it; the oid is a SHA-1 over its content and a counter, like git's. */
  commit(input: Omit<CommitState, "oid" | "committedDate">): CommitState {
    this.counter += 1;
    const oid = createHash("sha1")
      .update(JSON.stringify([input.repository, input.parents, input.headline, input.body, [...input.files], this.counter]))
      .digest("hex");
    const commit: CommitState = { ...input, oid, committedDate: new Date(this.now()) };
    this.commits.set(oid, commit);
    return commit;
  }

  /** Moves the branch to a new commit that changes `changes` (path → base64, null deletes). */
  advance(repository: string, branch: string, changes: Map<string, string | null>, message: { headline: string; body?: string }, author: CommitState["author"], signed: boolean, extraParents: string[] = []): CommitState {
    const parent = this.head(repository, branch);
    const files = new Map(parent ? this.commits.get(parent)!.files : []);
    for (const [path, contents] of changes) {
      if (contents === null) files.delete(path);
      else files.set(path, contents);
    }
    const commit = this.commit({
      repository,
      parents: [...(parent ? [parent] : []), ...extraParents],
      headline: message.headline,
      body: message.body ?? "",
      files,
      author,
      signedByGitHub: signed,
    });
    this.branchesOf(repository).set(branch, commit.oid);
    return commit;
  }
}

/** `repository`'s own map in `maps` (keyed by the repository's name in lower case), made on first use. */
function perRepository<K, V>(maps: Map<string, Map<K, V>>, repository: string): Map<K, V> {
  const key = repository.toLowerCase();
  let found = maps.get(key);
  if (!found) {
    found = new Map();
    maps.set(key, found);
  }
  return found;
}

const SOMEONE = { name: "Mona Lisa Octocat", email: "mona@example.com" };

const utf8Changes = (files: Record<string, string> = {}) =>
  new Map(Object.entries(files).map(([path, text]) => [path, Buffer.from(text, "utf8").toString("base64")] as const));

export function registerGit(sim: Simulator): GitApi {
  const store = new GitStore(sim.now);
  registerGitGraphql(sim, store);
  registerPullRoutes(sim, store);
  registerContentsRoutes(sim, store);
  registerContentsWriteRoutes(sim, store);
  registerGitDataRoutes(sim, store);
  // Releases live in releases-state.ts; their REST routes need the tags kept here.
  registerReleaseRoutes(sim, store);
  const checkRuns: CheckRunState[] = [];
  registerChecksRoutes(sim, store, checkRuns);

  const requirePull = (repository: string, number: number): PullRequestState => {
    const pull = store.pullsOf(repository).get(number);
    if (!pull) throw new Error(`simulator: no pull request ${repository}#${number}`);
    return pull;
  };

  return {
    createBranch(repository, branch, opts = {}) {
      if (store.head(repository, branch)) throw new Error(`simulator: branch ${branch} already exists in ${repository}`);
      if (opts.from) {
        const from = store.head(repository, opts.from);
        if (!from) throw new Error(`simulator: no branch ${opts.from} in ${repository}`);
        store.branchesOf(repository).set(branch, from);
        return from;
      }
      return store.advance(repository, branch, utf8Changes(opts.files ?? { "README.md": `# ${repository}\n` }), { headline: "Initial commit" }, SOMEONE, false).oid;
    },
    head: (repository, branch) => store.head(repository, branch),
    files(repository, branch) {
      const oid = store.head(repository, branch);
      if (!oid) throw new Error(`simulator: no branch ${branch} in ${repository}`);
      return Object.fromEntries([...store.commits.get(oid)!.files].map(([path, b64]) => [path, Buffer.from(b64, "base64").toString("utf8")]));
    },
    commit: (oid) => store.commits.get(oid),
    push(repository, branch, opts = {}) {
      if (!store.head(repository, branch)) throw new Error(`simulator: no branch ${branch} in ${repository}`);
      const files = opts.files ?? { [`pushed-${store.commits.size}.txt`]: "pushed\n" };
      return store.advance(repository, branch, utf8Changes(files), { headline: opts.message ?? "Someone pushed" }, SOMEONE, false).oid;
    },
    setFile(repository, path, text, opts = {}) {
      const branch = opts.branch ?? "main";
      const change = new Map([[path, text === null ? null : Buffer.from(text, "utf8").toString("base64")]]);
      return store.advance(repository, branch, change, { headline: text === null ? `Delete ${path}` : `Update ${path}` }, SOMEONE, false).oid;
    },
    deleteBranch(repository, branch) {
      store.branchesOf(repository).delete(branch);
    },
    addPullRequest(repository, opts) {
      const pulls = store.pullsOf(repository);
      const number = pulls.size + 1;
      const baseSha = store.head(repository, opts.base);
      if (!baseSha) throw new Error(`simulator: no base branch ${opts.base} in ${repository}`);
      const head = opts.head ?? `pr-${number}`;
      if (!store.head(repository, head)) {
        store.branchesOf(repository).set(head, baseSha);
        store.advance(repository, head, utf8Changes({ [`change-${number}.txt`]: `change ${number}\n` }), { headline: `Change ${number}` }, SOMEONE, false);
      }
      pulls.set(number, {
        number,
        repository,
        state: opts.state ?? "open",
        title: opts.title ?? `Change ${number}`,
        base: opts.base,
        head,
        headSha: store.head(repository, head)!,
        mergedBaseSha: baseSha,
        createdAt: new Date(sim.now() + number),
      });
      return number;
    },
    pullRequest: requirePull,
    failUpdateBranch(repository, number, message = MERGE_CONFLICT) {
      requirePull(repository, number).updateBranchFailure = message;
    },
    get mutationCommits() {
      return store.mutationCommits;
    },
    checkRuns,
    get updateBranchCalls() {
      return store.updateBranchCalls;
    },
    get contentCreationPerMinute() {
      return store.contentCreationPerMinute;
    },
    set contentCreationPerMinute(limit: number) {
      store.contentCreationPerMinute = limit;
    },
    get contentCreationPerHour() {
      return store.contentCreationPerHour;
    },
    set contentCreationPerHour(limit: number) {
      store.contentCreationPerHour = limit;
    },
  };
}
