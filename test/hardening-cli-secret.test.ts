// Issue 24 item 8: the CLI (bin/tokensmith.js, a child process) keeps TOKENSMITH_SECRET on the
// broker's origin — a redirect is reported, never followed —, `doctor` warns on plain http to a
// host that is not loopback, and a URL's credentials are printed or logged nowhere (doctor's
// lines, the broker's log). A redirect to another origin and a URL's credentials in doctor's
// output are checked on the child process; the other cases call the same entry, runCli, in this
// process (test/cli.test.ts runs both commands' other exits as processes).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { execFile } from "node:child_process";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { doctorCommand } from "../server/cli/doctor-command.js";
import { redactUrl, redactUrlCredentials } from "../shared/redact-url.js";
import { loopbackOnlyFetch } from "./support/broker.js";
import { cliInProcess, type CliRun } from "./support/cli-in-process.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { spawnBroker } from "./support/spawn-broker.js";
import { REDIS_URL } from "./support/redis-url.js";

const BIN = fileURLToPath(new URL("../bin/tokensmith.js", import.meta.url));
const SECRET = "cli-secret-stays-home-0123456789";
const URL_PASSWORD = "url-password-5f3a9c";

let fx: TokenFixture;
const servers: Server[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await fx.sim.close();
});

