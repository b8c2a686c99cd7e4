// Entry point of the main step: the step (main-step.ts) with the real toolkit and the process's
// environment; the process exits as soon as the step is done (a runner waits for the process, not
// for the step's promise).
import * as core from "@actions/core";
import { mainStep } from "./main-step.js";

void mainStep(core, process.env).finally(() => process.exit());
