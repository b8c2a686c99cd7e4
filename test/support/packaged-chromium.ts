// The Chromium inside the @sparticuz/chromium npm package, so the browser tests need no system
// package. Its binary links NSS, NSPR and expat, which a minimal Debian lacks; the package ships
// those libraries for Amazon Linux 2023 (bin/al2023.tar.br) and uses them only there, so they are
// unpacked here too and handed to the browser alone through LD_LIBRARY_PATH (the libraries on the
// machine, if any, are not used: the same browser everywhere).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { brotliDecompressSync } from "node:zlib";
import chromium from "@sparticuz/chromium";

// Per user: the package unpacks into tmpdir() and reuses what it finds there, so a browser another
// user (root) left in /tmp would be found and fail with EACCES.
const OWN = join(tmpdir(), `tokensmith-chromium-${process.getuid?.() ?? "user"}`);
const LIBS = join(OWN, "al2023");

function unpackLibraries(): string {
  const lib = join(LIBS, "lib");
  if (existsSync(join(lib, "libnss3.so"))) return lib;
  const archive = join(dirname(createRequire(import.meta.url).resolve("@sparticuz/chromium")), "..", "bin", "al2023.tar.br");
  // Into a directory of its own, then renamed into place: two runs unpacking at once cannot mix.
  const staging = `${LIBS}.unpacking-${process.pid}`;
  mkdirSync(staging, { recursive: true });
  try {
    writeFileSync(join(staging, "al2023.tar"), brotliDecompressSync(readFileSync(archive)));
    execFileSync("tar", ["-xf", join(staging, "al2023.tar"), "-C", staging], { stdio: ["ignore", "ignore", "pipe"] });
    rmSync(join(staging, "al2023.tar"));
    if (!existsSync(join(lib, "libnss3.so"))) {
      rmSync(LIBS, { recursive: true, force: true });
      renameSync(staging, LIBS);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return lib;
}

/** The browser's path (unpacked on first use) and the environment to start it with. */
export async function packagedChromium(): Promise<{ executablePath: string; env: Record<string, string> }> {
  mkdirSync(OWN, { recursive: true });
  const tmp = process.env.TMPDIR;
  process.env.TMPDIR = OWN; // read by the package's tmpdir() while it unpacks, then put back
  let executablePath: string;
  try {
    executablePath = await chromium.executablePath();
  } finally {
    if (tmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmp;
  }
  const lib = unpackLibraries();
  const env = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined));
  env.LD_LIBRARY_PATH = [lib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(":");
  return { executablePath, env };
}
