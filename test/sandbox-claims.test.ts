// A job's claims in tokensmith/testing (issue 41, item 4): GitHub's claims by GitHub's names, the
// defaults docs/sandbox.md#a-jobs-claims lists, claims of one's own under `custom`, and a name
// GitHub does not use refused at run time too (JavaScript callers; TypeScript refuses it at compile
// time: test/testing-types.ts). Mint.repositories is in IssuedToken.repositories' form.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startSandbox, type JobClaims, type Sandbox } from "../server/sandbox/index.js";
import { postJson } from "./support/broker.js";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox.close());

const payloadOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString("utf8")) as Record<string, unknown>;

describe("a job's claims", () => {
  it("are the documented defaults when the job names none", async () => {
    const claims = payloadOf(await sandbox.mintJobToken());
    expect(claims).toMatchObject({
      iss: sandbox.simulator.oidc.issuer,
      aud: "tokensmith",
      sub: "repo:octo-org/app:ref:refs/heads/main",
      repository: "octo-org/app",
      repository_owner: "octo-org",
      repository_id: String(sandbox.simulator.repository("octo-org", "app").id),
      repository_owner_id: String(sandbox.simulator.repository("octo-org", "app").ownerId),
      repository_visibility: "private",
      ref: "refs/heads/main",
      ref_type: "branch",
      ref_protected: "true",
      sha: "4f2c9a1e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39",
      head_ref: "",
      base_ref: "",
      event_name: "push",
      workflow: "release",
      workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/heads/main",
      job_workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/heads/main",
      run_id: "1001",
      run_number: "7",
      run_attempt: "1",
      actor: "octocat",
      actor_id: "583231",
      runner_environment: "github-hosted",
    });
    expect(claims.exp).toBe((claims.iat as number) + 300);
    expect(claims).not.toHaveProperty("environment");
  });

  it("follow the job: a tag's ref_type, an environment's sub, GitHub's claims by name, custom ones as given", async () => {
    const job: JobClaims = { repository: "octo-org/docs", ref: "refs/tags/v2.0.0", environment: "production", event_name: "release", actor: "hubot", custom: { deployment_tier: "gold" } };
    const claims = payloadOf(await sandbox.mintJobToken(job));
    expect(claims).toMatchObject({ repository: "octo-org/docs", ref_type: "tag", environment: "production", sub: "repo:octo-org/docs:environment:production", event_name: "release", actor: "hubot", deployment_tier: "gold" });
    expect(claims).not.toHaveProperty("custom");
    const removed = payloadOf(await sandbox.mintJobToken({ actor_id: undefined }));
    expect(removed).not.toHaveProperty("actor_id");
  });

  it("a name GitHub does not use is refused with the one it means, from mintJobToken and runAction", async () => {
    const misspelt = { event: "push" } as unknown as JobClaims;
    await expect(sandbox.mintJobToken(misspelt)).rejects.toThrow(new TypeError('job claim "event" is none of GitHub\'s (did you mean "event_name"?); put a claim of your own under custom: { "event": … }'));
    await expect(sandbox.runAction({ job: { deployment_tier: "gold" } as unknown as JobClaims })).rejects.toThrow(/job claim "deployment_tier" is none of GitHub's; put a claim of your own under custom/);
    expect(sandbox.platform.mints.filter((mint) => mint.purpose === "repositories")).toHaveLength(0);
  });
});

describe("Mint.repositories", () => {
  it("is IssuedToken.repositories' form: names for a scoped token, [] for a refused mint", async () => {
    const { body } = await postJson(`${sandbox.brokerUrl}/token`, { oidcToken: await sandbox.mintJobToken({ repository: "octo-org/tools" }), owner: "octo-org", repo: "tools" });
    const mint = sandbox.platform.mints.at(-1)!;
    expect(mint.repositories).toEqual(["tools"]);
    expect(mint.repositories).toEqual(sandbox.simulator.tokens.get(String(body.token))!.repositories);
    const reader = sandbox.platform.mints.find((m) => m.purpose === "policy-reader")!;
    expect(reader.repositories).toEqual(sandbox.simulator.tokens.get([...sandbox.simulator.tokens.keys()][0]!)!.repositories);

    const fault = sandbox.simulator.faults.add({ method: "POST", path: /\/access_tokens$/, times: 1, respond: { status: 403, body: { message: "Forbidden" } } });
    await postJson(`${sandbox.brokerUrl}/token`, { oidcToken: await sandbox.mintJobToken({ repository: "octo-org/docs" }), owner: "octo-org", repo: "docs" });
    fault.remove();
    expect(sandbox.platform.mints.at(-1)).toMatchObject({ status: 403, repositories: [] });
  });
});
