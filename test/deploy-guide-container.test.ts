// docs/deploying.md leads with the container (issue 29, item 7), and its container commands are
// the ones CI runs: the build and smoke scripts as .ci/run calls them, the `podman run` flags as
// deploy/smoke-test.mjs passes them; the figures it quotes are the smoke test's own lines.
import { readFileSync, statSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { GUIDE, guideCommands } from "./support/guide-commands.js";

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), "utf8");
const guide = readFileSync(GUIDE, "utf8");

describe("docs/deploying.md, the container", () => {
  it("leads with the container image, compose and Kubernetes, before the package install", () => {
    const headings = [...guide.matchAll(/^## (.+)$/gm)].map((m) => m[1]!);
    expect(headings.slice(0, 4)).toEqual(["The container image", "Two instances with compose", "Kubernetes", "1. Register the GitHub App from the manifest"]);
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

  it("its compose commands are the compose test's: the script .ci/run runs, the podman-compose arguments it passes", () => {
    expect(guideCommands("compose")).toEqual(["deploy/compose-test.sh"]);
    expect(read(".ci/run").split("\n").map((line) => line.trim())).toContain("deploy/compose-test.sh");
    const [up] = guideCommands("compose-up");
    expect(up).toBe("podman-compose --podman-path deploy/podman-compose-host-network.sh -f deploy/compose.yaml up -d");
    const test = read("deploy/compose-test.mjs");
    expect(test).toContain('new URL("podman-compose-host-network.sh", import.meta.url)');
    expect(test).toContain('new URL("compose.yaml", import.meta.url)');
    expect(test).toContain('run("podman-compose", ["--podman-path", SHIM, "-p", project, "-f", COMPOSE, ...args]');
    expect(test).toContain('compose("up", "-d")');
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
