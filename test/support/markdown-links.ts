// Links and headings of a Markdown document, as GitHub renders them, for the docs' link test.

/** Relative link targets (`[text](target)`, not `http(s):` or `mailto:`), outside code blocks and spans. */
export function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
  const links: string[] = [];
  for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = match[1]!;
    if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push(target);
  }
  return links;
}

/** The anchors GitHub gives the document's headings: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, "");
  for (const match of prose.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = match[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
    const slug = text.toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/**
 * The relative links of `document` (a path from the package's root, e.g. `docs/sandbox.md`) whose
 * target is none of `shipped` (the package's file paths, as `npm pack --dry-run --json` lists them)
 * and no directory holding one: links that lead nowhere in an installed package.
 */
export function linksOutsidePackage(document: string, markdown: string, shipped: readonly string[]): string[] {
  const base = document.split("/").slice(0, -1);
  return relativeLinks(markdown).filter((link) => {
    const path = link.split("#")[0]!;
    if (path === "") return false;
    const parts = [...base];
    for (const part of path.split("/")) {
      if (part === "..") parts.pop();
      else if (part !== "." && part !== "") parts.push(part);
    }
    const target = parts.join("/");
    return !shipped.some((file) => file === target || file.startsWith(`${target}/`));
  });
}
