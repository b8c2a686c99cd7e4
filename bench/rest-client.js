// `node bench/rest-client.js [client|octokit|client-fetch] [CALLS]`: this process's CPU per platform call (a mint:
// POST /app/installations/1/access_tokens with a body, a 201 JSON answer of GitHub's size, the
// repository's object included; `BENCH_NO_REPOSITORY=1`: without it, as the earlier figures were made) made
// by the broker's hand-made platform client (server/github/platform-client.ts: one fetch, one
// JSON.parse) or by plain @octokit/request, its library alternative, both over the broker's transport
// (server/upstream-fetch.ts; `client-fetch`: the client over Node's fetch instead, the transport's
// library alternative), 8 at a time, against an answering server in a process of its own (its CPU
// is not counted). `BENCH_BUILD=<dir>` loads the client from another build (to compare two commits).
// Figures: docs/operations.md#fast-paths.
import { fork } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { request as octokitRequest } from "@octokit/request";

if (process.argv[2] === "server") {
  const { createServer } = await import("node:http");
  // A one-repository mint's answer, as /token asks for it: GitHub lists the repository, its full
  // object (the simulator's, 4.5 KB of JSON) — most of the answer's bytes and of its parsing.
  const { repositoryJson } = await import(pathToFileURL(`${resolve(process.env.BENCH_BUILD ?? "build")}/simulator/github-state.js`).href);
  const repository = repositoryJson({ id: 101, owner: "octo-org", ownerId: 7, name: "app", fullName: "octo-org/app" }, { apiBase: "https://api.github.com", url: "https://github.com" });
  const answer = JSON.stringify({
    token: `ghs_${"x".repeat(36)}`, expires_at: "2030-01-01T00:00:00Z",
    permissions: { contents: "write", metadata: "read", pull_requests: "write" }, repository_selection: "selected",
    ...(process.env.BENCH_NO_REPOSITORY ? {} : { repositories: [repository] }),
  });
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(201, { "content-type": "application/json; charset=utf-8", "x-ratelimit-remaining": "4999" }).end(answer));
  }).listen(0, "127.0.0.1", () => process.send(server.address().port));
} else {
  const [mode = "client", calls = "4000"] = process.argv.slice(2);
  const build = resolve(process.env.BENCH_BUILD ?? "build");
  const { createPlatformClient } = await import(pathToFileURL(`${build}/server/github/platform-client.js`).href);
  const { upstreamFetch } = await import(pathToFileURL(`${build}/server/upstream-fetch.js`).href);
  const child = fork(new URL(import.meta.url).pathname, ["server"]);
  const port = await new Promise((done) => child.once("message", done));
  const apiBase = `http://127.0.0.1:${port}`;
  const body = { repositories: ["app"], permissions: { contents: "write" } };
  const client = createPlatformClient({ apiBase, fetch: mode === "client-fetch" ? globalThis.fetch : upstreamFetch, timeoutMs: 10_000 });
  const octokit = octokitRequest.defaults({ baseUrl: apiBase, request: { fetch: upstreamFetch }, headers: { "x-github-api-version": "2022-11-28" } });
  const one =
    mode !== "octokit"
      ? () => client({ method: "POST", path: "/app/installations/1/access_tokens", bearer: "app-jwt", body })
      : () => octokit("POST /app/installations/{installation_id}/access_tokens", { installation_id: 1, headers: { authorization: "Bearer app-jwt" }, ...body });
  const run = async (count) => {
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < count) {
        next += 1;
        const answer = await one();
        if (answer.status !== 201) throw new Error(`status ${answer.status}`);
      }
    }));
  };
  await run(Number(calls) / 4);
  const before = process.cpuUsage();
  await run(Number(calls));
  const used = process.cpuUsage(before);
  process.stdout.write(`${JSON.stringify({ mode, calls: Number(calls), cpuMsPerCall: Number(((used.user + used.system) / 1000 / Number(calls)).toFixed(4)) })}\n`);
  child.kill();
  process.exit(0);
}
