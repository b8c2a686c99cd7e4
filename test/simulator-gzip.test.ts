// The simulator compresses JSON answers as GitHub does when the request allows gzip, and counts
// each answer's bytes on the wire. Read with a raw socket, so nothing between the test and the
// simulator decompresses or re-frames anything.
import { connect } from "node:net";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createSimulator, type Simulator } from "../simulator/index.js";
import fc from "fast-check";
import { gzipWithKeptRun, KEPT_RUN_BYTES } from "../simulator/gzip-kept.js";
import { acceptsGzip } from "../simulator/http-server.js";
import { signCompact } from "../simulator/jws.js";

let sim: Simulator;
let token: string;

beforeAll(async () => {
  sim = await createSimulator();
  const app = sim.createApp();
  const repositories = Array.from({ length: 120 }, (_, i) => `r-${i}`);
  const installationId = sim.addInstallation({ appId: app.id, account: "gzip-org", permissions: { metadata: "read" }, repositories });
  token = sim.issueToken(installationId);
});
afterAll(async () => {
  await sim.close();
});

/** One HTTP/1.1 exchange on a socket of its own: the bytes as they came, split into head and body. */
function exchange(path: string, headers: Record<string, string>): Promise<{ bytes: number; head: Map<string, string>; status: number; body: Buffer }> {
  const url = new URL(`${sim.apiBase}${path}`);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(url.port), url.hostname, () => {
      const lines = Object.entries({ host: url.host, connection: "close", ...headers }).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\n${lines.join("")}\r\n`);
    });
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => {
      const raw = Buffer.concat(chunks);
      const split = raw.indexOf("\r\n\r\n");
      const [statusLine, ...fields] = raw.subarray(0, split).toString("latin1").split("\r\n");
      const head = new Map(fields.map((field) => [field.slice(0, field.indexOf(":")).toLowerCase(), field.slice(field.indexOf(":") + 1).trim()]));
      let body: Buffer = raw.subarray(split + 4);
      if (head.get("transfer-encoding") === "chunked") body = unchunk(body);
      resolve({ bytes: raw.length, head, status: Number(statusLine!.split(" ")[1]), body });
    });
  });
}

function unchunk(framed: Buffer): Buffer {
  const pieces: Buffer[] = [];
  for (let at = 0; ; ) {
    const end = framed.indexOf("\r\n", at);
    const size = parseInt(framed.subarray(at, end).toString("latin1"), 16);
    if (size === 0) return Buffer.concat(pieces);
    pieces.push(framed.subarray(end + 2, end + 2 + size));
    at = end + 2 + size + 2;
  }
}

const LISTING = "/installation/repositories?per_page=100";

describe("gzip-compressed JSON answers", () => {
  it("compresses a listing when asked (Content-Encoding: gzip, Vary: Accept-Encoding, no Content-Length), the same JSON inside", async () => {
    const before = sim.wireBytes;
    const answer = await exchange(LISTING, { authorization: `Bearer ${token}`, "accept-encoding": "gzip, deflate, br" });
    expect(answer.status).toBe(200);
    expect(answer.head.get("content-encoding")).toBe("gzip");
    expect(answer.head.get("vary")).toBe("Accept-Encoding");
    expect(answer.head.has("content-length")).toBe(false);
    const recorded = sim.requests.at(-1)!.response!;
    const text = gunzipSync(answer.body).toString("utf8");
    expect(text).toBe(JSON.stringify(recorded.body));
    // Counted as it went: every byte the client read, headers included, and far fewer than the JSON's.
    expect(recorded.wireBytes).toBe(answer.bytes);
    expect(sim.wireBytes - before).toBe(answer.bytes);
    expect(answer.bytes).toBeLessThan(Buffer.byteLength(text) / 10);
  });

  it("sends JSON as it is when the request does not allow gzip, and counts those bytes too", async () => {
    for (const allowed of [undefined, "identity", "gzip;q=0", "br", "*;q=0"]) {
      const answer = await exchange(LISTING, { authorization: `Bearer ${token}`, ...(allowed === undefined ? {} : { "accept-encoding": allowed }) });
      expect(answer.status).toBe(200);
      expect(answer.head.has("content-encoding")).toBe(false);
      expect(Number(answer.head.get("content-length"))).toBe(answer.body.length);
      expect(answer.body.toString("utf8")).toBe(JSON.stringify(sim.requests.at(-1)!.response!.body));
      expect(sim.requests.at(-1)!.response!.wireBytes).toBe(answer.bytes);
    }
  });

  it("compresses an error answer too (GitHub does, whatever its size)", async () => {
    const answer = await exchange(LISTING, { authorization: "Bearer not-a-token", "accept-encoding": "gzip" });
    expect(answer.status).toBe(401);
    expect(answer.head.get("content-encoding")).toBe("gzip");
    expect(JSON.parse(gunzipSync(answer.body).toString("utf8"))).toMatchObject({ message: expect.any(String) });
  });

  it("fault truncated-gzip: the route's answer, its gzip cut in half, the HTTP framing whole", async () => {
    sim.faults.add({ method: "GET", path: "/installation/repositories", times: 1, respond: "truncated-gzip" });
    const answer = await exchange(LISTING, { authorization: `Bearer ${token}`, "accept-encoding": "gzip" });
    expect(answer.status).toBe(200);
    expect(answer.head.get("content-encoding")).toBe("gzip");
    expect(Number(answer.head.get("content-length"))).toBe(answer.body.length);
    expect(() => gunzipSync(answer.body)).toThrow(/unexpected end of file/);
  });

  it.each([
    ["gzip", true],
    ["GZIP", true],
    ["x-gzip", true],
    ["deflate, gzip;q=0.5", true],
    ["*", true],
    ["br, *;q=0.1", true],
    ["gzip;q=0", false],
    ["gzip;q=0.0, *", false],
    ["*;q=0", false],
    ["identity", false],
    ["", false],
  ])("Accept-Encoding %j allows gzip: %s", (header, allowed) => {
    expect(acceptsGzip(header)).toBe(allowed);
  });
});

describe("a large answer's kept run, compressed once (gzip-kept.ts)", () => {
  const kept = (text: string) => Buffer.from(text);
  const piece = fc.oneof(fc.string({ unit: "grapheme", maxLength: 40 }).map(String), fc.string({ unit: "grapheme", minLength: 1, maxLength: 3000 }).map(kept));

  it("gunzips to the pieces joined, byte for byte, the first time and every time after", () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 80 }), fc.string({ unit: "grapheme", maxLength: 60 }), (pieces, token) => {
        // A run the size of a listing page, and text before it that changes between answers (a mint's token).
        const run = [...pieces, kept("x".repeat(KEPT_RUN_BYTES))];
        for (const head of ["{", `{"token":${JSON.stringify(token)},"r":[`]) {
          const answer = [head, ...run, "]}"];
          const expected = Buffer.concat(answer.map((p) => (typeof p === "string" ? Buffer.from(p) : p)));
          expect(gunzipSync(gzipWithKeptRun(answer)!).equals(expected)).toBe(true);
        }
      }),
      { numRuns: 60 },
    );
  });

  it("leaves an answer without a run of at least KEPT_RUN_BYTES kept bytes to the stream", () => {
    expect(gzipWithKeptRun(["{", '"a":1', "}"])).toBeUndefined();
    expect(gzipWithKeptRun(["[", kept("x".repeat(KEPT_RUN_BYTES - 10)), ",", kept("y".repeat(5)), "]"])).toBeUndefined();
    expect(gzipWithKeptRun(["[", kept("x".repeat(KEPT_RUN_BYTES - 10)), ",", kept("y".repeat(10)), "]"])).toBeInstanceOf(Buffer);
  });

  it("a mint over 120 selected repositories, twice, then after a deletion: each answer the JSON recorded, the deleted one gone from the last", async () => {
    const app = sim.createApp();
    const names = Array.from({ length: 120 }, (_, i) => `m-${i}`);
    const installationId = sim.addInstallation({ appId: app.id, account: "gzip-mint-org", permissions: { metadata: "read" }, repositories: names });
    const now = Math.floor(Date.now() / 1000);
    const appJwt = signCompact({ alg: "RS256", typ: "JWT" }, { iss: String(app.id), iat: now - 30, exp: now + 500 }, app.privateKeyPem);
    const mint = async () => {
      const response = await fetch(`${sim.apiBase}/app/installations/${installationId}/access_tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${appJwt}`, "accept-encoding": "gzip", "content-type": "application/json" },
        body: "{}",
      });
      expect(response.status).toBe(201);
      expect(response.headers.get("content-encoding")).toBe("gzip");
      const text = await response.text(); // fetch gunzips, strictly
      expect(text).toBe(JSON.stringify(sim.requests.at(-1)!.response!.body));
      return JSON.parse(text) as { token: string; repositories: Array<{ full_name: string }> };
    };
    const first = await mint();
    const second = await mint();
    expect(second.token).not.toBe(first.token);
    expect(second.repositories).toEqual(first.repositories);
    sim.deleteRepository("gzip-mint-org", "m-7");
    const third = await mint();
    expect(third.repositories.map((r) => r.full_name)).toEqual(first.repositories.map((r) => r.full_name).filter((name) => name !== "gzip-mint-org/m-7"));
  });
});
