// The webhook queue's pure rules, as tables: the pace slot, a rate limit's pause, the push
// token's permissions, the WEBHOOK_QUEUE address and its worker timings, the skipped refs.
import { describe, expect, it } from "@jest/globals";
import { RequestError } from "@octokit/request-error";
import { nextSlot } from "../server/webhook/pacer.js";
import { pushPermissions } from "../server/webhook/mint-for-push.js";
import { parseQueueAddress, workerTimings } from "../server/webhook/queue-address.js";
import { readPush } from "../server/webhook/read-push.js";
import { rateLimitPause } from "../server/webhook/update-pull-requests.js";

const NOW = 1_800_000_000_000;

describe("nextSlot", () => {
  const H = 3_600_000 + 10_000; // an hour, and the margin for arrival jitter
  it.each<[string, number[], number, number, number, number]>([
    ["first call: now", [], 1000, 500, 0, NOW],
    ["last slot long ago: now", [NOW - 5000], 1000, 500, 0, NOW],
    ["last slot recent: one interval after it", [NOW - 200], 1000, 500, 0, NOW + 800],
    ["a retry-after further out wins", [NOW - 200], 1000, 500, NOW + 60_000, NOW + 60_000],
    ["a retry-after already past: the interval", [NOW], 1000, 500, NOW - 1, NOW + 1000],
    ["the hour's budget spent: an hour after the oldest of it", [NOW - 10_000, NOW - 20_000, NOW - 30_000], 1000, 3, 0, NOW - 30_000 + H],
    ["the hour's budget not yet spent: the interval", [NOW - 10_000, NOW - 20_000], 1000, 3, 0, NOW],
    ["the hour's oldest slot over an hour (and the margin) ago: now", [NOW - 10_000, NOW - 20_000, NOW - H - 1], 1000, 3, 0, NOW],
    ["only the perHour-th newest counts (a list kept from a larger budget)", [NOW - 1000, NOW - 2000, NOW - 3000, NOW - 4000], 1000, 2, 0, NOW - 2000 + H],
  ])("%s", (_label, recent, interval, perHour, notBefore, expected) => {
    expect(nextSlot(recent, interval, perHour, notBefore, NOW)).toBe(expected);
  });
});

const failure = (status: number, headers: Record<string, string>) =>
  new RequestError("refused", status, { request: { method: "PUT", url: "https://api.github.com/x", headers: {} }, response: { status, url: "https://api.github.com/x", headers, data: {} } });

describe("rateLimitPause", () => {
  it.each<[string, unknown, number | undefined]>([
    ["403 with retry-after 60", failure(403, { "retry-after": "60" }), 60_000],
    ["429 with retry-after 0", failure(429, { "retry-after": "0" }), 0],
    ["403 primary limit, reset in 30 s", failure(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(NOW / 1000 + 30) }), 30_000],
    ["403 primary limit without a reset", failure(403, { "x-ratelimit-remaining": "0" }), 60_000],
    ["403 refusal (no limit headers)", failure(403, {}), undefined],
    ["422 with retry-after (not a limit)", failure(422, { "retry-after": "5" }), undefined],
    ["a network error", new Error("socket hang up"), undefined],
  ])("%s", (_label, error, expected) => {
    expect(rateLimitPause(error, NOW)).toBe(expected);
  });
});

describe("pushPermissions", () => {
  it.each<[string, Record<string, string>, Record<string, string>]>([
    ["without workflows", { contents: "write", pull_requests: "write", metadata: "read" }, { contents: "write", pull_requests: "write" }],
    ["with workflows: write", { contents: "write", pull_requests: "write", workflows: "write" }, { contents: "write", pull_requests: "write", workflows: "write" }],
    ["workflows: read is not asked for", { contents: "write", pull_requests: "write", workflows: "read" }, { contents: "write", pull_requests: "write" }],
    ["never more than held", { contents: "read", pull_requests: "write" }, { contents: "read", pull_requests: "write" }],
  ])("%s", (_label, granted, expected) => {
    expect(pushPermissions(granted)).toEqual(expected);
  });
});

describe("parseQueueAddress", () => {
  it.each<[string, { redisUrl: string; prefix: string; leaseMs: number }]>([
    ["redis://127.0.0.1:6379", { redisUrl: "redis://127.0.0.1:6379", prefix: "tokensmith", leaseMs: 30_000 }],
    ["redis://127.0.0.1:6379/2?prefix=team-a&lease_ms=5000", { redisUrl: "redis://127.0.0.1:6379/2", prefix: "team-a", leaseMs: 5000 }],
    ["rediss://cache.example:6380?lease_ms=10", { redisUrl: "rediss://cache.example:6380", prefix: "tokensmith", leaseMs: 30_000 }],
  ])("%s", (raw, expected) => {
    expect(parseQueueAddress(raw)).toEqual(expected);
  });

  it.each(["memory://", "http://127.0.0.1:6379", "redis://127.0.0.1:6379?prefix=a:b", "not a url"])("refuses %p", (raw) => {
    expect(() => parseQueueAddress(raw)).toThrow();
  });
});

describe("workerTimings: a dead instance's job is taken over within 1.2 leases", () => {
  // BullMQ renews a lock every half lockDuration, and a stalled check moves back to waiting a job it
  // finds active and unlocked that an earlier check had marked (a renewal unmarks it): the worst
  // case after a death is the lease, then up to two intervals (test/webhook-queue-handover.test.ts
  // measures it on processes). The interval was the lease itself: up to 3 leases.
  it.each<[number, number]>([
    [1_000, 100],
    [2_000, 200],
    [30_000, 3_000],
    [120_000, 12_000],
    [500, 100], // below what WEBHOOK_QUEUE accepts (1000): the interval never goes under 100 ms
  ])("lease %p ms: lock for the lease, stalled check every %p ms", (lease, interval) => {
    expect(workerTimings(lease)).toEqual({ lockDuration: lease, stalledInterval: interval, maxStalledCount: 10 });
  });

  it.each([1_000, 1_999, 2_000, 5_000, 30_000, 600_000])("lease %p ms: the worst case, lease + 2 intervals, is at most 1.2 leases; a check runs within each half lease", (lease) => {
    const { lockDuration, stalledInterval } = workerTimings(lease);
    expect(lockDuration + 2 * stalledInterval).toBeLessThanOrEqual(1.2 * lease);
    // At least one check between a renewal and the lock running out, so the job is already marked when it does.
    expect(stalledInterval).toBeLessThan(lockDuration / 2);
  });
});

describe("readPush: skipped refs", () => {
  const payload = (ref: string, deleted = false) => ({ ref, deleted, repository: { full_name: "o/r" }, installation: { id: 1 } });
  it.each<[string, boolean, string]>([
    ["refs/tags/v1", false, "tag_push"],
    ["refs/tags/v1", true, "tag_push"],
    ["refs/heads/gone", true, "branch_deleted"],
    ["refs/notes/commits", false, "not_a_branch"],
    ["refs/heads/", false, "not_a_branch"],
  ])("%s (deleted: %p) → %s", (ref, deleted, word) => {
    expect(readPush(payload(ref, deleted))).toEqual({ skipped: word });
  });
});
