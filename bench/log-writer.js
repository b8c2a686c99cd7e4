// `node bench/log-writer.js turn|sync|async [LINES] [PER_TURN]`: the process's CPU (all threads)
// per log line of a /token answer's size through pino, written to /dev/null by the broker's
// hand-made per-turn writer (`turn`: server/log-destination.ts of a build before it was replaced,
// BENCH_BUILD=that build's directory) or by pino's own destination, a write per line (`sync`, the
// broker's since) or asynchronous (`async`, sonic-boom through libuv's thread pool). PER_TURN lines
// are logged in each event-loop turn (64: the token bench's 64 connections answered together).
// Figures: docs/operations.md#fast-paths.
import { openSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { pino } from "pino";

const [mode = "turn", lines = "200000", perTurn = "64"] = process.argv.slice(2);
const build = resolve(process.env.BENCH_BUILD ?? "build");
// BENCH_LOG_FD=1 writes to stdout (a pipe when piped) instead.
const fd = process.env.BENCH_LOG_FD ? Number(process.env.BENCH_LOG_FD) : openSync("/dev/null", "w");
let destination;
if (mode === "turn") destination = (await import(pathToFileURL(`${build}/server/log-destination.js`).href)).createTurnWriter(fd);
else if (mode === "sync") destination = pino.destination({ dest: fd, sync: true });
else if (mode === "async") destination = pino.destination({ dest: fd, sync: false, minLength: 0 });
else throw new Error(`mode: turn, sync or async, not ${mode}`);
const logger = pino({ level: "info", base: { service: "tokensmith" } }, destination);
const fields = { requestId: "5f0c3c1e-1b7e-4d1e-9f0a-1234567890ab", route: "/token", status: 200, repository: "octo-org/app", ref: "refs/heads/main", runId: "12345", permissions: { contents: "write", metadata: "read" }, tokenSha256: "a".repeat(64), ms: 41.2 };

const run = async (count) => {
  for (let i = 0; i < count; i += Number(perTurn)) {
    for (let j = 0; j < Number(perTurn); j += 1) logger.info(fields, "token issued");
    await new Promise((done) => setImmediate(done));
  }
};
await run(Number(lines) / 4);
const before = process.cpuUsage();
await run(Number(lines));
await new Promise((done) => setTimeout(done, 50));
const used = process.cpuUsage(before);
process.stderr.write(`${JSON.stringify({ mode, lines: Number(lines), perTurn: Number(perTurn), cpuUsPerLine: Number(((used.user + used.system) / Number(lines)).toFixed(3)) })}\n`);
process.exit(0);
