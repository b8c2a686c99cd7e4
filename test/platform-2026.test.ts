// The platform as GitHub runs it in 2026, over HTTP through the broker: installation tokens in both
// formats (stateless `ghs_<app id>_<JWT>`, ~520 characters, the simulator's default, and classic
// `ghs_` + 36) on every path that handles one — the bundled action's mask, outputs and revocation,
// /sign, /releases, a webhook push job — with every REST request naming its API version; and OIDC
// `sub` in both forms (classic and immutable), matched by a policy written for both, while the
// broker decides on `repository` and its ids, never on `sub` (docs/policies.md#matching-sub). The
// bundled action runs on Node 24, the runner's runtime (action.yml: runs.using: node24), in a job
// of either `sub` form as well.
import { beforeAll, describe, expect, it } from "@jest/globals";
import { decodeJwt } from "jose";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { expectNoSecrets, INSTALLED_PERMISSIONS } from "./support/fixtures.js";
import { runStep, type StepResult } from "./support/action-runner.js";
import { node24 } from "./support/action-node24.js";
import { runnerJobEnv } from "./support/runner-env.js";
import { pushAudit, sendPush } from "./support/push-audit.js";
import type { TokenFormat } from "../simulator/index.js";

const TRIGGER = "platform-2026-trigger-secret-0123456";
const HOOK = "platform-2026-webhook-secret-0123456";
const HOOK_ORG = "hooks-2026";
let hookInstallation: number;
let node = "";
beforeAll(() => {
  node = node24();
}, 360_000);

const t = brokerPerTest({
  secrets: [TRIGGER, HOOK],
  env: { PROCESS_TRIGGER_SECRET: TRIGGER, HOST_WEBHOOK_SECRET: HOOK, AUTO_UPDATE_BRANCHES: "true", UPDATE_BRANCH_PER_MINUTE: "1000000", UPDATE_BRANCH_PER_HOUR: "1000000" },
  setup: (fx) => {
    hookInstallation = fx.sim.addInstallation({ appId: fx.app.id, account: HOOK_ORG, permissions: { ...INSTALLED_PERMISSIONS }, repositories: "all" });
    fx.sim.git.contentCreationPerMinute = Number.POSITIVE_INFINITY;
    fx.sim.git.contentCreationPerHour = Number.POSITIVE_INFINITY;
  },
});

const SHAPES: Record<TokenFormat, RegExp> = {
  classic: /^ghs_[A-Za-z0-9]{36}$/,
  stateless: /^ghs_\d+_eyJ[A-Za-z0-9_]+\.eyJ[A-Za-z0-9_]+\.[A-Za-z0-9_]{300,}$/,
};

/** Tokens the platform minted in the requests recorded since this test began. */
const mintedTokens = () =>
  t.fx.sim.requests
    .filter((r) => r.method === "POST" && /\/access_tokens$/.test(r.path) && r.response?.status === 201)
    .map((r) => (r.response!.body as { token: string }).token);

/** Every REST request since this test began named 2022-11-28 (GitHub would take none as that; the broker always names it). */
function expectEveryRestRequestVersioned(): void {
  const rest = t.fx.sim.requests.filter((r) => r.apiVersion !== undefined);
  expect(rest.length).toBeGreaterThan(0);
  expect(rest.filter((r) => r.apiVersion !== "2022-11-28").map((r) => `${r.method} ${r.path}: ${String(r.apiVersion)}`)).toEqual([]);
}

/** `::add-mask::X` comes before any other line that holds X, and X is nowhere else in the log. */
function expectMaskedFirst(step: StepResult, secret: string): void {
  const mask = step.lines.indexOf(`::add-mask::${secret}`);
  expect(mask).toBeGreaterThanOrEqual(0);
  expect(step.lines.findIndex((line) => line.includes(secret))).toBe(mask);
  expectNoSecrets(step.lines.filter((line) => !line.startsWith("::add-mask::")), [secret]);
}

