// The Chromium inside the @sparticuz/chromium npm package, so the browser tests need no system
// package. Its binary links NSS, NSPR and expat, which a minimal Debian lacks; the package ships
// those libraries for Amazon Linux 2023 (bin/al2023.tar.br) and uses them only there, so they are
// unpacked here too and handed to the browser alone through LD_LIBRARY_PATH (the libraries on the
// machine, if any, are not used: the same browser everywhere).
// Everything is unpacked here, into a directory of this user's, not by the package's
// executablePath(): that one unpacks into tmpdir() and reuses whatever it finds there, so a
// /tmp/chromium another user (root) left behind fails a later run with EACCES.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { brotliDecompressSync } from "node:zlib";

const OWN = join(tmpdir(), `tokensmith-chromium-${process.getuid?.() ?? "user"}`);

function archive(name: string): string {
  return join(dirname(createRequire(import.meta.url).resolve("@sparticuz/chromium")), "..", "bin", name);
}

/**
 * The browser (chromium.br), SwiftShader beside it (swiftshader.tar.br: the package's layout) and
 * the libraries (al2023.tar.br, in lib/), unpacked once into a directory of its own, then renamed
 * into place: two runs unpacking at once cannot mix.
 */
function unpack(): { executablePath: string; lib: string } {
  const done = { executablePath: join(OWN, "chromium"), lib: join(OWN, "lib") };
  if (existsSync(join(OWN, ".complete"))) return done;
  const staging = `${OWN}.unpacking-${process.pid}`;
  mkdirSync(staging, { recursive: true });
  try {
    writeFileSync(join(staging, "chromium"), brotliDecompressSync(readFileSync(archive("chromium.br"))));
    chmodSync(join(staging, "chromium"), 0o755);
    for (const tarball of ["swiftshader.tar.br", "al2023.tar.br"]) {
      writeFileSync(join(staging, "unpacking.tar"), brotliDecompressSync(readFileSync(archive(tarball))));
      execFileSync("tar", ["-xf", join(staging, "unpacking.tar"), "-C", staging], { stdio: ["ignore", "ignore", "pipe"] });
      rmSync(join(staging, "unpacking.tar"));
    }
    writeFileSync(join(staging, ".complete"), "");
    if (!existsSync(join(OWN, ".complete"))) {
      rmSync(OWN, { recursive: true, force: true });
      renameSync(staging, OWN);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return done;
}

/** The browser's path (unpacked on first use) and the environment to start it with. */
export async function packagedChromium(): Promise<{ executablePath: string; env: Record<string, string> }> {
  const { executablePath, lib } = unpack();
  const env = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined));
  env.LD_LIBRARY_PATH = [lib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(":");
  return { executablePath, env };
}
