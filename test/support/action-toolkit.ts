// A recording stand-in for @actions/core, for the in-process action tests (the injected toolkit of
// actions/typescript-action's __fixtures__/core.ts). The job's OIDC token is not the toolkit's: the
// action asks the runner's ID-token endpoint itself (action/id-token.ts), over real HTTP.
import type { Env, Toolkit } from "../../action/toolkit.js";

export type ToolkitEvent =
  | { type: "mask"; value: string }
  | { type: "output" | "state"; name: string; value: string }
  | { type: "info" | "warning" | "debug" | "failed"; message: string };

export interface RecordingToolkit extends Toolkit {
  readonly events: ToolkitEvent[];
  outputs(): Record<string, string>;
  states(): Record<string, string>;
  /** Every line a user would read in the log (info, warning, debug, the failure). */
  messages(): string[];
  failed(): string | undefined;
  warnings(): string[];
}

export function recordingToolkit(options: { inputs?: Record<string, string>; env?: Env; state?: Record<string, string> } = {}): RecordingToolkit {
  const events: ToolkitEvent[] = [];
  const named = (type: "output" | "state") =>
    Object.fromEntries(events.flatMap((e) => (e.type === type ? [[e.name, e.value]] : [])));
  const said = (type: "warning" | "failed") => events.flatMap((e) => (e.type === type ? [e.message] : []));
  const toolkit: RecordingToolkit = {
    events,
    getInput: (name) => (options.inputs?.[name] ?? "").trim(),
    setSecret: (value) => void events.push({ type: "mask", value }),
    setOutput: (name, value) => void events.push({ type: "output", name, value }),
    saveState: (name, value) => void events.push({ type: "state", name, value }),
    getState: (name) => options.state?.[name] ?? "",
    info: (message) => void events.push({ type: "info", message }),
    warning: (message) => void events.push({ type: "warning", message }),
    debug: (message) => void events.push({ type: "debug", message }),
    setFailed: (message) => void events.push({ type: "failed", message }),
    outputs: () => named("output"),
    states: () => named("state"),
    messages: () => events.flatMap((e) => ("message" in e ? [e.message] : [])),
    failed: () => said("failed")[0],
    warnings: () => said("warning"),
  };
  return toolkit;
}
