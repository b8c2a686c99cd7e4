// The main step as its entry point (main.ts) runs it: the toolkit made safe (every message one safe
// line), the real HTTP client, the retry policy and its operator/test tuning, read from `env`.
// Apart from main.ts so that a test can run the very same step in its own process with the real
// @actions/core (test/support/action-runner.ts); main.ts adds only the exit.
import { setTimeout as sleep } from "node:timers/promises";
import { createHttp } from "./http.js";
import { run } from "./run.js";
import { safeToolkit } from "./safe-toolkit.js";
import type { Env, Toolkit } from "./toolkit.js";

// Operator/test tuning, not inputs (a release workflow has no reason to change them; the step's
// bound is the timeout-seconds input): TOKENSMITH_RETRY_BASE_MS, the wait before the second attempt
// (doubled after each later one); TOKENSMITH_ATTEMPT_TIMEOUT_MS, how long one HTTP request may
// take, connection included.
const setting = (env: Env, name: string, fallback: number, min: number) => {
  const value = Number(env[name] || String(fallback));
  return Number.isFinite(value) && value >= min ? value : fallback;
};

export function mainStep(core: Toolkit, env: Env): Promise<void> {
  return run({
    core: safeToolkit(core),
    env,
    http: createHttp({ timeoutMs: setting(env, "TOKENSMITH_ATTEMPT_TIMEOUT_MS", 30_000, 1) }),
    retry: { attempts: 4, baseDelayMs: setting(env, "TOKENSMITH_RETRY_BASE_MS", 1000, 0), maxRetryAfterMs: 30_000 },
    sleep: (ms) => sleep(ms),
  });
}
