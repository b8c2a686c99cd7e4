// The usual shape of a broker test file: one simulated platform for the file (tokenFixture), a
// fresh broker for every test, every log line kept, and at the end no credential in any of them.
import { afterAll, afterEach, beforeAll, beforeEach } from "@jest/globals";
import { startBroker, type TestBroker } from "./broker.js";
import { expectNoSecrets, prepareGraphql, tokenFixture, type TokenFixture } from "./fixtures.js";

export interface BrokerPerTestOptions {
  /** Settings over the fixture's own (App, API base, issuer). */
  env?: Record<string, string>;
  broker?: Parameters<typeof startBroker>[1];
  /** Runs once the fixture exists (extra installations, …). */
  setup?: (fx: TokenFixture) => void | Promise<void>;
  /** GitHub's GraphQL schema built before the first test (prepareGraphql): the file's /sign calls run under short timeouts. */
  graphql?: boolean;
  /** Secrets to look for in the logs, besides the App key and every token the simulator issued. */
  secrets?: string[];
}

export interface BrokerPerTest {
  readonly fx: TokenFixture;
  /** This test's broker. */
  readonly broker: TestBroker;
  /** Log lines of every broker so far; push those of any extra broker a test starts. */
  readonly logs: string[];
  readonly secrets: string[];
}

export function brokerPerTest(options: BrokerPerTestOptions = {}): BrokerPerTest {
  let fx: TokenFixture | undefined;
  let broker: TestBroker | undefined;
  const logs: string[] = [];
  const secrets = options.secrets ?? [];

  beforeAll(async () => {
    if (options.graphql) await prepareGraphql();
    fx = await tokenFixture();
    await options.setup?.(fx);
  });
  afterAll(async () => {
    await fx!.sim.close();
    expectNoSecrets(logs, [...secrets, fx!.app.privateKeyPem, ...fx!.sim.tokens.keys()]);
  });
  beforeEach(async () => {
    fx!.sim.clearRequests();
    fx!.sim.faults.clear();
    // Each test starts a fresh minute of GitHub's points budget (the simulator's secondary limits).
    fx!.sim.limits.forgetSpentPoints();
    fx!.sim.oidc.keyEndpoint = "ok";
    broker = await startBroker({ ...fx!.env, ...options.env }, options.broker);
  });
  afterEach(async () => {
    logs.push(...broker!.logs);
    await broker!.close();
  });

  return {
    get fx() {
      return fx!;
    },
    get broker() {
      return broker!;
    },
    logs,
    secrets,
  };
}
