// Issue 11 item 3: a broker address that drops packets. Without a connect timeout each attempt
// waits the kernel's ~130 s; with it, each attempt ends within TOKENSMITH_ATTEMPT_TIMEOUT_MS and
// the step ends. The bundled dist/main runs inside a network namespace this file creates (in an
// unprivileged user namespace: no root needed; support/action-netns.ts): no packet leaves it.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { runStep } from "./support/action-runner.js";
import { BLACK_HOLE, createBlackHoleNamespace, type BlackHoleNamespace } from "./support/action-netns.js";
import { RUNTIMES } from "./support/action-node24.js";

let ns: BlackHoleNamespace;
beforeAll(async () => {
  ns = await createBlackHoleNamespace();
});
afterAll(async () => {
  await ns?.close();
});

const ATTEMPT_MS = 1000;
const BOUND_MS = 40_000; // 4 attempts of 1 s plus backoff; the kernel's connect timeout is ~130 s

let node = process.execPath;

function runInNamespace(inputs: Record<string, string>) {
  return runStep("main", {
    node,
    prefix: ns.prefix,
    inputs: { "auth-mode": "public-app", ...inputs },
    env: {
      GITHUB_REPOSITORY: "octo-org/app",
      ACTIONS_ID_TOKEN_REQUEST_URL: `${ns.helperUrl}/_actions/idtoken?api-version=2.0`,
      ACTIONS_ID_TOKEN_REQUEST_TOKEN: "runner-request-token",
      TOKENSMITH_ATTEMPT_TIMEOUT_MS: String(ATTEMPT_MS),
      TOKENSMITH_RETRY_BASE_MS: "10",
    },
    killAfterMs: BOUND_MS,
  });
}

describe.each(RUNTIMES)("a black-holed broker address (packets dropped, no answer at all), on $label", (runtime) => {
  beforeAll(() => {
    node = runtime.node();
  }, 360_000);
  // https: plain http is refused off loopback (the SYN is dropped before any TLS either way).
  const broker = `https://${BLACK_HOLE}:8443`;

  it("every attempt ends at its timeout and the process exits with the failure", async () => {
    const main = await runInNamespace({ "broker-url": broker });
    expect(main.killed).toBe(false);
    expect(main.exitCode).toBe(1);
    expect(main.lines.filter((line) => line === `tokensmith: attempt 1: ${broker} is unreachable (ETIMEDOUT: no answer within ${ATTEMPT_MS} ms)`)).toHaveLength(1);
    expect(main.lines.find((line) => line.startsWith("::error::"))).toBe(
      `::error::tokensmith: could not reach the broker at ${broker} (ETIMEDOUT: no answer within ${ATTEMPT_MS} ms) after 4 attempts: check broker-url, or retry later.`,
    );
  }, 60_000);

  it("with a fallback that answers, the first attempt falls back after its timeout and the process exits with the outputs", async () => {
    const main = await runInNamespace({ "broker-url": broker, "broker-fallback-url": ns.helperUrl });
    expect(main.killed).toBe(false);
    expect(main.exitCode).toBe(0);
    expect(main.outputs.token).toBe("ghs_black_hole_test_token_0000000000000001");
    expect(main.lines).toContain(`tokensmith: attempt 1: ${broker} is unreachable (ETIMEDOUT: no answer within ${ATTEMPT_MS} ms)`);
  }, 60_000);
});
