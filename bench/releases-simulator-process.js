// The `releases` scenario's simulator behind the emulated link, as a process of its own (GitHub
// runs on other machines: its work must not take turns with the broker's on one thread). Seeds
// the scenario's fleets, then answers the parent over the fork IPC channel: the link's counters,
// its connections dropped, the requests it received (method and path) and cleared.
import { createSimulator } from "../build/simulator/index.js";
import { seed } from "./releases-fleet.js";

const link = JSON.parse(process.env.BENCH_RELEASES_LINK);
const sim = await createSimulator({ link });
const { fleet, large } = seed(sim);
const credentials = (app) => ({ id: app.id, privateKeyPem: app.privateKeyPem });

process.on("message", (message) => {
  switch (message.type) {
    case "drop":
      sim.link.dropConnections();
      return process.send({ type: "dropped" });
    case "stats":
      return process.send({ type: "stats", stats: { ...sim.link.stats } });
    case "clear":
      sim.clearRequests();
      return process.send({ type: "cleared" });
    case "requests":
      return process.send({ type: "requests", requests: sim.requests.map((r) => `${r.method} ${r.path}`) });
    case "exit":
      return void sim.close().then(() => process.exit(0));
  }
});
process.send({ type: "ready", apiBase: sim.apiBase, apps: { fleet: credentials(fleet), large: credentials(large) } });
