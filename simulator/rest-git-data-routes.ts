// The git data API on an installation token, over the simulator's git model (git-state.ts,
// git-objects.ts): refs (branches and tags), annotated tags, blobs, trees and commits — what a
// release job calls to tag a commit or to build one by hand. Reading needs `contents` read,
// writing `contents` write (rest of the checks: repo-access.ts).
// https://docs.github.com/rest/git
import { createHash } from "node:crypto";
import { DOCS_ROOT, githubError } from "./router.js";
import type { TagObject } from "./git-objects.js";
import { authoriseRepository } from "./repo-access.js";
import type { CommitState, GitStore } from "./git-state.js";
import type { RouteContext, Simulator } from "./types.js";

const DOC = {
  refs: `${DOCS_ROOT}/git/refs`,
  tags: `${DOCS_ROOT}/git/tags`,
  blobs: `${DOCS_ROOT}/git/blobs`,
  trees: `${DOCS_ROOT}/git/trees`,
  commits: `${DOCS_ROOT}/git/commits`,
};
/** Who GitHub names as the committer of what an App commits through the API (and signs). */
const GITHUB_COMMITTER = { name: "GitHub", email: "noreply@github.com" };

type Body = Record<string, unknown>;
const bodyOf = (ctx: RouteContext): Body => (ctx.body && typeof ctx.body === "object" ? (ctx.body as Body) : {});
const iso = (date: Date | string) => new Date(date).toISOString().replace(/\.\d{3}Z$/, "Z");
const nodeId = (kind: string, sha: string) => `${kind}_${Buffer.from(sha).toString("base64url").slice(0, 20)}`;

