// The production install of docs/deploying.md, run as written: `npm pack`, then in an empty
// directory `npm install --omit=dev <tarball>` and `npx tokensmith serve`, which answers a real
// /token and /releases against the simulator. No development dependency, no build at run time.
// .ci/run runs the same commands (with the prepack build); here `npm test` has just built, so the
// pack skips its scripts (a second tsc would rewrite build/ under the other test workers' feet).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { guideCommands } from "./support/guide-commands.js";
import { keepLogs } from "./support/log-sink.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SECRET = "production-install-secret-0123456789";

let fx: TokenFixture;
let work: string;
let broker: ChildProcess | undefined;
const lines: string[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
  work = mkdtempSync(join(tmpdir(), "tokensmith-install-"));
});
afterAll(async () => {
  if (broker && broker.exitCode === null && broker.signalCode === null && broker.pid) {
    const exited = new Promise((resolve) => broker!.once("exit", resolve));
    process.kill(-broker.pid, "SIGTERM");
    await exited;
  }
  keepLogs(lines);
  await fx.sim.close();
  rmSync(work, { recursive: true, force: true });
});

function run(command: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(" ")} failed: ${stderr}`));
      else resolve(stdout);
    });
  });
}

it("the guide's commands: pack, install with --omit=dev in an empty directory, serve; /token and /releases answer", async () => {
  const [pack, install, serve, ...rest] = guideCommands("production-install");
  expect(rest).toEqual([]);
  expect(pack).toBe("npm pack");
  expect(install).toBe("npm install --omit=dev --no-audit --no-fund ./tokensmith-*.tgz");
  expect(serve).toBe("npx tokensmith serve");
  // CI runs exactly these.
  const ci = readFileSync(join(ROOT, ".ci/run"), "utf8");
  for (const command of [pack, install, serve]) expect(ci).toContain(command!);

  const packed = join(work, "packed");
  const app = join(work, "app");
  await run("mkdir", ["-p", packed, app], work);
  await run("npm", [...pack!.split(" ").slice(1), "--ignore-scripts", "--pack-destination", packed], ROOT);
  const [tarball] = readdirSync(packed).filter((name) => /^tokensmith-.*\.tgz$/.test(name));
  expect(tarball).toBeDefined();
  const installArgs = install!.split(" ").slice(1).map((arg) => (arg === "./tokensmith-*.tgz" ? join(packed, tarball!) : arg));
  await run("npm", [...installArgs, "--prefer-offline"], app);

  const installed = join(app, "node_modules/tokensmith");
  expect(existsSync(join(installed, "build/server/main.js"))).toBe(true);
  expect(existsSync(join(installed, "app-manifest.json"))).toBe(true);
  expect(existsSync(join(installed, "docs/deploying.md"))).toBe(true);
  expect(existsSync(join(installed, "build/test"))).toBe(false);
  expect(existsSync(join(installed, "server/main.ts"))).toBe(false); // the TypeScript sources stay home
  expect(existsSync(join(installed, "server/dashboard/static/index.html"))).toBe(true); // the dashboard's page
  for (const dev of ["typescript", "jest", "ts-jest", "@vercel/ncc", "supertest"]) expect(existsSync(join(app, "node_modules", dev))).toBe(false);

  const [npx, ...serveArgs] = serve!.split(" ");
  broker = spawn(npx!, serveArgs, {
    cwd: app,
    detached: true, // its own process group: npx and the broker stop together
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: "0", ...fx.env, PROCESS_TRIGGER_SECRET: SECRET },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n").filter(Boolean)) {
        lines.push(line);
        if (line.includes('"tokensmith broker listening"')) resolve((JSON.parse(line) as { port: number }).port);
      }
    };
    broker!.stdout!.on("data", onData);
    broker!.stderr!.on("data", onData);
    broker!.once("exit", (code) => reject(new Error(`tokensmith serve exited with ${code}: ${lines.join("\n")}`)));
  });
  const url = `http://127.0.0.1:${port}`;

  const oidcToken = await fx.sim.oidc.sign();
  const token = await postJson(`${url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
  expect(token.status).toBe(200);
  expect(token.body.repository).toBe("octo-org/app");
  const releases = await fetch(`${url}/releases`, { headers: { authorization: `Bearer ${SECRET}` } });
  expect(releases.status).toBe(200);
  const body = (await releases.json()) as { repos: Array<{ repo: string }> };
  expect(body.repos.map((r) => r.repo).sort()).toEqual(["octo-org/app", "octo-org/other"]);

  const exited = new Promise<number | null>((resolve) => broker!.once("exit", (code) => resolve(code)));
  process.kill(-broker.pid!, "SIGTERM");
  await exited;
  expectNoSecrets(lines, [oidcToken, token.body.token as string, fx.app.privateKeyPem, SECRET]);
}, 180_000);
