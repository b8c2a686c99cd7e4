// Releases through REST on an installation token, over the same store the GraphQL `releases` field
// reads (releases-state.ts), so a release a job creates here is one the broker's `/releases`
// crawl sees. Publishing a release whose tag does not exist yet makes the tag at
// `target_commitish` (a branch or a commit), as GitHub does. Drafts are seen only with `contents`
// write; reading needs `contents` read, writing `contents` write (repo-access.ts).
// https://docs.github.com/rest/releases/releases
import { DOCS_ROOT, githubError } from "./router.js";
import { botUserId } from "./rest-git-data-routes.js";
import { linkHeader, paginate } from "./pagination.js";
import { simpleUserJson } from "./rest-shapes.js";
import { authoriseRepository, validationFailed, type RepositoryAccess } from "./repo-access.js";
import type { ReleaseState } from "./releases-state.js";
import type { GitStore } from "./git-state.js";
import type { RouteContext, Simulator } from "./types.js";

const DOC = `${DOCS_ROOT}/releases/releases`;

interface ReleaseBody {
  tag_name?: string;
  target_commitish?: string;
  name?: string | null;
  body?: string | null;
  draft?: boolean;
  prerelease?: boolean;
  generate_release_notes?: boolean;
}

export function registerReleaseRoutes(sim: Simulator, store: GitStore): void {
  const releaseJson = (repository: string, release: ReleaseState): Record<string, unknown> => {
    const api = `${sim.apiBase}/repos/${repository}/releases/${release.id}`;
    const tagPath = release.isDraft ? `untagged-${release.id.toString(16)}` : encodeURIComponent(release.tagName);
    const app = release.authorAppId === undefined ? undefined : sim.apps.get(release.authorAppId);
    const urls = { apiBase: sim.apiBase, url: sim.url };
    return {
      url: api,
      html_url: `${sim.url}/${repository}/releases/tag/${tagPath}`,
      assets_url: `${api}/assets`,
      upload_url: `${sim.url}/uploads/repos/${repository}/releases/${release.id}/assets{?name,label}`,
      tarball_url: release.isDraft ? null : `${sim.apiBase}/repos/${repository}/tarball/${release.tagName}`,
      zipball_url: release.isDraft ? null : `${sim.apiBase}/repos/${repository}/zipball/${release.tagName}`,
      id: release.id,
      node_id: `RE_${Buffer.from(String(release.id)).toString("base64url")}`,
      tag_name: release.tagName,
      target_commitish: release.targetCommitish,
      name: release.name,
      body: release.body,
      draft: release.isDraft,
      prerelease: release.isPrerelease,
      created_at: release.createdAt,
      published_at: release.publishedAt,
      author: app ? simpleUserJson(`${app.slug}[bot]`, botUserId(app.id), "Bot", urls) : simpleUserJson("mona", 583231, "User", urls),
      assets: [],
    };
  };
  /** What this token may see: drafts only with write access, as on GitHub. */
  const visible = (access: RepositoryAccess) => {
    const all = sim.releases.list(access.repository);
    return access.issued.permissions.contents === "write" ? all : all.filter((r) => !r.isDraft);
  };
  const byId = (ctx: RouteContext, access: RepositoryAccess) => {
    const release = visible(access).find((r) => String(r.id) === ctx.params.id);
    if (!release) throw githubError(404, "Not Found", DOC);
    return release;
  };
  /** The commit a target names: a branch's head or a commit of the repository. */
  const resolve = (repository: string, target: string) =>
    store.head(repository, target) ?? (store.commits.get(target)?.repository.toLowerCase() === repository.toLowerCase() ? target : undefined);
  /** A published release's tag exists: made at its target when it does not yet. */
  const ensureTag = (repository: string, tag: string, target: string) => {
    const tags = store.tagsOf(repository);
    if (tags.has(tag)) return;
    const sha = resolve(repository, target);
    if (!sha) throw validationFailed(DOC, { resource: "Release", code: "invalid", field: "target_commitish" });
    tags.set(tag, sha);
  };
  const notes = (repository: string, tag: string, previous?: string) => {
    const older = sim.releases.list(repository).filter((r) => !r.isDraft && r.tagName !== tag);
    const since = previous ?? older[0]?.tagName;
    const compare = since ? `\n\n**Full Changelog**: ${sim.url}/${repository}/compare/${since}...${tag}` : `\n\n**Full Changelog**: ${sim.url}/${repository}/commits/${tag}`;
    return { name: tag, body: `## What's Changed\n* Simulated notes for ${tag}${compare}` };
  };

  sim.route("GET", "/repos/:owner/:repo/releases", (ctx) => {
    const access = authoriseRepository(sim, store, ctx, "read", DOC);
    const page = paginate(visible(access), ctx.query);
    const link = linkHeader(`${sim.apiBase}/repos/${access.repository}/releases`, page.page, page.perPage, page.total);
    return { status: 200, headers: link ? { link } : undefined, body: page.items.map((r) => releaseJson(access.repository, r)) };
  });
  sim.route("POST", "/repos/:owner/:repo/releases", (ctx) => {
    const access = authoriseRepository(sim, store, ctx, "write", DOC);
    const body = ctx.body as ReleaseBody & { tag_name: string };
    const { repository } = access;
    if (sim.releases.list(repository).some((r) => r.tagName === body.tag_name)) throw validationFailed(DOC, { resource: "Release", code: "already_exists", field: "tag_name" });
    const target = body.target_commitish ?? "main";
    const draft = body.draft ?? false;
    if (!draft) ensureTag(repository, body.tag_name, target);
    else if (!store.tagsOf(repository).has(body.tag_name) && !resolve(repository, target)) throw validationFailed(DOC, { resource: "Release", code: "invalid", field: "target_commitish" });
    const generated = body.generate_release_notes ? notes(repository, body.tag_name) : undefined;
    const release = sim.releases.add(repository, {
      tagName: body.tag_name,
      name: body.name ?? generated?.name ?? body.tag_name,
      body: body.body ?? generated?.body ?? null,
      isDraft: draft,
      isPrerelease: body.prerelease ?? false,
      targetCommitish: target,
      authorAppId: access.app?.id,
    });
    const json = releaseJson(repository, release);
    return { status: 201, headers: { location: String(json.url) }, body: json };
  });
  sim.route("GET", "/repos/:owner/:repo/releases/:id", (ctx) => {
    const access = authoriseRepository(sim, store, ctx, "read", DOC);
    return { status: 200, body: releaseJson(access.repository, byId(ctx, access)) };
  });
  sim.route("PATCH", "/repos/:owner/:repo/releases/:id", (ctx) => {
    const access = authoriseRepository(sim, store, ctx, "write", DOC);
    const release = byId(ctx, access);
    const body = ctx.body as ReleaseBody;
    const tagName = body.tag_name ?? release.tagName;
    if (tagName !== release.tagName && sim.releases.list(access.repository).some((r) => r.tagName === tagName)) throw validationFailed(DOC, { resource: "Release", code: "already_exists", field: "tag_name" });
    const draft = body.draft ?? release.isDraft;
    if (!draft) ensureTag(access.repository, tagName, body.target_commitish ?? release.targetCommitish);
    const updated = sim.releases.update(access.repository, release.id, {
      tagName,
      name: body.name,
      body: body.body,
      isDraft: body.draft,
      isPrerelease: body.prerelease,
      targetCommitish: body.target_commitish,
    })!;
    return { status: 200, body: releaseJson(access.repository, updated) };
  });
  // Added after `:id`, so they win over it (the router tries newer rows first).
  sim.route("GET", "/repos/:owner/:repo/releases/latest", (ctx) => {
    const access = authoriseRepository(sim, store, ctx, "read", DOC);
    const latest = sim.releases.list(access.repository).find((r) => !r.isDraft && !r.isPrerelease);
    if (!latest) throw githubError(404, "Not Found", DOC);
    return { status: 200, body: releaseJson(access.repository, latest) };
  });
  sim.route("GET", "/repos/:owner/:repo/releases/tags/:tag", (ctx) => {
    const access = authoriseRepository(sim, store, ctx, "read", DOC);
    const release = sim.releases.list(access.repository).find((r) => !r.isDraft && r.tagName === ctx.params.tag);
    if (!release) throw githubError(404, "Not Found", DOC);
    return { status: 200, body: releaseJson(access.repository, release) };
  });
  sim.route("POST", "/repos/:owner/:repo/releases/generate-notes", (ctx) => {
    const access = authoriseRepository(sim, store, ctx, "write", DOC);
    const body = ctx.body as { tag_name: string; target_commitish?: string; previous_tag_name?: string };
    if (!store.tagsOf(access.repository).has(body.tag_name) && !resolve(access.repository, body.target_commitish ?? "main")) throw validationFailed(DOC, { resource: "Release", code: "invalid", field: "target_commitish" });
    return { status: 200, body: notes(access.repository, body.tag_name, body.previous_tag_name) };
  });
}
