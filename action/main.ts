// Entry point of the main step: the real toolkit, the real HTTP client, then run().
import * as core from "@actions/core";
import { setTimeout as sleep } from "node:timers/promises";
import { createHttp } from "./http.js";
import { run } from "./run.js";

// TOKENSMITH_RETRY_BASE_MS: operator/test tuning of the wait before the second attempt (doubled
// after each later one). Not an input: a release workflow has no reason to change it.
const base = Number(process.env.TOKENSMITH_RETRY_BASE_MS || "1000");

void run({
  core,
  env: process.env,
  http: createHttp({ timeoutMs: 30_000 }),
  retry: { attempts: 4, baseDelayMs: Number.isFinite(base) && base >= 0 ? base : 1000 },
  sleep: (ms) => sleep(ms),
});
