// Pull request routes on an installation token: list (filtered, paginated with a Link header) and
// update-branch, with GitHub's status codes and messages.
// https://docs.github.com/rest/pulls/pulls#list-pull-requests
// https://docs.github.com/rest/pulls/pulls#get-a-pull-request
// https://docs.github.com/rest/pulls/pulls#update-a-pull-request-branch
import { DOCS_ROOT, githubError, SimulatorHttpError } from "./router.js";
import { isoSeconds, repositoryJson } from "./github-state.js";
import { linkHeader, paginate } from "./pagination.js";
import { simpleUserJson } from "./rest-shapes.js";
import type { GitStore, PullRequestState } from "./git-state.js";
import type { RouteContext, Simulator } from "./types.js";

const DOC_LIST = `${DOCS_ROOT}/pulls/pulls#list-pull-requests`;
const DOC_GET = `${DOCS_ROOT}/pulls/pulls#get-a-pull-request`;
const DOC_UPDATE = `${DOCS_ROOT}/pulls/pulls#update-a-pull-request-branch`;
const NOT_ACCESSIBLE = "Resource not accessible by integration";
const LEVELS: Record<string, number> = { read: 1, write: 2 };
const DOC_SECONDARY = `${DOCS_ROOT}/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits`;
const SECONDARY_LIMIT = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0400:3C2B:1A2B3C:4D5E6F:65A0B1C2.";
/** The `.github/workflows/` files that differ between two trees. */
const changedWorkflows = (before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): string[] =>
  [...new Set([...before.keys(), ...after.keys()])].filter((path) => path.startsWith(".github/workflows/") && before.get(path) !== after.get(path)).sort();

