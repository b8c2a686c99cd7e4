// The broker's reader token and an installation that changes under it, over HTTP through the
// simulator (docs/security.md "A stale reader token", "An invalidation during a load"). The
// platform scopes an installation token on selected repositories to the selection at mint time:
// a repository added later reads 404 with it, which must never count as "no policy". And a reader
// mint or target lookup still under way when an installation change arrives is used by the
// request that waited for it, never kept for the next one.
import { describe, expect, it } from "@jest/globals";
import { randomUUID } from "node:crypto";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { READER_RECHECK_MS } from "../server/policy/reader-tokens.js";
import { signatureFor } from "../server/webhook/verify-signature.js";

const SECRET = "stale-reader-secret-0123456789abcdef";
const READ_ONLY = "rules:\n  - name: read-only\n    if: {event: push}\n    permissions: {contents: read}\n";
/** Consent for octo-org/app's jobs to read this repository. */
const CONSENT = "rules:\n  - name: app-reads\n    if: {repository: octo-org/app, event: push}\n    permissions: {contents: read}\n";

let clockOffsetMs = 0;
const t = brokerPerTest({
  env: { HOST_WEBHOOK_SECRET: SECRET, TOKEN_POLICY: "optional" },
  broker: { now: () => Date.now() + clockOffsetMs },
  setup: (fx) => {
    for (const repository of ["octo-org/app", "octo-org/docs", "octo-org/.github", "octo-org/late", "octo-org/latest"]) {
      fx.sim.git.createBranch(repository, "main", { files: { "README.md": `# ${repository}\n` } });
    }
    fx.sim.git.setFile("octo-org/late", ".github/tokensmith.yml", READ_ONLY);
    fx.sim.git.setFile("octo-org/latest", ".github/tokensmith.yml", CONSENT);
  },
});

/** Moves the broker's and the platform's clocks together (the OIDC token, the App JWT and the tokens stay valid). */
const setClock = (offsetMs: number) => {
  clockOffsetMs = offsetMs;
  t.fx.sim.clockOffsetMs = offsetMs;
};
const select = (...names: string[]) => (t.fx.sim.installation(t.fx.installationId).repositories = names);

async function mint(repo: string, extra: Record<string, unknown> = {}) {
  const oidcToken = await t.fx.sim.oidc.sign({ repository: `octo-org/${repo}` });
  const answer = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo, ...extra });
  return { ...answer, permissions: t.fx.sim.tokens.get(String(answer.body.token))?.permissions };
}

const isReaderMint = (r: { method: string; path: string; body: unknown }) =>
  r.method === "POST" && r.path.endsWith("/access_tokens") && JSON.stringify((r.body as { permissions?: unknown } | undefined)?.permissions) === '{"contents":"read"}' && (r.body as { repository_ids?: unknown }).repository_ids === undefined;
const readerMints = () => t.fx.sim.requests.filter(isReaderMint);
const bearerOf = (r: { headers: Record<string, unknown> }) => String(r.headers.authorization ?? "").replace(/^(token|Bearer) /i, "");

