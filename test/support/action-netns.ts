// A black-holed address for the bundled action, inside a network namespace this test creates and
// deletes: the child runs in namespace A, where 10.213.7.4/30 is routed over a veth pair whose
// other end (also in A) owns no such address and does not forward, so every SYN is dropped without
// an answer: the kernel's ~130 s connect timeout, not a refusal. No packet leaves the namespace;
// nothing is added to the host's own network. Needs root and `ip` (iproute2).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";

export const BLACK_HOLE = "10.213.7.6";

export interface BlackHoleNamespace {
  name: string;
  /** `ip netns exec <name>`: what a step is run under. */
  prefix: string[];
  /** A runner ID-token endpoint and a broker that answers, on the namespace's own loopback. */
  helperUrl: string;
  close(): Promise<void>;
}

const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });

export async function createBlackHoleNamespace(): Promise<BlackHoleNamespace> {
  const name = `tsm-bh-${process.pid}-${randomBytes(3).toString("hex")}`;
  let helper: ChildProcess | undefined;
  const close = async () => {
    if (helper && helper.exitCode === null) {
      const exited = new Promise((resolve) => helper!.once("exit", resolve));
      helper.kill("SIGKILL");
      await exited;
    }
    try {
      ip("netns", "del", name); // takes the veth pair with it
    } catch {
      // already gone
    }
  };
  try {
    ip("netns", "add", name);
    ip("-n", name, "link", "set", "lo", "up");
    ip("-n", name, "link", "add", "bh0", "type", "veth", "peer", "name", "bh1");
    ip("-n", name, "addr", "add", "10.213.7.1/30", "dev", "bh0");
    ip("-n", name, "link", "set", "bh0", "up");
    ip("-n", name, "link", "set", "bh1", "up");
    const peerMac = /link\/ether ([0-9a-f:]+)/.exec(execFileSync("ip", ["-n", name, "link", "show", "bh1"], { encoding: "utf8" }))![1]!;
    // The next hop is the peer's MAC, fixed: no ARP, so nothing answers "unreachable" either.
    ip("-n", name, "neigh", "add", "10.213.7.2", "lladdr", peerMac, "dev", "bh0", "nud", "permanent");
    ip("-n", name, "route", "add", "10.213.7.4/30", "via", "10.213.7.2", "dev", "bh0");
  } catch (error) {
    await close();
    throw new Error(`could not build the black-hole network namespace (root and iproute2 needed): ${(error as Error).message}`);
  }
  try {
    helper = spawn("ip", ["netns", "exec", name, process.execPath, "-e", HELPER], { stdio: ["ignore", "pipe", "inherit"] });
    const port = await new Promise<string>((resolve, reject) => {
      let text = "";
      helper!.stdout!.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8");
        const match = /^listening (\d+)\n/.exec(text);
        if (match) resolve(match[1]!);
      });
      helper!.once("exit", (code) => reject(new Error(`the namespace's helper exited (${code})`)));
    });
    return { name, prefix: ["ip", "netns", "exec", name], helperUrl: `http://127.0.0.1:${port}`, close };
  } catch (error) {
    await close();
    throw error;
  }
}

// GET anything: the runner's ID-token answer; POST /token: a broker's token answer (expiring in an
// hour: the action refuses an expires_at more than a day ahead).
const HELPER = `
const http = require("node:http");
const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(req.method === "GET"
      ? { value: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJibGFjay1ob2xlLXRlc3QifQ.c2lnbmF0dXJl" }
      : { token: "ghs_black_hole_test_token_0001", expires_at: new Date(Date.now() + 3600000).toISOString(), repository: "octo-org/app" }));
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write("listening " + server.address().port + "\\n"));
`;
