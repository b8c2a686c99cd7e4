// /readyz as a state machine (issue 29, item 6): the lifecycle (starting → ready → draining, never
// back) and the checks read per probe (the App configured or not, a store configured reachable,
// unreachable or not at all) against a model, every probe over real HTTP to the admin listener of
// an in-process broker whose key set comes from the simulator. test/hardening-readyz.test.ts
// proves the same on the built broker as a child process.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { readinessChecks } from "../server/admin/readiness-checks.js";
import { startAdmin, type AdminHandle } from "../server/admin/start-admin.js";
import { startBroker, type TestBroker } from "./support/broker.js";
import { tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { freePort } from "./support/redis-server.js";
import { REDIS_URL } from "./support/redis-url.js";

type Store = "none" | "up" | "down";
interface Model {
  state: "starting" | "ready" | "draining";
  app: boolean;
  store: Store;
}
interface Real {
  admin: AdminHandle;
  url: string;
}

let fx: TokenFixture;
let broker: TestBroker;
let closedPort: number;
beforeAll(async () => {
  fx = await tokenFixture();
  broker = await startBroker({ ...fx.env });
  closedPort = await freePort(); // nothing listens there: a configured store that cannot be reached
});
afterAll(async () => {
  await broker.close();
  await fx.sim.close();
});

const storeUrl = (store: Store) => (store === "none" ? undefined : store === "up" ? REDIS_URL : `redis://127.0.0.1:${closedPort}`);

class Listening implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(model: Model, real: Real) {
    if (model.state === "starting") model.state = "ready";
    real.admin.readiness.listening();
  }
  toString = () => "listening";
}
class Draining implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(model: Model, real: Real) {
    model.state = "draining";
    real.admin.readiness.draining();
  }
  toString = () => "draining";
}
class SetApp implements fc.AsyncCommand<Model, Real> {
  constructor(readonly configured: boolean) {}
  check = () => true;
  async run(model: Model) {
    model.app = this.configured;
    broker.env.HOST_APP_ID = this.configured ? fx.env.HOST_APP_ID : undefined;
  }
  toString = () => `app(${this.configured})`;
}
class SetStore implements fc.AsyncCommand<Model, Real> {
  constructor(readonly store: Store) {}
  check = () => true;
  async run(model: Model) {
    model.store = this.store;
    broker.env.SERVICE_JWKS_CACHE = storeUrl(this.store);
  }
  toString = () => `store(${this.store})`;
}
class Probe implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  constructor(readonly together: number) {}
  async run(model: Model, real: Real) {
    const reasons = [
      ...(model.app ? [] : [{ reason: "app_not_configured", platform: "main", missing: ["HOST_APP_ID"] }]),
      ...(model.store === "down" ? [{ reason: "store_unreachable", setting: "SERVICE_JWKS_CACHE" }] : []),
    ];
    // A store down alone leaves the broker in the pool (/token goes on without it): told as `degraded`.
    const expected =
      model.state !== "ready" ? [503, { status: model.state }]
        : reasons.length === 0 ? [200, { status: "ready" }]
          : model.app ? [200, { status: "ready", degraded: reasons }]
            : [503, { status: "not_ready", reasons }];
    // Probes at once (a kubelet and a load balancer) must not disturb each other's store check.
    const answers = await Promise.all(
      Array.from({ length: this.together }, async () => {
        const response = await fetch(`${real.url}/readyz`);
        return [response.status, await response.json()];
      }),
    );
    for (const answer of answers) expect(answer).toEqual(expected);
  }
  toString = () => `probe(x${this.together})`;
}

describe("/readyz (model)", () => {
  it("answers what the lifecycle and the settings of the moment say, over HTTP", async () => {
    const commands = [
      fc.constant(new Listening()),
      fc.constant(new Draining()),
      fc.boolean().map((configured) => new SetApp(configured)),
      fc.constantFrom<Store>("none", "up", "down").map((store) => new SetStore(store)),
      fc.integer({ min: 1, max: 3 }).map((together) => new Probe(together)),
      fc.integer({ min: 1, max: 3 }).map((together) => new Probe(together)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 12 }), async (cmds) => {
        broker.env.HOST_APP_ID = fx.env.HOST_APP_ID;
        broker.env.SERVICE_JWKS_CACHE = undefined;
        const admin = startAdmin({ env: { ADMIN_PORT: "0", ADMIN_HOST: "127.0.0.1" }, metrics: broker.app.broker.metrics, log: broker.app.broker.log, checks: readinessChecks(broker.app.broker) })!;
        try {
          const url = `http://127.0.0.1:${await admin.port}`;
          await fc.asyncModelRun(() => ({ model: { state: "starting", app: true, store: "none" } as Model, real: { admin, url } }), cmds);
        } finally {
          await admin.close();
        }
      }),
      { numRuns: 25 },
    );
  });
});
