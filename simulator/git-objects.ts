// Git's object store behind the git data API (rest-git-data-routes.ts): blobs by their git sha,
// trees (a whole tree kept flat, path → base64 contents, as commits keep it in git-state.ts), and
// annotated tags. A commit's tree sha is derived from its files, so a commit made any way (a
// push, createCommitOnBranch, the contents API) has a tree the API can read.
import { createHash } from "node:crypto";
import { blobSha } from "./rest-contents-routes.js";

export interface TagObject {
  sha: string;
  /** owner/name */
  repository: string;
  tag: string;
  message: string;
  object: { sha: string; type: "commit" | "tree" | "blob" | "tag" };
  tagger: { name: string; email: string; date: string };
}

/** One entry of a tree as the API lists it. */
interface TreeEntry {
  path: string;
  mode: string;
  type: "blob" | "tree";
  sha: string;
  size?: number;
}

export class GitObjects {
  /** blob sha → base64 contents */
  readonly blobs = new Map<string, string>();
  /** tree sha → the whole tree below it, path → base64 contents */
  readonly trees = new Map<string, ReadonlyMap<string, string>>();
  readonly tags = new Map<string, TagObject>();

  /** Stores the bytes as a blob; returns its git sha. */
  addBlob(b64: string): string {
    const sha = blobSha(Buffer.from(b64, "base64"));
    this.blobs.set(sha, b64);
    return sha;
  }

  /** Stores a tree (and its blobs); returns its sha, a hash over its sorted paths and blob shas. */
  addTree(files: ReadonlyMap<string, string>): string {
    const hash = createHash("sha1").update("tree\0");
    for (const [path, b64] of [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) hash.update(`${path}\0${this.addBlob(b64)}\n`);
    const sha = hash.digest("hex");
    if (!this.trees.has(sha)) this.trees.set(sha, new Map(files));
    return sha;
  }

  /** A tree's entries: those directly under it, or with `recursive` every blob and directory below. */
  entries(files: ReadonlyMap<string, string>, recursive: boolean): TreeEntry[] {
    const out = new Map<string, TreeEntry>();
    for (const [path, b64] of files) {
      const parts = path.split("/");
      const depth = recursive ? parts.length : 1;
      for (let i = 1; i < depth; i += 1) {
        const dir = parts.slice(0, i).join("/");
        if (!out.has(dir)) out.set(dir, { path: dir, mode: "040000", type: "tree", sha: this.addTree(below(files, dir)) });
      }
      if (parts.length === 1 || recursive) out.set(path, { path, mode: "100644", type: "blob", sha: this.addBlob(b64), size: Buffer.from(b64, "base64").length });
      else if (!out.has(parts[0]!)) out.set(parts[0]!, { path: parts[0]!, mode: "040000", type: "tree", sha: this.addTree(below(files, parts[0]!)) });
    }
    return [...out.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
}

/** The files under `dir`, with paths relative to it. */
function below(files: ReadonlyMap<string, string>, dir: string): Map<string, string> {
  const prefix = `${dir}/`;
  return new Map([...files].filter(([path]) => path.startsWith(prefix)).map(([path, b64]) => [path.slice(prefix.length), b64] as const));
}
