// The dashboard server (server/dashboard/) over real HTTP, in front of a real broker over the
// loopback simulator: /api/releases passes the aggregate through, turns every broker error into the
// shared table's sentence, and never lets the bearer secret out; the page's files and headers; and
// `tokensmith dashboard` from the built output.
import { spawn } from "node:child_process";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ERROR_CODES } from "../shared/error-codes.js";
import { startDashboard, type RunningDashboard } from "../server/dashboard/start-dashboard.js";
import { loopbackOnlyFetch, startBroker, type TestBroker } from "./support/broker.js";
import { rawRequest } from "./support/raw-request.js";
import { getReleases, releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";

const BIN = fileURLToPath(new URL("../bin/tokensmith.js", import.meta.url));
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

let fx: ReleasesFixture;
let broker: TestBroker;
let dashboard: RunningDashboard;
/** Every answer the dashboard gave in this file, headers and body, to look for the secret in. */
const seen: string[] = [];

beforeAll(async () => {
  fx = await releasesFixture();
  fx.install("dash-org", ["api", "web", "docs"]);
  fx.sim.releases.add("dash-org/api", { tagName: "v1.2.0", createdAt: "2026-01-02T03:04:05Z" });
  fx.sim.releases.add("dash-org/web", { tagName: "v2.0.0-rc.1", isPrerelease: true, createdAt: "2026-02-02T00:00:00Z" });
  broker = await startBroker({ ...fx.env, LEGACY_QUOTA_KV: "memory://" });
  dashboard = await dashboardFor(broker.url);
});
afterAll(async () => {
  await dashboard.close();
  await broker.close();
  await fx.sim.close();
  expect(seen.length).toBeGreaterThan(5);
  for (const text of seen) expect(text).not.toContain(TRIGGER_SECRET);
});

function dashboardFor(brokerUrl: string, timeoutMs = 10_000) {
  return startDashboard({ brokerUrl: new URL(`${brokerUrl}/`), secret: TRIGGER_SECRET, fetch: loopbackOnlyFetch, timeoutMs }, { host: "127.0.0.1", port: 0 });
}

async function get(base: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${base}${path}`, init);
  const text = await response.text();
  seen.push(JSON.stringify([...response.headers]), text);
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, text, body };
}

/** Changes the broker's settings for one call. */
async function withBrokerEnv<T>(change: Record<string, string | undefined>, run: () => Promise<T>): Promise<T> {
  const saved = { ...broker.env };
  Object.assign(broker.env, change);
  try {
    return await run();
  } finally {
    for (const key of Object.keys(broker.env)) delete broker.env[key];
    Object.assign(broker.env, saved);
  }
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("GET /api/releases", () => {
  it("passes the broker's aggregate through, not cached by the browser", async () => {
    const { status, headers, body } = await get(dashboard.url, "/api/releases");
    expect(status).toBe(200);
    expect(headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(headers.get("cache-control")).toBe("no-store");
    expect(headers.get("content-security-policy")).toBe(CSP);
    expect(headers.get("x-content-type-options")).toBe("nosniff");
    expect(headers.get("referrer-policy")).toBe("no-referrer");
    const direct = await getReleases(broker.url);
    expect(body).toEqual({ ...direct.body, cached: body.cached });
    expect(body.repos.map((entry: { repo: string }) => entry.repo)).toEqual(["dash-org/api", "dash-org/docs", "dash-org/web"]);
  });

  it("turns a wrong secret into the shared table's sentence (401 unauthorized)", async () => {
    const { status, body } = await withBrokerEnv({ PROCESS_TRIGGER_SECRET: "another-secret-entirely-0123456789abcdef" }, () => get(dashboard.url, "/api/releases"));
    expect(status).toBe(401);
    expect(body).toEqual({ error: "unauthorized", sentence: `${ERROR_CODES.unauthorized.meaning} TOKENSMITH_SECRET must be the broker's PROCESS_TRIGGER_SECRET.` });
  });

  it.each([
    ["releases_disabled", { PROCESS_TRIGGER_SECRET: undefined }],
    ["app_unconfigured", { HOST_APP_ID: undefined }],
  ] as Array<["releases_disabled" | "app_unconfigured", Record<string, undefined>]>)("turns 503 %s into the shared table's meaning and hint", async (code, change) => {
    const { status, body } = await withBrokerEnv(change, () => get(dashboard.url, "/api/releases"));
    expect(status).toBe(503);
    expect(body).toEqual({ error: code, sentence: `${ERROR_CODES[code].meaning} ${ERROR_CODES[code].hint}` });
  });

  it("says an unreachable broker in a sentence of its own (502 broker_unreachable)", async () => {
    const port = await closedPort();
    const down = await dashboardFor(`http://127.0.0.1:${port}`);
    try {
      const { status, body } = await get(down.url, "/api/releases");
      expect(status).toBe(502);
      expect(body).toEqual({
        error: "broker_unreachable",
        sentence: `The dashboard could not reach the broker at http://127.0.0.1:${port} (ECONNREFUSED). Check --broker and that the broker is running.`,
      });
    } finally {
      await down.close();
    }
  });

  it("gives up on a broker that never answers (504 broker_timeout)", async () => {
    const sockets: Socket[] = [];
    const silent: NetServer = createNetServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", () => resolve()));
    const slow = await dashboardFor(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`, 300);
    try {
      const { status, body } = await get(slow.url, "/api/releases");
      expect(status).toBe(504);
      expect(body.error).toBe("broker_timeout");
      expect(body.sentence).toMatch(/^The broker at http:\/\/127\.0\.0\.1:\d+ did not answer within 0\.3 s\./);
    } finally {
      await slow.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it("says when --broker is not a tokensmith broker (502 broker_unrecognised)", async () => {
    const wrong = await dashboardFor(fx.sim.apiBase);
    try {
      const { status, body } = await get(wrong.url, "/api/releases");
      expect(status).toBe(502);
      expect(body.error).toBe("broker_unrecognised");
      expect(body.sentence).toMatch(/^The broker answered HTTP \d{3}, which is not a tokensmith answer\. Check --broker/);
    } finally {
      await wrong.close();
    }
  });

  it("sends the bearer to the broker only, and nothing of it to the caller", async () => {
    const answers = [
      await get(dashboard.url, "/api/releases"),
      await withBrokerEnv({ PROCESS_TRIGGER_SECRET: "x-another-secret-0123456789abcdef0123" }, () => get(dashboard.url, "/api/releases")),
      await get(dashboard.url, "/api/releases?secret=1", { method: "HEAD" }),
    ];
    for (const answer of answers) {
      expect(answer.text).not.toContain(TRIGGER_SECRET);
      expect(JSON.stringify([...answer.headers])).not.toContain(TRIGGER_SECRET);
    }
  });

  it("answers only requests addressed to it (rebinding) and from its own page (cross-site)", async () => {
    const { port } = new URL(dashboard.url);
    const rebound = await rawRequest(dashboard.url, { method: "GET", path: "/api/releases", headers: { host: `attacker.example:${port}` } });
    expect(rebound.status).toBe(421);
    expect(rebound.text).not.toContain("dash-org");
    const local = await rawRequest(dashboard.url, { method: "GET", path: "/api/releases", headers: { host: `localhost:${port}` } });
    expect(local.status).toBe(200);
    const crossSite = await get(dashboard.url, "/api/releases", { headers: { "sec-fetch-site": "cross-site" } });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body.error).toBe("cross_site_request");
  });
});

describe("the page's files", () => {
  it.each([
    ["/", "text/html; charset=utf-8", '<script src="/app.js" defer></script>'],
    ["/app.js", "text/javascript; charset=utf-8", "/api/releases"],
    ["/app.css", "text/css; charset=utf-8", ".badge"],
  ])("serves %s with a strict Content-Security-Policy", async (path, contentType, excerpt) => {
    const { status, headers, text } = await get(dashboard.url, path);
    expect(status).toBe(200);
    expect(headers.get("content-type")).toBe(contentType);
    expect(headers.get("content-security-policy")).toBe(CSP);
    expect(headers.get("x-content-type-options")).toBe("nosniff");
    expect(headers.get("referrer-policy")).toBe("no-referrer");
    expect(text).toContain(excerpt);
  });

  it("loads nothing from elsewhere and has no inline script or style", async () => {
    const { text } = await get(dashboard.url, "/");
    expect(text).not.toMatch(/https?:\/\//);
    expect(text).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(text).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
  });

  it("answers 404 elsewhere and 405 to other methods", async () => {
    const missing = await get(dashboard.url, "/../server/dashboard/static/app.js");
    expect(missing.status).toBe(404);
    expect((await get(dashboard.url, "/index.html")).status).toBe(404);
    const post = await get(dashboard.url, "/api/releases", { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });
});

describe("tokensmith dashboard", () => {
  it("serves the page and the aggregate from the built output", async () => {
    const child = spawn(process.execPath, [BIN, "dashboard", "--broker", broker.url, "--port", "0"], {
      env: { PATH: process.env.PATH, TOKENSMITH_SECRET: TRIGGER_SECRET },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk;
          const match = /^tokensmith dashboard: (http:\/\/127\.0\.0\.1:\d+)\/ \(broker http:\/\/127\.0\.0\.1:\d+\)$/m.exec(stdout);
          if (match) resolve(match[1]!);
        });
        child.on("exit", () => reject(new Error(`exited before listening: ${stdout} ${stderr}`)));
      });
      const page = await get(url, "/");
      expect(page.status).toBe(200);
      expect(page.text).toContain('<table id="releases"');
      expect((await get(url, "/app.js")).status).toBe(200);
      const api = await get(url, "/api/releases");
      expect(api.status).toBe(200);
      expect(api.body.repos).toHaveLength(3);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(stdout + stderr).not.toContain(TRIGGER_SECRET);
  }, 120_000);

  it("explains a missing secret and a missing --broker", async () => {
    const run = (args: string[], env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, "dashboard", ...args], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "ignore", "pipe"] });
        let stderr = "";
        child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
        child.on("exit", (code) => resolve({ code, stderr }));
      });
    const noSecret = await run(["--broker", broker.url], {});
    expect(noSecret.code).toBe(2);
    expect(noSecret.stderr).toContain("set TOKENSMITH_SECRET");
    const noBroker = await run([], { TOKENSMITH_SECRET: TRIGGER_SECRET });
    expect(noBroker.code).toBe(2);
    expect(noBroker.stderr).toContain("--broker is required");
  }, 60_000);
});
