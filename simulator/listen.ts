// Both of the simulator's listeners (the platform and the emulated link) take a free port on loopback.
import type { AddressInfo, Server } from "node:net";

/** Listens on a free loopback port; resolves with it, or rejects with the listen error. */
export function listenOnLoopback(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
  });
}
