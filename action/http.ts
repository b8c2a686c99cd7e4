// The action's one HTTP client. @actions/http-client picks up https_proxy / http_proxy / no_proxy
// from the runner's environment, so self-hosted runners behind a proxy keep working.
import { HttpClient } from "@actions/http-client";
import type { Http } from "./toolkit.js";

/** No redirects (a token request must reach the address the user named) and no built-in retries. */
export function createHttp(options: { timeoutMs: number }): Http {
  return new HttpClient("tokensmith-action", [], {
    allowRetries: false,
    allowRedirects: false,
    socketTimeout: options.timeoutMs,
  });
}
