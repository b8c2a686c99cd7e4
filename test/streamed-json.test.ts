// The streamed reader of the platform's long answers (server/github/streamed-json.ts) must give
// exactly what JSON.parse gives for the whole text, and call an answer "not JSON" exactly when
// JSON.parse throws: on random answers cut into random chunks, on random corruptions of them, and
// over HTTP through the lean platform client. It must also really stream GitHub's compact arrays
// of objects (else the comparison would hold trivially, everything read whole).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createServer, type Server } from "node:http";
import { isDeepStrictEqual } from "node:util";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { RequestError } from "@octokit/request-error";
import { createPlatformClient } from "../server/github/platform-client.js";
import { MAX_MISSES, pick, streamedJson, type JsonRead, type Shape } from "../server/github/streamed-json.js";
import { upstreamFetch } from "../server/upstream-fetch.js";

const KEEP: Shape = { id: true, name: true, full_name: true, owner: { id: true, login: true } };

/** What the reader must give: JSON.parse of the whole text, the array's elements cut to `keep`. */
function expected(text: string, key: string, keep?: Shape): JsonRead {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return { json: false, text: body };
  }
  const holder = value as Record<string, unknown> | null;
  if (keep && holder !== null && typeof holder === "object" && !Array.isArray(holder) && Array.isArray(holder[key])) {
    holder[key] = (holder[key] as unknown[]).map((element) => pick(element, keep));
  }
  return { json: true, value };
}

/** The bytes cut at `cuts` (offsets, any order, repeats allowed). */
function chunked(bytes: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const cut of [...at, bytes.length]) {
    chunks.push(bytes.subarray(from, cut));
    from = cut;
  }
  return chunks;
}

function read(chunks: Buffer[], key: string, keep?: Shape): { result: JsonRead; streamed: boolean } {
  const reader = streamedJson(key, keep);
  for (const chunk of chunks) reader.push(chunk);
  const result = reader.end();
  return { result, streamed: reader.streamed };
}

// Strings that look like the element boundaries the reader guesses, or like the structure it scans.
const tricky = fc.constantFrom("},{", "}]", '"},{"', "\\", '"', "]", "[{", "{", "}", ",", ":", "é", "☃", "\u0000", "\n");
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.array(tricky, { maxLength: 4 }).map((parts) => parts.join("")));
const memberName = fc.string({ maxLength: 8 }).filter((name) => name !== "__proto__");
const { value: valueArb } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", maxDepth: 4 },
    fc.jsonValue({ maxDepth: 1 }),
    text,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(memberName, tie("value"), { maxKeys: 4 }),
  ),
}));
// A repository-like element: the members the broker reads (sometimes missing or odd), and others.
const element = fc.record(
  {
    id: fc.oneof(fc.integer(), valueArb),
    name: fc.oneof(text, valueArb),
    full_name: fc.oneof(text, valueArb),
    owner: fc.oneof(fc.record({ id: fc.integer(), login: text, extra: valueArb }, { requiredKeys: [] }), valueArb),
    other: valueArb,
    nested: fc.array(fc.dictionary(memberName, valueArb, { maxKeys: 3 }), { maxLength: 3 }),
  },
  { requiredKeys: [] },
);
const envelopeKey = fc.stringMatching(/^[a-z_]{1,10}$/).filter((name) => name !== "repositories" && name !== "__proto__");
const answer = fc.record({
  before: fc.dictionary(envelopeKey, valueArb, { maxKeys: 4 }),
  elements: fc.array(element, { maxLength: 12 }),
  after: fc.dictionary(envelopeKey, valueArb, { maxKeys: 3 }),
});
const serialise = ({ before, elements, after }: { before: Record<string, unknown>; elements: unknown[]; after: Record<string, unknown> }) => {
  const rest = Object.fromEntries(Object.entries(after).filter(([name]) => !(name in before)));
  return JSON.stringify({ ...before, repositories: elements, ...rest });
};
/**
 * expect(actual).toEqual(wanted), with node's strict comparison first: jest's matcher costs most of
 * a property run's time (thousands of runs), and a strictly equal pair passes toEqual anyway, so
 * the verdict is toEqual's either way.
 */
function sameAs(actual: unknown, wanted: unknown): void {
  if (!isDeepStrictEqual(actual, wanted)) expect(actual).toEqual(wanted);
}

