// `tokensmith sandbox [--json] [--demo] [--port N] [--world FILE] [--link RTT/MBIT]`: the platform simulator and a
// broker on loopback, the variables a job would see printed, running until SIGINT/SIGTERM (or, with
// --demo, one release job end to end and exit). Every printed line says its tokens are fake.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { CommandIo } from "../cli/releases-command.js";
import { runDemo } from "./run-demo.js";
import { FAKE_NOTICE, parseLink, startSandbox, type Sandbox } from "./start-sandbox.js";
import type { LinkOptions } from "../../simulator/index.js";
import { parseWorld, type World } from "./world.js";

const SANDBOX_USAGE = `Usage: tokensmith sandbox [--json] [--demo] [--port N] [--world FILE] [--link RTT/MBIT]

  Starts a fake CI platform (OIDC issuer, GitHub REST and GraphQL, the runner's ID-token endpoint)
  and a broker pointed at it, on 127.0.0.1 only; every token and secret it prints is fake.
  --json     Print the broker URL, secrets and runner variables as one JSON line.
  --demo     Run one release job end to end (action, /sign, /webhook, /releases), then exit.
  --port N   The broker's port (default: a free one).
  --world F  Seed the platform from a JSON world file (format: docs/sandbox.md).
  --link L   Put an emulated network link between the broker and the platform, e.g.
             --link 40ms/100mbit: 40 ms round trip, 100 Mbit/s each way, a round trip per
             new connection (default: plain loopback).
`;

const PREFIX = "[sandbox · fake tokens]";

/** The sandbox command. `stopped` resolves on SIGINT/SIGTERM (main.ts wires the process's). */
export async function sandboxCommand(argv: readonly string[], io: CommandIo, stopped: () => Promise<unknown>): Promise<number> {
  let values: { json?: boolean; demo?: boolean; port?: string; world?: string; link?: string; help?: boolean };
  try {
    values = parseArgs({
      args: [...argv],
      options: { json: { type: "boolean" }, demo: { type: "boolean" }, port: { type: "string" }, world: { type: "string" }, link: { type: "string" }, help: { type: "boolean", short: "h" } },
    }).values;
  } catch (error) {
    io.err(`tokensmith sandbox: ${error instanceof Error ? error.message : String(error)}\n\n${SANDBOX_USAGE}`);
    return 2;
  }
  if (values.help) {
    io.out(SANDBOX_USAGE);
    return 0;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    io.err(`tokensmith sandbox: --port must be a port number, got ${values.port}\n`);
    return 2;
  }
  let link: LinkOptions | undefined;
  if (values.link !== undefined) {
    link = parseLink(values.link);
    if (!link) {
      io.err(`tokensmith sandbox: --link must read RTT/BANDWIDTH, e.g. 40ms/100mbit, got ${values.link}\n`);
      return 2;
    }
  }
  let world: World | undefined;
  try {
    if (values.world !== undefined) world = parseWorld(JSON.parse(readFileSync(values.world, "utf8")));
  } catch (error) {
    io.err(`tokensmith sandbox: --world ${values.world}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }

  let sandbox: Sandbox;
  try {
    sandbox = await startSandbox({ world, port, link });
  } catch (error) {
    io.err(`tokensmith sandbox: could not start: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  try {
    const print = (line: string) => io.out(`${values.json ? "" : `${PREFIX} `}${line}\n`);
    if (values.json) io.out(`${JSON.stringify(describe(sandbox))}\n`);
    else for (const line of describeLines(sandbox)) print(line);
    if (values.demo) {
      const ok = await runDemo(sandbox, (step) => print(values.json ? JSON.stringify({ fake: true, step: step.name, ok: step.ok, detail: step.detail }) : `${step.ok ? "ok  " : "FAIL"} ${step.name}: ${step.detail}`));
      print(values.json ? JSON.stringify({ fake: true, done: true, ok }) : ok ? "demo done: every step answered as expected" : "demo failed: see the FAIL lines above");
      return ok ? 0 : 1;
    }
    if (!values.json) print("running; Ctrl-C (SIGINT) or SIGTERM stops it");
    await stopped();
    return 0;
  } finally {
    await sandbox.close();
  }
}

/** What `--json` prints: one object, one line. */
function describe(sandbox: Sandbox) {
  return {
    fake: true,
    notice: FAKE_NOTICE,
    brokerUrl: sandbox.brokerUrl,
    platformUrl: sandbox.platformUrl,
    ...(sandbox.link ? { link: { rttMs: sandbox.link.options.rttMs, mbit: sandbox.link.options.mbit } } : {}),
    PROCESS_TRIGGER_SECRET: sandbox.processTriggerSecret,
    HOST_WEBHOOK_SECRET: sandbox.webhookSecret,
    runner: { ...sandbox.runnerEnv },
  };
}

function describeLines(sandbox: Sandbox): string[] {
  const d = describe(sandbox);
  return [
    FAKE_NOTICE,
    `broker                          ${d.brokerUrl}`,
    `platform (simulator)            ${d.platformUrl}`,
    ...(d.link ? [`link to the platform            ${d.link.rttMs} ms round trip, ${d.link.mbit} Mbit/s`] : []),
    `PROCESS_TRIGGER_SECRET          ${d.PROCESS_TRIGGER_SECRET}`,
    `HOST_WEBHOOK_SECRET             ${d.HOST_WEBHOOK_SECRET}`,
    ...Object.entries(d.runner).map(([name, value]) => `${name.padEnd(32)}${value}`),
    `world: ${sandbox.world.organisation} with ${sandbox.world.repositories.map((r) => r.name).join(", ")}`,
  ];
}
