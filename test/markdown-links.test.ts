// The helpers behind the docs' link test (test/support/markdown-links.ts): they must find a broken
// link, or that test could not fail.
import { describe, expect, it } from "@jest/globals";
import { headingAnchors, relativeLinks } from "./support/markdown-links.js";

describe("markdown links", () => {
  it("finds relative links, not web addresses, code spans or fenced code", () => {
    const text = [
      "See [api](docs/api.md#post-token), [home](https://example.com) and [mail](mailto:a@b.c).",
      "A [same-page](#errors) link, an [image](docs/dashboard.png \"the dashboard\").",
      "`[not](a-link.md)`",
      "```md",
      "[also not](fenced.md)",
      "```",
    ].join("\n");
    expect(relativeLinks(text)).toEqual(["docs/api.md#post-token", "#errors", "docs/dashboard.png"]);
  });

  it("gives headings GitHub's anchors", () => {
    const anchors = headingAnchors(
      ["# tokensmith", "## POST /token", "### `reason` words of `invalid_oidc_token` (and `oidc_key_fetch_failed`)", "## 6. Health checks and scraping", "## Caches", "## Caches", "```", "## not a heading", "```"].join("\n"),
    );
    expect([...anchors]).toEqual(["tokensmith", "post-token", "reason-words-of-invalid_oidc_token-and-oidc_key_fetch_failed", "6-health-checks-and-scraping", "caches", "caches-1"]);
    expect(anchors.has("not-a-heading")).toBe(false);
  });
});
