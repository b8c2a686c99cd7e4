// What a check run on a pull request needs: the pull request's changed files and creating a
// check run. Enough for the broker's policy check (server/policy/policy-check-run.ts).
// https://docs.github.com/rest/pulls/pulls#list-pull-requests-files
// https://docs.github.com/rest/checks/runs#create-a-check-run
import { DOCS_ROOT, githubError } from "./router.js";
import type { GitStore } from "./git-state.js";
import type { RouteContext, RouteResult, Simulator } from "./types.js";

const DOC_FILES = `${DOCS_ROOT}/pulls/pulls#list-pull-requests-files`;
const DOC_CHECKS = `${DOCS_ROOT}/checks/runs#create-a-check-run`;
const LEVELS: Record<string, number> = { read: 1, write: 2 };

/** A check run as created: what tests read back. */
export interface CheckRunState {
  id: number;
  repository: string;
  name: string;
  headSha: string;
  status: string;
  conclusion: string | null;
  output: { title?: string; summary?: string; text?: string } | null;
  installationId: number;
}

export function registerChecksRoutes(sim: Simulator, store: GitStore, checkRuns: CheckRunState[]): void {
  const reach = (ctx: RouteContext, permission: string, level: "read" | "write", doc: string) => {
    const { issued, installation } = sim.requireInstallation(ctx);
    const { owner = "", repo = "" } = ctx.params;
    const covered = owner.toLowerCase() === installation.account.toLowerCase()
      && (issued.repositories === "all" || issued.repositories.some((r) => r.toLowerCase() === repo.toLowerCase()));
    if (!covered) throw githubError(404, "Not Found", doc);
    if ((LEVELS[issued.permissions[permission] ?? ""] ?? 0) < LEVELS[level]!) throw githubError(403, "Resource not accessible by integration", doc);
    return { repository: sim.repository(owner, repo).fullName, installationId: installation.id };
  };

  sim.route("GET", "/repos/:owner/:repo/pulls/:number/files", (ctx): RouteResult => {
    const { repository } = reach(ctx, "pull_requests", "read", DOC_FILES);
    const pull = store.pullsOf(repository).get(Number(ctx.params.number));
    if (!pull) throw githubError(404, "Not Found", DOC_FILES);
    const base = store.commits.get(pull.mergedBaseSha)?.files ?? new Map<string, string>();
    const head = store.commits.get(store.head(repository, pull.head) ?? pull.headSha)?.files ?? new Map<string, string>();
    const paths = [...new Set([...base.keys(), ...head.keys()])].filter((path) => base.get(path) !== head.get(path)).sort();
    return {
      status: 200,
      body: paths.map((filename) => {
        const status = !base.has(filename) ? "added" : !head.has(filename) ? "removed" : "modified";
        return {
          sha: "0".repeat(40), filename, status, additions: 1, deletions: status === "added" ? 0 : 1, changes: 2,
          blob_url: `${sim.url}/${repository}/blob/${pull.headSha}/${filename}`,
          raw_url: `${sim.url}/${repository}/raw/${pull.headSha}/${filename}`,
          contents_url: `${sim.apiBase}/repos/${repository}/contents/${filename}?ref=${pull.headSha}`,
        };
      }),
    };
  });

  sim.route("POST", "/repos/:owner/:repo/check-runs", (ctx): RouteResult => {
    const { repository, installationId } = reach(ctx, "checks", "write", DOC_CHECKS);
    const body = ctx.body as { name: string; head_sha: string; status?: string; conclusion?: string; output?: CheckRunState["output"] };
    const run: CheckRunState = {
      id: checkRuns.length + 1, repository, name: body.name, headSha: body.head_sha, status: body.status ?? "queued",
      conclusion: body.conclusion ?? null, output: body.output ?? null, installationId,
    };
    checkRuns.push(run);
    return {
      status: 201,
      body: {
        id: run.id, head_sha: run.headSha, node_id: `CR_${run.id}`, external_id: "", name: run.name, status: run.status, conclusion: run.conclusion,
        url: `${sim.apiBase}/repos/${repository}/check-runs/${run.id}`, html_url: `${sim.url}/${repository}/runs/${run.id}`, details_url: null,
        started_at: new Date(sim.now()).toISOString(), completed_at: run.status === "completed" ? new Date(sim.now()).toISOString() : null,
        output: { title: run.output?.title ?? null, summary: run.output?.summary ?? null, text: run.output?.text ?? null, annotations_count: 0, annotations_url: `${sim.apiBase}/repos/${repository}/check-runs/${run.id}/annotations` },
        check_suite: { id: run.id }, app: null, pull_requests: [],
      },
    };
  });
}
