// The hostile-input tests' broker and generators, shared by test/hostile-input.test.ts and
// test/hostile-input-fields.test.ts (two files, so a run's two workers share the 10,000 requests):
// one in-process broker with every route on, and the check every answer must pass.
import { afterAll, beforeAll, expect } from "@jest/globals";
import fc from "fast-check";
import { ERROR_CODES, isErrorCode } from "../../shared/error-codes.js";
import { startBroker, type TestBroker } from "./broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./fixtures.js";
import { rawRequest, type RawAnswer } from "./raw-request.js";

export const SECRET = "trigger-secret-for-hostile-tests";
export const WEBHOOK_SECRET = "webhook-secret-for-hostile-tests";
export const RUNS = Number(process.env.HOSTILE_RUNS || 2500); // × 4 properties (two files) ≥ 10,000 requests

export let fx: TokenFixture;
export let broker: TestBroker;
export let validToken: string;

/** Registers the file's hooks: a broker before all, its logs checked for secrets after. */
export function useHostileBroker(): void {
  beforeAll(async () => {
    fx = await tokenFixture();
    broker = await startBroker({
      ...fx.env,
      PROCESS_TRIGGER_SECRET: SECRET,
      HOST_WEBHOOK_SECRET: WEBHOOK_SECRET,
      AUTO_UPDATE_BRANCHES: "on",
    }, { retry: { attempts: 1, baseDelayMs: 1, maxWaitMs: 0 } });
    validToken = await fx.sim.oidc.sign();
  });
  afterAll(async () => {
    await broker.close();
    await fx.sim.close();
    expectNoSecrets(broker.logs, [validToken, SECRET, WEBHOOK_SECRET, fx.app.privateKeyPem]);
  });
}

/**
 * Whatever came back must be the API's kind of answer. Each check is a plain comparison that calls
 * the matcher only when it fails (for its message; the verdict is the matcher's either way):
 * each expect() call builds every matcher and an error for its stack, five calls an answer over
 * 10,000 answers (about a tenth of the fields file's CPU, profiled).
 */
export function expectWellFormed(answer: RawAnswer, method: string): void {
  const type = answer.headers["content-type"] ?? "application/json";
  if (typeof type !== "string" || !/application\/json/.test(type)) expect(type).toMatch(/application\/json/);
  if (method === "HEAD") {
    // No body to read: an unknown path is 404, a route 405.
    if (answer.status !== 404 && answer.status !== 405) expect([404, 405]).toContain(answer.status);
    return;
  }
  const body: unknown = JSON.parse(answer.text);
  if (body === null) expect(body).not.toBeNull();
  if (typeof body !== "object") expect(typeof body).toBe("object");
  if (answer.status >= 400) {
    const { error } = body as { error?: unknown };
    if (!isErrorCode(error)) throw new Error(`unknown error code in ${answer.status} ${answer.text.slice(0, 200)}`);
    if (answer.status !== ERROR_CODES[error].status) expect(answer.status).toBe(ERROR_CODES[error].status);
    // The one documented 500.
    if (answer.status === 500 && error !== "github_installation_lookup_failed") expect(error).toBe("github_installation_lookup_failed");
  }
}

const ROUTES = ["/token", "/sign", "/releases", "/webhook"];

/**
 * fc.webPath() as fast-check builds it (RFC 3986 path segments: letters, digits, `-._~!$&'()*+,;=:@`
 * and, one in eleven, any code point percent-encoded; its default size), without its one cost: its
 * percent-encoded character is an fc.string({ unit: "binary" }), whose construction maps every one
 * of the 1.1 million code points (1.2 s of CPU in each file that loads this one).
 */
const SEGMENT_OTHERS = "-._~!$&'()*+,;=:@";
const codePoint = fc.nat({ max: 0x10ffff - 0x800 }).map((n) => String.fromCodePoint(n < 0xd800 ? n : n + 0x800)); // no lone surrogate
const percentEncoded = codePoint.map((c) => {
  const encoded = encodeURIComponent(c);
  return c !== encoded ? encoded : `%${c.charCodeAt(0).toString(16)}`;
});
const segmentChar = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.mapToConstant(
      { num: 26, build: (v) => String.fromCharCode(v + 0x61) },
      { num: 26, build: (v) => String.fromCharCode(v + 0x41) },
      { num: 10, build: (v) => String.fromCharCode(v + 0x30) },
      { num: SEGMENT_OTHERS.length, build: (v) => SEGMENT_OTHERS[v]! },
    ),
  },
  { weight: 1, arbitrary: percentEncoded },
);
const segments = (segmentSize: fc.SizeForArbitrary, count: fc.SizeForArbitrary) =>
  fc.array(fc.string({ unit: segmentChar, size: segmentSize }), { size: count }).map((parts) => parts.map((part) => `/${part}`).join(""));
const webPath = fc.oneof(segments("small", "xsmall"), segments("xsmall", "small"));
export const methodArb = fc.oneof(fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"), fc.stringMatching(/^[A-Z]{1,10}$/));
export const pathArb = fc.oneof(
  fc.constantFrom(...ROUTES),
  fc.constantFrom(...ROUTES).map((r) => `${r}?${encodeURIComponent("x")}=1`),
  webPath.map((p) => (p.startsWith("/") ? p : `/${p}`)),
  fc.stringMatching(/^\/[A-Za-z0-9%._~-]{0,300}$/),
);
export const contentTypeArb = fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-16", "application/json; charset=latin1", "multipart/form-data; boundary=x", "", "*/*");
export const hostileJson = fc.oneof(
  fc.json({ maxDepth: 6 }),
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify({ __proto__: v, constructor: { prototype: v }, oidcToken: v, owner: v, repo: v })),
  fc.nat({ max: 5000 }).map((depth) => "[".repeat(depth) + "]".repeat(depth)),
  fc.nat({ max: 5000 }).map((depth) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth)),
  fc.json().map((s) => s.slice(0, Math.max(0, s.length - 1))),
  fc.string({ maxLength: 200 }),
  fc.integer({ min: 1000, max: 150_000 }).map((n) => JSON.stringify({ oidcToken: "x".repeat(n), owner: "o", repo: "r" })),
);
export const fieldValue = fc.oneof(fc.string({ maxLength: 50 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 5 }), fc.string(), { maxKeys: 3 }));

export async function send(method: string, path: string, headers: Record<string, string>, body?: string) {
  const answer = await rawRequest(broker.url, { method, path, headers, body: method === "GET" || method === "HEAD" ? undefined : body });
  expectWellFormed(answer, method);
  return answer;
}

// node:http's client writes a DELETE's or an OPTIONS's body unframed (no Content-Length, no
// chunked encoding): the broker reads those bytes as the next request on the keep-alive socket,
// and the request sent next on it got their answer (a HEAD: "Data after `Connection: close`").
