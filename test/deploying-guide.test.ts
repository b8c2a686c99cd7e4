// docs/deploying.md and app-manifest.json stay true: the manifest grants what the broker asks for,
// in GitHub's manifest format; the guide names every metric the broker exposes and the commands
// the tests run; the README links it.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { checkCatalogue, DEFAULT_TOKEN_PERMISSIONS, type PermissionLevel } from "../shared/token-permissions.js";
import { AUTO_UPDATE_PERMISSIONS, missingFrom, SIGN_PERMISSIONS } from "../server/cli/doctor/needed-permissions.js";
import { createMetrics } from "../server/metrics.js";
import { GUIDE, guideCommands } from "./support/guide-commands.js";

const manifest = JSON.parse(readFileSync(new URL("../app-manifest.json", import.meta.url), "utf8")) as Record<string, unknown>;
const guide = readFileSync(GUIDE, "utf8");

describe("app-manifest.json", () => {
  it("is GitHub's App manifest format: name, url, webhook URL ending /webhook, redirect_url, public, permissions, events", () => {
    expect(Object.keys(manifest).sort()).toEqual(["default_events", "default_permissions", "description", "hook_attributes", "name", "public", "redirect_url", "url"]);
    expect(typeof manifest.name).toBe("string");
    expect(new URL(manifest.url as string).protocol).toBe("https:");
    expect(new URL((manifest.hook_attributes as { url: string }).url).pathname).toBe("/webhook");
    expect(new URL(manifest.redirect_url as string).protocol).toBe("https:");
    expect(manifest.public).toBe(false);
    expect(manifest.default_events).toEqual(["push"]);
  });

  it("grants what /token (default TOKEN_PERMISSIONS), /sign and auto-update ask for, each in the platform's catalogue", () => {
    const granted = manifest.default_permissions as Record<string, string>;
    expect(missingFrom(granted, DEFAULT_TOKEN_PERMISSIONS)).toEqual([]);
    expect(missingFrom(granted, SIGN_PERMISSIONS)).toEqual([]);
    expect(missingFrom(granted, AUTO_UPDATE_PERMISSIONS)).toEqual([]);
    expect(granted.metadata).toBe("read");
    for (const [key, level] of Object.entries(granted)) expect(checkCatalogue(key, level as PermissionLevel)).toBeUndefined();
  });
});

describe("docs/deploying.md", () => {
  it("names every tokensmith metric the broker exposes", async () => {
    const metrics = createMetrics();
    const { text } = await metrics.exposition();
    const names = [...text.matchAll(/^# TYPE (tokensmith_\w+) /gm)].map((m) => m[1]!);
    expect(names.length).toBeGreaterThanOrEqual(10);
    for (const name of names) expect(guide).toContain(`\`${name}\``);
  });

  it("its tested blocks are the commands the tests run", () => {
    expect(guideCommands("doctor")).toEqual(["npx tokensmith doctor"]);
    expect(guideCommands("production-install")).toEqual(["npm pack", "npm install --omit=dev --no-audit --no-fund ./tokensmith-*.tgz", "npx tokensmith serve"]);
  });

  it("is linked from the README, and the settings reference has the ADMIN_* settings", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    expect(readme).toContain("(docs/deploying.md)");
    const settings = readFileSync(new URL("../docs/settings.md", import.meta.url), "utf8");
    expect(settings).toContain("| `ADMIN_PORT` |");
    expect(settings).toContain("| `ADMIN_HOST` |");
  });
});
