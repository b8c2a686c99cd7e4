// What counts as an installation token, in one place: the action masks and hands out only strings
// of this shape (action/check-answer.ts). GitHub's published pattern for installation tokens,
// classic (`ghs_` + 36 letters and digits) and the stateless format rolled out from 2026-04-27
// (`ghs_<app id>_<JWT>`, about 520 characters, two dots), is `ghs_[A-Za-z0-9._]{36,}`:
// https://github.blog/changelog/2026-05-15-github-app-installation-tokens-per-request-override-header/
// GHES keeps the classic format. The upper bound only keeps a runaway answer out of the mask.

/** Longest token accepted: ~520 characters today, with room for the format to grow. */
export const MAX_INSTALLATION_TOKEN_LENGTH = 1024;

const INSTALLATION_TOKEN = new RegExp(`^ghs_[A-Za-z0-9._]{36,${MAX_INSTALLATION_TOKEN_LENGTH - 4}}$`);

/** Whether `value` has the shape of a GitHub App installation token (GitHub's published pattern, anchored and bounded). */
export function isInstallationToken(value: unknown): value is string {
  return typeof value === "string" && INSTALLATION_TOKEN.test(value);
}
