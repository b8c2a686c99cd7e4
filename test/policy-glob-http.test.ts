// Issue 36, item 1, over HTTP: a repository policy written to hang a backtracking RegExp
// (`**a` twelve times, `(a+)+b`) against a 256-character ref. The built broker (its own process,
// so a blocked event loop would show) answers that job at once, and a job of another repository
// sent at the same moment is answered too. Under the old RegExp the first request never came back
// (docs/security.md#hostile-patterns-redos).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const STARS = `refs/heads/${"**a".repeat(12)}`;
const NESTED = "refs/heads/(a+)+b";
const HOSTILE_POLICY = `rules:
  - name: stars
    if: {ref: "${STARS}"}
    permissions: {contents: read}
  - name: nested
    if: {ref: "${NESTED}"}
    permissions: {contents: read}
`;
/** 256 characters of a's that end in neither `a` nor `b`: both patterns fail, after every split a backtracker could try. */
const LONG_REF = `refs/heads/${"a".repeat(256 - 11 - 2)}-x`;

let fx: TokenFixture;
let broker: BrokerProcess;
const secrets: string[] = [];
beforeAll(async () => {
  fx = await tokenFixture();
  fx.sim.git.createBranch("octo-org/app", "main", { files: { ".github/tokensmith.yml": HOSTILE_POLICY } });
  fx.sim.git.createBranch("octo-org/other", "main", { files: { "README.md": "# other\n" } });
  broker = await spawnBroker({ ...fx.env, TOKEN_POLICY: "optional" });
});
afterAll(async () => {
  await broker?.stop();
  await fx.sim.close();
  expectNoSecrets(broker?.lines ?? [], [...secrets, fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
});

async function exchange(repo: string, ref: string): Promise<{ status: number; body: Record<string, unknown>; ms: number }> {
  const oidcToken = await fx.sim.oidc.sign({ repository: `octo-org/${repo}`, ref });
  secrets.push(oidcToken);
  const started = performance.now();
  const answer = await postJson(`${broker.url}/token`, { oidcToken, owner: "octo-org", repo });
  const ms = performance.now() - started;
  if (typeof answer.body?.token === "string") secrets.push(answer.body.token);
  return { status: answer.status, body: answer.body, ms };
}

describe("a policy with hostile patterns does not hold up the broker", () => {
  it("the long ref is denied at once, a job of another repository sent beside it is answered, and a matching long ref gets its token", async () => {
    expect(LONG_REF.length).toBe(256);
    // Warm: keys, installation and the policy read (a short ref is quick even for a backtracker).
    expect((await exchange("other", "refs/heads/main")).status).toBe(200);
    expect((await exchange("app", "refs/heads/main")).body).toMatchObject({ error: "policy_denied" });

    const [hostile, beside] = await Promise.all([exchange("app", LONG_REF), exchange("other", "refs/heads/main")]);
    process.stdout.write(`policy-glob-http: hostile /token answered in ${hostile.ms.toFixed(0)} ms, the other repository's in ${beside.ms.toFixed(0)} ms\n`);
    expect(hostile.status).toBe(403);
    const shown = `${LONG_REF.slice(0, 200)}…`; // a denial shows 200 characters of a claim
    expect(hostile.body).toEqual({ error: "policy_denied", detail: `rule stars: ref is ${shown}, wants ${STARS}; rule nested: ref is ${shown}, wants ${NESTED}` });
    expect(beside.status).toBe(200);
    // Generous bounds for a loaded machine (a mint is well under a second); the old RegExp did not answer in minutes.
    expect(hostile.ms).toBeLessThan(5000);
    expect(beside.ms).toBeLessThan(5000);

    const matching = await exchange("app", `refs/heads/${"a".repeat(245)}`);
    expect(matching.status).toBe(200);
    expect(fx.sim.tokens.get(String(matching.body.token))?.permissions).toEqual({ contents: "read" });
  });
});
