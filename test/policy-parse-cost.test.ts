// A policy file shaped to cost the YAML parser most (test/support/worst-policies.ts) over HTTP
// against the built broker: its repository gets 403 policy_invalid promptly, naming the cap, and
// another repository's /token sent at the same moment is answered (docs/security.md, the parse-cost
// threat). Before the caps, one of these files held the event loop for seconds.
import { describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { EXAMPLE_POLICY } from "./support/example-policy.js";
import { worstPolicy } from "./support/worst-policies.js";

const t = brokerPerTest({
  env: { TOKEN_POLICY: "optional" },
  setup: (fx) => {
    for (const name of ["app", "other"]) fx.sim.git.createBranch(`octo-org/${name}`, "main", { files: { "README.md": `# ${name}\n` } });
    fx.sim.installation(fx.installationId).repositories = ["app", "other"];
  },
});

const tagJob = (name: string) => ({ repository: `octo-org/${name}`, ref: "refs/tags/v1.2.0", workflow_ref: `octo-org/${name}/.github/workflows/release.yml@refs/tags/v1.2.0` });

async function mint(name: string) {
  const oidcToken = await t.fx.sim.oidc.sign(tagJob(name));
  t.secrets.push(oidcToken);
  const started = performance.now();
  const answer = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: name });
  if (typeof answer.body.token === "string") t.secrets.push(answer.body.token);
  return { status: answer.status, body: answer.body as Record<string, unknown>, ms: performance.now() - started };
}

describe("a policy built to be slow to parse", () => {
  it("each worst 64 KiB file, pushed as a new version: 403 policy_invalid naming the cap in well under 2 s, and another repository's concurrent /token answered 200", async () => {
    t.fx.sim.git.setFile("octo-org/other", ".github/tokensmith.yml", EXAMPLE_POLICY);
    expect((await mint("other")).status).toBe(200); // warm: keys, installation, reader token, other's policy
    const figures: string[] = [];
    for (const shape of ["distinct keys, one flow mapping", "distinct keys, one block mapping", "many empty mappings in a flow list", "explicit keys"] as const) {
      t.fx.sim.git.setFile("octo-org/app", ".github/tokensmith.yml", worstPolicy(shape));
      const [app, other] = await Promise.all([mint("app"), mint("other")]);
      expect({ shape, status: app.status, body: app.body }).toEqual({ shape, status: 403, body: { error: "policy_invalid", detail: expect.stringMatching(/^\.github\/tokensmith\.yml line \d+: more than 8000 YAML tokens/) as unknown } });
      expect({ shape, status: other.status }).toEqual({ shape, status: 200 });
      figures.push(`${shape}: policy_invalid in ${app.ms.toFixed(0)} ms, the other repository's 200 in ${other.ms.toFixed(0)} ms`);
      expect({ shape, app: app.ms < 2000, other: other.ms < 2000 }).toEqual({ shape, app: true, other: true });
    }
    process.stderr.write(`policy-parse-cost: ${figures.join("; ")}\n`);
  });
});
