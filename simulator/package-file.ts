// Finds a file inside an installed package by walking up from this module to a node_modules that
// holds it: the same answer from simulator/ (jest, tsx) and build/simulator/
// (the built simulator the benchmarks run), and through package `exports` maps that hide data files.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function packageFile(pkg: string, file: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "node_modules", pkg, file);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`simulator: ${pkg}/${file} is not installed`);
    dir = parent;
  }
}
