import { fork } from "node:child_process";
import { request as octo } from "@octokit/request";
import { createPrivateKey } from "node:crypto";
import { importPKCS8, SignJWT } from "jose";
import { fetchWithTimeout } from "../build/server/github/platform-request.js";
const sim = fork("./bench/token-simulator-process.js", [], { stdio: "inherit" });
const ready = await new Promise((r) => sim.once("message", r));
const f = ready.floor;
const key = await importPKCS8(createPrivateKey(f.appKeyPem).export({ type: "pkcs8", format: "pem" }), "RS256");
const now = Math.floor(Date.now() / 1000);
const jwt = await new SignJWT({}).setProtectedHeader({ alg: "RS256" }).setIssuer(String(f.appId)).setIssuedAt(now - 30).setExpirationTime(now + 570).sign(key);
const N = 1500, C = 16;
async function run(name, one) {
  for (let i = 0; i < 100; i++) await one();
  const c0 = process.cpuUsage(); const t0 = Date.now();
  let n = 0; await Promise.all(Array.from({ length: C }, async () => { while (n++ < N) await one(); }));
  const c = process.cpuUsage(c0);
  console.log(name.padEnd(30), ((c.user + c.system) / 1000 / N).toFixed(3), "ms CPU/call", (Date.now() - t0), "ms wall");
}
const body = { repositories: ["app"], permissions: { contents: "write", pull_requests: "write" } };
const url = `${f.apiBase}/app/installations/${f.installationId}/access_tokens`;
await run("raw fetch", async () => { const r = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" }, body: JSON.stringify(body) }); await r.json(); });
const tf = fetchWithTimeout(fetch, 10000);
await run("fetchWithTimeout", async () => { const r = await tf(url, { method: "POST", headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" }, body: JSON.stringify(body) }); await r.json(); });
const r1 = octo.defaults({ baseUrl: f.apiBase });
await run("octokit request", () => r1("POST /app/installations/{installation_id}/access_tokens", { installation_id: f.installationId, ...body, headers: { authorization: `Bearer ${jwt}` } }));
const r2 = octo.defaults({ baseUrl: f.apiBase, request: { fetch: tf } });
await run("octokit + fetchWithTimeout", () => r2("POST /app/installations/{installation_id}/access_tokens", { installation_id: f.installationId, ...body, headers: { authorization: `Bearer ${jwt}` } }));
sim.send("exit");
