// `npx tokensmith serve` as docs/deploying.md runs it (issue 40, item 7): npx runs the bin through
// a shell, so a SIGTERM to npx (a process manager stopping it) ends npx and the shell, never the
// broker. The broker notices it was left behind and stops as on SIGTERM (drains, exits 0).
import { execFileSync, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { tokenFixture, type TokenFixture } from "./support/fixtures.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
let fx: TokenFixture;
beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  await fx.sim.close();
});

/** The pids still in process group `group` (ps lists none once every member has exited). */
function groupMembers(group: number): number[] {
  try {
    return execFileSync("ps", ["-o", "pid=", "-g", String(group)], { encoding: "utf8" }).split("\n").map((pid) => Number(pid.trim())).filter((pid) => pid > 0);
  } catch {
    return []; // ps exits 1 when no process matched
  }
}

it("a SIGTERM to npx's process group leader stops the broker too: nothing of the group is left", async () => {
  const npx = spawn("npx", ["--no-install", "tokensmith", "serve"], {
    cwd: ROOT,
    detached: true, // npx leads a process group of its own, as under a process manager
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...fx.env, PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const group = npx.pid!;
  const lines: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`broker did not start: ${lines.join("\n")}`)), 60_000);
      const take = (chunk: Buffer) => {
        lines.push(...chunk.toString().split("\n").filter(Boolean));
        if (lines.some((line) => line.includes("tokensmith broker listening"))) {
          clearTimeout(timer);
          resolve();
        }
      };
      npx.stdout!.on("data", take);
      npx.stderr!.on("data", take);
    });
    expect(groupMembers(group).length).toBeGreaterThanOrEqual(2); // npx, (its shell,) the broker

    process.kill(group, "SIGTERM"); // the leader only, as a process manager stopping "the service"
    const until = Date.now() + 20_000;
    while (groupMembers(group).length > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(groupMembers(group)).toEqual([]);
    expect(lines.some((line) => line.includes("parent process gone"))).toBe(true);
  } finally {
    try {
      process.kill(-group, "SIGKILL"); // whatever is left of the group this test started
    } catch {
      // already gone
    }
  }
}, 90_000);
