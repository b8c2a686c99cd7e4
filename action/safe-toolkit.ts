// The toolkit main and post hand to the action: every message goes through oneLine() before it
// reaches @actions/core, so no value the action prints can become a workflow command (core escapes
// `%`, CR and LF inside `::error::` data, but prints info lines as they are).
import { oneLine } from "./untrusted-text.js";
import type { Toolkit } from "./toolkit.js";

export function safeToolkit(core: Toolkit): Toolkit {
  return {
    getInput: (name) => core.getInput(name),
    setSecret: (secret) => core.setSecret(secret),
    setOutput: (name, value) => core.setOutput(name, value),
    saveState: (name, value) => core.saveState(name, value),
    getState: (name) => core.getState(name),
    info: (message) => core.info(oneLine(message)),
    warning: (message) => core.warning(oneLine(message)),
    debug: (message) => core.debug(oneLine(message)),
    setFailed: (message) => core.setFailed(oneLine(message)),
  };
}
