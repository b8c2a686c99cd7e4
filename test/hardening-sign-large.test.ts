// Issue 24 item 6: /sign's base64 check over large files, over HTTP through the broker to the
// simulator's createCommitOnBranch. A backtracking pattern overflowed V8's regexp stack from about
// 5 MiB of contents (500 internal_error); the one-pass check takes every body the limit allows.
import { describe, expect, it } from "@jest/globals";
import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { SIGN_BODY_LIMIT } from "../server/routes/sign.js";
import { isBase64 } from "../server/sign/is-base64.js";
import { brokerPerTest } from "./support/broker-per-test.js";

const SECRET = "sign-large-secret-0123456789-0123456";
const REPO = "octo-org/app";
const MIB = 1024 * 1024;
let branchCounter = 0;

// A 20 MiB commit takes the simulator about 2 s alone on this 2-core machine, more under the
// suite's load: past the tests' usual 2 s upstream timeout (sign_failed). The limit is what is
// tested here, not the timeout.
const t = brokerPerTest({ secrets: [SECRET], env: { PROCESS_TRIGGER_SECRET: SECRET }, broker: { timing: { upstreamTimeoutMs: 20_000 } } });

function freshBranch(): { branch: string; head: string } {
  const branch = `large-${++branchCounter}`;
  return { branch, head: t.fx.sim.git.createBranch(REPO, branch, { files: { "README.md": "# app\n" } }) };
}

/**
 * Random letters, enough for the largest contents, made once for the file: so the simulator's text
 * view of the committed file compares byte for byte. Each body takes its contents from the front of
 * their base64 (a prefix of whole groups of four is the base64 of the letters' prefix), so making
 * the 10 bodies of 5–20 MiB costs one encoding, not 10 (Buffer.map over 15 MiB with a callback per
 * byte took 2.5 s of the file's CPU).
 */
let letters: { bytes: Buffer; base64: string } | undefined;
function randomLetters(): { bytes: Buffer; base64: string } {
  if (!letters) {
    const bytes = randomBytes(Math.ceil((SIGN_BODY_LIMIT + 1) / 4) * 3);
    for (let i = 0; i < bytes.length; i += 1) bytes[i] = 0x61 + (bytes[i]! % 26);
    letters = { bytes, base64: bytes.toString("base64") };
  }
  return letters;
}

/**
 * A /sign body of exactly `size` bytes whose one file's contents fill it: the contents' length
 * is the largest multiple of 4 that fits, the rest is JSON whitespace. `spoil` alters the
 * contents (kept at the same length) to make them invalid.
 */
function bodyOfSize(size: number, target: { branch: string; head: string }, spoil?: (contents: string) => string) {
  const fields = (contents: string) => ({ repo: REPO, branch: target.branch, expected_head_oid: target.head, message: { headline: "chore: large file" }, additions: [{ path: "big.bin", contents }] });
  const room = size - Buffer.byteLength(JSON.stringify(fields("")));
  const length = Math.floor(room / 4) * 4;
  const source = randomLetters();
  if (length > source.base64.length) throw new Error(`no ${length} characters of contents made`);
  const bytes = source.bytes.subarray(0, (length / 4) * 3);
  const valid = source.base64.slice(0, length);
  const contents = spoil ? spoil(valid) : valid;
  const raw = JSON.stringify(fields(contents)) + " ".repeat(room - length);
  return { raw, bytes, contentsLength: contents.length };
}

async function sign(raw: string) {
  const response = await fetch(`${t.broker.url}/sign`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${SECRET}` }, body: raw });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("POST /sign with large contents", () => {
  it("commits the largest body the 20 MiB limit allows (contents just under 20 MiB of base64)", async () => {
    const target = freshBranch();
    const { raw, bytes, contentsLength } = bodyOfSize(SIGN_BODY_LIMIT, target);
    expect(Buffer.byteLength(raw)).toBe(20 * MIB);
    expect(contentsLength).toBeGreaterThan(20 * MIB - 300);
    const answer = await sign(raw);
    expect(answer).toMatchObject({ status: 200, body: { ok: true } });
    expect(t.fx.sim.git.head(REPO, target.branch)).not.toBe(target.head);
    expect(t.fx.sim.git.files(REPO, target.branch)["big.bin"] === bytes.toString("latin1")).toBe(true);
  }, 60_000);

  it("refuses one byte over the limit with 413 payload_too_large", async () => {
    const target = freshBranch();
    const { raw } = bodyOfSize(SIGN_BODY_LIMIT + 1, target);
    expect(await sign(raw)).toEqual({ status: 413, body: expect.objectContaining({ error: "payload_too_large" }) });
  }, 60_000);

  it.each([
    ["a character outside the alphabet at the end", (c: string) => `${c.slice(0, -1)}!`],
    ["padding in the middle", (c: string) => `${c.slice(0, 1000)}=${c.slice(1001)}`],
    ["a length that is not a multiple of 4", (c: string) => c.slice(0, -1)],
    ["URL-safe base64", (c: string) => `-_${c.slice(2)}`],
  ])("answers 400 invalid_request, never 500, to 5–20 MiB contents with %s", async (_label, spoil) => {
    for (const size of [5 * MIB + 64 * 1024, SIGN_BODY_LIMIT]) {
      const target = freshBranch();
      const { raw, contentsLength } = bodyOfSize(size, target, spoil);
      expect(contentsLength).toBeGreaterThanOrEqual(5 * MIB);
      expect(await sign(raw)).toEqual({ status: 400, body: { error: "invalid_request" } });
    }
    expect(t.fx.sim.requests.filter((r) => r.path === "/graphql")).toHaveLength(0);
  }, 60_000);
});

describe("isBase64", () => {
  it("agrees with a decode and re-encode round trip on any text", () => {
    const alphabet = fc.constantFrom(..."ABCXYZabcxyz0189+/=-_ !\n".split(""));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: alphabet, maxLength: 40 }), fc.uint8Array({ maxLength: 30 }).map((b) => Buffer.from(b).toString("base64"))), (text) => {
        const canonical = Buffer.from(text, "base64").toString("base64") === text;
        // Buffer accepts non-canonical trailing bits ("AB==" decodes as "AA=="); the check only asks for the alphabet and padding.
        if (canonical) expect(isBase64(text)).toBe(true);
        if (isBase64(text)) expect(/^[A-Za-z0-9+/]*={0,2}$/.test(text) && text.length % 4 === 0).toBe(true);
      }),
    );
  });
});
