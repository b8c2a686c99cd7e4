// Issue 26 item 6: `npm start` under a supervisor. The supervisor signals the process it started,
// npm; the broker must receive that signal, drain and exit, and nothing may keep the port.
// (Before: npm's child was `sh -c node build/server/main.js`; SIGTERM ended the shell and left the
// broker running under init.) Run on the built broker: `npx tsc -p tsconfig.build.json` first.
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "@jest/globals";
import { keepLogs } from "./support/log-sink.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const started: number[] = [];

afterAll(async () => {
  // A broker that outlived npm (the defect under test) is not left behind.
  for (const pid of started) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone, as it should be
    }
  }
});

/** Every process below `root` (from /proc: the broker's log lines carry no pid). */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ")".
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited while we looked
    }
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const [child, ppid] of parent) {
      if (ppid === pid) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(root);
  return found;
}

interface Listening {
  npm: ChildProcess;
  /** The processes npm started (the broker among them), seen while it listened. */
  below: number[];
  port: number;
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

// No App and no simulated platform: what is tested is the process tree and the signal, and the
// request that shows the broker answering (an empty /token body, 400) is refused before any
// setting of the App is read (docs/design.md#order-of-checks).
async function npmStart(): Promise<Listening> {
  const npm = spawn("npm", ["start"], { cwd: ROOT, env: { ...process.env, PORT: "0" }, stdio: ["ignore", "pipe", "pipe"] });
  started.push(npm.pid!);
  const lines: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => npm.once("exit", (code, signal) => resolve({ code, signal })));
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n").filter(Boolean)) {
        lines.push(line);
        try {
          const entry = JSON.parse(line) as { msg?: string; port?: number };
          if (entry.msg === "tokensmith broker listening" && entry.port) resolve(entry.port);
        } catch {
          // npm's own banner lines
        }
      }
    };
    npm.stdout!.on("data", onData);
    npm.stderr!.on("data", onData);
    void exited.then(({ code }) => reject(new Error(`npm start exited with ${code}: ${lines.join("\n")}`)));
  });
  const below = descendants(npm.pid!);
  started.push(...below);
  return { npm, below, port, lines, exited };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });
}

describe("npm start under a supervisor", () => {
  it.each(["SIGTERM", "SIGINT"] as const)("%s to npm's pid reaches the broker: it drains, exits, and the port is closed", async (signal) => {
    const run = await npmStart();
    expect(run.below.length).toBeGreaterThan(0);
    expect(run.below.every(alive)).toBe(true);
    expect((await fetch(`http://127.0.0.1:${run.port}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status).toBe(400);

    run.npm.kill(signal);
    await run.exited;
    keepLogs(run.lines);
    // The broker is npm's child: npm exits only after it has, and nothing npm started is left.
    expect(run.below.filter(alive)).toEqual([]);
    expect(await refuses(run.port)).toBe(true);
    expect(run.lines.some((line) => line.includes(`"signal":"${signal}"`) && line.includes("shutting down"))).toBe(true);
  }, 60_000);
});
