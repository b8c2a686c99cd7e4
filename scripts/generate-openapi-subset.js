// `npm run generate:openapi-subset`: writes simulator/openapi-subset.json, the part of GitHub's REST
// description (@octokit/openapi, api.github.com) that the simulator's own routes use: their
// operations and the components they reach, with the package's version. The simulator reads it
// instead of the whole 13 MB description (which it still reads for anything the subset lacks, and
// instead of a subset cut from another version). Needs the build (`npm run build`). `--stdout`
// prints it instead (test/openapi-subset.test.ts compares that with the committed file).
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { createSimulator } = await import(join(root, "build/simulator/create-simulator.js"));
const { cutDescriptionSubset, installedOpenapiVersion, wholeGithubRestDescription } = await import(join(root, "build/simulator/openapi-validate.js"));

const routes = [];
for (const flavor of ["cloud", "enterprise"]) {
  const simulator = await createSimulator({ flavor });
  routes.push(...simulator.routes());
  await simulator.close();
}
const subset = cutDescriptionSubset(wholeGithubRestDescription(), installedOpenapiVersion(), routes);
const text = `${JSON.stringify(subset, null, 1)}\n`;
if (process.argv.includes("--stdout")) process.stdout.write(text);
else writeFileSync(join(root, "simulator/openapi-subset.json"), text);
