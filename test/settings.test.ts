// Table tests of the pure parts: settings rules (docs/settings.md), the permissions parser, the trust
// decisions and the error-code table. The same rules are exercised over HTTP in token*.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { ERROR_CODES, OIDC_REASONS } from "../shared/error-codes.js";
import { parseTokenPermissions } from "../shared/token-permissions.js";
import { intersectPermissions } from "../server/installation/intersect-permissions.js";
import { graphqlUrlFor, parseAllowlist, parseAudiences, parseFlag, parseSettings, parseUpstreamPointsPerMinute, createSettingsReader, normaliseIssuer, secretWeakness } from "../server/settings.js";
import { parseStartSettings } from "../server/start-settings.js";
import { settingsProblems, WHOLE_NUMBER_SETTINGS } from "../server/settings-problems.js";
import { checkAllowlist, matchRepository } from "../server/token/trust.js";
import { signatureFor } from "../server/webhook/verify-signature.js";
import { postJson, startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { spawnBroker } from "./support/spawn-broker.js";

// One simulated platform for the file's tests over HTTP, made by the first that needs it.
let sharedFixture: Promise<TokenFixture> | undefined;
const fixture = () => (sharedFixture ??= tokenFixture());
afterAll(async () => {
  if (sharedFixture) await (await sharedFixture).sim.close();
});

describe("parseAudiences", () => {
  it.each([
    [undefined, ["tokensmith", "release-runner"]],
    ["", ["tokensmith", "release-runner"]],
    ["  \t ", ["tokensmith", "release-runner"]],
    [" , ,", ["tokensmith", "release-runner"]],
    ["a", ["a"]],
    [" a , ,b ", ["a", "b"]],
  ])("%j → %j", (raw, expected) => expect(parseAudiences(raw)).toEqual(expected));
});

describe("parseAllowlist", () => {
  const shape = (raw: string | undefined) => {
    const list = parseAllowlist(raw);
    return list === null ? null : { repositories: [...list.repositories], invalid: list.invalid };
  };
  it.each([
    [undefined, null],
    ["  ", null],
    [" o/a , o/b ", { repositories: ["o/a", "o/b"], invalid: [] }],
    // Nothing is a pattern: what looks like one matches nothing and is reported, never half-read.
    ["octo-org/*, o/api-*, *, o, o/*/x, */a, o/., o/.., a/b/c", { repositories: [], invalid: ["octo-org/*", "o/api-*", "*", "o", "o/*/x", "*/a", "o/.", "o/..", "a/b/c"] }],
  ])("%j → %j", (raw, expected) => expect(shape(raw)).toEqual(expected));

  it("matches an exact owner/name only", () => {
    expect(() => checkAllowlist(parseAllowlist("o/*"), "o/a")).toThrow();
    expect(() => checkAllowlist(parseAllowlist("o/a"), "O/a")).toThrow(); // exact
    expect(() => checkAllowlist(parseAllowlist("o/a-*"), "o/a-b")).toThrow();
    expect(() => checkAllowlist(parseAllowlist("*"), "o/a")).toThrow();
    expect(() => checkAllowlist(parseAllowlist(" o/a "), "o/a")).not.toThrow();
    expect(() => checkAllowlist(parseAllowlist(" o/a "), "o/ab")).toThrow();
    expect(() => checkAllowlist(null, "any/thing")).not.toThrow();
  });

  it("the shipped Kubernetes settings' allowlist is usable as written", () => {
    const settings = readFileSync(new URL("../deploy/kubernetes/settings.env", import.meta.url), "utf8");
    const raw = /^ALLOWED_REPOSITORIES=(.*)$/m.exec(settings)![1];
    const list = parseAllowlist(raw)!;
    expect(list.invalid).toEqual([]);
    expect(() => checkAllowlist(list, "octo-org/app")).not.toThrow();
  });
});

describe("shared secrets", () => {
  it.each([
    [undefined, null],
    ["   ", null],
    ["policy-webhook-secret", { why: "is shorter than 32 characters" }],
    ["0123456789abcdef0123456789abcde", { why: "is shorter than 32 characters" }],
    [" 0123456789abcdef0123456789abcde\n", { why: "is shorter than 32 characters" }], // counted after trimming
    ["0123456789abcdef0123456789abcdef", null],
    [" 0123456789abcdef0123456789abcdef\n", null],
    ["replace-me", { why: "is a placeholder, not a generated secret" }],
    ["CHANGEME", { why: "is a placeholder, not a generated secret" }],
    ["replace-me-with-a-long-random-string-please", { why: "is a placeholder, not a generated secret" }],
    ["change_me_0123456789abcdef0123456789", { why: "is a placeholder, not a generated secret" }],
  ])("%j → %j", (raw, expected) => expect(secretWeakness(raw)).toEqual(expected));

  it("a placeholder and a short secret are both read as unset (the routes answer 503 as when unset); each is named, with the minimum and how to make one, never its value", () => {
    const env = { PROCESS_TRIGGER_SECRET: "replace-me", HOST_WEBHOOK_SECRET: "short-secret" };
    const settings = parseSettings(env);
    expect(settings.processTriggerSecret).toBeNull();
    expect(settings.webhookSecret).toBeNull();
    const messages = settingsProblems(settings, env).map((p) => p.message);
    expect(messages).toContain("PROCESS_TRIGGER_SECRET is a placeholder, not a generated secret (at least 32 random characters; make one with openssl rand -hex 32): treated as unset, /sign and /releases answer 503 sign_disabled / releases_disabled");
    expect(messages).toContain("HOST_WEBHOOK_SECRET is shorter than 32 characters (at least 32 random characters; make one with openssl rand -hex 32): treated as unset, /webhook answers 503 webhook_disabled");
    expect(messages.join("\n")).not.toContain("short-secret");
  });
});

describe("start-up settings", () => {
  it.each([
    [{}, []],
    [{ PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: " DEBUG ", MAX_CONNECTIONS: "3", ADMIN_PORT: "9090", ADMIN_HOST: "::1" }, []],
    [{ HOST: "broker.internal" }, []],
    [{ PORT: "abc" }, ["PORT"]],
    [{ PORT: "65536" }, ["PORT"]],
    [{ PORT: "-1" }, ["PORT"]],
    [{ HOST: "not a host" }, ["HOST"]],
    [{ HOST: "[::1]" }, ["HOST"]],
    [{ LOG_LEVEL: "verbose" }, ["LOG_LEVEL"]],
    [{ MAX_CONNECTIONS: "0" }, ["MAX_CONNECTIONS"]],
    [{ ADMIN_PORT: "eighty" }, ["ADMIN_PORT"]],
    [{ ADMIN_PORT: "9090", ADMIN_HOST: "http://0.0.0.0" }, ["ADMIN_HOST"]],
    [{ PORT: "x", LOG_LEVEL: "loud" }, ["PORT", "LOG_LEVEL"]],
  ])("%j → problems with %j", (env, settings) => {
    const { problems } = parseStartSettings(env);
    expect(problems.map((p) => p.setting)).toEqual(settings);
    for (const problem of problems) expect(problem.message).toMatch(new RegExp(`^${problem.setting} .*: the broker does not start$`));
  });

  it("blank values are the defaults", () => {
    expect(parseStartSettings({ PORT: " ", HOST: "", LOG_LEVEL: "" })).toMatchObject({ port: 8080, host: "0.0.0.0", logLevel: "info", problems: [] });
  });
});

describe("parseFlag (AUTO_UPDATE_BRANCHES)", () => {
  it.each([["1"], ["true"], ["TRUE"], [" yes "], ["On"]])("%j is on", (raw) => expect(parseFlag(raw)).toBe(true));
  it.each([[undefined], [""], ["enabled"], ["0"], ["false"], ["y"], ["tru"]])("%j is off", (raw) => expect(parseFlag(raw)).toBe(false));
});

describe("webhook pacing budgets (UPDATE_BRANCH_PER_MINUTE, UPDATE_BRANCH_PER_HOUR)", () => {
  it.each<[Record<string, string>, number, number]>([
    [{}, 60, 500],
    [{ UPDATE_BRANCH_PER_MINUTE: "30", UPDATE_BRANCH_PER_HOUR: "250" }, 30, 250],
    [{ UPDATE_BRANCH_PER_MINUTE: " 30 ", UPDATE_BRANCH_PER_HOUR: " 250 " }, 30, 250],
    [{ UPDATE_BRANCH_PER_MINUTE: "0", UPDATE_BRANCH_PER_HOUR: "-5" }, 60, 500],
    [{ UPDATE_BRANCH_PER_MINUTE: "fast", UPDATE_BRANCH_PER_HOUR: "1.5" }, 60, 500],
  ])("%j → %d a minute, %d an hour", (env, perMinute, perHour) => {
    const settings = parseSettings(env);
    expect([settings.updateBranchPerMinute, settings.updateBranchPerHour]).toEqual([perMinute, perHour]);
  });
});

describe("whole-number settings that do not parse: the default, and a problem doctor fails", () => {
  it.each(WHOLE_NUMBER_SETTINGS.map(([name, fallback, least]) => [name, fallback, least] as const))("%s (default %d, at least %d)", (name, fallback, least) => {
    // The table's default is the parser's: a malformed value and the default read the same.
    expect(parseSettings({ [name]: "12 a minute" })).toEqual(parseSettings({}));
    expect(parseSettings({ [name]: String(fallback) })).toEqual(parseSettings({}));
    expect(parseSettings({ [name]: String(fallback + 1) })).not.toEqual(parseSettings({}));
    for (const bad of ["12 a minute", ...(least === 1 ? ["0"] : []), "-3", "1.5", "9007199254740993"]) {
      const problems = settingsProblems(parseSettings({ [name]: bad }), { [name]: bad }).filter((p) => p.fields.setting === name);
      const what = least === 1 ? "a positive whole number" : "a whole number";
      expect(problems).toEqual([{ level: "error", fails: true, fields: { setting: name }, message: `${name} is not ${what}: using the default, ${fallback}` }]);
    }
    for (const fine of [undefined, "", " 7 ", "1", ...(least === 0 ? ["0", " 0"] : [])]) {
      expect(settingsProblems(parseSettings({ [name]: fine }), { [name]: fine }).filter((p) => p.fields.setting === name)).toEqual([]);
    }
  });
});

describe("issuers and API bases", () => {
  it.each([
    [" https://x.example/_services/token/// ", "https://x.example/_services/token"],
    ["https://x.example", "https://x.example"],
  ])("normaliseIssuer(%j) → %j", (raw, expected) => expect(normaliseIssuer(raw)).toBe(expected));

  it.each([
    ["https://api.github.com", "https://api.github.com/graphql"],
    ["https://ghe.example/api/v3", "https://ghe.example/api/graphql"],
  ])("graphqlUrlFor(%j) → %j", (base, expected) => expect(graphqlUrlFor(base)).toBe(expected));

  it("defaults to the public platform", () => {
    const s = parseSettings({});
    expect(s.main.apiBase).toBe("https://api.github.com");
    expect(s.main.issuer).toBe("https://token.actions.githubusercontent.com");
    expect(s.enterprise).toBeNull();
    expect(s.main.app).toEqual({ ok: false, missing: ["HOST_APP_ID", "HOST_APP_PRIVATE_KEY"] });
  });

  it.each([
    ["7", 7],
    [" 12 ", 12],
    ["0", null],
    ["-3", null],
    ["1.5", null],
    ["abc", null],
    ["", null],
    ["99999999999999999999", null],
  ])("ENT_APP_INSTALLATION_ID=%j → %j", (raw, expected) => {
    const s = parseSettings({ ENT_OIDC_ISSUER: "https://ghe.example/_services/token/", ENT_API_BASE: "https://ghe.example/api/v3", ENT_APP_INSTALLATION_ID: raw });
    expect(s.enterprise?.installationId).toBe(expected);
    expect(s.enterprise?.issuer).toBe("https://ghe.example/_services/token");
    expect(s.enterprise?.graphqlUrl).toBe("https://ghe.example/api/graphql");
  });

  it("memoises on the raw strings and re-parses when one changes", () => {
    const env: Record<string, string> = { OIDC_AUDIENCE: "a" };
    const read = createSettingsReader(() => env);
    const first = read();
    expect(read()).toBe(first);
    env.OIDC_AUDIENCE = "b";
    expect(read().audiences).toEqual(["b"]);
  });
});

describe("UPSTREAM_POINTS_PER_MINUTE", () => {
  it.each([
    [undefined, 900, false],
    ["", 900, false],
    ["  ", 900, false],
    ["450", 450, false],
    [" 300 ", 300, false],
    ["5", 5, false],
    ["4", 900, true], // below the dearest call (5 points): nothing could be sent
    ["0", 900, true],
    ["-1", 900, true],
    ["1.5", 900, true],
    ["450/min", 900, true],
    ["99999999999999999999", 900, true],
  ])("%j → %i (a settings problem: %s)", (raw, value, problem) => {
    expect(parseUpstreamPointsPerMinute(raw).value).toBe(value);
    expect(parseSettings({ UPSTREAM_POINTS_PER_MINUTE: raw }).upstreamPointsPerMinute).toBe(value);
    const problems = settingsProblems(parseSettings({ UPSTREAM_POINTS_PER_MINUTE: raw }), { UPSTREAM_POINTS_PER_MINUTE: raw }).filter((p) => p.fields.setting === "UPSTREAM_POINTS_PER_MINUTE");
    expect(problems).toHaveLength(problem ? 1 : 0);
    if (problem) {
      expect(problems[0]).toMatchObject({ level: "error", fails: true, message: "UPSTREAM_POINTS_PER_MINUTE is not a whole number from 5: using GitHub's 900 in this process" });
      expect(JSON.stringify(problems[0]!.fields)).not.toContain(String(raw)); // names only, never the value
    }
  });
});

describe("secrets are trimmed (PROCESS_TRIGGER_SECRET, HOST_WEBHOOK_SECRET)", () => {
  it.each([
    [undefined, null, false],
    ["", null, false],
    ["0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef", false],
    ["0123456789abcdef0123456789abcdef\n", "0123456789abcdef0123456789abcdef", true],
    ["0123456789abcdef0123456789abcdef \r\n", "0123456789abcdef0123456789abcdef", true],
    [" \t0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef", true],
    ["in ner 0123456789abcdef0123456789abcdef", "in ner 0123456789abcdef0123456789abcdef", false],
    [" \n", null, true],
  ])("%j → %j (changed: %j)", (raw, expected, changed) => {
    const s = parseSettings({ PROCESS_TRIGGER_SECRET: raw, HOST_WEBHOOK_SECRET: raw });
    expect(s.processTriggerSecret).toBe(expected);
    expect(s.webhookSecret).toBe(expected);
    expect(s.trimmedSecrets).toEqual(changed ? ["PROCESS_TRIGGER_SECRET", "HOST_WEBHOOK_SECRET"] : []);
  });

  it("names only the setting that changed", () => {
    expect(parseSettings({ PROCESS_TRIGGER_SECRET: "a", HOST_WEBHOOK_SECRET: "b\n" }).trimmedSecrets).toEqual(["HOST_WEBHOOK_SECRET"]);
  });
});

describe("secrets with a trailing newline, over HTTP", () => {
  const TRIGGER = "trimmed-trigger-secret-0123456789abcdef";
  const HOOK = "trimmed-webhook-secret-456789abcdef0123";
  let fx: TokenFixture;
  let broker: TestBroker;
  beforeAll(async () => {
    fx = await fixture();
    broker = await startBroker({ ...fx.env, PROCESS_TRIGGER_SECRET: `${TRIGGER}\n`, HOST_WEBHOOK_SECRET: `${HOOK} \n` });
  });
  afterAll(async () => {
    await broker.close();
    expectNoSecrets(broker.logs, [TRIGGER, HOOK, fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
  });

  it("/releases accepts the trimmed bearer", async () => {
    const response = await fetch(`${broker.url}/releases`, { headers: { authorization: `Bearer ${TRIGGER}` } });
    await response.text();
    expect(response.status).toBe(200);
  });

  it("/sign accepts the trimmed bearer (the body is then judged)", async () => {
    const res = await postJson(`${broker.url}/sign`, {}, { authorization: `Bearer ${TRIGGER}` });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("missing_required_fields");
  });

  it("/webhook accepts a signature made with the trimmed secret", async () => {
    const raw = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1 });
    const response = await fetch(`${broker.url}/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-github-event": "ping", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(HOOK, raw) },
      body: raw,
    });
    await response.text();
    expect(response.status).toBe(200);
  });
});

describe("the built broker warns at start-up about a trimmed secret", () => {
  it("one warning per changed setting, naming it, never the value", async () => {
    const value = "spawned-trigger-secret-89abcdef0123";
    const broker = await spawnBroker({ PROCESS_TRIGGER_SECRET: `${value}\n`, HOST_WEBHOOK_SECRET: "untouched-hook-secret-0123456789ab" });
    await broker.stop();
    const warnings = broker.lines.filter((line) => line.includes("trimmed before use"));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: "warn", setting: "PROCESS_TRIGGER_SECRET" });
    expect(broker.lines.join("\n")).not.toContain(value);
    expect(broker.lines.join("\n")).not.toContain("untouched-hook-secret");
  });
});

describe("weak secrets, over HTTP", () => {
  // A placeholder fails closed: even the right bearer or signature is refused, so nobody is let in
  // with it (docs/settings.md#optional).
  const TRIGGER = "replace-me";
  const HOOK = "changeme-webhook-secret-0123456789abcdef";
  // One broker for both: the same settings, and neither request changes what it holds.
  let fx: TokenFixture;
  let broker: TestBroker;
  beforeAll(async () => {
    fx = await fixture();
    broker = await startBroker({ ...fx.env, PROCESS_TRIGGER_SECRET: TRIGGER, HOST_WEBHOOK_SECRET: HOOK });
  });
  afterAll(async () => {
    await broker.close();
    expectNoSecrets(broker.logs, [TRIGGER, HOOK, fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
  });

  it("/releases and /sign answer 503 as when PROCESS_TRIGGER_SECRET is unset, even to its bearer", async () => {
    const releases = await fetch(`${broker.url}/releases`, { headers: { authorization: `Bearer ${TRIGGER}` } });
    expect(releases.status).toBe(503);
    expect(((await releases.json()) as { error: string }).error).toBe("releases_disabled");
    const sign = await postJson(`${broker.url}/sign`, {}, { authorization: `Bearer ${TRIGGER}` });
    expect([sign.status, sign.body.error]).toEqual([503, "sign_disabled"]);
  });

  it("/webhook answers 503 webhook_disabled to a delivery signed with the placeholder", async () => {
    expect(await ping(broker.url, HOOK)).toEqual({ status: 503, body: { error: "webhook_disabled" } });
  });
});

describe("a secret shorter than 32 characters, over HTTP against the built broker", () => {
  // What `openssl rand -hex 16` prints: exactly MIN_SECRET_LENGTH (32) characters, which works; one
  // character less is refused as if unset (docs/settings.md#optional).
  const TRIGGER_32 = randomBytes(16).toString("hex");
  const HOOK_32 = randomBytes(16).toString("hex");
  const TRIGGER_31 = TRIGGER_32.slice(0, 31);
  const HOOK_31 = HOOK_32.slice(0, 31);
  let fx: TokenFixture;
  beforeAll(async () => {
    fx = await fixture();
  });
  const weakLines = (lines: string[]) =>
    lines.map((l) => JSON.parse(l) as { level: string; setting?: string; msg: string }).filter((e) => e.setting === "PROCESS_TRIGGER_SECRET" || e.setting === "HOST_WEBHOOK_SECRET");

  it("31 characters: /releases, /sign and /webhook answer 503 as when unset, even to the right bearer and signature; one error line per setting naming the minimum and openssl rand -hex 32, never the value", async () => {
    expect([TRIGGER_31.length, HOOK_31.length]).toEqual([31, 31]);
    fx.sim.clearRequests(); // the file's other brokers' requests
    const broker = await spawnBroker({ ...fx.env, PROCESS_TRIGGER_SECRET: TRIGGER_31, HOST_WEBHOOK_SECRET: HOOK_31 });
    try {
      const releases = await fetch(`${broker.url}/releases`, { headers: { authorization: `Bearer ${TRIGGER_31}` } });
      expect([releases.status, ((await releases.json()) as { error: string }).error]).toEqual([503, "releases_disabled"]);
      const sign = await postJson(`${broker.url}/sign`, {}, { authorization: `Bearer ${TRIGGER_31}` });
      expect([sign.status, sign.body.error]).toEqual([503, "sign_disabled"]);
      expect(await ping(broker.url, HOOK_31)).toEqual({ status: 503, body: { error: "webhook_disabled" } });
    } finally {
      await broker.stop();
    }
    expect(weakLines(broker.lines).map((e) => [e.level, e.setting, e.msg])).toEqual([
      ["error", "PROCESS_TRIGGER_SECRET", "PROCESS_TRIGGER_SECRET is shorter than 32 characters (at least 32 random characters; make one with openssl rand -hex 32): treated as unset, /sign and /releases answer 503 sign_disabled / releases_disabled"],
      ["error", "HOST_WEBHOOK_SECRET", "HOST_WEBHOOK_SECRET is shorter than 32 characters (at least 32 random characters; make one with openssl rand -hex 32): treated as unset, /webhook answers 503 webhook_disabled"],
    ]);
    expectNoSecrets(broker.lines, [TRIGGER_31, HOOK_31]);
    expect(fx.sim.requests.filter((r) => r.method === "POST")).toEqual([]); // nothing reached the platform
  });

  it("32 characters: the same requests are let in (/releases 200, /sign judges the body, /webhook verifies the ping); no error line", async () => {
    const broker = await spawnBroker({ ...fx.env, PROCESS_TRIGGER_SECRET: TRIGGER_32, HOST_WEBHOOK_SECRET: HOOK_32 });
    try {
      const releases = await fetch(`${broker.url}/releases`, { headers: { authorization: `Bearer ${TRIGGER_32}` } });
      await releases.text();
      expect(releases.status).toBe(200);
      const sign = await postJson(`${broker.url}/sign`, {}, { authorization: `Bearer ${TRIGGER_32}` });
      expect([sign.status, sign.body.error]).toEqual([400, "missing_required_fields"]);
      expect(await ping(broker.url, HOOK_32)).toEqual({ status: 200, body: { ok: true, ignored: "ping" } });
    } finally {
      await broker.stop();
    }
    expect(weakLines(broker.lines)).toEqual([]);
    expectNoSecrets(broker.lines, [TRIGGER_32, HOOK_32]);
  });
});

/** A signed `ping` delivery to /webhook: its status and JSON body. */
async function ping(url: string, secret: string): Promise<{ status: number; body: unknown }> {
  const raw = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1 });
  const response = await fetch(`${url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "ping", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(secret, raw) },
    body: raw,
  });
  return { status: response.status, body: await response.json() };
}

describe("parseTokenPermissions", () => {
  it.each([
    [undefined, { contents: "write", pull_requests: "write" }],
    [" ", { contents: "write", pull_requests: "write" }],
    ['{"issues":"read"}', { issues: "read" }],
    ["issues=read,contents:write", { issues: "read", contents: "write" }],
  ])("%j → %j", (raw, expected) => expect(parseTokenPermissions(raw)).toEqual({ ok: true, permissions: expected }));

  it.each([["contents=admin"], ["{}"], [","], ['{"__proto__":"write"}'], ["con tents=read"], ["contents=read=write"], ["null"], ['"x"']])("%j is unusable", (raw) => {
    expect(parseTokenPermissions(raw).ok).toBe(false);
  });
});

describe("intersectPermissions", () => {
  it.each([
    [{ contents: "write" }, { contents: "write" }, { contents: "write" }],
    [{ contents: "write" }, { contents: "read" }, { contents: "read" }],
    [{ contents: "read" }, { contents: "write" }, { contents: "read" }],
    [{ contents: "write", actions: "write" }, { contents: "write" }, { contents: "write" }],
    [{ actions: "write" }, { contents: "write" }, { metadata: "read" }],
    [{ constructor: "read" }, {}, { metadata: "read" }],
  ] as Array<[Record<string, "read" | "write">, Record<string, string>, Record<string, string>]>)("%j ∩ %j → %j", (requested, granted, expected) => {
    expect(intersectPermissions({ ...requested }, granted)).toEqual(expected);
  });
});

describe("matchRepository", () => {
  it("is exact", () => {
    expect(matchRepository("o/r", "o", "r")).toBe("o/r");
    expect(() => matchRepository("o/r", "O", "r")).toThrow();
    expect(() => matchRepository("o/r", "o", "r2")).toThrow();
  });
});

describe("error-code table", () => {
  it("holds every code the API names, with its status", () => {
    const spec: Record<string, number> = {
      not_found: 404, method_not_allowed: 405, invalid_json: 400, invalid_request: 400, missing_required_fields: 400,
      invalid_token_permissions: 400, invalid_oidc_token: 401, repo_mismatch: 403, repo_not_allowed: 403, app_not_installed: 404,
      github_installation_lookup_failed: 500, oidc_key_fetch_failed: 503, no_file_changes: 400, invalid_repo: 400, unauthorized: 401,
      installation_token_failed: 502, sign_failed: 502, sign_disabled: 503, releases_disabled: 503, app_unconfigured: 503,
      invalid_signature: 401, webhook_disabled: 503,
    };
    for (const [code, status] of Object.entries(spec)) expect(ERROR_CODES[code as keyof typeof ERROR_CODES]?.status).toBe(status);
  });

  it("has the reason words of docs/errors.md", () => {
    expect(Object.keys(OIDC_REASONS).sort()).toEqual([
      "alg_unsupported", "audience_mismatch", "claim_invalid", "issuer_mismatch", "jwks_unavailable", "key_ambiguous",
      "kid_not_found", "malformed_token", "signature_invalid", "token_expired", "token_lifetime_exceeded", "token_not_yet_valid", "unknown",
    ]); // token_lifetime_exceeded: beyond docs/errors.md, the bound on a token's lifetime (issue 10 item 10)
  });
});
