// `tokensmith doctor` against the platform simulator: a good configuration passes; a wrong App key,
// an unknown App id, an API host refusing connections or not resolving, an unreachable issuer, Redis
// down and TOKEN_PERMISSIONS beyond the installation's grant each fail with their own line; with
// trust policies on, each installation says whether the App can read its owner's `.github`. The
// good configuration and Redis down run the guide's command as a child process (bin/tokensmith.js →
// build/server/cli: exit 0 and 1, nothing on stderr, a process that ends once its Redis checks are
// done, up or down); the other cases call the same entry, runCli, in this process (a doctor process
// is about 0.4 s of CPU, most of it loading modules).
import { execFile } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { blobSha } from "../simulator/rest-contents-routes.js";
import { cliInProcess } from "./support/cli-in-process.js";
import { expectNoSecrets, INSTALLED_PERMISSIONS, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { guideCommands } from "./support/guide-commands.js";
import { freePort } from "./support/redis-server.js";
import { REDIS_URL } from "./support/redis-url.js";

const BIN = fileURLToPath(new URL("../bin/tokensmith.js", import.meta.url));
const BUILD_IF_STALE = fileURLToPath(new URL("../scripts/build-if-stale.js", import.meta.url));

let fx: TokenFixture;
let good: Record<string, string | undefined>;
// Each case is its own doctor run; they are independent, so all start at once in beforeAll and
// each test awaits its own (the file takes about one run's time, not eleven).
type Run = { code: number; stdout: string; stderr: string };
const runs: Record<string, Promise<Run>> = {};
const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
let deadIssuer: string;
let deadRedisPort: number;
let deadApiPort: number;
// A second App for the owner-policy checks: one installation per case.
const OWNER_POLICY = "rules:\n  - name: everyone\n    permissions: {contents: read}\n";
let policyApp: { id: number; privateKeyPem: string };
const policyInstallations: Record<string, number> = {};
const TRIGGER_32 = randomBytes(16).toString("hex"); // what `openssl rand -hex 16` prints: 32 characters
const HOOK_32 = randomBytes(16).toString("hex");

beforeAll(async () => {
  fx = await tokenFixture();
  // Both shared secrets exactly MIN_SECRET_LENGTH (32) long: the least a secret may be (docs/settings.md#optional).
  good = { ...fx.env, SERVICE_JWKS_CACHE: REDIS_URL, LEGACY_QUOTA_KV: "memory://", WEBHOOK_QUEUE: `${REDIS_URL}?prefix=doctor-test`, PROCESS_TRIGGER_SECRET: TRIGGER_32, HOST_WEBHOOK_SECRET: HOOK_32 };
  deadIssuer = `http://127.0.0.1:${await freePort()}/issuer`;
  deadRedisPort = await freePort();
  // bin/tokensmith.js builds first when the build is stale: once here, not in two processes at once.
  await new Promise((resolve, reject) => execFile(process.execPath, [BUILD_IF_STALE], { timeout: 120_000 }, (error) => (error ? reject(error) : resolve(undefined))));
  runs.good = doctor(good);
  runs.otherKey = doctorInProcess({ ...good, HOST_APP_PRIVATE_KEY: other });
  deadApiPort = await freePort();
  runs.apiRefused = doctorInProcess({ ...good, HOST_API_BASE: `http://127.0.0.1:${deadApiPort}` });
  // `.invalid` never resolves (RFC 2606): a DNS failure on any machine, offline included.
  runs.apiUnresolved = doctorInProcess({ ...good, HOST_API_BASE: "http://api.tokensmith-doctor.invalid" });
  runs.unknownApp = doctorInProcess({ ...good, HOST_APP_ID: "987654321" });
  runs.deadIssuer = doctorInProcess({ ...good, HOST_OIDC_ISSUER: deadIssuer });
  runs.redisDown = doctor({ ...good, LEGACY_QUOTA_KV: `redis://:hunter2@127.0.0.1:${deadRedisPort}` });
  runs.beyondGrant = doctorInProcess({ ...good, TOKEN_PERMISSIONS: "contents:write,issues:write", AUTO_UPDATE_BRANCHES: "true" });
  policyApp = fx.sim.createApp();
  const add = (account: string, repositories: string[] | "all", permissions: Record<string, "read" | "write"> = { ...INSTALLED_PERMISSIONS }) =>
    (policyInstallations[account] = fx.sim.addInstallation({ appId: policyApp.id, account, permissions, repositories }));
  fx.sim.git.createBranch("policy-org/.github", "main", { files: { ".github/tokensmith-org.yml": OWNER_POLICY } });
  fx.sim.git.createBranch("open-org/.github", "main", { files: { "README.md": "# open-org\n" } });
  add("policy-org", ["app", ".github"]); // reads its owner policy
  add("lone-org", ["app"]); // selected repositories without .github: an owner policy would be ignored
  add("open-org", "all"); // a .github without tokensmith-org.yml
  add("bare-org", "all", { metadata: "read", issues: "read" }); // no contents: no policy at all
  const policyEnv = { ...good, HOST_APP_ID: String(policyApp.id), HOST_APP_PRIVATE_KEY: policyApp.privateKeyPem, TOKEN_PERMISSIONS: "issues:read" };
  runs.ownerPolicy = doctorInProcess({ ...policyEnv, TOKEN_POLICY: "optional" });
  runs.ownerPolicyRequired = doctorInProcess({ ...policyEnv, TOKEN_POLICY: "required" });
  runs.unparsable = doctorInProcess({ ...good, TOKEN_PERMISSIONS: "contents:own", HOST_APP_ID: undefined, ADMIN_PORT: "eighty", UPSTREAM_POINTS_PER_MINUTE: "450/min", UPDATE_BRANCH_PER_HOUR: "lots",
    PORT: "abc", HOST: "not a host!", LOG_LEVEL: "verbose", MAX_CONNECTIONS: "0", PROCESS_TRIGGER_SECRET: "replace-me", HOST_WEBHOOK_SECRET: HOOK_32.slice(0, 31), ALLOWED_REPOSITORIES: "octo-org/app, octo-org/*, octo-org/api-*" });
  // Settled before the tests read them, so no process outlives a failed test's file.
  await Promise.all(Object.values(runs));
}, 150_000);
afterAll(async () => {
  await fx.sim.close();
});

// The guide's command (docs/deploying.md): `npx tokensmith doctor`, i.e. bin/tokensmith.js doctor.
const [npx, bin, ...DOCTOR_ARGS] = guideCommands("doctor")[0]!.split(" ");

/** The guide's command as a child process, with only PATH and `env` in its environment. */
function doctor(env: Record<string, string | undefined>) {
  return new Promise<Run>((resolve) => {
    execFile(process.execPath, [BIN, ...DOCTOR_ARGS], { env: { PATH: process.env.PATH, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The same command in this process (runCli). */
const doctorInProcess = (env: Record<string, string | undefined>) => cliInProcess(DOCTOR_ARGS, env);

const linesOf = (stdout: string) => stdout.split("\n").filter((line) => /^(ok|FAIL|warn) /.test(line));

describe("tokensmith doctor", () => {
  it("a good configuration (both shared secrets exactly 32 characters): every check ok, exit 0, the App's slug and permissions, no secret printed", async () => {
    expect([npx, bin]).toEqual(["npx", "tokensmith"]);
    const { code, stdout, stderr } = await runs.good!;
    expect(stderr).toBe("");
    const lines = linesOf(stdout);
    expect(lines.every((line) => line.startsWith("ok "))).toBe(true);
    expect(lines).toEqual([
      "ok   settings parse",
      `ok   App tokensmith-test-${fx.app.id} (id ${fx.app.id}) on ${fx.sim.apiBase}: GET /app accepts its JWT; permissions contents: write, issues: read, metadata: read, pull_requests: write`,
      `ok   installation ${fx.installationId} (octo-org): grants contents: write, issues: read, metadata: read, pull_requests: write; covers TOKEN_PERMISSIONS, /sign`,
      `ok   issuer ${fx.sim.oidc.issuer}: discovery and key set reachable (1 key)`,
      `ok   SERVICE_JWKS_CACHE ${REDIS_URL}: answers`,
      "ok   LEGACY_QUOTA_KV memory://: answers (this process only: not shared between instances)",
      `ok   WEBHOOK_QUEUE ${REDIS_URL}: answers`,
    ]);
    expect(stdout).toContain("All checks passed.");
    expect(code).toBe(0);
    expectNoSecrets([stdout], [fx.app.privateKeyPem, TRIGGER_32, HOOK_32]);
    expect(stdout).not.toMatch(/eyJ|BEGIN|PRIVATE KEY/);
  });

  it("a key that is not the App's: GET /app refuses the JWT, exit 1", async () => {
    const { code, stdout } = await runs.otherKey!;
    expect(linesOf(stdout)).toContain(`FAIL App ${fx.app.id} on ${fx.sim.apiBase}: GET /app refused the App JWT (HTTP 401 A JSON web token could not be decoded): is the private key this App's?`);
    expect(code).toBe(1);
    expect(stdout).toContain("1 check failed.");
    expectNoSecrets([stdout], [other, fx.app.privateKeyPem]);
  });

  it("the platform refusing connections: FAIL naming the host and HOST_API_BASE, not the key", async () => {
    const { code, stdout } = await runs.apiRefused!;
    expect(linesOf(stdout)).toContain(`FAIL App ${fx.app.id}: cannot reach 127.0.0.1:${deadApiPort}: connection refused (ECONNREFUSED): is HOST_API_BASE right, and is the platform reachable from here?`);
    expect(stdout).not.toContain("private key");
    expect(code).toBe(1);
  });

  it("an API host whose name does not resolve: FAIL naming DNS and the host, not the key", async () => {
    const { code, stdout } = await runs.apiUnresolved!;
    const line = linesOf(stdout).find((l) => l.startsWith(`FAIL App ${fx.app.id}:`));
    expect(line).toMatch(new RegExp(`^FAIL App ${fx.app.id}: cannot reach api\\.tokensmith-doctor\\.invalid: its name does not resolve \\(DNS: (ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL)\\): is HOST_API_BASE right, and does this machine's DNS know it\\?$`));
    expect(stdout).not.toContain("private key");
    expect(code).toBe(1);
  });

  it("an App id the platform does not know (a valid JWT for no App): FAIL naming HOST_APP_ID, not the key", async () => {
    const { code, stdout } = await runs.unknownApp!;
    expect(linesOf(stdout)).toContain(`FAIL App 987654321 on ${fx.sim.apiBase}: GET /app: no App with that id (HTTP 401 Integration not found): is HOST_APP_ID this App's id (the App's settings, "App ID")?`);
    expect(stdout).not.toContain("private key");
    expect(code).toBe(1);
  });

  it("an issuer nothing answers for: FAIL for its discovery document, exit 1", async () => {
    const { code, stdout } = await runs.deadIssuer!;
    expect(linesOf(stdout)).toContain(`FAIL issuer ${deadIssuer}: discovery document unreachable (ECONNREFUSED)`);
    expect(code).toBe(1);
  });

  it("Redis down (a port with nothing listening): FAIL for that binding, exit 1", async () => {
    const { code, stdout } = await runs.redisDown!;
    expect(linesOf(stdout)).toContain(`FAIL LEGACY_QUOTA_KV redis://127.0.0.1:${deadRedisPort}: does not answer (the broker would serve as if it were unset)`);
    expect(stdout).not.toContain("hunter2");
    expect(code).toBe(1);
  });

  it("TOKEN_PERMISSIONS beyond the installation's grant, and auto-update's needs: FAIL naming each", async () => {
    const { code, stdout } = await runs.beyondGrant!;
    expect(linesOf(stdout)).toContain(
      `FAIL installation ${fx.installationId} (octo-org): TOKEN_PERMISSIONS needs issues: write (granted read); auto-update needs workflows: write; it grants contents: write, issues: read, metadata: read, pull_requests: write`,
    );
    expect(code).toBe(1);
  });

  it("a setting that does not parse: the broker's own message, exit 1", async () => {
    const { code, stdout } = await runs.unparsable!;
    const lines = linesOf(stdout);
    expect(lines).toContain("FAIL HOST_APP_ID is not set: /token and /sign answer 503 app_unconfigured, /releases too");
    expect(lines.some((line) => line.startsWith("FAIL TOKEN_PERMISSIONS unusable: /token answers 400 invalid_token_permissions ("))).toBe(true);
    expect(lines).toContain("FAIL ADMIN_PORT is not a port number (0-65535): the broker does not start");
    expect(lines).toContain("FAIL PORT is not a port number (0-65535): the broker does not start");
    expect(lines).toContain("FAIL HOST is not an IP address or a host name: the broker does not start");
    expect(lines).toContain("FAIL LOG_LEVEL is not one of fatal, error, warn, info, debug, trace, silent: the broker does not start");
    expect(lines).toContain("FAIL MAX_CONNECTIONS is not a whole number from 1: the broker does not start");
    expect(lines).toContain("FAIL PROCESS_TRIGGER_SECRET is a placeholder, not a generated secret (at least 32 random characters; make one with openssl rand -hex 32): treated as unset, /sign and /releases answer 503 sign_disabled / releases_disabled");
    expect(lines).toContain("FAIL HOST_WEBHOOK_SECRET is shorter than 32 characters (at least 32 random characters; make one with openssl rand -hex 32): treated as unset, /webhook answers 503 webhook_disabled");
    expect(lines).toContain('FAIL ALLOWED_REPOSITORIES has entries that are not owner/name (no entry is a pattern), which match nothing: "octo-org/*", "octo-org/api-*"');
    expect(stdout).not.toContain(HOOK_32.slice(0, 31));
    expect(lines).toContain("FAIL UPSTREAM_POINTS_PER_MINUTE is not a whole number from 5: using GitHub's 900 in this process");
    expect(lines).toContain("FAIL UPDATE_BRANCH_PER_HOUR is not a positive whole number: using the default, 500");
    expect(code).toBe(1);
  });

  it("trust policies on: per installation, whether the owner policy in <owner>/.github is readable; a warning (not a failure) where it is not", async () => {
    const { stdout } = await runs.ownerPolicy!;
    const lines = linesOf(stdout);
    const [policyOrg, loneOrg, openOrg, bareOrg] = ["policy-org", "lone-org", "open-org", "bare-org"].map((account) => `installation ${policyInstallations[account]} (${account})`);
    expect(lines).toContain(`ok   ${policyOrg}: owner policy policy-org/.github/.github/tokensmith-org.yml readable (blob ${blobSha(Buffer.from(OWNER_POLICY)).slice(0, 12)})`);
    expect(lines).toContain(`ok   ${openOrg}: open-org/.github readable; no owner policy in it (.github/tokensmith-org.yml absent)`);
    expect(lines).toContain(
      `warn ${loneOrg}: the App cannot read lone-org/.github (not among the installation's selected repositories): an owner policy lone-org/.github/.github/tokensmith-org.yml there is ignored; add the .github repository to the App's installation on lone-org (Repository access), or ignore this if lone-org has none`,
    );
    expect(lines).toContain(
      `warn ${bareOrg}: no contents permission, so the broker can read no policy here (neither bare-org/.github/.github/tokensmith-org.yml nor any repository's .github/tokensmith.yml): every repository gets the default token; grant the App contents: read`,
    );
    // The only failure is /sign's contents: write on bare-org, which is not about policies.
    expect(lines.filter((line) => line.startsWith("FAIL"))).toEqual([expect.stringContaining(`FAIL ${bareOrg}: /sign needs contents: write`)]);
    // Each check's token (narrowed to .github, contents: read) was revoked at once.
    const checkTokens = [...fx.sim.tokens].map(([token, issued]) => ({ token, ...issued })).filter((issued) => issued.permissions.contents === "read" && JSON.stringify(issued.repositories) === JSON.stringify([".github"]));
    expect(checkTokens.length).toBeGreaterThanOrEqual(4); // policy-org and open-org, in each of the two runs
    expect(checkTokens.every((issued) => issued.revoked)).toBe(true);
    expectNoSecrets([stdout], [policyApp.privateKeyPem, ...checkTokens.map((issued) => issued.token)]);
  });

  it("TOKEN_POLICY=required: an installation without contents is told every token is denied; TOKEN_POLICY=off (the other runs): no owner-policy line", async () => {
    const { stdout } = await runs.ownerPolicyRequired!;
    expect(linesOf(stdout)).toContain(
      `warn installation ${policyInstallations["bare-org"]} (bare-org): no contents permission, so the broker can read no policy here (neither bare-org/.github/.github/tokensmith-org.yml nor any repository's .github/tokensmith.yml): TOKEN_POLICY=required denies every token; grant the App contents: read`,
    );
    expect((await runs.good!).stdout).not.toMatch(/owner policy|\.github/);
  });
});
