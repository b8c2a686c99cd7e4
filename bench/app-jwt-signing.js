// `npm run build && node bench/app-jwt-signing.js [count]`: the time to sign one App JWT with the
// PEM (jose, in process) and through PKCS#11 (a SoftHSM2 token in a temporary directory:
// softhsm2-util, as test/support/softhsm.ts), for a 2048- and a 4096-bit RSA key; one after another
// (median, p95), then in rounds of 32 at once (each signature's median and p95, a round's wall time
// per signature). `count` (default 200) signatures one after another, count / 32 rounds (at least 5). App JWTs are cached for about 9 minutes
// (server/github/app-jwt.ts), so this is paid once per App per cache lifetime, not per request.
import { execFileSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { signAppJwt } from "../build/server/github/app-jwt.js";
import { parsePkcs11Uri } from "../build/server/signing/pkcs11-uri.js";

const count = Number(process.argv[2] ?? 200);
const module = ["/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so"].find((p) => existsSync(p));
if (!module) throw new Error("softhsm2 is not installed (apt-get install softhsm2)");
const dir = mkdtempSync(join(tmpdir(), "tokensmith-bench-hsm-"));
const conf = join(dir, "softhsm2.conf");
writeFileSync(conf, `directories.tokendir = ${join(dir, "tokens")}\nobjectstore.backend = file\nlog.level = ERROR\n`);
mkdirSync(join(dir, "tokens"));
process.env.SOFTHSM2_CONF = conf;
const util = (args) => execFileSync("softhsm2-util", args, { stdio: ["ignore", "pipe", "pipe"] });
util(["--init-token", "--free", "--label", "bench", "--so-pin", "bench-so-0000", "--pin", "bench-pin-0000"]);

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
async function measure(key) {
  const times = [];
  const iat = Math.floor(Date.now() / 1000);
  await signAppJwt(key, "1", iat, iat + 600); // session opened, login, key found: once
  for (let i = 0; i < count; i += 1) {
    const start = process.hrtime.bigint();
    await signAppJwt(key, "1", iat + i, iat + i + 600);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  // 32 at once, in rounds (count / 32, at least 5): each signature's own latency, and the wall time of a round / 32.
  const latencies = [];
  let wall = 0;
  const rounds = Math.max(5, Math.round(count / 32));
  for (let round = 0; round < rounds; round += 1) {
    const start = process.hrtime.bigint();
    await Promise.all(Array.from({ length: 32 }, async (_, i) => {
      const own = process.hrtime.bigint();
      await signAppJwt(key, "1", iat + i, iat + i + 600);
      latencies.push(Number(process.hrtime.bigint() - own) / 1e6);
    }));
    wall += Number(process.hrtime.bigint() - start) / 1e6;
  }
  latencies.sort((a, b) => a - b);
  return { median: quantile(times, 0.5), p95: quantile(times, 0.95), atOnceMedian: quantile(latencies, 0.5), atOnceP95: quantile(latencies, 0.95), perJwt: wall / rounds / 32 };
}

const rows = [];
try {
  for (const bits of [2048, 4096]) {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: bits });
    const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const file = join(dir, `key-${bits}.pem`);
    writeFileSync(file, pem, { mode: 0o600 });
    util(["--import", file, "--token", "bench", "--label", `key-${bits}`, "--id", bits === 2048 ? "20" : "40", "--pin", "bench-pin-0000"]);
    rmSync(file);
    const parsed = parsePkcs11Uri("BENCH_KEY_URI", `pkcs11:token=bench;object=key-${bits};type=private?module-path=${module}&pin-value=bench-pin-0000`);
    if (!parsed.ok) throw new Error(parsed.problem);
    rows.push({ key: `RSA-${bits} PEM (jose)`, ...(await measure({ kind: "pem", pem, setting: "HOST_APP_PRIVATE_KEY" })) });
    rows.push({ key: `RSA-${bits} PKCS#11 (SoftHSM2)`, ...(await measure({ kind: "pkcs11", ref: parsed.ref, pin: null, setting: "HOST_APP_KEY_URI" })) });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const ms = (value) => value.toFixed(2).padStart(6);
console.log(`App JWT signing (ms): ${count} one after another per key (median, p95), then rounds of 32 at once (each one's median and p95, and a round's wall time / 32):`);
for (const row of rows) console.log(`${row.key.padEnd(28)} median ${ms(row.median)}  p95 ${ms(row.p95)}  | 32 at once: median ${ms(row.atOnceMedian)}  p95 ${ms(row.atOnceP95)}  wall/32 ${ms(row.perJwt)}`);
process.exit(0);
