// Entry point of the post step: revoke the token main saved, then exit (post() never throws).
import * as core from "@actions/core";
import { createHttp } from "./http.js";
import { post } from "./revoke-token.js";
import { safeToolkit } from "./safe-toolkit.js";

const timeout = Number(process.env.TOKENSMITH_ATTEMPT_TIMEOUT_MS || "10000");

void post({ core: safeToolkit(core), env: process.env, http: createHttp({ timeoutMs: Number.isFinite(timeout) && timeout >= 1 ? Math.min(timeout, 10_000) : 10_000 }), now: Date.now }).finally(() => process.exit());
