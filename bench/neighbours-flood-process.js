// Tenant A's senders for the `neighbours` scenario, in a process of their own (so that their CPU
// does not skew tenant B's timings, taken in the parent): autocannon at the highest rate its
// connections reach, for FLOOD.seconds (or FLOOD.requests in all, each answered), against each
// broker instance (connections and requests split between them), each request the next of six
// kinds in turn. Replies with the count of answers per kind and status over the fork IPC channel.
// One process floods each topology in turn (a `go` message with its brokers' URLs, each flood
// starting from the same first request): the fuzz below is built once (fast-check's path
// arbitrary alone costs about 1 s of CPU to build).
import { createHmac, randomUUID } from "node:crypto";
import net from "node:net";
import autocannon from "autocannon";
import fc from "fast-check";
import { tokenSigner } from "./token-support.js";

const FLOOD = JSON.parse(process.env.NEIGHBOURS_FLOOD);
const { seconds, requests, connections, secret, ready, address } = FLOOD;

// A is a sender of its own, as a tenant's runners are: its connections leave from `address` (any
// 127.x address is this host's), B's from 127.0.0.1. autocannon has no option for it: every
// net.connect(port, host) of this process is given the address.
const connect = net.connect;
net.connect = (...args) => (typeof args[0] === "object" ? connect(...args) : connect({ port: Number(args[0]), host: args[1], localAddress: address }));
const lockedTokens = tokenSigner(ready.templates.locked, ready.oidcKeyPem);
const noisy = ready.installations.noisy;
const repository = { full_name: "noisy-org/app", id: ready.repositoryIds.app };

// 20 repositories that do not exist, named in every denied job.
const MADE_UP = Array.from({ length: 20 }, (_, i) => `made-up-${i}`);

