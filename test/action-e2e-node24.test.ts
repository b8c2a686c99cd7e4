// The bundled action end to end on Node 24, the runner's runtime (runs.using: node24): the suite of
// test/support/action-e2e-suite.ts; this machine's Node runs it in test/action-e2e.test.ts.
import { RUNTIMES } from "./support/action-node24.js";
import { actionE2eSuite } from "./support/action-e2e-suite.js";

actionE2eSuite([RUNTIMES[1]!]);
