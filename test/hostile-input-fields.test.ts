// Property-based hostile input in the routes' own fields: wrong types in every field of /token and
// /sign (authorised), signed webhook deliveries with arbitrary events and payloads, /token bodies
// around a valid OIDC token. Every answer is JSON with a code from shared/'s table at that code's
// status, and the broker keeps serving afterwards. Methods, paths and sizes: hostile-input.test.ts.
import { createHmac } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { postJson } from "./support/broker.js";
import { broker, fieldValue, fx, hostileJson, RUNS, SECRET, send, useHostileBroker, validToken, WEBHOOK_SECRET } from "./support/hostile-broker.js";

useHostileBroker();

describe("hostile input in the routes' fields", () => {
  it("wrong types in every field of /token and /sign, authorised", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("/token", "/sign"),
        fc.record({ oidcToken: fieldValue, owner: fieldValue, repo: fieldValue, ref: fieldValue, runId: fieldValue, sha: fieldValue, branch: fieldValue, expected_head_oid: fieldValue, message: fc.oneof(fieldValue, fc.record({ headline: fieldValue, body: fieldValue })), additions: fc.oneof(fieldValue, fc.array(fc.record({ path: fieldValue, contents: fieldValue }), { maxLength: 3 })), deletions: fc.oneof(fieldValue, fc.array(fc.record({ path: fieldValue }), { maxLength: 3 })), user: fieldValue }, { requiredKeys: [] }),
        async (path, record) => {
          await send("POST", path, { "content-type": "application/json", authorization: `Bearer ${SECRET}` }, JSON.stringify(record));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("signed webhook deliveries with arbitrary events and payloads", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constantFrom("push", "ping", "pull_request", "installation"), fc.string({ maxLength: 20 })),
        fc.oneof(hostileJson, fc.record({ ref: fieldValue, deleted: fieldValue, repository: fc.oneof(fieldValue, fc.record({ full_name: fieldValue, name: fieldValue, owner: fc.record({ login: fieldValue }) })), installation: fc.oneof(fieldValue, fc.record({ id: fieldValue })) }).map((v) => JSON.stringify(v))),
        fc.boolean(),
        async (event, body, signed) => {
          const signature = signed ? `sha256=${createHmac("sha256", WEBHOOK_SECRET).update(body).digest("hex")}` : "sha256=" + "0".repeat(64);
          const headers: Record<string, string> = { "content-type": "application/json", "x-hub-signature-256": signature, "x-github-delivery": `${Math.random()}` };
          if (event) headers["x-github-event"] = event;
          await send("POST", "/webhook", headers, body);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("arbitrary /token bodies with a valid OIDC token in them", async () => {
    await fc.assert(
      fc.asyncProperty(fieldValue, fieldValue, fc.boolean(), async (owner, repo, tamper) => {
        const oidcToken = tamper ? `${validToken.slice(0, -4)}AAAA` : validToken;
        await send("POST", "/token", { "content-type": "application/json" }, JSON.stringify({ oidcToken, owner, repo }));
      }),
      { numRuns: RUNS },
    );
  });

  it("is still serving a real exchange afterwards", async () => {
    const res = await postJson(`${broker.url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });
    expect(res.status).toBe(200);
  });
});