const cuts = fc.array(fc.nat(), { maxLength: 8 });
const withKeep = fc.boolean();

describe("streamed JSON: the same as JSON.parse", () => {
  it("random answers in random chunks: the same value, the array read as it arrived", () => {
    fc.assert(
      fc.property(answer, cuts, withKeep, (a, at, keepIt) => {
        const json = serialise(a);
        const keep = keepIt ? KEEP : undefined;
        const { result, streamed } = read(chunked(Buffer.from(json), at), "repositories", keep);
        sameAs(result, expected(json, "repositories", keep));
        // GitHub's shape (compact, elements all objects, few `},{` inside strings) is streamed.
        const misses = (json.match(/\},\{|\}\]/g) ?? []).length;
        if (misses <= MAX_MISSES && streamed !== true) expect(streamed).toBe(true); // expect() only to fail: it costs more than the check
      }),
      // Not fewer: of 22 faults put in the reader by hand, the slowest this property finds (a `},`
      // at a chunk's end passed over) first failed at run 17–817 over 20 seeds, about one run in
      // 200: 1000 runs miss it 0.7% of the time, 1500 runs 0.06%.
      { numRuns: 1500 },
    );
  });

  it("random corruptions: not JSON exactly when JSON.parse throws, else the same value", () => {
    const edit = fc.record({
      at: fc.nat(),
      kind: fc.constantFrom("delete", "insert", "replace"),
      byte: fc.constantFrom(..."{}[],:\"\\ 0a-".split("").map((c) => c.charCodeAt(0))),
    });
    fc.assert(
      fc.property(answer, fc.array(edit, { minLength: 1, maxLength: 3 }), cuts, withKeep, (a, edits, at, keepIt) => {
        let bytes = Buffer.from(serialise(a));
        for (const { at: where, kind, byte } of edits) {
          const i = where % (bytes.length + 1);
          const head = bytes.subarray(0, i);
          const tail = bytes.subarray(kind === "insert" ? i : Math.min(bytes.length, i + 1));
          bytes = Buffer.concat([head, kind === "delete" ? Buffer.alloc(0) : Buffer.from([byte]), tail]);
        }
        const keep = keepIt ? KEEP : undefined;
        sameAs(read(chunked(bytes, at), "repositories", keep).result, expected(bytes.toString("utf8"), "repositories", keep));
      }),
      // Not fewer: an element parse that dropped a lone backslash (lenient where JSON.parse throws)
      // is found only here, about one run in 800: 3000 runs miss it 2–3% of the time, 1000 runs
      // missed it for 7 seeds of 20.
      { numRuns: 3000 },
    );
  });

  it("answers it does not follow are read whole, with the same result", () => {
    const cases: Array<[string, boolean]> = [
      ['{"repositories":[]}', true],
      ['{"total_count":0,"repositories":[ \n ]}', true],
      ['{"repositories":[{"a":1}],"repositories":[]}', false], // the key twice: JSON.parse keeps the last
      ['{"repositories":[{"a":1}],"repositories":[{"b":2}]}', false],
      ['{"repositories":[],"repositorie\\u0073":[{"a":1}]}', false], // the same key, escaped
      ['{"repositories":[{"a":1}, {"b":2}]}', false], // a space between elements
      ['{"repositories":[1,2,3]}', false], // elements not objects
      ['{"repositories":{"a":[{"b":1}]}}', false], // not an array
      ['[{"repositories":[{"a":1}]}]', false], // not an object
      ['"repositories"', false],
      ['{"a":{"repositories":[{"x":1}]},"repositories":[{"y":2}]}', true], // only the top-level key counts
      ['{"repositories":[{"d":"},{"},{"e":"}]"}]}', true], // guesses inside strings are passed over
      ['{"repositories":[{"n":[{"a":1},{"b":2}]},{"c":3}]}', true], // arrays of objects inside an element
      ["\ufeff" + '{"repositories":[{"a":1}]}', true], // a byte-order mark, dropped as fetch's text() drops it
      ['{"repositories":[{"a":1}]', false], // cut short
      ['{"repositories":[{"a":1}]}x', false],
      ['{"repositories":[{"a":1},]}', false],
      ["", false],
      [`{"x":${"[".repeat(70)}${"]".repeat(70)},"repositories":[{"a":1}]}`, false], // deeper than MAX_DEPTH
      [`{"repositories":[{"d":"${"},{".repeat(MAX_MISSES + 1)}"}]}`, false], // too many wrong guesses
    ];
    for (const [json, streams] of cases) {
      const bytes = Buffer.from(json);
      for (const size of [1, 2, 3, 5, bytes.length || 1]) {
        const chunks = chunked(bytes, Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => i * size));
        const { result, streamed } = read(chunks, "repositories", KEEP);
        expect({ json, result }).toEqual({ json, result: expected(json, "repositories", KEEP) });
        if (size > 3) expect({ json, streamed }).toEqual({ json, streamed: streams });
      }
    }
  });

  it("pick keeps the named members only, nested shapes included, and leaves non-objects as they are", () => {
    expect(pick({ id: 1, name: "a", x: 2, owner: { login: "o", id: 3, y: 4 } }, KEEP)).toEqual({ id: 1, name: "a", owner: { login: "o", id: 3 } });
    expect(pick({ owner: "not an object", constructor: 1, toString: 2 }, KEEP)).toEqual({ owner: "not an object" });
    expect(pick([1, 2], KEEP)).toEqual([1, 2]);
    expect(pick(null, KEEP)).toBe(null);
    expect(pick("x", KEEP)).toBe("x");
  });
});

