// `npm start` (scripts/start.js) and bin/tokensmith.js run the built broker; this builds first only
// when the build is missing or older than the sources, so a broker started many times answers
// within about two seconds.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const output = join(root, "build/server/main.js");

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(path));
    else if (entry.name.endsWith(".ts")) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

const sources = Math.max(newest(join(root, "server")), newest(join(root, "shared")), newest(join(root, "simulator")), statSync(join(root, "tsconfig.json")).mtimeMs);
if (!existsSync(output) || statSync(output).mtimeMs < sources) {
  process.stderr.write("tokensmith: building the broker (tsc)...\n");
  execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });
}
