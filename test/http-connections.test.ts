// Connections at the process level, on the built broker (build/server/main.js): MAX_CONNECTIONS
// caps them, and the refusals are logged.
import { connect, type Socket } from "node:net";
import { describe, expect, it } from "@jest/globals";
import { spawnBroker } from "./support/spawn-broker.js";

type Entry = { msg?: string; refused?: number; max_connections?: number };
const parse = (lines: string[]) => lines.flatMap((line) => {
  try {
    return [JSON.parse(line) as Entry];
  } catch {
    return [];
  }
});

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A connection that sends one GET and reports what came back before it closed (or null if still open after `waitMs`). */
function oneRequest(port: number, waitMs = 5_000): { socket: Socket; outcome: Promise<string | null> } {
  const socket = connect(port, "127.0.0.1", () => socket.write("GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  let text = "";
  socket.on("error", () => {});
  const outcome = new Promise<string | null>((resolve) => {
    socket.on("data", (chunk) => {
      text += String(chunk);
      if (/\r\n\r\n\{.*\}$/s.test(text)) resolve(text); // a whole JSON answer
    });
    socket.on("close", () => resolve(text));
    setTimeout(() => resolve(text === "" ? null : text), waitMs).unref();
  });
  return { socket, outcome };
}

describe("connections", () => {
  it("MAX_CONNECTIONS: one connection over the cap is closed at once without an answer, and logged; below it again, served", async () => {
    const broker = await spawnBroker({ MAX_CONNECTIONS: "3" });
    try {
      const port = Number(new URL(broker.url).port);
      const held = [1, 2, 3].map(() => oneRequest(port));
      for (const one of held) expect(await one.outcome).toMatch(/^HTTP\/1\.1 404 /); // keep-alive: still open
      const over = oneRequest(port);
      expect(await over.outcome).toBe(""); // closed, nothing answered
      await until(() => parse(broker.lines).some((e) => e.msg?.startsWith("connections refused")), "the refusal's log line");
      expect(parse(broker.lines).find((e) => e.msg?.startsWith("connections refused"))).toEqual(expect.objectContaining({ refused: 1, max_connections: 3 }));

      held[0]!.socket.destroy();
      await new Promise((r) => setTimeout(r, 200));
      const again = oneRequest(port);
      expect(await again.outcome).toMatch(/^HTTP\/1\.1 404 /);
      for (const one of [...held, again]) one.socket.destroy();
    } finally {
      await broker.stop();
    }
  });
});