describe("streamed JSON over HTTP, through the lean platform client", () => {
  let server: Server;
  let apiBase: string;
  const repositories = Array.from({ length: 300 }, (_, i) => ({ id: i, name: `r${i}`, full_name: `o/r${i}`, owner: { id: 7, login: "o", type: "Organization" }, description: i % 7 === 0 ? "},{ and }]" : null, topics: ["a", "b"] }));
  const page = JSON.stringify({ total_count: repositories.length, repositories });
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/page") {
        // Written in small pieces with pauses: the client sees many chunks, cut anywhere.
        res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
        const bytes = Buffer.from(page);
        let at = 0;
        const next = () => {
          if (at >= bytes.length) return res.end();
          res.write(bytes.subarray(at, (at += 997)));
          setImmediate(next);
        };
        return next();
      }
      if (req.url === "/stall") {
        // Half the answer, then nothing: the call's timeout covers the body read as it arrives.
        res.writeHead(200, { "content-type": "application/json" });
        return res.write(page.slice(0, page.length / 2));
      }
      if (req.url === "/garbage") {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end('{"repositories":[{"a":1},');
      }
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ message: "Not Found", repositories: [] }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const client = () => createPlatformClient({ apiBase, fetch: upstreamFetch, timeoutMs: 5_000 });

  it("a long answer: the same data as JSON.parse, each element cut to what is kept", async () => {
    const answer = await client()({ method: "GET", path: "/page", bearer: "t", streamArray: { key: "repositories", keep: KEEP } });
    expect(answer.status).toBe(200);
    expect(answer.data).toEqual(expected(page, "repositories", KEEP).json ? (expected(page, "repositories", KEEP) as { value: unknown }).value : null);
    expect((answer.data as { repositories: unknown[] }).repositories[1]).toEqual({ id: 1, name: "r1", full_name: "o/r1", owner: { id: 7, login: "o" } });
  });

  it("a success that is not JSON comes back as its text, as a buffered read gives it", async () => {
    const answer = await client()({ method: "GET", path: "/garbage", bearer: "t", streamArray: { key: "repositories", keep: KEEP } });
    expect(answer.data).toBe('{"repositories":[{"a":1},');
  });

  it("a body that stalls part-way fails on the call's timeout, as a buffered read does", async () => {
    const started = Date.now();
    const failure = await createPlatformClient({ apiBase, fetch: upstreamFetch, timeoutMs: 300 })({ method: "GET", path: "/stall", bearer: "t", streamArray: { key: "repositories" } }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RequestError);
    expect((failure as RequestError).response).toBeUndefined();
    expect(String(((failure as RequestError).cause as Error).message)).toMatch(/upstream timeout after 300 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("a failure is read whole and thrown as the platform's error", async () => {
    const failure = await client()({ method: "GET", path: "/missing", bearer: "t", streamArray: { key: "repositories", keep: KEEP } }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RequestError);
    expect((failure as RequestError).status).toBe(404);
    expect((failure as RequestError).message).toBe("Not Found");
  });
});
