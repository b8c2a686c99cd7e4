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
