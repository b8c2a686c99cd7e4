// Issue 24 item 5: the built broker (`build/server/main.js`, a child process) listens where `HOST`
// says (default 0.0.0.0) and its admin listener where `ADMIN_HOST` says (default 127.0.0.1).
// Loopback has a whole /8: a listener bound to 127.0.0.2 refuses connections on 127.0.0.1 and the
// other way round, which tells a bound address from every interface.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { request } from "node:http";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { freePort } from "./support/redis-server.js";
import { spawnBroker, spawnBrokerToExit, type BrokerProcess } from "./support/spawn-broker.js";

let fx: TokenFixture;
const started: BrokerProcess[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  for (const broker of started) await broker.stop();
  expectNoSecrets(started.flatMap((b) => b.lines), [fx.app.privateKeyPem]);
  await fx.sim.close();
});

/** Starts the built broker; resolves with its port and, when ADMIN_PORT is set, the admin's. */
async function start(env: Record<string, string>): Promise<{ broker: BrokerProcess; port: number; adminPort?: number }> {
  const broker = await spawnBroker({ ...fx.env, ...env });
  started.push(broker);
  const port = Number(new URL(broker.url).port);
  if (env.ADMIN_PORT === undefined) return { broker, port };
  // The admin listener is started before the broker's; wait for its line all the same.
  for (let waited = 0; waited < 5_000; waited += 20) {
    const line = broker.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((entry) => entry.msg === "tokensmith admin listening");
    if (line) return { broker, port, adminPort: line.admin_port as number };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no admin listening line: ${broker.lines.join("\n")}`);
}

/**
 * Brokers that more than one test only looks at, started by the first test that needs one (each
 * process costs about 0.5 s of CPU to start): HOST=127.0.0.2 alone, and no HOST with the admin
 * listener on (its default ADMIN_HOST).
 */
const once = <T>(make: () => Promise<T>) => {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
};
const hostOnly = once(() => start({ HOST: "127.0.0.2" }));
const everyInterface = once(async () => start({ ADMIN_PORT: String(await freePort()) }));

/** The status of GET `path` on host:port, or the connection error's code (ECONNREFUSED). */
function reach(host: string, port: number, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request({ host, port, path, method: "GET", agent: false, timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" })));
    req.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
    req.end();
  });
}

describe("HOST", () => {
  it("binds the broker to HOST only: 127.0.0.2 answers, 127.0.0.1 refuses", async () => {
    const { broker, port } = await hostOnly();
    expect(await reach("127.0.0.2", port, "/token")).toBe(405);
    expect(await reach("127.0.0.1", port, "/token")).toBe("ECONNREFUSED");
    const listening = broker.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.msg === "tokensmith broker listening");
    expect(listening).toMatchObject({ host: "127.0.0.2", port });
  });

  it("binds every IPv4 interface without HOST (0.0.0.0): both loopback addresses answer", async () => {
    const { broker, port } = await everyInterface();
    expect(await reach("127.0.0.1", port, "/token")).toBe(405);
    expect(await reach("127.0.0.2", port, "/token")).toBe(405);
    expect(broker.lines.some((l) => l.includes('"host":"0.0.0.0"'))).toBe(true);
  });
});

describe("ADMIN_HOST", () => {
  it("binds the admin listener to 127.0.0.1 without ADMIN_HOST, while the broker binds every interface", async () => {
    const { port, adminPort } = await everyInterface();
    expect(adminPort).toBeGreaterThan(0);
    expect(await reach("127.0.0.1", adminPort!, "/healthz")).toBe(200);
    expect(await reach("127.0.0.2", adminPort!, "/healthz")).toBe("ECONNREFUSED");
    expect(await reach("127.0.0.2", port, "/token")).toBe(405);
  });

  it("binds the admin listener to ADMIN_HOST when set", async () => {
    const { adminPort } = await start({ ADMIN_PORT: String(await freePort()), ADMIN_HOST: "127.0.0.2" });
    expect(await reach("127.0.0.2", adminPort!, "/healthz")).toBe(200);
    expect(await reach("127.0.0.1", adminPort!, "/healthz")).toBe("ECONNREFUSED");
  });
});

// Issue 38 item 9: a start-up setting that is wrong stops the broker before it listens, with one
// line naming the setting and exit 1: no stack trace (PORT=abc was ERR_SOCKET_BAD_PORT's, and
// LOG_LEVEL=verbose pino's), no listener started half-way.
describe("a wrong start-up setting: one line naming it, exit 1", () => {
  it.each([
    ["PORT", { PORT: "abc" }],
    ["PORT", { PORT: "70000" }],
    ["HOST", { HOST: "not a host!" }],
    ["LOG_LEVEL", { LOG_LEVEL: "verbose" }],
    ["MAX_CONNECTIONS", { MAX_CONNECTIONS: "lots" }],
    ["ADMIN_PORT", { ADMIN_PORT: "eighty" }],
    ["ADMIN_HOST", { ADMIN_PORT: "0", ADMIN_HOST: "http://127.0.0.1" }],
  ])("%s %j", async (setting, env) => {
    const { code, lines } = await spawnBrokerToExit({ ...fx.env, ...env });
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as { level: number; setting: string; msg: string };
    expect(line).toMatchObject({ level: "fatal", setting });
    expect(line.msg).toMatch(new RegExp(`^${setting} .*: the broker does not start$`));
    expect(lines[0]).not.toMatch(/\n\s+at |Error:/);
  });

  it("two wrong settings: a line for each, still exit 1", async () => {
    const { code, lines } = await spawnBrokerToExit({ ...fx.env, PORT: "abc", LOG_LEVEL: "verbose" });
    expect(code).toBe(1);
    expect(lines.map((l) => (JSON.parse(l) as { setting: string }).setting)).toEqual(["PORT", "LOG_LEVEL"]);
  });

  it("a port already taken: one line naming PORT and the reason, exit 1", async () => {
    // The port and address of a broker already listening (HOST=127.0.0.2's).
    const { port } = await hostOnly();
    const { code, lines } = await spawnBrokerToExit({ ...fx.env, HOST: "127.0.0.2", PORT: String(port) });
    expect(code).toBe(1);
    const fatal = lines.map((l) => JSON.parse(l) as { level: string; setting?: string; code?: string; msg: string }).filter((e) => e.level === "fatal");
    expect(fatal).toEqual([expect.objectContaining({ setting: "PORT", code: "EADDRINUSE", msg: `cannot listen on 127.0.0.2:${port} (EADDRINUSE): the broker does not start` })]);
    expect(lines.join("\n")).not.toMatch(/\n\s+at /);
    expect(await reach("127.0.0.2", port, "/token")).toBe(405); // the first broker is untouched
  });

  it("valid spellings start: LOG_LEVEL in capitals, a host name", async () => {
    const { broker } = await start({ LOG_LEVEL: " INFO ", HOST: "localhost" });
    expect(broker.lines.some((l) => l.includes("tokensmith broker listening"))).toBe(true);
  });
});
