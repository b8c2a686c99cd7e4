// Issue 38: the action's inputs, held to what they promise. Each test runs the bundled dist/main or
// dist/post on Node 24 in a child process the way the runner runs it (INPUT_* variables,
// GITHUB_OUTPUT / GITHUB_STATE files) against a canned broker (test/support/canned-broker.ts: the
// runner's ID-token endpoint, POST /token and the platform's DELETE, every request recorded), so
// "fails before any request" is checked on the server's own record: no OIDC token asked for, no
// broker called. In a group of cases that differ only in what a pure check decides (an input's
// value, a field of the answer), the first runs dist/ that way and the others run the same main step
// in this process, with the real @actions/core and read the same way (support/action-runner.ts,
// runMainInProcess).
import { describe, expect, it } from "@jest/globals";
import { checkAnswer, strictUtcTime } from "../action/check-answer.js";
import { isInstallationToken } from "../shared/installation-token.js";
import { runMainInProcess, runStep, type StepResult } from "./support/action-runner.js";
import { closedPortUrl, startConnectProxy, startStubServer } from "./support/action-stub-server.js";
import { CANNED_JWT, goodAnswer, runnerData, useCannedBrokers, type CannedBroker } from "./support/canned-broker.js";
import { selfSignedCertificate } from "./support/test-certificate.js";

const { node, canned, closeAfterTest } = useCannedBrokers();

/** The bundled main step in a child process; with `inProcess`, the same step in this process. */
function main(broker: CannedBroker, inputs: Record<string, string> = {}, env: Record<string, string> = {}, { inProcess = false } = {}): Promise<StepResult> {
  const step = { inputs: { "auth-mode": "public-app", "broker-url": broker.url, ...inputs }, env: { ...broker.jobEnv(), ...env } };
  return inProcess ? runMainInProcess(step) : runStep("main", { node: node(), ...step, killAfterMs: 60_000 });
}

/** A group's cases, each with whether it runs in this process: every one but the first, which runs dist/ in a child process. */
const firstInChild = <T extends unknown[]>(cases: T[]): [...T, boolean][] => cases.map((each, index) => [...each, index > 0]);

/** The step failed with exactly one ::error:: line; its data as the runner shows it. */
function failure(step: StepResult): string {
  expect(step.killed).toBe(false);
  expect(step.exitCode).toBe(1);
  const errors = step.lines.filter((line) => line.startsWith("::error::"));
  expect(errors).toHaveLength(1);
  return runnerData(errors[0]!);
}

const masks = (step: StepResult) => step.lines.filter((line) => line.startsWith("::add-mask::")).map((line) => line.slice("::add-mask::".length));

describe("item 1: a permission-* input that is not in the catalogue fails the step before any request", () => {
  it.each(
    firstInChild<[string, string, string]>([
      ["permission-pull-request", "write", '"permission-pull-request" is not an input of this action; did you mean permission-pull-requests?'],
      ["permission_contents", "read", '"permission_contents" is not an input of this action; did you mean permission-contents?'],
      // A retired name (content attachments, gone from the platform's catalogue).
      ["permission-content-references", "write", '"permission-content-references" is not an input of this action; did you mean permission-'],
      ["permission-security-events-x", "", "did you mean permission-security-events?"],
    ]),
  )("%s: %j", async (name, value, expected, inProcess) => {
    const broker = await canned();
    const step = await main(broker, { [name]: value }, {}, { inProcess });
    const line = failure(step);
    expect(line).toContain(expected);
    expect(line).toContain("the token would get the broker's whole grant");
    expect(broker.requests).toEqual([]);
    expect(step.outputs).toEqual({});
  });

  it("names every unknown one, the first with its nearest names by edit distance", async () => {
    const broker = await canned();
    // In this process: the group above ran the same check in dist/.
    const step = await main(broker, { "permission-issue": "write", "permission-pull-request": "write" }, {}, { inProcess: true });
    expect(failure(step)).toBe(
      'tokensmith: "permission-issue" is not an input of this action (also "permission-pull-request"); did you mean permission-issues? A permission input it does not know would be dropped and the token would get the broker\'s whole grant, so the step stops here (the permission-<name> inputs: docs/action.md#permissions).',
    );
    expect(broker.requests).toEqual([]);
  });

  it("a known permission-* input still goes through (the catalogue's names are accepted)", async () => {
    const broker = await canned(() => ({ status: 200, body: goodAnswer({ permissions: { pull_requests: "write" } }) }));
    const step = await main(broker, { "permission-pull-requests": "write" });
    expect(step.exitCode).toBe(0);
    expect(JSON.parse(broker.requests.find((r) => r.method === "POST")!.body).permissions).toEqual({ pull_requests: "write" });
  });
});