function cli(args: string[], env: Record<string, string | undefined>) {
  return new Promise<CliRun>((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A loopback server on `host` that records each request's path and headers and answers with `answer`. */
async function recorder(host: string, answer: (path: string) => { status: number; headers?: Record<string, string>; body?: string }) {
  const seen: Array<{ path: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? "", headers: req.headers });
    const { status, headers, body } = answer(req.url ?? "");
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(body ?? "{}");
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  return { url: `http://${host}:${(server.address() as AddressInfo).port}`, seen };
}

describe("tokensmith releases and redirects", () => {
  it.each([
    [302, "another origin", "127.0.0.2", cli],
    [307, "another origin", "127.0.0.2", cliInProcess],
    [308, "another port of the same host", "127.0.0.1", cliInProcess],
  ])("reports a %i to %s as an error and sends the secret nowhere else", async (status, _label, elsewhereHost, run) => {
    const elsewhere = await recorder(elsewhereHost, () => ({ status: 200, body: JSON.stringify({ generated_at: "2026-01-01T00:00:00Z", repos: [] }) }));
    const broker = await recorder("127.0.0.1", () => ({ status, headers: { location: `${elsewhere.url}/releases` } }));
    const { code, stdout, stderr } = await run(["releases", "--url", broker.url], { TOKENSMITH_SECRET: SECRET });
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toBe(`tokensmith: the broker at ${broker.url} answered a redirect (HTTP ${status}) to ${elsewhere.url}: not followed, so TOKENSMITH_SECRET was sent nowhere else. Give --url the broker's own address.\n`);
    expect(broker.seen.map((r) => r.headers.authorization)).toEqual([`Bearer ${SECRET}`]);
    expect(elsewhere.seen).toEqual([]);
  });

  it("does not follow a redirect on the same origin either", async () => {
    const broker = await recorder("127.0.0.1", (path) => (path === "/releases" ? { status: 301, headers: { location: "/v2/releases" } } : { status: 200, body: JSON.stringify({ generated_at: "x", repos: [] }) }));
    const { code, stderr } = await cliInProcess(["releases", "--url", broker.url], { TOKENSMITH_SECRET: SECRET });
    expect(code).toBe(1);
    expect(stderr).toContain("answered a redirect (HTTP 301) to /v2/releases on the same origin: not followed");
    expect(broker.seen.map((r) => r.path)).toEqual(["/releases"]);
  });

  it("refuses a --url with a user and password, and never prints them", async () => {
    const broker = await recorder("127.0.0.1", () => ({ status: 200 }));
    const withUser = broker.url.replace("http://", `http://ops:${URL_PASSWORD}@`);
    const { code, stdout, stderr } = await cliInProcess(["releases", "--url", withUser], { TOKENSMITH_SECRET: SECRET });
    expect(code).toBe(2);
    expect(stderr).toBe("tokensmith: --url must not carry a user or password: the secret is read from TOKENSMITH_SECRET.\n");
    expect(stdout + stderr).not.toContain(URL_PASSWORD);
    expect(broker.seen).toEqual([]);
  });
});

describe("tokensmith doctor and plain http", () => {
  const doctor = (env: Record<string, string | undefined>) => cliInProcess(["doctor"], env, { fetch: loopbackOnlyFetch });
  const lines = (stdout: string) => stdout.split("\n").filter((line) => /^(ok|FAIL|warn) /.test(line));

  it("warns on a plain-http API base that is not loopback (the App is not set, so nothing is sent there)", async () => {
    const { stdout } = await doctor({ ...fx.env, HOST_APP_ID: undefined, HOST_APP_PRIVATE_KEY: undefined, HOST_API_BASE: `http://ops:${URL_PASSWORD}@api.example.test/api/v3?token=abc` });
    expect(lines(stdout)).toContain("warn HOST_API_BASE http://api.example.test/api/v3 is plain http to a host that is not loopback: the App JWT and every token cross the network in clear; use https");
    expect(stdout).not.toContain(URL_PASSWORD);
    expect(stdout).not.toContain("token=abc");
  });

  it("does not warn on plain http to loopback, however spelled", async () => {
    const { code, stdout } = await doctor({ ...fx.env, HOST_API_BASE: fx.env.HOST_API_BASE!.replace("127.0.0.1", "127.1") });
    expect(lines(stdout).filter((l) => l.startsWith("warn"))).toEqual([]);
    expect(lines(stdout)).toContain(`ok   issuer ${fx.env.HOST_OIDC_ISSUER}: discovery and key set reachable (1 key)`);
    expect(code).toBe(0);
  });

  it("warns on every plain-http issuer and API base that is not loopback (in process: no request leaves loopback)", async () => {
    let out = "";
    const refused: string[] = [];
    const fetchLoopbackOnly: typeof fetch = (input, init) => {
      refused.push(String(input));
      return loopbackOnlyFetch(input, init);
    };
    const code = await doctorCommand({
      env: { ...fx.env, HOST_OIDC_ISSUER: "http://issuer.example.test", ENT_OIDC_ISSUER: `http://ci:${URL_PASSWORD}@10.1.2.3/_services/token`, ENT_API_BASE: "https://ghes.example.test/api/v3" },
      fetch: fetchLoopbackOnly,
      out: (text) => (out += text),
      err: (text) => (out += text),
      serve: async () => undefined,
    });
    expect(code).toBe(1); // the issuers cannot be reached from here: FAIL lines
    expect(lines(out).filter((l) => l.startsWith("warn"))).toEqual([
      "warn HOST_OIDC_ISSUER http://issuer.example.test is plain http to a host that is not loopback: anyone on the path can swap the keys the broker trusts; use https",
      "warn ENT_OIDC_ISSUER http://10.1.2.3/_services/token is plain http to a host that is not loopback: anyone on the path can swap the keys the broker trusts; use https",
    ]);
    expect(out).not.toContain(URL_PASSWORD);
  });
});

describe("credentials in URLs are redacted", () => {
  it("doctor prints a store's and an issuer's URL without user and password, even in an error it quotes", async () => {
    const issuerWithUser = fx.env.HOST_OIDC_ISSUER!.replace("http://", `http://ci:${URL_PASSWORD}@`);
    const { stdout, stderr } = await cli(["doctor"], { ...fx.env, HOST_OIDC_ISSUER: issuerWithUser, LEGACY_QUOTA_KV: `redis://default:${URL_PASSWORD}@${new URL(REDIS_URL).host}` });
    expect(stdout).toContain(`issuer ${fx.env.HOST_OIDC_ISSUER}: discovery document unreachable`);
    expect(stdout).toContain(`ok   LEGACY_QUOTA_KV ${REDIS_URL}: answers`);
    expect(stdout + stderr).not.toContain(URL_PASSWORD);
  });

  it("the broker's log shows an issuer and a store without their credentials", async () => {
    const issuerWithUser = fx.env.HOST_OIDC_ISSUER!.replace("http://", `http://ci:${URL_PASSWORD}@`);
    const broker = await spawnBroker({ ...fx.env, HOST_OIDC_ISSUER: issuerWithUser, SERVICE_JWKS_CACHE: `redis://default:${URL_PASSWORD}@127.0.0.1:1` });
    fx.sim.oidc.keyEndpoint = "fail"; // the key fetch fails: its log line names the issuer
    try {
      const response = await fetch(`${broker.url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ oidcToken: await fx.sim.oidc.sign({ iss: issuerWithUser }), owner: "octo-org", repo: "app" }) });
      expect(response.status).toBe(503);
      for (let waited = 0; waited < 5_000 && !broker.lines.some((l) => l.includes("OIDC key set fetch failed")); waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      fx.sim.oidc.keyEndpoint = "ok";
      await broker.stop();
    }
    const failed = broker.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.msg === "OIDC key set fetch failed");
    expect(failed).toMatchObject({ issuer: issuerWithUser.replace(`ci:${URL_PASSWORD}`, "[redacted]") });
    expect(broker.lines.some((l) => l.includes('"store":"redis://127.0.0.1:1"'))).toBe(true);
    expect(broker.lines.join("\n")).not.toContain(URL_PASSWORD);
    expectNoSecrets(broker.lines, [URL_PASSWORD, fx.app.privateKeyPem]);
  });

  it.each([
    ["redis://user:pass@127.0.0.1:6379/2?password=x", "redis://127.0.0.1:6379/2"],
    ["https://user:pass@ghes.example.test/api/v3", "https://ghes.example.test/api/v3"],
    ["https://user:p@ss@ghes.example.test/api/v3", "https://ghes.example.test/api/v3"],
    ["https://api.github.com", "https://api.github.com"],
    ["memory://", "memory://"],
    ["not a url", "(unparseable url)"],
  ])("redactUrl(%s) = %s", (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it("redactUrlCredentials rewrites every URL's user and password in a text", () => {
    expect(redactUrlCredentials("connect to redis://:pw@h:1 and https://u:p@x.test/a then user@mail.test")).toBe("connect to redis://[redacted]@h:1 and https://[redacted]@x.test/a then user@mail.test");
  });

  it("redactUrlCredentials removes a password holding an unencoded @ whole (the URL parser's last @ ends the userinfo)", () => {
    expect(redactUrlCredentials("broker https://ci:pa@ss@word@broker.test/token failed; mail ops@x.test")).toBe("broker https://[redacted]@broker.test/token failed; mail ops@x.test");
    expect(new URL("https://ci:pa@ss@word@broker.test/").host).toBe("broker.test");
  });
});
