// The floor of one exchange: a bare node:http handler doing only the unavoidable work — read the
// body, verify the RS256 JWT with an in-memory key, one mint call to the simulator, answer.
// No routing, no settings, no logging, no error mapping: what any broker must at least spend.
// FLOOR_TRANSPORT=request sends the mint with undici's request() (the broker's transport,
// server/upstream-fetch.ts) instead of fetch: the floor of the broker's own choice of client.
// Both ask for gzip, as the broker must (issue 28: every platform request asks for it; fetch asks
// on its own): the simulator then compresses each answer as GitHub does, and that work shares this
// machine's cores with the target. A floor that did not ask would be spared it, the broker not.
import { createServer } from "node:http";
import { gunzipSync } from "node:zlib";
import { importJWK, jwtVerify } from "jose";
import { request } from "undici";

const config = JSON.parse(process.env.FLOOR_CONFIG);
const key = await importJWK(config.jwk, "RS256");

const server = createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = JSON.parse(Buffer.concat(chunks).toString());
    const { payload } = await jwtVerify(body.oidcToken, key, { issuer: config.issuer, audience: "tokensmith", algorithms: ["RS256"] });
    const url = `${config.apiBase}/app/installations/${config.installationId}/access_tokens`;
    const init = {
      method: "POST",
      headers: { authorization: `Bearer ${config.appJwt}`, "content-type": "application/json", accept: "application/vnd.github+json" },
      body: JSON.stringify({ repositories: [body.repo], permissions: { contents: "write", pull_requests: "write" } }),
    };
    const minted = process.env.FLOOR_TRANSPORT === "request" ? await viaRequest(url, init) : await (await fetch(url, init)).json();
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ token: minted.token, expires_at: minted.expires_at, repository: payload.repository }));
  } catch {
    res.writeHead(500, { "content-type": "application/json" });
    res.end('{"error":"internal_error"}');
  }
});
/** The mint with undici's request(), asking for gzip and gunzipping the answer (one call, as the broker does for a small answer). */
async function viaRequest(url, init) {
  const answer = await request(url, { ...init, headers: { ...init.headers, "user-agent": "floor", "accept-encoding": "gzip" } });
  const raw = Buffer.from(await answer.body.arrayBuffer());
  return JSON.parse((answer.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw).toString());
}

server.listen(0, "127.0.0.1", () => process.send({ type: "ready", port: server.address().port }));
process.on("message", (message) => {
  if (message === "exit") server.close(() => process.exit(0));
});
