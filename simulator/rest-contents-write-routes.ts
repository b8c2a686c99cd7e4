// Creating or updating one file through the contents API: a new commit on the branch (default
// `main`) by the App's bot, signed by GitHub as an App's API commits are. Updating a file needs
// its current blob `sha` (GitHub's 422 without it, 409 when it is stale); `contents` write.
// https://docs.github.com/rest/repos/contents#create-or-update-file-contents
import { DOCS_ROOT, githubError } from "./router.js";
import { blobSha } from "./rest-contents-routes.js";
import { botAuthor, gitCommitJson } from "./rest-git-data-routes.js";
import { authoriseRepository } from "./repo-access.js";
import type { GitStore } from "./git-state.js";
import type { Simulator } from "./types.js";

const DOC = `${DOCS_ROOT}/repos/contents#create-or-update-file-contents`;
const DEFAULT_BRANCH = "main";

export function registerContentsWriteRoutes(sim: Simulator, store: GitStore): void {
  sim.route("PUT", "/repos/:owner/:repo/contents/*", (ctx) => {
    const { repository, app } = authoriseRepository(sim, store, ctx, "write", DOC);
    const path = ctx.params.rest ?? "";
    const body = ctx.body as { message: string; content: string; sha?: string; branch?: string; author?: { name: string; email: string } };
    const branch = body.branch ?? DEFAULT_BRANCH;
    const head = store.head(repository, branch);
    if (!head) throw githubError(404, `Branch ${branch} not found`, DOC);
    const current = store.commits.get(head)!.files.get(path);
    if (current !== undefined) {
      const currentSha = blobSha(Buffer.from(current, "base64"));
      if (body.sha === undefined) throw githubError(422, `Invalid request.\n\n"sha" wasn't supplied.`, DOC);
      if (body.sha !== currentSha) throw githubError(409, `${path} does not match ${body.sha}`, DOC);
    }
    const b64 = body.content.replace(/\s/g, "");
    const [headline = "", ...rest] = body.message.split("\n");
    const bot = botAuthor(sim, app?.id);
    const commit = store.advance(repository, branch, new Map([[path, b64]]), { headline, body: rest.join("\n").replace(/^\n/, "") }, body.author ?? bot, body.author === undefined);
    const sha = blobSha(Buffer.from(b64, "base64"));
    const api = `${sim.apiBase}/repos/${repository}`;
    const self = `${api}/contents/${path}?ref=${branch}`;
    const git = `${api}/git/blobs/${sha}`;
    const html = `${sim.url}/${repository}/blob/${branch}/${path}`;
    return {
      status: current === undefined ? 201 : 200,
      body: {
        content: {
          name: path.slice(path.lastIndexOf("/") + 1),
          path,
          sha,
          size: Buffer.from(b64, "base64").length,
          url: self,
          html_url: html,
          git_url: git,
          download_url: `${sim.url}/raw/${repository}/${branch}/${path}`,
          type: "file",
          _links: { self, git, html },
        },
        commit: gitCommitJson(sim, store, commit),
      },
    };
  });
}