/** The step masked `token` first and saved it; its post step revokes it; every REST request was versioned. */
async function expectMaskedAndRevoked(main: StepResult, token: string, env: Record<string, string>): Promise<void> {
  expectMaskedFirst(main, token);
  expect(main.state.token).toBe(token);
  const post = await runStep("post", { node, env, state: main.state });
  expect(post.exitCode).toBe(0);
  expect(post.lines).toEqual(["tokensmith: token revoked"]);
  expect(t.fx.sim.tokens.get(token)!.revoked).toBe(true);
  expectEveryRestRequestVersioned();
}

describe.each<TokenFormat>(["classic", "stateless"])("%s installation tokens", (format) => {
  beforeAll(() => {
    t.fx.sim.tokenFormat = format;
  });

  it("the bundled action masks the token first, outputs it, and its post step revokes it", async () => {
    const env = runnerJobEnv(t.fx.sim);
    const main = await runStep("main", { node, inputs: { "auth-mode": "public-app", "broker-url": t.broker.url }, env });
    expect(main.exitCode).toBe(0);
    const token = main.outputs.token!;
    expect(token).toMatch(SHAPES[format]);
    expect(mintedTokens()).toEqual([token]);
    await expectMaskedAndRevoked(main, token, env);
  });

  it("/sign commits with it", async () => {
    const branch = `release-${format}`;
    const head = t.fx.sim.git.createBranch("octo-org/app", branch, { files: { VERSION: "1\n" } });
    const body = { repo: "octo-org/app", branch, expected_head_oid: head, message: { headline: "release" }, additions: [{ path: "VERSION", contents: Buffer.from("2\n").toString("base64") }] };
    const answer = await postJson(`${t.broker.url}/sign`, body, { authorization: `Bearer ${TRIGGER}` });
    expect(answer.status).toBe(200);
    expect(t.fx.sim.git.files("octo-org/app", branch)).toEqual({ VERSION: "2\n" });
    expect(mintedTokens()).toHaveLength(1);
    expect(mintedTokens()[0]).toMatch(SHAPES[format]);
    expectEveryRestRequestVersioned();
  });

  it("/releases crawls with it", async () => {
    const tag = `v-${format}`;
    t.fx.sim.releases.add("octo-org/app", { tagName: tag, createdAt: "2026-06-01T00:00:00Z" });
    const response = await fetch(`${t.broker.url}/releases`, { headers: { authorization: `Bearer ${TRIGGER}` } });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain(`"${tag}"`);
    const minted = mintedTokens();
    expect(minted.length).toBeGreaterThan(0);
    for (const token of minted) expect(token).toMatch(SHAPES[format]);
    expectEveryRestRequestVersioned();
  });

  it("a webhook push job updates the pull requests with it", async () => {
    const repository = `${HOOK_ORG}/repo-${format}`;
    t.fx.sim.repository(HOOK_ORG, `repo-${format}`);
    t.fx.sim.git.createBranch(repository, "main");
    const number = t.fx.sim.git.addPullRequest(repository, { base: "main" });
    t.fx.sim.git.push(repository, "main");
    expect((await sendPush(t.broker.url, HOOK, repository, hookInstallation)).status).toBe(202);
    expect(await pushAudit(t.broker.logs, repository)).toMatchObject({ updated: [number], failed: [] });
    expect(mintedTokens()).toHaveLength(1);
    expect(mintedTokens()[0]).toMatch(SHAPES[format]);
    expectEveryRestRequestVersioned();
  });
});

