// The simulator reads the subset of GitHub's REST description its routes use
// (simulator/openapi-subset.json, docs/development.md#test-time) instead of the whole 13 MB file:
// the committed subset is what `npm run generate:openapi-subset` writes from the installed
// @octokit/openapi, it answers every route the simulator has exactly as the whole description does,
// and what it lacks is still looked up in the whole one.
import { describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createSimulator } from "../simulator/create-simulator.js";
import { cutDescriptionSubset, descriptionSubsetFile, githubRestDescription, installedOpenapiVersion, wholeGithubRestDescription, type DescriptionSubset } from "../simulator/openapi-validate.js";

const committed = () => JSON.parse(readFileSync(descriptionSubsetFile()!, "utf8")) as DescriptionSubset;

describe("the description's subset", () => {
  it("is what npm run generate:openapi-subset writes from the installed @octokit/openapi (run it after adding a route or updating the package)", () => {
    const written = execFileSync(process.execPath, ["scripts/generate-openapi-subset.js", "--stdout"], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    expect(JSON.parse(written)).toEqual(committed());
    expect(committed().openapiVersion).toBe(installedOpenapiVersion());
  });

  it("describes every route of both flavors as the whole description does, body schemas and all", async () => {
    const routes = [];
    for (const flavor of ["cloud", "enterprise"] as const) {
      const simulator = await createSimulator({ flavor });
      routes.push(...simulator.routes());
      await simulator.close();
    }
    const whole = wholeGithubRestDescription();
    const fromWhole = cutDescriptionSubset(whole, installedOpenapiVersion(), routes);
    expect(committed()).toEqual(fromWhole);
    expect(Object.keys(fromWhole.paths).length).toBeGreaterThan(25);
    // A refused body reads the same through the subset as through the whole description.
    const mint = githubRestDescription().operation("POST", "/app/installations/:installation_id/access_tokens")!;
    expect(mint.validateBody({ repositories: "app" })).toBe("Invalid request.\n\nFor 'properties/repositories', \"app\" is not an array.");
  });

  it("leaves what it lacks to the whole description: an operation and a component no route uses", () => {
    const subset = committed();
    expect(Object.keys(subset.paths)).not.toContain("/repos/{owner}/{repo}/issues");
    expect(subset.components.schemas["issue"]).toBeUndefined();
    const issues = githubRestDescription().operation("POST", "/repos/:owner/:repo/issues");
    expect(issues?.operationId).toBe("issues/create");
    expect(issues?.validateBody({ title: "a bug" })).toBeUndefined();
    expect(issues?.validateBody({ title: "a bug", labels: "bug" })).toMatch(/^Invalid request\.\n\nFor 'properties\/labels', "bug" is not an array\.$/);
    expect(githubRestDescription().validateComponent("issue", { id: "x" }).length).toBeGreaterThan(0);
  });
});