export function registerPullRoutes(sim: Simulator, store: GitStore): void {
  /** The token must reach the repository (else 404, as GitHub hides it) and hold the permission. */
  const authorise = (ctx: RouteContext, level: "read" | "write", doc: string) => {
    const { issued, installation } = sim.requireInstallation(ctx);
    const { owner = "", repo = "" } = ctx.params;
    const covered = owner.toLowerCase() === installation.account.toLowerCase()
      && (issued.repositories === "all" || issued.repositories.some((r) => r.toLowerCase() === repo.toLowerCase()));
    if (!covered) throw githubError(404, "Not Found", doc);
    const held = LEVELS[issued.permissions.pull_requests ?? ""] ?? 0;
    if (held < LEVELS[level]!) throw githubError(403, NOT_ACCESSIBLE, doc);
    return { repository: sim.repository(owner, repo).fullName, installationId: installation.id, workflows: issued.permissions.workflows ?? "" };
  };

  const pullJson = (pull: PullRequestState): Record<string, unknown> => {
    const repo = sim.repository(...(pull.repository.split("/") as [string, string]));
    const repoJson = repositoryJson(repo, { apiBase: sim.apiBase, url: sim.url });
    const stamp = isoSeconds(pull.createdAt);
    const api = `${sim.apiBase}/repos/${repo.fullName}`;
    const self = `${api}/pulls/${pull.number}`;
    const html = `${sim.url}/${repo.fullName}/pull/${pull.number}`;
    const urls = { apiBase: sim.apiBase, url: sim.url };
    const owner = simpleUserJson(repo.owner, repo.ownerId, "Organization", urls);
    const link = (href: string) => ({ href });
    return {
      url: self,
      id: repo.id * 1000 + pull.number,
      node_id: `PR_${Buffer.from(`${repo.id}:${pull.number}`).toString("base64url")}`,
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      issue_url: `${api}/issues/${pull.number}`,
      commits_url: `${self}/commits`,
      review_comments_url: `${self}/comments`,
      review_comment_url: `${api}/pulls/comments{/number}`,
      comments_url: `${api}/issues/${pull.number}/comments`,
      statuses_url: `${api}/statuses/${pull.headSha}`,
      number: pull.number,
      state: pull.state,
      locked: false,
      title: pull.title,
      user: simpleUserJson("mona", 583231, "User", urls),
      body: null,
      labels: [],
      milestone: null,
      assignee: null,
      assignees: [],
      requested_reviewers: [],
      requested_teams: [],
      created_at: stamp,
      updated_at: stamp,
      closed_at: pull.state === "closed" ? stamp : null,
      merged_at: null,
      merge_commit_sha: null,
      draft: false,
      head: { label: `${repo.owner}:${pull.head}`, ref: pull.head, sha: pull.headSha, user: owner, repo: repoJson },
      base: { label: `${repo.owner}:${pull.base}`, ref: pull.base, sha: store.head(repo.fullName, pull.base) ?? pull.mergedBaseSha, user: owner, repo: repoJson },
      _links: {
        self: link(self),
        html: link(html),
        issue: link(`${api}/issues/${pull.number}`),
        comments: link(`${api}/issues/${pull.number}/comments`),
        review_comments: link(`${self}/comments`),
        review_comment: link(`${api}/pulls/comments{/number}`),
        commits: link(`${self}/commits`),
        statuses: link(`${api}/statuses/${pull.headSha}`),
      },
      author_association: "MEMBER",
      auto_merge: null,
      active_lock_reason: null,
    };
  };

  sim.route("GET", "/repos/:owner/:repo/pulls", (ctx) => {
    const { repository } = authorise(ctx, "read", DOC_LIST);
    const state = ctx.query.state ?? "open";
    if (!["open", "closed", "all"].includes(state)) {
      throw githubError(422, "Validation Failed", DOC_LIST);
    }
    const matching = [...store.pullsOf(repository).values()]
      .filter((p) => state === "all" || p.state === state)
      .filter((p) => ctx.query.base === undefined || p.base === ctx.query.base)
      .sort((a, b) => b.number - a.number); // default sort: created, newest first
    const page = paginate(matching, ctx.query);
    const self = new URL(`${sim.apiBase}/repos/${repository}/pulls`);
    for (const [name, value] of Object.entries(ctx.query)) if (name !== "page" && name !== "per_page") self.searchParams.set(name, value);
    const link = linkHeader(self.toString(), page.page, page.perPage, page.total);
    return { status: 200, headers: link ? { link } : undefined, body: page.items.map(pullJson) };
  });

  sim.route("GET", "/repos/:owner/:repo/pulls/:number", (ctx) => {
    const { repository } = authorise(ctx, "read", DOC_GET);
    const pull = store.pullsOf(repository).get(Number(ctx.params.number));
    if (!pull) throw githubError(404, "Not Found", DOC_GET);
    return { status: 200, body: pullJson(pull) };
  });

  sim.route("PUT", "/repos/:owner/:repo/pulls/:number/update-branch", (ctx) => {
    const { repository, installationId, workflows: workflowsLevel } = authorise(ctx, "write", DOC_UPDATE);
    const pull = store.pullsOf(repository).get(Number(ctx.params.number));
    if (!pull) throw githubError(404, "Not Found", DOC_UPDATE);
    const body = (ctx.body ?? {}) as { expected_head_sha?: unknown };
    const expected = typeof body.expected_head_sha === "string" ? body.expected_head_sha : undefined;
    const answer = (status: number, message: string) => {
      store.updateBranchCalls.push({ repository, number: pull.number, expectedHeadSha: expected, status, at: sim.now(), installationId });
      if (status !== 202) throw githubError(status, message, DOC_UPDATE);
      return { status, body: { message, url: `https://github.com/${repository}/pull/${pull.number}` } };
    };
    // Content creation (update-branch merges) per installation: GitHub's secondary limits, 80 a
    // minute and 500 an hour; past either, 403 with retry-after, and nothing is done.
    const now = sim.now();
    const made = store.updateBranchCalls.filter((c) => c.installationId === installationId && c.status === 202 && c.at > now - 3_600_000).map((c) => c.at);
    const refuse = (retryAfterSeconds: number) => {
      store.updateBranchCalls.push({ repository, number: pull.number, expectedHeadSha: expected, status: 403, at: now, installationId, rateLimited: true });
      throw new SimulatorHttpError(403, { message: SECONDARY_LIMIT, documentation_url: DOC_SECONDARY, status: "403" }, { "retry-after": String(retryAfterSeconds) });
    };
    if (made.filter((at) => at > now - 60_000).length >= store.contentCreationPerMinute) refuse(60);
    if (made.length >= store.contentCreationPerHour) {
      // The calls are recorded in time order: once the oldest `made.length - perHour + 1` are an hour old, one more fits.
      const freesAt = made[made.length - store.contentCreationPerHour]! + 3_600_000;
      refuse(Math.max(1, Math.ceil((freesAt - now) / 1000)));
    }
    if (expected !== undefined && expected !== pull.headSha) return answer(422, "expected head sha didn't match current head ref.");
    if (pull.state !== "open") return answer(422, "Pull request is not open.");
    if (pull.updateBranchFailure) return answer(422, pull.updateBranchFailure);
    const baseHead = store.head(repository, pull.base);
    if (!baseHead || baseHead === pull.mergedBaseSha) return answer(422, "There are no new commits on the base branch.");
    // The merge would write the base's workflow changes into the head branch: an App needs
    // `workflows: write` for that.
    const base = store.commits.get(baseHead)!;
    const merged0 = store.commits.get(pull.mergedBaseSha);
    const workflows = changedWorkflows(merged0?.files ?? new Map(), base.files);
    if (workflows.length > 0 && workflowsLevel !== "write") {
      return answer(403, `refusing to allow a GitHub App to create or update workflow \`${workflows[0]}\` without \`workflows\` permission`);
    }
    // GitHub merges asynchronously; the simulator merges at once (a merge commit on the head).
    const merged = store.advance(repository, pull.head, new Map(base.files), { headline: `Merge branch '${pull.base}' into ${pull.head}` }, { name: "GitHub", email: "noreply@github.com" }, true, [baseHead]);
    pull.headSha = merged.oid;
    pull.mergedBaseSha = baseHead;
    return answer(202, "Updating pull request branch.");
  });
}
