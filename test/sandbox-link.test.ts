// startSandbox({ link }) and `tokensmith sandbox --link 40ms/100mbit`: the platform behind an
// emulated network link (simulator/link.ts). A /token exchange crosses it (the link's byte counts
// see the mint); a --link that does not read RTT/BANDWIDTH is refused with exit 2. No timing here:
// how fast the link is belongs to `npm run bench`.
import { execFile, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { parseLink, startSandbox, type Sandbox } from "../server/sandbox/index.js";
import { postJson } from "./support/broker.js";

const BIN = fileURLToPath(new URL("../bin/tokensmith.js", import.meta.url));

describe("startSandbox({ link })", () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ link: { rttMs: 4, mbit: 1000 } });
  });
  afterAll(() => sandbox.close());

  it("serves the platform's URLs through the link and counts the bytes of a /token exchange", async () => {
    const link = sandbox.link!;
    expect(link.options).toMatchObject({ rttMs: 4, mbit: 1000 });
    expect(sandbox.platformUrl).toBe(link.url);
    expect(sandbox.runnerEnv.ACTIONS_ID_TOKEN_REQUEST_URL!.startsWith(link.url)).toBe(true);
    link.resetStats();
    const oidcToken = await sandbox.mintJobToken({ repository: "octo-org/app" });
    const { status, body } = await postJson(`${sandbox.brokerUrl}/token`, { oidcToken, owner: "octo-org", repo: "app" });
    expect(status).toBe(200);
    expect(body.repository).toBe("octo-org/app");
    const mint = sandbox.platform.mints.at(-1)!;
    expect(mint).toMatchObject({ status: 201, repositories: ["app"] });
    // The broker's calls (at least the mint: a POST with a JSON body up, the token down) crossed the link.
    expect(link.stats.connections).toBeGreaterThanOrEqual(1);
    expect(link.stats.bytesUp).toBeGreaterThan(200);
    expect(link.stats.bytesDown).toBeGreaterThan(200);
  });

  it("without `link` the platform is plain loopback", async () => {
    const plain = await startSandbox();
    try {
      expect(plain.link).toBeUndefined();
    } finally {
      await plain.close();
    }
  });

  it("refuses a link with a negative or non-finite setting", async () => {
    await expect(startSandbox({ link: { rttMs: -1, mbit: 100 } })).rejects.toThrow(/link\.rttMs/);
    await expect(startSandbox({ link: { rttMs: 40, mbit: Number.NaN } })).rejects.toThrow(/link\.mbit/);
  });
});

describe("parseLink", () => {
  it("reads RTT/BANDWIDTH with or without units", () => {
    expect(parseLink("40ms/100mbit")).toEqual({ rttMs: 40, mbit: 100 });
    expect(parseLink("40/100")).toEqual({ rttMs: 40, mbit: 100 });
    expect(parseLink("2.5ms/0.5Mbit/s")).toEqual({ rttMs: 2.5, mbit: 0.5 });
    for (const bad of ["", "40ms", "fast", "40ms/100gbit", "-1/100", "40/100/3"]) expect(parseLink(bad)).toBeUndefined();
  });
});

describe("tokensmith sandbox --link", () => {
  it("--json --link 20ms/100mbit: prints the link, and the printed broker answers /token through it", async () => {
    const child = spawn(process.execPath, [BIN, "sandbox", "--json", "--link", "20ms/100mbit"], { env: { PATH: process.env.PATH }, stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once("line", resolve);
        void exited.then((code) => reject(new Error(`sandbox exited with ${code}`)));
      });
      const printed = JSON.parse(line) as { brokerUrl: string; platformUrl: string; link: { rttMs: number; mbit: number }; runner: Record<string, string> };
      expect(printed.link).toEqual({ rttMs: 20, mbit: 100 });
      const { ACTIONS_ID_TOKEN_REQUEST_URL: url, ACTIONS_ID_TOKEN_REQUEST_TOKEN: requestToken, GITHUB_REPOSITORY: repository } = printed.runner;
      expect(url!.startsWith(printed.platformUrl)).toBe(true);
      const idToken = await fetch(`${url}&audience=tokensmith`, { headers: { authorization: `Bearer ${requestToken}` } });
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

  it("--link that does not read RTT/BANDWIDTH: exit 2 and one line saying so", async () => {
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(process.execPath, [BIN, "sandbox", "--link", "fast"], { env: { PATH: process.env.PATH } }, (error, _stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stderr }));
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(/--link must read RTT\/BANDWIDTH, e\.g\. 40ms\/100mbit, got fast/);
  });
});
