// The simulator's JSON writer (simulator/json-text.ts) keeps the bytes of frozen repository objects
// between answers. What goes on the wire must stay exactly what JSON.stringify writes: checked on
// random values, and over HTTP on a listing page and a mint's answer.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createPrivateKey } from "node:crypto";
import fc from "fast-check";
import { SignJWT } from "jose";
import { createSimulator, type Simulator } from "../simulator/index.js";
import { jsonChunks, markReusable } from "../simulator/json-text.js";

const joined = (chunks: Array<string | Buffer> | undefined) => (chunks === undefined ? undefined : Buffer.concat(chunks.map((c) => (typeof c === "string" ? Buffer.from(c) : c))).toString("utf8"));

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

// JSON values, plus what JSON.stringify treats specially: members it skips, array holes it writes
// as null, dates (toJSON), boxed values, and frozen objects marked reusable, alone or nested.
const odd = fc.oneof(
  fc.constant(undefined),
  fc.constant(() => 1),
  fc.constant(Symbol("s")),
  fc.date({ noInvalidDate: true }),
  fc.string().map((s) => new String(s)),
  fc.double({ noNaN: false }),
  fc.constant(new Map([["a", 1]])),
);
const { value: valueArb } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.jsonValue({ maxDepth: 2 }),
    odd,
    fc.array(tie("value"), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 6 }), tie("value"), { maxKeys: 5 }),
    fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }).map((o) => markReusable(deepFreeze(o))),
  ),
}));

async function appJwt(app: { id: number; privateKeyPem: string }): Promise<string> {
  const iat = Math.floor(Date.now() / 1000) - 30;
  return new SignJWT({}).setProtectedHeader({ alg: "RS256" }).setIssuer(String(app.id)).setIssuedAt(iat).setExpirationTime(iat + 600).sign(createPrivateKey(app.privateKeyPem));
}

describe("simulator JSON writer", () => {
  it("writes exactly what JSON.stringify writes, twice over (kept bytes reused)", () => {
    fc.assert(
      fc.property(valueArb, (value) => {
        const expected = JSON.stringify(value);
        expect(joined(jsonChunks(value))).toBe(expected);
        expect(joined(jsonChunks(value))).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it("hands a reusable object's bytes over as the same buffer every time, not a copy", () => {
    const shared = markReusable(deepFreeze({ id: 1, name: "x", owner: { login: "o" } }));
    const first = jsonChunks({ repositories: [shared, shared] })!;
    const second = jsonChunks([shared])!;
    const buffers = [...first, ...second].filter((c): c is Buffer => Buffer.isBuffer(c));
    expect(buffers).toHaveLength(3);
    expect(buffers[1]).toBe(buffers[0]);
    expect(buffers[2]).toBe(buffers[0]);
  });
});

describe("simulator answers over HTTP", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await createSimulator();
  });
  afterAll(async () => {
    await sim.close();
  });

  // Asked uncompressed (fetch asks for gzip unless told otherwise): test/simulator-gzip.test.ts has the compressed answers.
  it("sends listing pages and mint answers byte for byte as JSON.stringify of what it recorded, with a true content-length", async () => {
    const app = sim.createApp();
    const repositories = Array.from({ length: 150 }, (_, i) => `r-${i}-ü`);
    const installationId = sim.addInstallation({ appId: app.id, account: "json-org", permissions: { contents: "read", metadata: "read" }, repositories });
    const mint = await fetch(`${sim.apiBase}/app/installations/${installationId}/access_tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${await appJwt(app)}`, "content-type": "application/json", "accept-encoding": "identity" },
      body: "{}",
    });
    const mintText = await mint.text();
    expect(mint.status).toBe(201);
    const token = (JSON.parse(mintText) as { token: string; repositories: unknown[] }).token;
    expect((JSON.parse(mintText) as { repositories: unknown[] }).repositories).toHaveLength(150);
    const recordedMint = sim.requests.at(-1)!.response!;
    expect(mintText).toBe(JSON.stringify(recordedMint.body));
    expect(Number(mint.headers.get("content-length"))).toBe(Buffer.byteLength(mintText));

    for (const page of [1, 2, 1]) {
      const answer = await fetch(`${sim.apiBase}/installation/repositories?per_page=100&page=${page}`, { headers: { authorization: `token ${token}`, "accept-encoding": "identity" } });
      const text = await answer.text();
      expect(answer.status).toBe(200);
      const recorded = sim.requests.at(-1)!.response!;
      expect(text).toBe(JSON.stringify(recorded.body));
      expect(Number(answer.headers.get("content-length"))).toBe(Buffer.byteLength(text));
      expect((JSON.parse(text) as { repositories: unknown[] }).repositories).toHaveLength(page === 1 ? 100 : 50);
    }
  });
});