export function registerGitDataRoutes(sim: Simulator, store: GitStore): void {
  const api = (repository: string) => `${sim.apiBase}/repos/${repository}`;
  const html = (repository: string) => `${sim.url}/${repository}`;

  /** `heads/main` or `refs/tags/v1` → the store's map and the short name; undefined for other kinds. */
  const refSlot = (repository: string, ref: string) => {
    const name = ref.replace(/^refs\//, "");
    if (name.startsWith("heads/")) return { kind: "heads", map: store.branchesOf(repository), short: name.slice(6), full: `refs/${name}` };
    if (name.startsWith("tags/")) return { kind: "tags", map: store.tagsOf(repository), short: name.slice(5), full: `refs/${name}` };
    return undefined;
  };
  const objectType = (sha: string): "commit" | "tag" => (store.objects.tags.has(sha) ? "tag" : "commit");
  const refJson = (repository: string, full: string, sha: string) => {
    const type = objectType(sha);
    return {
      ref: full,
      node_id: nodeId("REF", `${repository}:${full}`),
      url: `${api(repository)}/git/${full}`,
      object: { type, sha, url: `${api(repository)}/git/${type === "tag" ? "tags" : "commits"}/${sha}` },
    };
  };
  const allRefs = (repository: string) =>
    [
      ...[...store.branchesOf(repository)].map(([name, sha]) => [`refs/heads/${name}`, sha] as const),
      ...[...store.tagsOf(repository)].map(([name, sha]) => [`refs/tags/${name}`, sha] as const),
    ].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const commitIn = (repository: string, sha: unknown): CommitState | undefined => {
    const commit = typeof sha === "string" ? store.commits.get(sha) : undefined;
    return commit && commit.repository.toLowerCase() === repository.toLowerCase() ? commit : undefined;
  };
  const known = (repository: string, sha: string) => commitIn(repository, sha) !== undefined || store.objects.tags.get(sha)?.repository.toLowerCase() === repository.toLowerCase();

  // Refs. https://docs.github.com/rest/git/refs
  sim.route("GET", "/repos/:owner/:repo/git/ref/*", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "read", DOC.refs);
    const slot = refSlot(repository, ctx.params.rest ?? "");
    const sha = slot?.map.get(slot.short);
    if (!slot || !sha) throw githubError(404, "Not Found", DOC.refs);
    return { status: 200, body: refJson(repository, slot.full, sha) };
  });
  sim.route("GET", "/repos/:owner/:repo/git/matching-refs/*", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "read", DOC.refs);
    const prefix = `refs/${ctx.params.rest ?? ""}`;
    return { status: 200, body: allRefs(repository).filter(([full]) => full.startsWith(prefix)).map(([full, sha]) => refJson(repository, full, sha)) };
  });
  sim.route("POST", "/repos/:owner/:repo/git/refs", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "write", DOC.refs);
    const { ref, sha } = bodyOf(ctx) as { ref: string; sha: string };
    const slot = /^refs\/.+\/.+/.test(ref) ? refSlot(repository, ref) : undefined;
    if (!slot || !slot.short) throw githubError(422, `${ref} is not a valid ref name.`, DOC.refs);
    if (!known(repository, sha)) throw githubError(422, "Object does not exist", DOC.refs);
    if (slot.map.has(slot.short)) throw githubError(422, "Reference already exists", DOC.refs);
    slot.map.set(slot.short, sha);
    return { status: 201, headers: { location: `${api(repository)}/git/${slot.full}` }, body: refJson(repository, slot.full, sha) };
  });
  sim.route("PATCH", "/repos/:owner/:repo/git/refs/*", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "write", DOC.refs);
    const { sha, force = false } = bodyOf(ctx) as { sha: string; force?: boolean };
    const slot = refSlot(repository, ctx.params.rest ?? "");
    const current = slot?.map.get(slot.short);
    if (!slot || !current) throw githubError(422, "Reference does not exist", DOC.refs);
    if (!known(repository, sha)) throw githubError(422, "Object does not exist", DOC.refs);
    if (slot.kind === "heads" && !force && !descends(store, sha, current)) throw githubError(422, "Update is not a fast forward", DOC.refs);
    slot.map.set(slot.short, sha);
    return { status: 200, body: refJson(repository, slot.full, sha) };
  });
  sim.route("DELETE", "/repos/:owner/:repo/git/refs/*", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "write", DOC.refs);
    const slot = refSlot(repository, ctx.params.rest ?? "");
    if (!slot || !slot.map.delete(slot.short)) throw githubError(422, "Reference does not exist", DOC.refs);
    return { status: 204 };
  });

  // Annotated tags. https://docs.github.com/rest/git/tags
  const tagJson = (tag: TagObject) => ({
    node_id: nodeId("TAG", tag.sha),
    tag: tag.tag,
    sha: tag.sha,
    url: `${api(tag.repository)}/git/tags/${tag.sha}`,
    message: tag.message,
    tagger: tag.tagger,
    object: { ...tag.object, url: `${api(tag.repository)}/git/${tag.object.type}s/${tag.object.sha}` },
    verification: { verified: false, reason: "unsigned", signature: null, payload: null, verified_at: null },
  });
  sim.route("POST", "/repos/:owner/:repo/git/tags", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "write", DOC.tags);
    const body = bodyOf(ctx) as { tag: string; message: string; object: string; type: TagObject["object"]["type"]; tagger?: { name?: string; email?: string; date?: string } };
    if (!known(repository, body.object)) throw githubError(422, "Object does not exist", DOC.tags);
    const date = body.tagger?.date ?? iso(new Date(sim.now()));
    const tagger = { name: body.tagger?.name ?? GITHUB_COMMITTER.name, email: body.tagger?.email ?? GITHUB_COMMITTER.email, date };
    const sha = createHash("sha1").update(JSON.stringify(["tag", repository, body, date])).digest("hex");
    const tag: TagObject = { sha, repository, tag: body.tag, message: body.message, object: { sha: body.object, type: body.type }, tagger };
    store.objects.tags.set(sha, tag);
    return { status: 201, headers: { location: `${api(repository)}/git/tags/${sha}` }, body: tagJson(tag) };
  });
  sim.route("GET", "/repos/:owner/:repo/git/tags/:sha", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "read", DOC.tags);
    const tag = store.objects.tags.get(ctx.params.sha ?? "");
    if (!tag || tag.repository.toLowerCase() !== repository.toLowerCase()) throw githubError(404, "Not Found", DOC.tags);
    return { status: 200, body: tagJson(tag) };
  });

  // Blobs. https://docs.github.com/rest/git/blobs
  sim.route("POST", "/repos/:owner/:repo/git/blobs", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "write", DOC.blobs);
    const { content, encoding = "utf-8" } = bodyOf(ctx) as { content: string; encoding?: string };
    const b64 = encoding === "base64" ? content.replace(/\s/g, "") : Buffer.from(content, "utf8").toString("base64");
    const sha = store.objects.addBlob(b64);
    return { status: 201, headers: { location: `${api(repository)}/git/blobs/${sha}` }, body: { url: `${api(repository)}/git/blobs/${sha}`, sha } };
  });
  sim.route("GET", "/repos/:owner/:repo/git/blobs/:sha", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "read", DOC.blobs);
    const sha = ctx.params.sha ?? "";
    const b64 = store.objects.blobs.get(sha);
    if (b64 === undefined) throw githubError(404, "Not Found", DOC.blobs);
    const bytes = Buffer.from(b64, "base64");
    return {
      status: 200,
      body: { sha, node_id: nodeId("B", sha), size: bytes.length, url: `${api(repository)}/git/blobs/${sha}`, content: (b64.match(/.{1,60}/g) ?? []).join("\n") + "\n", encoding: "base64" },
    };
  });

  // Trees. https://docs.github.com/rest/git/trees
  const treeJson = (repository: string, sha: string, files: ReadonlyMap<string, string>, recursive: boolean) => ({
    sha,
    url: `${api(repository)}/git/trees/${sha}`,
    truncated: false,
    tree: store.objects.entries(files, recursive).map((entry) => ({ ...entry, url: `${api(repository)}/git/${entry.type}s/${entry.sha}` })),
  });
  /** A tree sha, or a commit's sha (GitHub takes either where a tree is read). */
  const treeFiles = (repository: string, sha: string) => store.objects.trees.get(sha) ?? commitIn(repository, sha)?.files;
  sim.route("POST", "/repos/:owner/:repo/git/trees", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "write", DOC.trees);
    const body = bodyOf(ctx) as { base_tree?: string; tree: Array<{ path: string; type?: string; sha?: string | null; content?: string }> };
    const base = body.base_tree === undefined ? new Map<string, string>() : treeFiles(repository, body.base_tree);
    if (!base) throw githubError(422, "base_tree is not a valid tree oid", DOC.trees);
    const files = new Map(base);
    for (const entry of body.tree) {
      if (entry.sha === null) {
        for (const path of [...files.keys()]) if (path === entry.path || path.startsWith(`${entry.path}/`)) files.delete(path);
        continue;
      }
      if (entry.content !== undefined) {
        files.set(entry.path, Buffer.from(entry.content, "utf8").toString("base64"));
        continue;
      }
      const sha = entry.sha ?? "";
      if (entry.type === "tree") {
        const subtree = store.objects.trees.get(sha);
        if (!subtree) throw githubError(422, `tree.sha ${sha} is not a valid tree`, DOC.trees);
        for (const [path, b64] of subtree) files.set(`${entry.path}/${path}`, b64);
        continue;
      }
      const b64 = store.objects.blobs.get(sha);
      if (b64 === undefined) throw githubError(422, `tree.sha ${sha} is not a valid blob`, DOC.trees);
      files.set(entry.path, b64);
    }
    const sha = store.objects.addTree(files);
    return { status: 201, headers: { location: `${api(repository)}/git/trees/${sha}` }, body: treeJson(repository, sha, files, true) };
  });
  sim.route("GET", "/repos/:owner/:repo/git/trees/:sha", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "read", DOC.trees);
    const sha = ctx.params.sha ?? "";
    const files = treeFiles(repository, sha) ?? (store.head(repository, sha) ? store.commits.get(store.head(repository, sha)!)!.files : undefined);
    if (!files) throw githubError(404, "Not Found", DOC.trees);
    const recursive = ctx.query.recursive !== undefined && ctx.query.recursive !== "0" && ctx.query.recursive !== "false";
    return { status: 200, body: treeJson(repository, store.objects.addTree(files), files, recursive) };
  });

  // Commits. https://docs.github.com/rest/git/commits
  const commitJson = (commit: CommitState) => gitCommitJson(sim, store, commit);
  sim.route("POST", "/repos/:owner/:repo/git/commits", (ctx) => {
    const { repository, app } = authoriseRepository(sim, store, ctx, "write", DOC.commits);
    const body = bodyOf(ctx) as { message: string; tree: string; parents?: string[]; author?: { name?: string; email?: string } };
    const files = store.objects.trees.get(body.tree);
    if (!files) throw githubError(422, "Tree SHA does not exist", DOC.commits);
    const parents = body.parents ?? [];
    if (parents.some((sha) => !commitIn(repository, sha))) throw githubError(422, "Parent SHA does not exist or is not a commit object", DOC.commits);
    const [headline = "", ...rest] = body.message.split("\n");
    const bot = botAuthor(sim, app?.id);
    const author = body.author?.name && body.author.email ? { name: body.author.name, email: body.author.email } : bot;
    // GitHub signs a commit an App makes through the API when it names no other author.
    const commit = store.commit({ repository, parents, headline, body: rest.join("\n").replace(/^\n/, ""), files, author, signedByGitHub: author === bot });
    return { status: 201, headers: { location: `${api(repository)}/git/commits/${commit.oid}` }, body: commitJson(commit) };
  });
  sim.route("GET", "/repos/:owner/:repo/git/commits/:sha", (ctx) => {
    const { repository } = authoriseRepository(sim, store, ctx, "read", DOC.commits);
    const commit = commitIn(repository, ctx.params.sha);
    if (!commit) throw githubError(404, "Not Found", DOC.commits);
    return { status: 200, body: commitJson(commit) };
  });
}

