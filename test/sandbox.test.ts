// startSandbox (tokensmith/testing): the simulator seeded with a world and a broker pointed at it,
// on loopback; a job's OIDC token, the bundled action as the runner runs it, the platform's views.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startSandbox, type Sandbox } from "../server/sandbox/index.js";
import { DEFAULT_WORLD, parseWorld } from "../server/sandbox/world.js";
import { postJson } from "./support/broker.js";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox.close());

describe("startSandbox", () => {
  it("listens on loopback and hands out the runner's variables", () => {
    expect(sandbox.brokerUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(new URL(sandbox.runnerEnv.ACTIONS_ID_TOKEN_REQUEST_URL!).hostname).toBe("127.0.0.1");
    expect(sandbox.runnerEnv.GITHUB_REPOSITORY).toBe("octo-org/app");
    expect(sandbox.processTriggerSecret).toMatch(/^fake-/);
    expect(sandbox.webhookSecret).toMatch(/^fake-/);
  });

  it("mintJobToken: the job's OIDC token buys an installation token for that repository", async () => {
    const oidcToken = await sandbox.mintJobToken({ repository: "octo-org/docs", ref: "refs/tags/v1.0.0", workflow: "publish" });
    const claims = JSON.parse(Buffer.from(oidcToken.split(".")[1]!, "base64url").toString("utf8")) as Record<string, unknown>;
    expect(claims).toMatchObject({ repository: "octo-org/docs", ref: "refs/tags/v1.0.0", workflow: "publish", aud: "tokensmith", sub: "repo:octo-org/docs:ref:refs/tags/v1.0.0" });
    const { status, body } = await postJson(`${sandbox.brokerUrl}/token`, { oidcToken, owner: "octo-org", repo: "docs" });
    expect(status).toBe(200);
    expect(body.repository).toBe("octo-org/docs");
    expect(sandbox.platform.mints.at(-1)).toMatchObject({ installationId: sandbox.installationId, status: 201, repositories: ["docs"] });
  });

  it("the runner's ID-token endpoint answers with a token the broker accepts", async () => {
    const response = await fetch(`${sandbox.runnerEnv.ACTIONS_ID_TOKEN_REQUEST_URL}&audience=tokensmith`, { headers: { authorization: `Bearer ${sandbox.runnerEnv.ACTIONS_ID_TOKEN_REQUEST_TOKEN}` } });
    const { value } = (await response.json()) as { value: string };
    expect((await postJson(`${sandbox.brokerUrl}/token`, { oidcToken: value, owner: "octo-org", repo: "app" })).status).toBe(200);
  });

  it("runAction: the bundled action gets a token, masks it, and its post step revokes it", async () => {
    const before = sandbox.platform.revocations.length;
    const run = await sandbox.runAction({ job: { repository: "octo-org/tools" }, post: true });
    expect(run.exitCode).toBe(0);
    expect(run.outputs.repository).toBe("octo-org/tools");
    expect(run.log).toContain(`::add-mask::${run.outputs.token}`);
    expect(sandbox.platform.revocations.slice(before)).toEqual([{ status: 204 }]);
  });

  it("runAction: a job of a repository the App is not installed on fails the step", async () => {
    const run = await sandbox.runAction({ job: { repository: "octo-org/elsewhere" } });
    expect(run.exitCode).not.toBe(0);
    expect(run.outputs.token).toBeUndefined();
  });

  it("platform: commits through /sign, update-branch after a push, the world's releases", async () => {
    const head = sandbox.simulator.git.head("octo-org/app", "main");
    const sign = await postJson(
      `${sandbox.brokerUrl}/sign`,
      { repo: "octo-org/app", branch: "main", expected_head_oid: head, message: { headline: "chore: release" }, additions: [{ path: "VERSION", contents: Buffer.from("2\n").toString("base64") }] },
      { authorization: `Bearer ${sandbox.processTriggerSecret}` },
    );
    expect(sign.status).toBe(200);
    expect(sandbox.platform.commits.at(-1)).toMatchObject({ repository: "octo-org/app", headline: "chore: release", parents: [head], signedByGitHub: true });
    expect(sandbox.platform.releases.map((r) => `${r.repository}@${r.tag}`)).toEqual(["octo-org/app@v1.0.0", "octo-org/app@v1.1.0", "octo-org/docs@v0.9.0"]);
    const releases = await fetch(`${sandbox.brokerUrl}/releases`, { headers: { authorization: `Bearer ${sandbox.processTriggerSecret}` } });
    expect(releases.status).toBe(200);
  });
});

describe("startSandbox({ world })", () => {
  it("seeds the given world and closes twice without error", async () => {
    const own = await startSandbox({ world: { organisation: "acme", repositories: [{ name: "rocket", branches: { trunk: { "a.txt": "a" } }, pullRequests: [{ base: "trunk" }] }] } });
    try {
      expect(own.runnerEnv.GITHUB_REPOSITORY).toBe("acme/rocket");
      expect(own.simulator.git.files("acme/rocket", "trunk")).toEqual({ "a.txt": "a" });
      const run = await own.runAction();
      expect(run.exitCode).toBe(0);
      expect(run.outputs.repository).toBe("acme/rocket");
    } finally {
      await own.close();
      await own.close();
    }
  });

  it.each([
    [null, "must be a JSON object"],
    [{ repositories: [{ name: "a" }] }, "organisation"],
    [{ organisation: "o", repositories: [] }, "repositories must be a non-empty array"],
    [{ organisation: "o", repositories: [{ name: "a/b" }] }, "repositories[0].name"],
    [{ organisation: "o", permissions: { contents: "all" }, repositories: [{ name: "a" }] }, "permissions.contents"],
    [{ organisation: "o", repositories: [{ name: "a", releases: [{}] }] }, "releases"],
  ])("parseWorld refuses %j (%s)", (value, message) => {
    expect(() => parseWorld(value)).toThrow(message);
  });

  it("the default world passes its own check", () => {
    expect(parseWorld(DEFAULT_WORLD)).toBe(DEFAULT_WORLD);
  });
});