const json = () => ({ "content-type": "application/json" });
const token = (body) => ({ method: "POST", path: "/token", headers: json(), body: JSON.stringify(body) });
const signed = (event, raw) => ({
  method: "POST",
  path: "/webhook",
  headers: { ...json(), "x-github-event": event, "x-github-delivery": randomUUID(), "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(raw).digest("hex")}` },
  body: raw,
});

// One genuine push, replayed under fresh delivery ids (the body, and so its signature, unchanged).
const pushBody = JSON.stringify({
  ref: "refs/heads/main",
  before: "0".repeat(40),
  after: "f".repeat(40),
  deleted: false,
  forced: false,
  commits: [],
  repository,
  installation: { id: noisy },
});

// The robustness fuzz of test/hostile-input.test.ts (test/support/hostile-broker.ts's generators,
// without HEAD, with TRACE in place of made-up methods (autocannon sends only RFC 7231's and PATCH), and
// without the bodies too large to read): arbitrary methods, paths, content types, bodies.
const ROUTES = ["/token", "/sign", "/releases", "/webhook"];
const fuzzArb = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"),
  path: fc.oneof(fc.constantFrom(...ROUTES), fc.webPath().map((p) => (p.startsWith("/") ? p : `/${p}`)), fc.stringMatching(/^\/[A-Za-z0-9%._~-]{0,300}$/)),
  type: fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-16", "multipart/form-data; boundary=x", "*/*"),
  auth: fc.option(fc.string({ maxLength: 80 }).filter((s) => /^[\x21-\x7e ]*$/.test(s))),
  body: fc.oneof(
    fc.json({ maxDepth: 6 }),
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify({ __proto__: v, constructor: { prototype: v }, oidcToken: v, owner: v, repo: v })),
    fc.nat({ max: 5000 }).map((depth) => "[".repeat(depth) + "]".repeat(depth)),
    fc.nat({ max: 5000 }).map((depth) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth)),
    fc.json().map((s) => s.slice(0, Math.max(0, s.length - 1))),
    fc.string({ maxLength: 200 }),
    fc.integer({ min: 1000, max: 150_000 }).map((n) => JSON.stringify({ oidcToken: "x".repeat(n), owner: "o", repo: "r" })),
  ),
});
// A flood of FLOOD.requests numbers its requests up to about `requests` (split over the instances,
// rounded up): the cases it can reach are the first of the same 2,000 (one seed), the rest never sent.
const fuzz = fc.sample(fuzzArb, { numRuns: requests ? Math.min(2000, 2 * requests) : 2000, seed: 37 }).map((f) => ({
  method: f.method,
  path: f.path,
  headers: { "content-type": f.type, ...(f.auth === null ? {} : { authorization: f.auth }) },
  ...(f.method === "GET" ? {} : { body: f.body }),
}));

let pulls = 0;
let counter = 0;
/** The six kinds of A's traffic, sent in turn. */
const KINDS = [
  ["not installed, replayed", () => token({ oidcToken: ready.bare[counter % ready.bare.length], owner: "noisy-org", repo: "bare" })],
  ["denied, 20 repositories", () => token({ oidcToken: lockedTokens(), owner: "noisy-org", repo: "locked", repositories: MADE_UP })],
  ["valid token, replayed", () => token({ oidcToken: ready.valid, owner: "noisy-org", repo: "app" })],
  ["pull_request", () => {
    // A genuine delivery each time (its own id and body: GitHub's carry the time of the event).
    pulls += 1;
    const pr = ready.pulls[pulls % ready.pulls.length];
    return signed("pull_request", JSON.stringify({
      action: "synchronize",
      number: pr.number,
      pull_request: { number: pr.number, updated_at: new Date().toISOString(), head: { sha: pr.headSha, ref: `feature-${pr.number}` }, base: { sha: pr.baseSha, ref: "main" } },
      repository,
      installation: { id: noisy },
      sender: { login: "noisy-sender", id: 4242 },
      bench_delivery: pulls,
    }));
  }],
  ["push, replayed", () => signed("push", pushBody)],
  ["fuzz", () => fuzz[counter % fuzz.length]],
];

// BENCH_NEIGHBOURS_KINDS: a comma-separated list of the kinds' positions above (0 to 5) to send only those (to find which one costs B).
const only = process.env.BENCH_NEIGHBOURS_KINDS?.split(",").map(Number);
if (only) KINDS.splice(0, KINDS.length, ...KINDS.filter((_, i) => only.includes(i)));
let counts = {};

/** `share` of the connections against `url`: for `seconds`, or for `amount` requests (each answered) when given. */
async function flood(url, share, amount) {
  const result = await autocannon({
    url,
    connections: share,
    ...(amount ? { amount } : { duration: seconds }),
    requests: [{
      setupRequest: (request, context) => {
        counter += 1;
        const [name, make] = KINDS[counter % KINDS.length];
        context.kind = name;
        const made = make();
        return { ...request, ...made, headers: { ...made.headers } };
      },
      onResponse: (status, _body, context) => {
        const kind = counts[context.kind];
        kind[status] = (kind[status] ?? 0) + 1;
      },
    }],
  });
  return { requests: result.requests.total, errors: result.errors, timeouts: result.timeouts };
}

// Ready (the fuzz generated), then a flood for each `go` ({ type: "go", urls }) until `exit`.
process.on("message", async (message) => {
  if (message === "exit") process.exit(0);
  if (message?.type !== "go") return;
  const { urls } = message;
  // Each topology's flood the same from its first request (as from a process of its own).
  counter = 0;
  pulls = 0;
  counts = Object.fromEntries(KINDS.map(([name]) => [name, {}]));
  const per = Math.max(1, Math.floor(connections / urls.length));
  const started = performance.now();
  const results = await Promise.all(urls.map((url) => flood(url, per, requests ? Math.max(1, Math.ceil(requests / urls.length)) : undefined)));
  process.send({
    type: "done",
    seconds: (performance.now() - started) / 1000,
    requests: results.reduce((sum, r) => sum + r.requests, 0),
    errors: results.reduce((sum, r) => sum + r.errors + r.timeouts, 0),
    counts,
  });
});
process.send({ type: "ready" });
