// The image's build checks its own application tree (Containerfile, deps stage): every import in
// the broker's JavaScript (`node deploy/check-runtime-imports.mjs /app`) resolves inside that
// tree — a relative one to a file that is there, a package to a directory under node_modules —
// but for the sandbox, which the image leaves out on purpose (`tokensmith sandbox` runs from the
// npm package, not the image), and a checkout's scripts/. Static text, no import: loading build/server/main.js would start
// the broker. Exits 1 naming each import that does not resolve.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(process.argv[2] ?? "/app");
// Left out on purpose: the sandbox, and the build-if-stale step bin/tokensmith.js runs only in a
// checkout (it tests that scripts/ exists first).
const LEFT_OUT = [join(root, "build/server/sandbox"), join(root, "scripts")];
const builtins = new Set(builtinModules);

function* javascript(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* javascript(path);
    else if (/\.(m?js)$/.test(entry.name)) yield path;
  }
}

/** The package directory `name` resolves to from `from`, looking up the node_modules chain. */
function packageDir(name, from) {
  const parts = name.startsWith("@") ? name.split("/").slice(0, 2) : name.split("/").slice(0, 1);
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", ...parts);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === dirname(dir)) return null;
  }
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;
const problems = [];
let count = 0;
for (const file of [...javascript(join(root, "build")), ...javascript(join(root, "bin"))]) {
  for (const [, specifier] of readFileSync(file, "utf8").matchAll(SPECIFIER)) {
    count += 1;
    if (specifier.startsWith("node:") || builtins.has(specifier)) continue;
    if (specifier.startsWith(".")) {
      const target = resolve(dirname(file), specifier);
      if (LEFT_OUT.some((dir) => target.startsWith(`${dir}/`))) continue;
      if (!existsSync(target) || !statSync(target).isFile()) problems.push(`${relative(root, file)}: ${specifier} (no such file)`);
    } else if (!packageDir(specifier, file)) {
      // The package's own name (tokensmith/testing) appears only in the left-out sandbox's docs.
      if (specifier.startsWith("tokensmith/")) continue;
      problems.push(`${relative(root, file)}: ${specifier} (no such package)`);
    }
  }
}
if (problems.length > 0) {
  console.error(`imports that do not resolve in ${root}:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log(`${count} imports in ${root}/build and ${root}/bin resolve (the sandbox left out)`);
