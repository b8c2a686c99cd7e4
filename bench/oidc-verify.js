// `node bench/oidc-verify.js [BUILD_DIR] [COUNT]`: the CPU one OIDC token check costs in
// `verifyOidcToken` (BUILD_DIR/server/oidc/verify-oidc-token.js, default build/), over COUNT fresh
// RS256 tokens of GitHub's shape signed by a 2048-bit key, after a warm-up of COUNT/4 (the tokens all signed first). Prints the
// process's CPU (all threads: WebCrypto runs in the thread pool) per check. Run under
// `valgrind --tool=callgrind` with COUNT and with 0 for a count of instructions per check that the
// machine's other load does not move (docs/operations.md#fast-paths).
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const build = resolve(process.argv[2] ?? "build");
const count = Number(process.argv[3] ?? 2000);
const { verifyOidcToken } = await import(pathToFileURL(`${build}/server/oidc/verify-oidc-token.js`).href);
const { importKeySet, pickKey } = await import(pathToFileURL(`${build}/server/oidc/key-set.js`).href);

// One key for every run (a fresh key's prime search would count differently from run to run).
const keyFile = join(tmpdir(), "tokensmith-bench-oidc-key.pem");
if (!existsSync(keyFile)) writeFileSync(keyFile, generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }));
const privateKey = createPrivateKey(readFileSync(keyFile));
const publicKey = createPublicKey(privateKey);
const jwk = { ...publicKey.export({ format: "jwk" }), kid: "k1", use: "sig", alg: "RS256" };
const set = await importKeySet({ keys: [jwk] }, Date.now(), "network", 1);
const keys = { getKey: async (kid) => pickKey(set, kid), noteVerified: () => undefined };
const issuer = "https://token.actions.githubusercontent.com";
const issuers = [{ issuer, keys, platform: "github" }];
const key = privateKey;
const header = Buffer.from(JSON.stringify({ typ: "JWT", alg: "RS256", kid: "k1" })).toString("base64url");
const now = Math.floor(Date.now() / 1000);

const tokens = (n) =>
  Array.from({ length: n }, (_, i) => {
    const claims = {
      jti: `jti-${i}`, sub: "repo:octo-org/app:ref:refs/heads/main", aud: "tokensmith", ref: "refs/heads/main", sha: "a".repeat(40),
      repository: "octo-org/app", repository_owner: "octo-org", repository_owner_id: "1", run_id: String(1000 + i), run_number: "1",
      run_attempt: "1", repository_visibility: "private", repository_id: "2", actor_id: "3", actor: "octocat", workflow: "release",
      head_ref: "", base_ref: "", event_name: "push", ref_type: "branch", workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/heads/main",
      workflow_sha: "a".repeat(40), job_workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/heads/main", runner_environment: "github-hosted",
      iss: issuer, nbf: now - 5, exp: now + 300, iat: now - 5,
    };
    const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`;
    return `${input}.${sign("RSA-SHA256", Buffer.from(input), key).toString("base64url")}`;
  });

const check = async (list) => {
  for (const token of list) await verifyOidcToken({ token, issuers, audiences: ["tokensmith"], now: Date.now, snapshot: null });
};
// Signed before any check, the same number whatever COUNT is, so that a run with COUNT 0 counts
// everything but the checks themselves.
const TOKENS = Number(process.env.OIDC_BENCH_TOKENS || 2500);
if (count + Math.ceil(count / 4) > TOKENS) throw new Error(`COUNT ${count} needs more than OIDC_BENCH_TOKENS ${TOKENS} tokens`);
const signed = tokens(TOKENS);
await check(signed.slice(0, Math.ceil(count / 4)));
const list = signed.slice(Math.ceil(count / 4), Math.ceil(count / 4) + count);
const before = process.cpuUsage();
await check(list);
const used = process.cpuUsage(before);
process.stdout.write(`${JSON.stringify({ build, count, cpuMsPerCheck: count ? Number(((used.user + used.system) / 1000 / count).toFixed(4)) : 0 })}\n`);