/** GitHub's `git-commit` object for a commit of the store. */
export function gitCommitJson(sim: Simulator, store: GitStore, commit: CommitState): Record<string, unknown> {
  const api = `${sim.apiBase}/repos/${commit.repository}`;
  const html = `${sim.url}/${commit.repository}`;
  const date = iso(commit.committedDate);
  const tree = store.objects.addTree(commit.files);
  const message = commit.body ? `${commit.headline}\n\n${commit.body}` : commit.headline;
  return {
    sha: commit.oid,
    node_id: nodeId("C", commit.oid),
    url: `${api}/git/commits/${commit.oid}`,
    html_url: `${html}/commit/${commit.oid}`,
    author: { ...commit.author, date },
    committer: { ...(commit.signedByGitHub ? GITHUB_COMMITTER : commit.author), date },
    message,
    tree: { sha: tree, url: `${api}/git/trees/${tree}` },
    parents: commit.parents.map((sha) => ({ sha, url: `${api}/git/commits/${sha}`, html_url: `${html}/commit/${sha}` })),
    verification: commit.signedByGitHub
      ? { verified: true, reason: "valid", signature: "-----BEGIN PGP SIGNATURE-----\n(simulated)\n-----END PGP SIGNATURE-----\n", payload: `tree ${tree}\n\n${message}`, verified_at: date }
      : { verified: false, reason: "unsigned", signature: null, payload: null, verified_at: null },
  };
}

/** The App's bot as a commit author: `<slug>[bot]` with GitHub's noreply address. */
export function botAuthor(sim: Simulator, appId: number | undefined): { name: string; email: string } {
  const app = appId === undefined ? undefined : sim.apps.get(appId);
  const slug = app?.slug ?? "app";
  return { name: `${slug}[bot]`, email: `${botUserId(appId ?? 0)}+${slug}[bot]@users.noreply.github.com` };
}

/** The bot user's id (GitHub gives each App's bot a user id of its own). */
export function botUserId(appId: number): number {
  return 41_000_000 + appId;
}

/** Is `ancestor` reachable from `sha` through parents (a fast-forward from ancestor to sha)? */
function descends(store: GitStore, sha: string, ancestor: string): boolean {
  const seen = new Set<string>();
  const queue = [sha];
  while (queue.length > 0) {
    const next = queue.pop()!;
    if (next === ancestor) return true;
    if (seen.has(next)) continue;
    seen.add(next);
    queue.push(...(store.commits.get(next)?.parents ?? []));
  }
  return false;
}
