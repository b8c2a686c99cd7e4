// The sandbox's world: which organisation the App is installed on, its repositories, branches,
// releases and open pull requests. JSON on disk (`tokensmith sandbox --world FILE`), the same
// object from code (`startSandbox({ world })`). The format is documented in docs/sandbox.md.
import type { PermissionLevel, Simulator } from "../../simulator/index.js";

export interface WorldRepository {
  /** The repository's name inside the organisation, e.g. "app". */
  name: string;
  /** Branch name → files (path → UTF-8 text). Default: `{ "main": { "README.md": "# <name>\n" } }`. */
  branches?: Record<string, Record<string, string>>;
  /** Releases, oldest first. */
  releases?: Array<{ tag: string; name?: string; prerelease?: boolean; draft?: boolean }>;
  /** Open pull requests, each on a new branch cut from `base`. */
  pullRequests?: Array<{ base: string; title?: string }>;
}

export interface World {
  /** The organisation the App is installed on. */
  organisation: string;
  /** The installation's permissions. Default: contents, pull_requests write; metadata read. */
  permissions?: Record<string, PermissionLevel>;
  repositories: WorldRepository[];
}

export const DEFAULT_WORLD: World = {
  organisation: "octo-org",
  permissions: { contents: "write", pull_requests: "write", issues: "read", metadata: "read" },
  repositories: [
    {
      name: "app",
      branches: { main: { "README.md": "# app\n", "CHANGELOG.md": "## Unreleased\n" } },
      releases: [{ tag: "v1.0.0" }, { tag: "v1.1.0" }],
      pullRequests: [{ base: "main", title: "feat: dark mode" }, { base: "main", title: "fix: typo" }],
    },
    { name: "docs", releases: [{ tag: "v0.9.0", prerelease: true }], pullRequests: [{ base: "main", title: "docs: install guide" }] },
    { name: "tools" },
  ],
};

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;
const LEVELS = new Set(["read", "write", "admin"]);

/** Checks a parsed JSON value against the format; throws one line naming the first problem. */
export function parseWorld(value: unknown): World {
  const fail = (what: string): never => {
    throw new Error(`world: ${what}`);
  };
  if (!isObject(value)) fail("must be a JSON object");
  const world = value as Record<string, unknown>;
  if (typeof world.organisation !== "string" || !NAME.test(world.organisation)) fail("organisation must be a name like octo-org");
  if (world.permissions !== undefined) {
    if (!isObject(world.permissions)) fail("permissions must be an object of name → read|write|admin");
    for (const [name, level] of Object.entries(world.permissions as object)) if (!LEVELS.has(level as string)) fail(`permissions.${name} must be read, write or admin`);
  }
  if (!Array.isArray(world.repositories) || world.repositories.length === 0) fail("repositories must be a non-empty array");
  (world.repositories as unknown[]).forEach((repo, i) => {
    if (!isObject(repo) || typeof repo.name !== "string" || !NAME.test(repo.name)) fail(`repositories[${i}].name must be a repository name`);
    const r = repo as Record<string, unknown>;
    if (r.branches !== undefined && !isObject(r.branches)) fail(`repositories[${i}].branches must be an object of branch → files`);
    for (const [branch, files] of Object.entries((r.branches ?? {}) as object)) {
      if (!isObject(files) || Object.values(files).some((text) => typeof text !== "string")) fail(`repositories[${i}].branches.${branch} must map paths to text`);
    }
    if (r.releases !== undefined && (!Array.isArray(r.releases) || r.releases.some((rel) => !isObject(rel) || typeof rel.tag !== "string"))) fail(`repositories[${i}].releases must be [{ "tag": "v1.0.0" }, …]`);
    if (r.pullRequests !== undefined && (!Array.isArray(r.pullRequests) || r.pullRequests.some((pr) => !isObject(pr) || typeof pr.base !== "string"))) fail(`repositories[${i}].pullRequests must be [{ "base": "main" }, …]`);
    // Checked here rather than met while seeding: a pull request is cut from its base's head.
    const branches = Object.keys((r.branches ?? { main: {} }) as object);
    ((r.pullRequests ?? []) as Array<{ base: string }>).forEach((pr, j) => {
      if (!branches.includes(pr.base)) fail(`repositories[${i}].pullRequests[${j}].base: no branch ${pr.base} in ${String(r.name)} (branches: ${branches.join(", ") || "none"})`);
    });
  });
  const names = (world.repositories as Array<{ name: string }>).map((r) => r.name.toLowerCase());
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) fail(`repositories: ${twice} is listed twice`);
  return value as World;
}

/** Seeds the simulator: one App, installed on the organisation's listed repositories. */
export function seedWorld(sim: Simulator, world: World): { app: { id: number; privateKeyPem: string }; installationId: number } {
  const app = sim.createApp();
  const installationId = sim.addInstallation({
    appId: app.id,
    account: world.organisation,
    permissions: { ...(world.permissions ?? DEFAULT_WORLD.permissions) },
    repositories: world.repositories.map((r) => r.name),
  });
  // A sandbox is for trying things: the platform's content-creation limit would only get in the way.
  sim.git.contentCreationPerMinute = Number.POSITIVE_INFINITY;
  sim.git.contentCreationPerHour = Number.POSITIVE_INFINITY;
  for (const repo of world.repositories) {
    const full = `${world.organisation}/${repo.name}`;
    sim.repository(world.organisation, repo.name);
    const branches = repo.branches ?? { main: { "README.md": `# ${repo.name}\n` } };
    for (const [branch, files] of Object.entries(branches)) sim.git.createBranch(full, branch, { files });
    for (const release of repo.releases ?? []) {
      sim.releases.add(full, { tagName: release.tag, name: release.name ?? release.tag, isPrerelease: release.prerelease ?? false, isDraft: release.draft ?? false });
    }
    for (const pr of repo.pullRequests ?? []) sim.git.addPullRequest(full, { base: pr.base, title: pr.title });
  }
  return { app, installationId };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
