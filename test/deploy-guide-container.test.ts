// docs/deploying.md leads with the container (issue 29, item 7), and its container commands are
// the ones CI runs: the build and smoke scripts as .ci/run calls them, the `podman run` flags as
// deploy/smoke-test.mjs passes them; the figures it quotes are the smoke test's own lines.
import { readFileSync, statSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { GUIDE, guideCommands } from "./support/guide-commands.js";

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), "utf8");
const guide = readFileSync(GUIDE, "utf8");

describe("docs/deploying.md, the container", () => {
  it("leads with the container image and Kubernetes, before the package install", () => {
    const headings = [...guide.matchAll(/^## (.+)$/gm)].map((m) => m[1]!);
    expect(headings.slice(0, 3)).toEqual(["The container image", "Kubernetes", "1. Register the GitHub App from the manifest"]);
  });

  it("its build and smoke commands are the ones .ci/run runs, as scripts that exist and are executable", () => {
    const commands = guideCommands("container");
    expect(commands).toEqual(["deploy/build-image.sh", "deploy/smoke-test.sh"]);
    const ci = read(".ci/run").split("\n").map((line) => line.trim());
    for (const command of commands) {
      expect(ci).toContain(command);
      expect(read(command).startsWith("#!/usr/bin/env bash\n")).toBe(true);
      expect(statSync(new URL(`../${command}`, import.meta.url)).mode & 0o111).toBe(0o111);
    }
  });

  it("its podman run is the smoke test's: every flag and the image name are what deploy/smoke-test.mjs passes", () => {
    const [run] = guideCommands("container-run");
    const words = run!.split(/\s+/);
    expect(words.slice(0, 3)).toEqual(["podman", "run", "-d"]);
    const smoke = read("deploy/smoke-test.mjs");
    for (const word of words.slice(2)) {
      if (word === "broker.env") expect(smoke).toContain('join(work, "broker.env")');
      else if (word === "localhost/tokensmith:latest") expect(read("deploy/smoke-test.sh")).toContain(word);
      else expect(smoke).toContain(`"${word}"`);
    }
  });

  it("the grace period it documents covers the broker's own drain limit", () => {
    expect(read("server/main.ts")).toMatch(/after 9 s; exiting/);
    expect(guide).toContain("past 9 s it exits 1");
    expect(read("deploy/smoke-test.mjs")).toMatch(/const GRACE_S = 10;/);
  });
});
