// `tokensmith sandbox` (bin/tokensmith.js) as a child process: --json prints one line whose runner
// variables fetch an OIDC token that the printed broker exchanges at /token; SIGTERM ends it with
// 0. --demo runs one release job end to end, prints every step, masks tokens and exits 0.
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";

const BIN = fileURLToPath(new URL("../bin/tokensmith.js", import.meta.url));

it("sandbox --json: one JSON line, a working broker, exit 0 on SIGTERM", async () => {
  const child = spawn(process.execPath, [BIN, "sandbox", "--json"], { env: { PATH: process.env.PATH }, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  try {
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once("line", resolve);
      void exited.then((code) => reject(new Error(`sandbox exited with ${code}`)));
    });
    const printed = JSON.parse(line) as { fake: boolean; notice: string; brokerUrl: string; PROCESS_TRIGGER_SECRET: string; HOST_WEBHOOK_SECRET: string; runner: Record<string, string> };
    expect(printed.fake).toBe(true);
    expect(printed.notice).toMatch(/fake/);
    expect(printed.PROCESS_TRIGGER_SECRET).toMatch(/^fake-/);
    expect(printed.HOST_WEBHOOK_SECRET).toMatch(/^fake-/);
    const { ACTIONS_ID_TOKEN_REQUEST_URL: url, ACTIONS_ID_TOKEN_REQUEST_TOKEN: requestToken, GITHUB_REPOSITORY: repository } = printed.runner;
    const idToken = await fetch(`${url}&audience=tokensmith`, { headers: { authorization: `Bearer ${requestToken}` } });
    expect(idToken.status).toBe(200);
    const { value } = (await idToken.json()) as { value: string };
    const [owner, repo] = repository!.split("/");
    const { status, body } = await postJson(`${printed.brokerUrl}/token`, { oidcToken: value, owner, repo });
    expect(status).toBe(200);
    expect(body.repository).toBe(repository);
  } finally {
    child.kill("SIGTERM");
  }
  expect(await exited).toBe(0);
});

function cli(args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [BIN, "sandbox", ...args], { env: { PATH: process.env.PATH }, timeout: 20_000 }, (error, out, err) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout: out, stderr: err });
    });
  });
}

it("sandbox --demo --json --world FILE: the world's repository, one JSON line per step, each marked fake", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tokensmith-world-"));
  try {
    const world = join(dir, "world.json");
    writeFileSync(world, JSON.stringify({ organisation: "acme", repositories: [{ name: "rocket", releases: [{ tag: "v1.0.0" }], pullRequests: [{ base: "main" }] }] }));
    const { code, stdout, stderr } = await cli(["--demo", "--json", "--world", world]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const lines = stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const line of lines) expect(line.fake).toBe(true);
    expect((lines[0]!.runner as Record<string, string>).GITHUB_REPOSITORY).toBe("acme/rocket");
    expect(lines.at(-1)).toEqual({ fake: true, done: true, ok: true });
    writeFileSync(world, JSON.stringify({ organisation: "acme", repositories: [] }));
    const refused = await cli(["--world", world]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("repositories must be a non-empty array");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it("sandbox --demo: every step printed, every line says tokens are fake, no token in the output, exit 0", async () => {
  const started = Date.now();
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [BIN, "sandbox", "--demo"], { env: { PATH: process.env.PATH }, timeout: 20_000 }, (error, out, err) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout: out, stderr: err });
    });
  });
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  expect(Date.now() - started).toBeLessThan(20_000);
  const lines = stdout.split("\n").filter(Boolean);
  for (const line of lines) expect(line).toMatch(/^\[sandbox · fake tokens\] /);
  for (const step of ["action: OIDC token → installation token", "action post: revoke the token", "/sign", "/webhook", "/releases"]) {
    expect(lines.some((line) => line.includes(`ok   ${step}`))).toBe(true);
  }
  expect(stdout).toContain("demo done");
  expect(stdout).not.toMatch(/ghs_[A-Za-z0-9]{20,}/);
  expect(stdout).not.toContain("::add-mask::");
});
