import { existsSync, readFileSync } from "node:fs";

export interface StaticFile {
  body: Buffer;
  contentType: string;
}

const FILES: Record<string, { name: string; contentType: string }> = {
  "/": { name: "index.html", contentType: "text/html; charset=utf-8" },
  "/app.js": { name: "app.js", contentType: "text/javascript; charset=utf-8" },
  "/app.css": { name: "app.css", contentType: "text/css; charset=utf-8" },
};

/**
 * The page's files live in server/dashboard/static/ and are not compiled (tsc emits only .ts):
 * next to this module when it runs from source, and found from build/server/dashboard/ back in
 * the source tree when it runs built.
 */
function staticDir(): URL {
  const candidates = [new URL("./static/", import.meta.url), new URL("../../../server/dashboard/static/", import.meta.url)];
  const found = candidates.find((dir) => existsSync(new URL("index.html", dir)));
  if (!found) throw new Error(`dashboard: static files not found (looked in ${candidates.map((dir) => dir.pathname).join(", ")})`);
  return found;
}

/** Reads the page's files once, keyed by the path they are served at. */
export function loadStaticFiles(dir: URL = staticDir()): Map<string, StaticFile> {
  return new Map(Object.entries(FILES).map(([path, file]) => [path, { body: readFileSync(new URL(file.name, dir)), contentType: file.contentType }]));
}
