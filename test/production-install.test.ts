// The production install of docs/deploying.md, run as written: `npm pack`, then in an empty
// directory `npm install --omit=dev <tarball>` and `npx tokensmith serve`, which answers a real
// /token and /releases against the simulator. No development dependency, no build at run time.
// .ci/run runs the same commands (with the prepack build); here `npm test` has just built, so the
// pack skips its scripts (a second tsc would rewrite build/ under the other test workers' feet).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
      if (error) reject(new Error(`${command} ${args.join(" ")} failed: ${stderr}${stdout}`));
      else resolve(stdout);
    });
  });
}

/** The guide's pack and install, once for this file's tests: the installed project's directory. */
let installing: Promise<string> | undefined;
function installOnce(): Promise<string> {
  installing ??= (async () => {
    const [pack, install] = guideCommands("production-install");
    const packed = join(work, "packed");
    const app = join(work, "app");
    await run("mkdir", ["-p", packed, app], work);
    await run("npm", [...pack!.split(" ").slice(1), "--ignore-scripts", "--pack-destination", packed], ROOT);
    const [tarball] = readdirSync(packed).filter((name) => /^tokensmith-.*\.tgz$/.test(name));
    if (!tarball) throw new Error(`npm pack wrote no tarball into ${packed}`);
    const installArgs = install!.split(" ").slice(1).map((arg) => (arg === "./tokensmith-*.tgz" ? join(packed, tarball) : arg));
    await run("npm", [...installArgs, "--prefer-offline"], app);
    return app;
  })();
  return installing;
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

  const app = await installOnce();
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

// `tokensmith/testing` from the same install (--omit=dev: what `npm install tokensmith` gives a
// user's project): a TypeScript consumer type-checked against the shipped declarations, then run.
// One tsc program holds the consumer and a mistake: its only error must be the mistake's, so the
// consumer and every shipped declaration check clean (skipLibCheck off: a declaration that
// imports a development-only package is an error there), and the consumer is emitted to run.
// skipDefaultLibCheck: TypeScript's own lib.*.d.ts are not the package's to check (about 1.7 s
// of CPU per program; a second program for the mistake cost 4.5 s more).
const CONSUMER = `import { DEFAULT_WORLD, startSandbox, type ActionRun, type Sandbox } from "tokensmith/testing";

const sandbox: Sandbox = await startSandbox();
try {
  const run: ActionRun = await sandbox.runAction({ job: { repository: "octo-org/app", ref: "refs/tags/v1.2.0" } });
  const minted = sandbox.platform.mints.at(-1)?.repositories;
  const oidcToken: string = await sandbox.mintJobToken({ repository: "octo-org/docs", workflow: "release" });
  const response = await fetch(\`\${sandbox.brokerUrl}/token\`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ oidcToken, owner: "octo-org", repo: "docs" }),
  });
  const answer = (await response.json()) as { repository?: string };
  console.log(JSON.stringify({
    world: DEFAULT_WORLD.repositories.length > 0,
    exitCode: run.exitCode,
    repository: run.outputs.repository,
    minted,
    token: [response.status, answer.repository],
  }));
} finally {
  await sandbox.close();
}
`;
// The declarations are real: a wrong option is a type error, not an any.
const MISTAKE = `import { startSandbox } from "tokensmith/testing";
await startSandbox({ notAnOption: true });
`;

it("tokensmith/testing from that install: a TypeScript consumer type-checks against the shipped declarations and runs the sandbox", async () => {
  const app = await installOnce();
  for (const dev of ["@octokit/openapi", "typescript", "@types/node"]) expect(existsSync(join(app, "node_modules", dev))).toBe(false);
  const tsc = join(ROOT, "node_modules/typescript/bin/tsc");
  const tsconfig = {
    compilerOptions: {
      module: "nodenext", moduleResolution: "nodenext", target: "es2022", strict: true, skipLibCheck: false, skipDefaultLibCheck: true,
      outDir: "out", types: ["node"], typeRoots: [join(ROOT, "node_modules/@types")],
    },
    files: ["consumer.ts", "mistake.ts"],
  };
  writeFileSync(join(app, "package.json"), JSON.stringify({ ...JSON.parse(readFileSync(join(app, "package.json"), "utf8")), type: "module" }));
  writeFileSync(join(app, "consumer.ts"), CONSUMER);
  writeFileSync(join(app, "mistake.ts"), MISTAKE);
  writeFileSync(join(app, "tsconfig.json"), JSON.stringify(tsconfig));

  const checked = await new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = execFile(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app, timeout: 120_000 }, (_error, stdout, stderr) => resolve({ code: child.exitCode, output: `${stdout}${stderr}` }));
  });
  // Exit 2: errors reported and the outputs written (1 would be: nothing emitted).
  expect(checked.code).toBe(2);
  expect(checked.output.split("\n").filter((line) => /error TS\d+/.test(line))).toEqual([
    expect.stringMatching(/^mistake\.ts\(2,\d+\): error TS2353: Object literal may only specify known properties, and 'notAnOption' does not exist/),
  ]);

  const { stdout, stderr } = await runBoth(process.execPath, ["out/consumer.js"], app);
  expect(JSON.parse(stdout)).toEqual({ world: true, exitCode: 0, repository: "octo-org/app", minted: ["app"], token: [200, "octo-org/docs"] });
  // Without the 400 MB REST description the simulator says, once, that it does not check bodies.
  expect(stderr.match(/TOKENSMITH_SIMULATOR_NO_OPENAPI/g)).toHaveLength(1);
  expect(stderr).toContain("@octokit/openapi is not installed (npm install --save-dev @octokit/openapi to check them)");
  expect(stderr).not.toMatch(/ERR_MODULE_NOT_FOUND|Cannot find/);
}, 180_000);

function runBoth(command: string, args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(" ")} failed: ${stderr}${stdout}`));
      else resolve({ stdout, stderr });
    });
  });
}