describe("item 2: plain http is refused off loopback", () => {
  it.each(
    firstInChild<[string, Record<string, string>, string]>([
      ["broker-url", { "broker-url": "http://tokensmith.invalid" }, "broker-url http://tokensmith.invalid is plain http"],
      ["broker-url, an address of the network", { "broker-url": "http://192.0.2.7:8080" }, "broker-url http://192.0.2.7:8080 is plain http"],
      ["broker-fallback-url", { "broker-fallback-url": "http://fallback.invalid" }, "broker-fallback-url http://fallback.invalid is plain http"],
    ]),
  )("%s: fails before any request, saying to use https", async (_name, inputs, expected, inProcess) => {
    const broker = await canned();
    const line = failure(await main(broker, inputs, {}, { inProcess }));
    expect(line).toContain(expected);
    expect(line).toContain("use https");
    expect(broker.requests).toEqual([]);
  });

  it("loopback in any spelling is accepted (http://127.1 is 127.0.0.1)", async () => {
    const broker = await canned();
    const step = await main(broker, { "broker-url": broker.url.replace("127.0.0.1", "127.1") });
    expect(step.exitCode).toBe(0);
    expect(broker.tokenPosts()).toBe(1);
  });
});

describe("item 3: a password in broker-url is never printed", () => {
  const PASSWORD = "s3cr@t-pw"; // an unencoded @: the URL parser's last @ ends the userinfo
  const withPassword = (url: string) => url.replace("http://", `http://ci:${PASSWORD}@`);
  const leaks = (step: StepResult) => step.lines.filter((line) => line.includes("s3cr") || line.includes("t-pw") || line.includes(encodeURIComponent(PASSWORD)));

  it("a verdict's line shows the address without it", async () => {
    const broker = await canned(() => ({ status: 404, body: { error: "app_not_installed" } }));
    const step = await main(broker, { "broker-url": withPassword(broker.url) });
    expect(failure(step)).toContain(`(error: app_not_installed, HTTP 404 from ${broker.url})`);
    expect(leaks(step)).toEqual([]);
  });

  it("unreachable (each attempt's line and the last) and a refused answer show it without it", async () => {
    const down = await closedPortUrl();
    const broker = await canned();
    const unreachable = await main(broker, { "broker-url": withPassword(down) });
    expect(failure(unreachable)).toContain(`could not reach the broker at ${down} (`);
    expect(unreachable.lines.some((line) => line.startsWith(`tokensmith: attempt 1: ${down} is unreachable`))).toBe(true);
    expect(leaks(unreachable)).toEqual([]);

    const wrong = await canned(() => ({ status: 200, body: goodAnswer({ repository: "evil-org/other" }) }));
    const refused = await main(wrong, { "broker-url": withPassword(wrong.url) });
    expect(failure(refused)).toContain(`refused the answer from ${wrong.url}:`);
    expect(leaks(refused)).toEqual([]);
  });

  it("a plain-http broker-url with a password is refused without printing it", async () => {
    const broker = await canned();
    // In this process: item 2's first case runs the plain-http refusal in dist/.
    const step = await main(broker, { "broker-url": `http://ci:${PASSWORD}@tokensmith.invalid` }, {}, { inProcess: true });
    expect(failure(step)).toContain("broker-url http://tokensmith.invalid is plain http");
    expect(leaks(step)).toEqual([]);
  });
});