describe("OIDC sub, classic and immutable", () => {
  beforeAll(() => {
    t.fx.sim.tokenFormat = "stateless";
    t.fx.sim.git.createBranch("octo-org/app", "main", { files: { "README.md": "# app\n" } });
  });

  const exchange = async (claims: Record<string, unknown> = {}) =>
    postJson(`${t.broker.url}/token`, { oidcToken: await t.fx.sim.oidc.sign(claims), owner: "octo-org", repo: "app" });

  /** Runs `work` with octo-org/app's jobs getting the immutable sub, as a repository renamed or transferred after 2026-06-18. */
  async function immutable<T>(work: () => Promise<T>): Promise<T> {
    const repository = t.fx.sim.repository("octo-org", "app");
    repository.subjectFormat = "immutable";
    try {
      return await work();
    } finally {
      delete repository.subjectFormat;
    }
  }

  it("a policy listing both forms of sub matches a job's token in either", async () => {
    t.broker.env.TOKEN_POLICY = "required";
    t.fx.sim.git.setFile("octo-org/app", ".github/tokensmith.yml", [
      "rules:",
      "  - name: main-by-subject",
      "    if:",
      "      event: push",
      "      claims:",
      "        sub: [repo:octo-org/app:ref:refs/heads/main, repo:octo-org@654321/app@123456:ref:refs/heads/main]",
      "    permissions: {contents: read}",
      "",
    ].join("\n"));
    const classic = await exchange();
    expect(classic.status).toBe(200);
    const both = await immutable(async () => {
      const sub = decodeJwt(await t.fx.sim.oidc.sign({})).sub;
      expect(sub).toBe("repo:octo-org@654321/app@123456:ref:refs/heads/main");
      return exchange();
    });
    expect(both.status).toBe(200);
    expect(t.fx.sim.tokens.get(String(both.body.token))?.permissions).toEqual({ contents: "read" });
    expect(await exchange({ ref: "refs/heads/dev" })).toMatchObject({ status: 403, body: { error: "policy_denied" } });
  });

  /**
   * The tokens minted since this test began, split into the job's (scoped to repositories, what
   * /token asks for) and the broker's own policy readers (the whole installation, contents: read).
   */
  const mintedFor = () => {
    const mints = t.fx.sim.requests.filter((r) => r.method === "POST" && /\/access_tokens$/.test(r.path) && r.response?.status === 201);
    const scoped = (r: (typeof mints)[number]) => {
      const body = (r.body ?? {}) as Record<string, unknown>;
      return body.repositories !== undefined || body.repository_ids !== undefined;
    };
    const token = (r: (typeof mints)[number]) => (r.response!.body as { token: string }).token;
    return { job: mints.filter(scoped).map(token), readers: mints.filter((r) => !scoped(r)).map(token) };
  };

  /** The `sub` of every ID token the runner's endpoint handed out since this test began. */
  const runnerSubjects = () =>
    t.fx.sim.requests.filter((r) => r.path === "/_actions/idtoken" && r.response?.status === 200).map((r) => decodeJwt((r.response!.body as { value: string }).value).sub);

  it("the bundled action on Node 24, in a job whose sub is immutable: a policy naming only that form lets the token out (masked first, output, revoked by post)", async () => {
    t.broker.env.TOKEN_POLICY = "required";
    t.fx.sim.git.setFile("octo-org/app", ".github/tokensmith.yml", "rules:\n  - name: immutable-only\n    if: {event: push, claims: {sub: \"repo:octo-org@654321/app@123456:ref:refs/heads/main\"}}\n    permissions: {contents: read}\n");
    const env = runnerJobEnv(t.fx.sim);
    const main = await immutable(() => runStep("main", { node, inputs: { "auth-mode": "public-app", "broker-url": t.broker.url }, env }));
    expect(runnerSubjects()).toEqual(["repo:octo-org@654321/app@123456:ref:refs/heads/main"]);
    expect(main.exitCode).toBe(0);
    const token = main.outputs.token!;
    expect(token).toMatch(SHAPES.stateless);
    const minted = mintedFor();
    expect(minted.job).toEqual([token]);
    expect(main.lines.filter((line) => minted.readers.some((reader) => line.includes(reader)))).toEqual([]); // the broker's reader never reaches the job
    expect(t.fx.sim.tokens.get(token)?.permissions).toEqual({ contents: "read" });
    expect(JSON.parse(main.outputs.permissions!)).toEqual({ contents: "read" });
    await expectMaskedAndRevoked(main, token, env);
  });

  it("the bundled action on Node 24, in a job whose sub is immutable: a policy naming only the classic form refuses it (policy_denied), nothing minted, masked or output", async () => {
    t.broker.env.TOKEN_POLICY = "required";
    t.fx.sim.git.setFile("octo-org/app", ".github/tokensmith.yml", "rules:\n  - name: classic-only\n    if: {event: push, claims: {sub: \"repo:octo-org/app:ref:refs/heads/*\"}}\n    permissions: {contents: read}\n");
    const main = await immutable(() => runStep("main", { node, inputs: { "auth-mode": "public-app", "broker-url": t.broker.url }, env: runnerJobEnv(t.fx.sim) }));
    expect(runnerSubjects()).toEqual(["repo:octo-org@654321/app@123456:ref:refs/heads/main"]);
    expect(main.exitCode).toBe(1);
    const errors = main.lines.filter((line) => line.startsWith("::error::"));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("policy_denied");
    const minted = mintedFor();
    expect(minted.job).toEqual([]);
    expect(minted.readers).toHaveLength(1); // the broker read the policy, then refused
    expect(main.lines.filter((line) => minted.readers.some((reader) => line.includes(reader)))).toEqual([]);
    expect(main.lines.filter((line) => line.startsWith("::add-mask::ghs_"))).toEqual([]);
    expect(main.outputs).toEqual({});
    expect(main.state).toEqual({});
  });

  it("a policy with the classic form alone does not match the immutable sub (why docs/policies.md says to list both)", async () => {
    t.broker.env.TOKEN_POLICY = "required";
    t.fx.sim.git.setFile("octo-org/app", ".github/tokensmith.yml", "rules:\n  - name: classic-only\n    if: {event: push, claims: {sub: \"repo:octo-org/app:ref:refs/heads/*\"}}\n    permissions: {contents: read}\n");
    expect((await exchange()).status).toBe(200);
    expect(await immutable(() => exchange())).toMatchObject({ status: 403, body: { error: "policy_denied" } });
  });

  it("a policy on the ids instead of sub (docs/policies.md's better way) matches either form", async () => {
    t.broker.env.TOKEN_POLICY = "required";
    t.fx.sim.git.setFile("octo-org/app", ".github/tokensmith.yml", 'rules:\n  - name: by-id\n    if: {event: push, ref: refs/heads/main, claims: {repository_id: "123456", repository_owner_id: "654321"}}\n    permissions: {contents: read}\n');
    expect((await exchange()).status).toBe(200);
    expect((await immutable(() => exchange())).status).toBe(200);
    expect(await exchange({ repository_id: "999" })).toMatchObject({ status: 403 });
  });

  it("the broker decides on repository and its ids, never on sub: a sub naming another repository changes nothing", async () => {
    t.broker.env.TOKEN_POLICY = "off";
    for (const sub of ["repo:octo-org/other:ref:refs/heads/main", `repo:octo-org@654321/other@${t.fx.sim.repository("octo-org", "other").id}:ref:refs/heads/main`]) {
      const answer = await exchange({ sub });
      expect(answer.status).toBe(200);
      expect(answer.body.repository).toBe("octo-org/app");
      expect(t.fx.sim.tokens.get(String(answer.body.token))?.repositories).toEqual(["app"]);
    }
    // And the other way round: the job's repository is another, its sub says octo-org/app.
    const mismatch = await exchange({ repository: "octo-org/other", sub: "repo:octo-org/app:ref:refs/heads/main" });
    expect(mismatch).toMatchObject({ status: 403, body: { error: "repo_mismatch" } });
  });
});
