// No platform or issuer call follows a redirect (security review item 7). The simulator answers
// 301/302/307/308 pointing at a second loopback server — another origin — that records whether it
// was reached: for the GraphQL commit (/sign, the file contents), the crawl (/releases), the pull
// request listing and update-branch (/webhook), the installation lookup, the mint and the key set.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { INSTALLED_PERMISSIONS, type TokenFixture } from "./support/fixtures.js";
import { pushAudit, sendPush } from "./support/push-audit.js";

const TRIGGER = "redirects-trigger-secret-0123-012345";
const HOOK = "redirects-webhook-secret-4567-012345";
const ACCOUNT = "redirect-org";
let installationId: number;
let counter = 0;
const secrets: string[] = [TRIGGER, HOOK];

const t = brokerPerTest({
  secrets,
  env: { PROCESS_TRIGGER_SECRET: TRIGGER, HOST_WEBHOOK_SECRET: HOOK, AUTO_UPDATE_BRANCHES: "on" },
  setup: (fx) => {
    installationId = fx.sim.addInstallation({ appId: fx.app.id, account: ACCOUNT, permissions: { ...INSTALLED_PERMISSIONS }, repositories: "all" });
  },
});

/** Another origin: answers 200 `{}` to anything and remembers what reached it. */
interface Caught {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}
let elsewhere: Server;
let elsewhereUrl: string;
const caught: Caught[] = [];
beforeAll(async () => {
  elsewhere = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      caught.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
  elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
});
afterAll(async () => {
  elsewhere.closeAllConnections();
  await new Promise<void>((resolve) => elsewhere.close(() => resolve()));
});

const STATUSES = [301, 302, 307, 308] as const;
type Respond = Parameters<TokenFixture["sim"]["faults"]["add"]>[0]["respond"];
const redirectTo = (status: number, path: string): Respond => ({ status, headers: { location: `${elsewhereUrl}${path}` }, body: { message: "Moved" } });
const count = (method: string, path: RegExp) => t.fx.sim.requests.filter((r) => r.method === method && path.test(r.path)).length;

function expectNothingLeft(): void {
  expect(caught).toEqual([]);
}

describe("the test's other origin", () => {
  it("is reached by a fetch that follows redirects (so the assertions below can fail)", async () => {
    t.fx.sim.faults.add({ method: "GET", path: "/probe", times: 1, respond: redirectTo(307, "/probe") });
    const response = await fetch(`${t.fx.sim.apiBase}/probe`);
    await response.text();
    expect(caught.map((c) => c.url)).toEqual(["/probe"]);
    caught.length = 0;
  });
});

