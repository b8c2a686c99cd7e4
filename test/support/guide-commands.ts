// The commands of docs/deploying.md's tested blocks: a fenced block right after
// `<!-- tested: NAME -->`, one command a line (comments and blank lines aside).
import { readFileSync } from "node:fs";

export const GUIDE = new URL("../../docs/deploying.md", import.meta.url);

export function guideCommands(name: string): string[] {
  const text = readFileSync(GUIDE, "utf8");
  const marker = `<!-- tested: ${name} -->`;
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`docs/deploying.md has no block marked ${marker}`);
  const block = /```[a-z]*\n([\s\S]*?)```/.exec(text.slice(at + marker.length));
  if (!block) throw new Error(`no fenced block after ${marker}`);
  return block[1]!.split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"));
}
