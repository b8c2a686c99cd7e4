// Repository contents on an installation token, as the broker's policy reader uses them: one file
// from a branch (the default branch unless `ref` names another), GitHub's content-file object
// (base64 `content` wrapped at 60 columns, the blob `sha`), an `ETag`, and 304 with no body to an
// `If-None-Match` that still holds (GitHub counts a 304 against no rate limit); a directory's
// listing (its entries, each a file or a dir with its git sha), with an ETag too. A path that is
// neither is a 404 with no ETag, as on GitHub.
// https://docs.github.com/rest/repos/contents#get-repository-content
import { createHash } from "node:crypto";
import { DOCS_ROOT, githubError } from "./router.js";
import type { GitStore } from "./git-state.js";
import type { RouteContext, RouteResult, Simulator } from "./types.js";

const DOC = `${DOCS_ROOT}/repos/contents#get-repository-content`;
const DEFAULT_BRANCH = "main";

/** Git's blob id for these bytes (what GitHub's `sha` of a file is). */
export function blobSha(bytes: Buffer): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

export function registerContentsRoutes(sim: Simulator, store: GitStore): void {
  // The repository's root directory: `/contents` with no path (GitHub answers a trailing slash 404).
  sim.route("GET", "/repos/:owner/:repo/contents", (ctx) => contents(sim, store, { ...ctx, params: { ...ctx.params, rest: "" } }));
  sim.route("GET", "/repos/:owner/:repo/contents/*", (ctx) => {
    if (!ctx.params.rest) throw githubError(404, "Not Found", DOC);
    return contents(sim, store, ctx);
  });
}

function contents(sim: Simulator, store: GitStore, ctx: RouteContext): RouteResult {
  const { issued, installation } = sim.requireInstallation(ctx);
  const { owner = "", repo = "", rest: path = "" } = ctx.params;
  const covered = owner.toLowerCase() === installation.account.toLowerCase()
    && (issued.repositories === "all" || issued.repositories.some((r) => r.toLowerCase() === repo.toLowerCase()));
  // GitHub hides what a token cannot read: no repository, no contents permission → 404 alike.
  // A repository that does not exist is a 404 too: a read never creates one (e.g. an owner's
  // .github). One a test gave files to (git.setFile) exists.
  const repository = sim.findRepository(owner, repo) ?? (store.head(`${owner}/${repo}`, ctx.query.ref ?? DEFAULT_BRANCH) ? sim.repository(owner, repo) : undefined);
  if (!covered || !issued.permissions.contents || !repository) throw githubError(404, "Not Found", DOC);
  // `ref`: a branch, or a commit's full sha (a pull request's head); default: the default branch.
  const branch = ctx.query.ref ?? DEFAULT_BRANCH;
  const head = store.head(repository.fullName, branch) ?? (store.commits.get(branch)?.repository.toLowerCase() === repository.fullName.toLowerCase() ? branch : undefined);
  const files = head ? store.commits.get(head)?.files : undefined;
  const b64 = files?.get(path);
  if (b64 === undefined) {
    // A directory: GitHub's listing of its entries (an array), with an ETag like any 200.
    const listing = files ? directoryListing(sim, repository.fullName, branch, path, files) : [];
    if (listing.length === 0) throw githubError(404, "Not Found", DOC);
    const etag = `W/"${createHash("sha1").update(JSON.stringify(listing)).digest("hex")}"`;
    if (ctx.headers["if-none-match"] === etag) return { status: 304, headers: { etag } };
    return { status: 200, headers: { etag, "cache-control": "private, max-age=60, s-maxage=60" }, body: listing };
  }
  const bytes = Buffer.from(b64, "base64");
  const sha = blobSha(bytes);
  const etag = `W/"${sha}"`;
  if (ctx.headers["if-none-match"] === etag) return { status: 304, headers: { etag } };
  const name = path.slice(path.lastIndexOf("/") + 1);
  const self = `${sim.apiBase}/repos/${repository.fullName}/contents/${path}?ref=${branch}`;
  const git = `${sim.apiBase}/repos/${repository.fullName}/git/blobs/${sha}`;
  const html = `${sim.url}/${repository.fullName}/blob/${branch}/${path}`;
  return {
    status: 200,
    headers: { etag, "cache-control": "private, max-age=60, s-maxage=60" },
    body: {
      type: "file",
      encoding: "base64",
      size: bytes.length,
      name,
      path,
      content: (bytes.toString("base64").match(/.{1,60}/g) ?? []).join("\n") + "\n",
      sha,
      url: self,
      git_url: git,
      html_url: html,
      download_url: `${sim.url}/raw/${repository.fullName}/${branch}/${path}`,
      _links: { self, git, html },
    },
  };
}

/** The entries directly under `dir` (GitHub's content-directory items), by name; a dir's sha stands for its whole subtree. */
function directoryListing(sim: Simulator, fullName: string, branch: string, dir: string, files: ReadonlyMap<string, string>): Array<Record<string, unknown>> {
  const prefix = dir === "" ? "" : `${dir}/`;
  const children = new Map<string, { type: "file" | "dir"; hash: ReturnType<typeof createHash>; size: number; sha?: string }>();
  for (const [path, b64] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    if (!path.startsWith(prefix)) continue;
    const rest = path.slice(prefix.length);
    const name = rest.split("/")[0]!;
    const isDir = rest.includes("/");
    const entry = children.get(name) ?? { type: isDir ? ("dir" as const) : ("file" as const), hash: createHash("sha1"), size: 0 };
    const bytes = Buffer.from(b64, "base64");
    if (isDir) entry.hash.update(`${rest}\0${blobSha(bytes)}\n`);
    else {
      entry.sha = blobSha(bytes);
      entry.size = bytes.length;
    }
    children.set(name, entry);
  }
  return [...children].map(([name, entry]) => {
    const path = `${prefix}${name}`;
    const sha = entry.type === "file" ? entry.sha! : entry.hash.digest("hex");
    const self = `${sim.apiBase}/repos/${fullName}/contents/${path}?ref=${branch}`;
    const git = `${sim.apiBase}/repos/${fullName}/git/${entry.type === "file" ? "blobs" : "trees"}/${sha}`;
    const html = `${sim.url}/${fullName}/${entry.type === "file" ? "blob" : "tree"}/${branch}/${path}`;
    return {
      type: entry.type,
      size: entry.size,
      name,
      path,
      sha,
      url: self,
      git_url: git,
      html_url: html,
      download_url: entry.type === "file" ? `${sim.url}/raw/${fullName}/${branch}/${path}` : null,
      _links: { self, git, html },
    };
  });
}