async function installationChanged(added: string) {
  const raw = JSON.stringify({ action: "added", installation: { id: t.fx.installationId }, repository_selection: "selected", repositories_added: [{ name: added }], repositories_removed: [] });
  const response = await fetch(`${t.broker.url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "installation_repositories", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(SECRET, raw) },
    body: raw,
  });
  expect(response.status).toBe(200);
}

/** Holds the answer of the first request to match until `release()`; `asked` resolves when it arrives. */
function holdFirst(method: string, path: RegExp) {
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  t.fx.sim.faults.add({ method, path, times: 1, respond: { until } });
  const asked = (async () => {
    while (!t.fx.sim.requests.some((r) => r.method === method && path.test(r.path))) await new Promise((resolve) => setTimeout(resolve, 5));
  })();
  return { release, asked };
}

describe("a repository added after the reader token was minted", () => {
  it("its policy is read with a reader that covers it: the job gets the restricted token, not the whole grant", async () => {
    select("app", ".github");
    expect((await mint("app")).status).toBe(200);
    expect(readerMints()).toHaveLength(1);
    // Added to the selection; the installation_repositories delivery went to another instance (or was lost).
    select("app", ".github", "late");
    t.fx.sim.clearRequests();
    const answer = await mint("late");
    expect(answer.status).toBe(200);
    expect(answer.permissions).toEqual({ contents: "read" });
    // One new reader: the kept one, minted before `late` joined, never read `late` (it would have read 404).
    expect(readerMints()).toHaveLength(1);
    const policyReads = t.fx.sim.requests.filter((r) => r.path === "/repos/octo-org/late/contents/.github/tokensmith.yml");
    expect(policyReads.map((r) => r.response?.status)).toEqual([200]);
  });

  it("the owner's .github added later: its policy applies within READER_RECHECK_MS (10 min), not when the reader expires", async () => {
    select("app");
    expect((await mint("app")).permissions).toEqual({ contents: "write", pull_requests: "write" });
    t.fx.sim.git.setFile("octo-org/.github", ".github/tokensmith-org.yml", READ_ONLY);
    select("app", ".github");
    setClock(61_000); // past the cached "no owner policy" (60 s): a reader a minute old is still used
    try {
      t.fx.sim.clearRequests();
      expect((await mint("app")).permissions).toEqual({ contents: "write", pull_requests: "write" });
      expect(readerMints()).toHaveLength(0);
      setClock(61_000 + READER_RECHECK_MS); // the reader has 39 minutes left, but is older than the re-check
      t.fx.sim.clearRequests();
      expect((await mint("app")).permissions).toEqual({ contents: "read" });
      expect(readerMints()).toHaveLength(1);
    } finally {
      setClock(0);
      t.fx.sim.git.setFile("octo-org/.github", ".github/tokensmith-org.yml", null);
    }
  });

  it("another repository added later: a request naming it is answered from a new reader once the kept one is older than READER_RECHECK_MS", async () => {
    select("app", ".github");
    expect((await mint("app")).status).toBe(200);
    select("app", ".github", "latest");
    setClock(READER_RECHECK_MS);
    try {
      t.fx.sim.clearRequests();
      const answer = await mint("app", { repositories: ["latest"] });
      expect(answer.status).toBe(200);
      expect(answer.permissions).toEqual({ contents: "read" });
      expect(readerMints()).toHaveLength(1);
    } finally {
      setClock(0);
    }
  });
});

describe("an installation change while a load is under way", () => {
  it("a reader mint answered after the delivery serves the request that waited for it, and is not kept", async () => {
    select("app", "docs", ".github");
    const held = holdFirst("POST", new RegExp(`^/app/installations/${t.fx.installationId}/access_tokens$`));
    const waiting = mint("app");
    await held.asked;
    await installationChanged("docs");
    held.release();
    expect((await waiting).status).toBe(200);
    const stale = (readerMints()[0]!.response!.body as { token: string }).token;

    t.fx.sim.clearRequests();
    expect((await mint("docs")).status).toBe(200);
    // The read of docs' policy is made with a reader minted after the delivery, not the held one
    // (the request that waited for it may already have minted that one for its next read).
    const reads = t.fx.sim.requests.filter((r) => r.path.startsWith("/repos/octo-org/docs/contents"));
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.map(bearerOf)).not.toContain(stale);
  });

  it("a target lookup answered after the delivery is not kept: the next request sees the added repository", async () => {
    select("app", ".github");
    // The reader first (no target), so that the held request below is the lookup.
    expect((await mint("app")).status).toBe(200);
    const held = holdFirst("GET", /^\/repos\/octo-org\/latest$/);
    const waiting = mint("app", { repositories: ["latest"] });
    await held.asked;
    select("app", ".github", "latest");
    await installationChanged("latest");
    held.release();
    // Asked before the delivery: the platform's answer then (not in the installation) stands for it.
    expect((await waiting).body).toMatchObject({ error: "policy_denied" });
    const answer = await mint("app", { repositories: ["latest"] });
    expect(answer.status).toBe(200);
    expect(answer.permissions).toEqual({ contents: "read" });
  });
});
