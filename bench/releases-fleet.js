// The fleets of the `releases` scenario, seeded into a simulator: in the scenario's process (the
// loopback runs) and in bench/releases-simulator-process.js (the link runs).
export const INSTALLATIONS = 20;
export const REPOSITORIES = 50;
export const LARGE = 5000;

/** The two fleets on one simulator, each its own App: → { fleet, large } App credentials. */
export function seed(sim) {
  const fleet = sim.createApp();
  for (let i = 0; i < INSTALLATIONS; i += 1) {
    const account = `bench-org-${String(i).padStart(2, "0")}`;
    const repositories = Array.from({ length: REPOSITORIES }, (_, j) => `repo-${String(j).padStart(2, "0")}`);
    sim.addInstallation({ appId: fleet.id, account, permissions: { contents: "write", metadata: "read" }, repositories });
    // Two in three repositories have releases; some newest ones are prereleases or drafts.
    repositories.forEach((name, j) => {
      if (j % 3 === 2) return;
      sim.releases.add(`${account}/${name}`, { tagName: "v1.0.0", createdAt: "2026-01-01T00:00:00Z" });
      if (j % 5 === 0) sim.releases.add(`${account}/${name}`, { tagName: "v1.1.0-rc.1", isPrerelease: true, createdAt: "2026-02-01T00:00:00Z" });
      if (j % 7 === 0) sim.releases.add(`${account}/${name}`, { tagName: "v2.0.0", isDraft: true, createdAt: "2026-03-01T00:00:00Z" });
    });
  }
  const large = sim.createApp();
  const account = "bench-large";
  const names = Array.from({ length: LARGE }, (_, j) => `repo-${String(j).padStart(4, "0")}`);
  for (const name of names) sim.repository(account, name);
  sim.addInstallation({ appId: large.id, account, permissions: { contents: "write", metadata: "read" }, repositories: names });
  names.forEach((name, j) => {
    if (j % 3 !== 2) sim.releases.add(`${account}/${name}`, { tagName: "v1.0.0", createdAt: "2026-01-01T00:00:00Z" });
  });
  return { fleet, large };
}
