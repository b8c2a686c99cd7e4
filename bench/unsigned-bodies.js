// Peak RSS of the built broker while N unsigned /webhook deliveries of 25 MiB arrive at once
// (issue 10 item 5). Not part of `npm run bench` (no target): `node bench/unsigned-bodies.js [N] [main.js]`.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";

const count = Number(process.argv[2] || 20);
const main = process.argv[3] || fileURLToPath(new URL("../build/server/main.js", import.meta.url));
const size = 25 * 1024 * 1024;
const child = spawn(process.execPath, [main], { env: { PATH: process.env.PATH, PORT: "0", HOST_WEBHOOK_SECRET: "bench-secret-0123456789abcdef0123456789", LOG_LEVEL: "info" }, stdio: ["ignore", "pipe", "inherit"] });
const port = await new Promise((resolve) => {
  let buffered = "";
  child.stdout.on("data", (chunk) => {
    buffered += chunk;
    const listening = /"port":(\d+)[^\n]*"msg":"tokensmith broker listening"/.exec(buffered);
    if (listening) resolve(Number(listening[1]));
  });
});
child.stdout.resume();
const peak = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))[1]) / 1024;
const before = peak();
const block = Buffer.alloc(1024 * 1024, "x");
const answers = await Promise.all(Array.from({ length: count }, () => new Promise((resolve) => {
  const socket = connect(port, "127.0.0.1", () => {
    socket.write(`POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: ping\r\nX-Hub-Signature-256: sha256=${"0".repeat(64)}\r\nContent-Length: ${size}\r\n\r\n`);
    let sent = 0;
    const pump = () => { while (sent < size && !socket.destroyed) { sent += block.length; if (!socket.write(block)) return void socket.once("drain", pump); } };
    pump();
  });
  let text = "";
  socket.on("data", (d) => (text += d));
  socket.on("error", () => {});
  socket.on("close", () => resolve(text.split(" ")[1] || "none"));
})));
const statuses = answers.reduce((acc, s) => ({ ...acc, [s]: (acc[s] || 0) + 1 }), {});
console.log(JSON.stringify({ connections: count, body_mib: 25, rss_peak_mib_before: Math.round(before), rss_peak_mib_after: Math.round(peak()), statuses }));
child.kill("SIGTERM");
