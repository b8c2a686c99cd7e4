// A black-holed address for the bundled action, inside a network namespace this test creates: the
// child runs in namespace A, where 10.213.7.4/30 is routed over a veth pair whose other end (also
// in A) owns no such address and does not forward, so every SYN is dropped without an answer: the
// kernel's ~130 s connect timeout, not a refusal. No packet leaves the namespace; nothing is added
// to the host's own network. The namespace belongs to an unprivileged user namespace
// (`unshare -rn`, util-linux), so no root is needed, only `ip` (iproute2) inside it; it goes away
// with its last process (the helper below, and the steps that `nsenter` it).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";

export const BLACK_HOLE = "10.213.7.6";

export interface BlackHoleNamespace {
  /** `nsenter …`: what a step is run under. */
  prefix: string[];
  /** A runner ID-token endpoint and a broker that answers, on the namespace's own loopback. */
  helperUrl: string;
  close(): Promise<void>;
}

// Run as the namespace's root (uid 0 mapped to the caller), then replaced by the helper (exec).
const SETUP = `set -e
ip link set lo up
ip link add bh0 type veth peer name bh1
ip addr add 10.213.7.1/30 dev bh0
ip link set bh0 up
ip link set bh1 up
mac=$(ip -o link show bh1 | sed -n 's/.*link\\/ether \\([0-9a-f:]*\\).*/\\1/p')
# The next hop is the peer's MAC, fixed: no ARP, so nothing answers "unreachable" either.
ip neigh add 10.213.7.2 lladdr "$mac" dev bh0 nud permanent
ip route add 10.213.7.4/30 via 10.213.7.2 dev bh0
exec "$@"`;

/** One line naming what is missing, when a tool the namespace needs is not on PATH. */
function requireTools(): void {
  for (const [tool, pkg] of [["unshare", "util-linux"], ["nsenter", "util-linux"], ["ip", "iproute2"]] as const) {
    try {
      execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    } catch {
      throw new Error(`the black-hole test needs \`${tool}\` on PATH: install ${pkg} (Debian/Ubuntu: apt-get install ${pkg})`);
    }
  }
}

export async function createBlackHoleNamespace(): Promise<BlackHoleNamespace> {
  requireTools();
  let helper: ChildProcess | undefined;
  const close = async () => {
    if (helper && helper.exitCode === null && helper.signalCode === null) {
      const exited = new Promise((resolve) => helper!.once("exit", resolve));
      helper.kill("SIGKILL");
      await exited;
    }
  };
  let stderr = "";
  try {
    helper = spawn("unshare", ["--user", "--map-root-user", "--net", "sh", "-c", SETUP, "sh", process.execPath, "-e", HELPER], { stdio: ["ignore", "pipe", "pipe"] });
    helper.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      process.stderr.write(chunk);
    });
    const port = await new Promise<string>((resolve, reject) => {
      let text = "";
      helper!.stdout!.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8");
        const match = /^listening (\d+)\n/.exec(text);
        if (match) resolve(match[1]!);
      });
      helper!.once("error", reject);
      helper!.once("exit", (code) => reject(new Error(`exited (${code})`)));
    });
    const prefix = ["nsenter", "--target", String(helper.pid), "--user", "--net", "--preserve-credentials"];
    return { prefix, helperUrl: `http://127.0.0.1:${port}`, close };
  } catch (error) {
    await close();
    throw new Error(`could not build the black-hole network namespace (unshare -rn, an unprivileged user namespace; ip from iproute2): ${(error as Error).message} ${stderr.trim()}`);
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
      : { token: "ghs_black_hole_test_token_0000000000000001", expires_at: new Date(Date.now() + 3600000).toISOString().replace(/\\.\\d{3}Z$/, "Z"), repository: "octo-org/app" }));
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write("listening " + server.address().port + "\\n"));
`;
