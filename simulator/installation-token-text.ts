// The text of a minted installation token, in either of GitHub's formats. Since 2026-04-27 GitHub
// rolls out stateless tokens to every newly minted installation token on github.com: `ghs_<app
// id>_<JWT>`, about 520 characters, two dots; GHES (and an App not yet reached) keeps the classic
// `ghs_` + 36 letters and digits. GitHub's published pattern for both is `ghs_[A-Za-z0-9._]{36,}`:
// https://github.blog/changelog/2026-05-15-github-app-installation-tokens-per-request-override-header/
// The simulator's stateless token looks like one (a base64url header and payload, a 2048-bit RSA
// signature's length of base64url) but is not signed: nothing may introspect a token, and the
// simulator recognises its tokens by lookup, as GitHub's API does for the client.
import { randomBytes, randomInt } from "node:crypto";
import type { TokenFormat } from "./types.js";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** base64url without its `-`: GitHub's published token pattern has no `-` in it. */
const segment = (bytes: Buffer | string): string => Buffer.from(bytes).toString("base64url").replaceAll("-", "_");

/** `ghs_` + 36 base62 characters (40 in all), as GitHub minted every token before 2026-04-27. */
function classicToken(): string {
  let body = "";
  for (let i = 0; i < 36; i += 1) body += BASE62[randomInt(62)];
  return `ghs_${body}`;
}

/** `ghs_<app id>_<header>.<payload>.<signature>`: about 520 characters, unique per mint (random jti and signature). */
function statelessToken(appId: number, installationId: number, nowSeconds: number): string {
  const header = segment(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const payload = segment(JSON.stringify({ iss: String(appId), sub: String(installationId), iat: nowSeconds, exp: nowSeconds + 3600, jti: randomBytes(8).toString("hex") }));
  return `ghs_${appId}_${header}.${payload}.${segment(randomBytes(256))}`;
}

export function installationTokenText(format: TokenFormat, ids: { appId: number; installationId: number }, nowSeconds: number): string {
  return format === "classic" ? classicToken() : statelessToken(ids.appId, ids.installationId, nowSeconds);
}
