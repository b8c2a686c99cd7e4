// A policy file shaped to cost the YAML parser most (test/support/worst-policies.ts) over HTTP
// against the built broker: its repository gets 403 policy_invalid promptly, naming the cap, and
// another repository's /token sent at the same moment is answered (docs/security.md, the parse-cost
// threat), and tags or merge keys refused by the broker itself. Before the caps, one of these
// files held the event loop for seconds.
import { afterEach, describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { createPolicyCompiler } from "../server/policy/compile-policy.js";
import { EXAMPLE_POLICY } from "./support/example-policy.js";
import { worstPolicy } from "./support/worst-policies.js";

// Each version is read afresh: the policy cache lives 1 s, and the broker's clock moves 2 s per version.
let clockOffsetMs = 0;
const t = brokerPerTest({
  env: { TOKEN_POLICY: "optional", POLICY_CACHE_SECONDS: "1" },
  broker: { now: () => Date.now() + clockOffsetMs },
  setup: (fx) => {
    for (const name of ["app", "other"]) fx.sim.git.createBranch(`octo-org/${name}`, "main", { files: { "README.md": `# ${name}\n` } });
    fx.sim.installation(fx.installationId).repositories = ["app", "other"];
  },
});

const tagJob = (name: string) => ({ repository: `octo-org/${name}`, ref: "refs/tags/v1.2.0", workflow_ref: `octo-org/${name}/.github/workflows/release.yml@refs/tags/v1.2.0` });

function pushPolicy(text: string) {
  t.fx.sim.git.setFile("octo-org/app", ".github/tokensmith.yml", text);
  clockOffsetMs += 2_000;
}

async function mint(name: string) {
  const oidcToken = await t.fx.sim.oidc.sign(tagJob(name));
  t.secrets.push(oidcToken);
  const started = performance.now();
  const answer = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: name });
  if (typeof answer.body.token === "string") t.secrets.push(answer.body.token);
  return { status: answer.status, body: answer.body as Record<string, unknown>, ms: performance.now() - started };
}

describe("a policy built to be slow to parse", () => {
  afterEach(() => {
    clockOffsetMs = 0;
  });

  it("each worst 64 KiB file, pushed as a new version: 403 policy_invalid naming the cap in well under 2 s, and another repository's concurrent /token answered 200", async () => {
    t.fx.sim.git.setFile("octo-org/other", ".github/tokensmith.yml", EXAMPLE_POLICY);
    expect((await mint("other")).status).toBe(200); // warm: keys, installation, reader token, other's policy
    const figures: string[] = [];
    const compiler = createPolicyCompiler();
    const details = new Set<string>();
    for (const shape of ["distinct keys, one flow mapping", "distinct keys, one block mapping", "many empty mappings in a flow list", "explicit keys"] as const) {
      const text = worstPolicy(shape);
      const refused = compiler.compile(text, "repository", ".github/tokensmith.yml");
      if (refused.ok) throw new Error(`${shape} compiled`);
      expect(refused.detail).toMatch(/^\.github\/tokensmith\.yml line \d+: more than 8000 YAML tokens/);
      details.add(refused.detail);
      pushPolicy(text);
      const [app, other] = await Promise.all([mint("app"), mint("other")]);
      expect({ shape, status: app.status, body: app.body }).toEqual({ shape, status: 403, body: { error: "policy_invalid", detail: refused.detail } });
      expect({ shape, status: other.status }).toEqual({ shape, status: 200 });
      figures.push(`${shape}: policy_invalid in ${app.ms.toFixed(0)} ms, the other repository's 200 in ${other.ms.toFixed(0)} ms`);
      expect({ shape, app: app.ms < 2000, other: other.ms < 2000 }).toEqual({ shape, app: true, other: true });
    }
    process.stderr.write(`policy-parse-cost: ${figures.join("; ")}\n`);
    expect(details.size).toBeGreaterThan(1); // the versions' details differ: each answer came from a fresh compile
  });

  it("a tag or a merge key is 403 policy_invalid naming it and the line, never read as a plain value", async () => {
    pushPolicy("rules:\n  - name: release\n    if: {event: push}\n    permissions: !!omap [{contents: write}]\n");
    expect((await mint("app")).body).toEqual({ error: "policy_invalid", detail: ".github/tokensmith.yml line 4: YAML tag !!omap is not supported (a policy is plain YAML: no !tags, !!binary, !!set or !!omap)" });
    pushPolicy("rules:\n  - name: reads\n    if: &on {event: push}\n    permissions: {contents: read}\n  - name: release\n    if: {<<: *on, ref: refs/tags/v*}\n    permissions: {contents: write}\n");
    expect((await mint("app")).body).toEqual({ error: "policy_invalid", detail: ".github/tokensmith.yml line 6: YAML merge keys (<<) are not supported: write the keys out" });
  });
});