/** A stateless installation token as GitHub mints them since 2026-04-27: ghs_<app id>_<JWT>, ~520 characters, two dots. */
function statelessToken(): string {
  const segment = (text: string) => Buffer.from(text).toString("base64url").replace(/-/g, "A");
  const header = segment(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const payload = segment(JSON.stringify({ iss: "12345", installation: 4242, repositories: ["app"], exp: 1_900_000_000, pad: "p".repeat(150) }));
  const token = `ghs_12345_${header}.${payload}.`;
  return token + "S".repeat(520 - token.length);
}

describe("item 4: only an installation token's shape is masked and accepted", () => {
  it.each(
    firstInChild<[string, string]>([
      ["one letter", "e"],
      ["a word", "hello"],
      ["ghs_ and too little", "ghs_short0001"],
      ["another prefix", `ghp_${"a".repeat(36)}`],
      ["a dash (not in GitHub's pattern)", `ghs_${"a".repeat(30)}-${"b".repeat(10)}`],
    ]),
  )("%s: refused, never masked, never sent anywhere", async (_name, token, inProcess) => {
    const broker = await canned(() => ({ status: 200, body: goodAnswer({ token }) }));
    const step = await main(broker, {}, {}, { inProcess });
    expect(failure(step)).toContain("the answer carries a token that is not an installation token");
    expect(masks(step)).toEqual([CANNED_JWT]);
    expect(broker.revocations()).toEqual([]);
    expect(step.outputs).toEqual({});
    expect(step.state).toEqual({});
  });

  it("a 520-character stateless token (ghs_<app id>_<JWT>, two dots) is masked first and handed out", async () => {
    const token = statelessToken();
    expect(token).toHaveLength(520);
    expect(token.split(".")).toHaveLength(3);
    const broker = await canned(() => ({ status: 200, body: goodAnswer({ token }) }));
    const step = await main(broker);
    expect(step.exitCode).toBe(0);
    expect(masks(step)).toEqual([CANNED_JWT, token]);
    expect(step.outputs.token).toBe(token);
    expect(step.state.token).toBe(token);
  });
});

describe("item 5: an expires_at that names no real instant is refused", () => {
  const today = new Date().toISOString().slice(0, 10);
  const year = today.slice(0, 4);
  it.each(
    firstInChild<[string, string]>([
      ["hour 24 (read by Date.parse as the next midnight)", `${today}T24:00:00Z`],
      ["fractional seconds (the platform writes none)", new Date(Date.now() + 3_600_000).toISOString()],
      ["second 60", `${today}T23:59:60Z`],
      // Days no month has: Date.parse rolls them over into the next month (March 1 or 2, December 1).
      ["February 30", `${year}-02-30T12:00:00Z`],
      ["November 31", `${year}-11-31T12:00:00Z`],
    ]),
  )("%s", async (_name, expiresAt, inProcess) => {
    const answer = goodAnswer({ expires_at: expiresAt });
    const broker = await canned(() => ({ status: 200, body: answer }));
    const step = await main(broker, {}, {}, { inProcess });
    expect(failure(step)).toContain(`expires_at "${expiresAt}" is not a real time written as the platform writes it (YYYY-MM-DDThh:mm:ssZ)`);
    expect(broker.revocations().map((r) => r.authorization)).toEqual([`Bearer ${answer.token as string}`]);
    expect(step.outputs).toEqual({});
    expect(step.state).toEqual({}); // nothing left for post: the token is already revoked
  });
});

describe("item 5, the rule itself: the text must come back unchanged from the instant it parsed to", () => {
  it.each([
    ["2027-02-28T23:00:00Z", true],
    ["2028-02-29T12:00:00Z", true], // a leap year
    ["2027-02-29T12:00:00Z", false], // Date.parse: 2027-03-01T12:00:00Z
    ["2027-02-30T00:00:00Z", false],
    ["2026-11-31T00:00:00Z", false],
    ["2026-11-27T24:00:00Z", false],
    ["2026-11-27T23:59:60Z", false],
    ["2026-11-27T12:00:00.000Z", false],
    ["2026-11-27 12:00:00Z", false],
  ])("%s → %s", (text, real) => {
    expect(Number.isFinite(strictUtcTime(text))).toBe(real);
  });

  it("an hour after a pinned now, February 29 of a common year is refused where Date.parse alone would accept it", () => {
    const now = Date.parse("2027-02-28T12:00:00Z");
    const answer = { token: goodAnswer().token, expires_at: "2027-02-29T00:30:00Z", repository: "octo-org/app" };
    expect(Date.parse(answer.expires_at) - now).toBeLessThan(86_400_000);
    expect(checkAnswer(answer, { repositories: ["octo-org/app"], now })).toMatchObject({ ok: false, problem: 'expires_at "2027-02-29T00:30:00Z" is not a real time written as the platform writes it (YYYY-MM-DDThh:mm:ssZ)' });
  });
});

describe("item 4, the rule itself: isInstallationToken is GitHub's published pattern, anchored and bounded", () => {
  it.each([
    [`ghs_${"A1b2C3d4E5".repeat(3)}abcdef`, true], // classic: 36 after ghs_
    [`ghs_${"a".repeat(35)}`, false],
    [statelessToken(), true],
    [`ghs_${"a".repeat(1020)}`, true],
    [`ghs_${"a".repeat(1021)}`, false],
    [`ghs_${"a".repeat(36)}\n`, false],
    [` ghs_${"a".repeat(36)}`, false],
    ["e", false],
    [42, false],
  ])("%#", (value, ok) => {
    expect(isInstallationToken(value)).toBe(ok);
  });
});

describe("item 6: each failure line says what happened", () => {
  it("a 5xx verdict the action did not retry does not claim it did", async () => {
    const broker = await canned(() => ({ status: 502, body: { error: "installation_token_failed" } }));
    const line = failure(await main(broker));
    expect(line).toBe(
      `tokensmith: GitHub refused or failed to mint the token. Re-run the job later; if it persists, tell the broker's operator (the App may lack a permission the broker asks for). (error: installation_token_failed, HTTP 502 from ${broker.url})`,
    );
    expect(line).not.toMatch(/retried|attempts/);
    expect(broker.tokenPosts()).toBe(1);
  });

  it("a retried one says how many times it asked", async () => {
    const broker = await canned(() => ({ status: 503, headers: { "retry-after": "0" }, body: { error: "server_busy" } }));
    expect(failure(await main(broker))).toMatch(/Re-run the job later\. \(error: server_busy, HTTP 503 from \S+\) after 4 attempts$/);
    expect(broker.tokenPosts()).toBe(4);
  });

  it("a 3xx is a redirect to follow by hand, not a verdict, and is not asked again", async () => {
    const broker = await canned(() => ({ status: 308, headers: { location: "https://new-broker.example.com/token" }, body: { error: "not_found" } }));
    const fallback = await canned();
    const step = await main(broker, { "broker-fallback-url": fallback.url });
    expect(failure(step)).toBe(
      `tokensmith: ${broker.url} answered HTTP 308 to https://new-broker.example.com: the broker URL redirects, and the action does not follow redirects: use the final URL as broker-url (https://new-broker.example.com).`,
    );
    expect(broker.tokenPosts()).toBe(1);
    expect(fallback.tokenPosts()).toBe(0);
  });

  it("a proxy that answers 407 is named with its variable, not blamed on broker-url, and not retried", async () => {
    const proxy = await startConnectProxy({ refuse: 407 });
    closeAfterTest(() => proxy.close());
    const broker = await canned();
    const proxyWithPassword = proxy.url.replace("http://", "http://ci:proxy-pw@");
    const step = await main(broker, { "broker-url": "https://tokensmith-broker.invalid" }, { HTTPS_PROXY: proxyWithPassword });
    expect(failure(step)).toBe(
      `tokensmith: the proxy ${proxy.url} (from HTTPS_PROXY) answered the CONNECT with HTTP 407 (Proxy Authentication Required) on the way to https://tokensmith-broker.invalid, so the broker was never asked: fix the proxy setting HTTPS_PROXY (its address or credentials), or list the broker's host in NO_PROXY.`,
    );
    expect(proxy.connects).toEqual(["tokensmith-broker.invalid:443"]);
    expect(step.lines.some((line) => line.includes("unreachable") || line.includes("proxy-pw"))).toBe(false);
  });

  it("an https proxy whose certificate names another host is named, not retried", async () => {
    const certificate = selfSignedCertificate("proxy.other.example");
    const proxy = await startConnectProxy({ tls: certificate });
    closeAfterTest(() => proxy.close());
    const broker = await canned();
    const step = await main(broker, { "broker-url": "https://tokensmith-broker.invalid" }, { https_proxy: proxy.url, NODE_EXTRA_CA_CERTS: certificate.certFile });
    const line = failure(step);
    expect(line).toContain(`tokensmith: the proxy ${proxy.url} (from https_proxy) could not be used (ERR_TLS_CERT_ALTNAME_INVALID`);
    expect(line).toContain("fix the proxy setting https_proxy");
    expect(proxy.connections()).toBe(1);
    expect(proxy.connects).toEqual([]);
  });
});

describe("item 8: github-api-url is where the token is revoked", () => {
  it("post revokes at github-api-url, not at the runner's GITHUB_API_URL", async () => {
    const ghes = await startStubServer(() => ({ status: 204 }));
    closeAfterTest(() => ghes.close());
    const broker = await canned();
    const token = goodAnswer().token as string;
    const post = await runStep("post", {
      node: node(),
      inputs: { "github-api-url": `${ghes.url}/api/v3/` },
      state: { token, "expires-at": new Date(Date.now() + 3_600_000).toISOString() },
      env: broker.jobEnv(),
      killAfterMs: 60_000,
    });
    expect(post.exitCode).toBe(0);
    expect(post.lines).toContain("tokensmith: token revoked");
    expect(ghes.requests.map((r) => [r.method, r.path, r.headers.authorization])).toEqual([["DELETE", "/api/v3/installation/token", `Bearer ${token}`]]);
    expect(broker.revocations()).toEqual([]);
  });

  it("main revokes a refused answer's token at github-api-url too", async () => {
    const ghes = await startStubServer(() => ({ status: 204 }));
    closeAfterTest(() => ghes.close());
    const broker = await canned(() => ({ status: 200, body: goodAnswer({ repository: "evil-org/other" }) }));
    const step = await main(broker, { "github-api-url": `${ghes.url}/api/v3` });
    expect(failure(step)).toContain("The token it carried has been revoked.");
    expect(ghes.requests.map((r) => r.path)).toEqual(["/api/v3/installation/token"]);
    expect(broker.revocations()).toEqual([]);
  });

  it("a plain-http github-api-url off loopback: post warns and sends the token nowhere", async () => {
    const broker = await canned();
    const post = await runStep("post", {
      node: node(),
      inputs: { "github-api-url": "http://ghes.invalid/api/v3" },
      state: { token: goodAnswer().token as string, "expires-at": new Date(Date.now() + 3_600_000).toISOString() },
      env: broker.jobEnv(),
      killAfterMs: 60_000,
    });
    expect(post.exitCode).toBe(0);
    expect(post.lines.find((line) => line.startsWith("::warning::"))).toContain("github-api-url http://ghes.invalid/api/v3 is plain http to a host that is not this machine");
    expect(broker.requests).toEqual([]);
  });
});
