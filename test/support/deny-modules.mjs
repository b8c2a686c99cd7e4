// Loaded into a child process with `--import`: the packages named in TOKENSMITH_DENY_MODULES (comma-
// separated) cannot be imported there. A test then shows a process runs without loading them.
import { register } from "node:module";

const denied = (process.env.TOKENSMITH_DENY_MODULES ?? "").split(",").filter(Boolean);
register(new URL("./deny-modules-hooks.mjs", import.meta.url), { data: { denied } });