describe.each(STATUSES)("a %i to another origin", (status) => {
  it("/sign: the commit (file contents, token) is not re-sent there → 502 sign_failed", async () => {
    caught.length = 0;
    const branch = `redirect-${++counter}`;
    const head = t.fx.sim.git.createBranch("octo-org/app", branch, { files: { VERSION: "1\n" } });
    t.fx.sim.faults.add({ method: "POST", path: "/graphql", respond: redirectTo(status, "/graphql") });
    const res = await postJson(
      `${t.broker.url}/sign`,
      { repo: "octo-org/app", branch, expected_head_oid: head, message: { headline: "release" }, additions: [{ path: "VERSION", contents: Buffer.from("secret file contents\n").toString("base64") }] },
      { authorization: `Bearer ${TRIGGER}` },
    );
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ error: "sign_failed" });
    expect(count("POST", /^\/graphql$/)).toBe(1); // refused, not retried
    expectNothingLeft();
  });

  it("/releases: the installation listing is not followed → 500 internal_error", async () => {
    caught.length = 0;
    t.fx.sim.faults.add({ method: "GET", path: "/app/installations", respond: redirectTo(status, "/app/installations") });
    const response = await fetch(`${t.broker.url}/releases`, { headers: { authorization: `Bearer ${TRIGGER}` } });
    const body = (await response.json()) as Record<string, unknown>;
    expect(response.status).toBe(500);
    expect(body).toEqual({ error: "internal_error" });
    expect(count("GET", /^\/app\/installations$/)).toBe(1);
    expectNothingLeft();
  });

  it("/releases: the releases query is not followed; the repositories are reported failed", async () => {
    caught.length = 0;
    t.fx.sim.faults.add({ method: "POST", path: "/graphql", respond: redirectTo(status, "/graphql") });
    const response = await fetch(`${t.broker.url}/releases`, { headers: { authorization: `Bearer ${TRIGGER}` } });
    await response.text();
    expect(count("POST", /^\/graphql$/)).toBeGreaterThan(0);
    expectNothingLeft();
  });

  it("/webhook: the pull request listing and update-branch are not followed", async () => {
    caught.length = 0;
    const listed = repoWithPulls(1);
    t.fx.sim.faults.add({ method: "GET", path: /\/pulls$/, times: 1, respond: redirectTo(status, "/pulls") });
    const first = await push(listed);
    expect(first.status).toBe(202); // queued; the outcome is the job's audit line
    expect(await pushAudit(t.broker.logs, listed)).toMatchObject({ error: "internal_error", updated: [], failed: [] });
    expect(count("PUT", /update-branch$/)).toBe(0);

    const updated = repoWithPulls(2);
    t.fx.sim.faults.add({ method: "PUT", path: /\/pulls\/1\/update-branch$/, respond: redirectTo(status, "/update-branch") });
    const second = await push(updated);
    expect(second.status).toBe(202);
    const outcome = await pushAudit(t.broker.logs, updated);
    expect(outcome.updated).toEqual([2]);
    expect((outcome.failed as Array<{ number: number }>).map((f) => f.number)).toEqual([1]);
    expectNothingLeft();
  });

  it("/token: the installation lookup is not followed", async () => {
    caught.length = 0;
    t.fx.sim.faults.add({ method: "GET", path: "/repos/octo-org/app/installation", respond: redirectTo(status, "/repos/octo-org/app/installation") });
    const res = await exchange();
    expect(res.status).toBe(500);
    expect(res.body.error).toBe("github_installation_lookup_failed");
    expect(count("GET", /\/installation$/)).toBe(1); // refused, not retried
    expect(res.body.token).toBeUndefined();
    expect(count("POST", /\/access_tokens$/)).toBe(0);
    expectNothingLeft();
  });

  it("/token: the mint (App JWT, permissions) is not followed", async () => {
    caught.length = 0;
    t.fx.sim.faults.add({ method: "POST", path: /\/access_tokens$/, respond: redirectTo(status, "/access_tokens") });
    const res = await exchange();
    expect(res.status).toBe(502);
    expect(res.body.error).toBe("installation_token_failed");
    expect(res.body.token).toBeUndefined();
    expect(count("POST", /\/access_tokens$/)).toBe(1);
    expectNothingLeft();
  });

  it("/token: the issuer's key set is not followed", async () => {
    caught.length = 0;
    const jwksPath = new URL(t.fx.sim.oidc.jwksUri).pathname;
    t.fx.sim.faults.add({ method: "GET", path: jwksPath, respond: redirectTo(status, "/jwks") });
    const res = await exchange();
    expect(res.status).toBe(503);
    expect(res.body.error).toBe("oidc_key_fetch_failed");
    expect(res.body.token).toBeUndefined();
    expect(count("POST", /\/access_tokens$/)).toBe(0);
    expectNothingLeft();
  });
});

async function exchange() {
  const oidcToken = await t.fx.sim.oidc.sign({});
  secrets.push(oidcToken);
  const response = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
  if (typeof response.body?.token === "string") secrets.push(response.body.token);
  return response;
}

function repoWithPulls(pulls: number): string {
  const name = `repo-${++counter}`;
  const repository = `${ACCOUNT}/${name}`;
  t.fx.sim.repository(ACCOUNT, name);
  t.fx.sim.git.createBranch(repository, "main");
  for (let i = 0; i < pulls; i += 1) {
    const head = `feature-${i}`;
    t.fx.sim.git.createBranch(repository, head);
    t.fx.sim.git.addPullRequest(repository, { base: "main", head });
  }
  t.fx.sim.git.push(repository, "main", { files: { "NEWS.md": `push ${counter}\n` } });
  return repository;
}

function push(repository: string) {
  return sendPush(t.broker.url, HOOK, repository, installationId);
}
