// Entry point of the post step: revoke the token main saved.
import * as core from "@actions/core";
import { createHttp } from "./http.js";
import { post } from "./revoke-token.js";

void post({ core, env: process.env, http: createHttp({ timeoutMs: 10_000 }), now: Date.now });
