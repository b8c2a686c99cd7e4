// Entry point of the main step: the real toolkit (every message made one safe line), the real HTTP
// client, then run(); the process exits as soon as the step is done (a runner waits for the
// process, not for the step's promise).
import * as core from "@actions/core";
import { setTimeout as sleep } from "node:timers/promises";
import { createHttp } from "./http.js";
import { run } from "./run.js";
import { safeToolkit } from "./safe-toolkit.js";

// Operator/test tuning, not inputs (a release workflow has no reason to change them; the step's
// bound is the timeout-seconds input): TOKENSMITH_RETRY_BASE_MS, the wait before the second attempt
// (doubled after each later one); TOKENSMITH_ATTEMPT_TIMEOUT_MS, how long one HTTP request may
// take, connection included.
const setting = (name: string, fallback: number, min: number) => {
  const value = Number(process.env[name] || String(fallback));
  return Number.isFinite(value) && value >= min ? value : fallback;
};

void run({
  core: safeToolkit(core),
  env: process.env,
  http: createHttp({ timeoutMs: setting("TOKENSMITH_ATTEMPT_TIMEOUT_MS", 30_000, 1) }),
  retry: { attempts: 4, baseDelayMs: setting("TOKENSMITH_RETRY_BASE_MS", 1000, 0), maxRetryAfterMs: 30_000 },
  sleep: (ms) => sleep(ms),
}).finally(() => process.exit());
