#!/usr/bin/env node
// Thin launcher for the tokensmith CLI (source: server/cli/). Builds first if the build is missing
// or older than the sources, like `npm start` does.
import { existsSync } from "node:fs";

const root = new URL("..", import.meta.url);
if (existsSync(new URL("scripts/build-if-stale.js", root)) && existsSync(new URL("node_modules/typescript", root))) {
  await import("../scripts/build-if-stale.js");
}
const { main } = await import("../build/server/cli/main.js");
await main();
