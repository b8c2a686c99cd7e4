// The peer of GET /releases: what a user writes with @octokit/graphql to learn the latest release
// of every repository an App can reach. An App JWT, the App's installations, then for each one an
// installation token, and its repositories one listing page (100) after another, each page's
// latest releases in one GraphQL query (100 aliases) before the next page is fetched. Requests go
// with @octokit's default transport (Node's fetch, which asks for gzip by itself).
import { createPrivateKey } from "node:crypto";
import { graphql } from "@octokit/graphql";
import { request } from "@octokit/request";
import { importPKCS8, SignJWT } from "jose";

export async function appJwt(appId, privateKeyPem) {
  const key = await importPKCS8(createPrivateKey(privateKeyPem).export({ type: "pkcs8", format: "pem" }), "RS256");
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({}).setProtectedHeader({ alg: "RS256" }).setIssuer(String(appId)).setIssuedAt(now - 60).setExpirationTime(now + 540).sign(key);
}

const QUERY_FIELDS = "releases(first: 1, orderBy: {field: CREATED_AT, direction: DESC}) { nodes { tagName name url isDraft isPrerelease publishedAt } }";

/** → { repositories, withRelease }: how many repositories it saw, and how many have a release. */
export async function peerCrawl({ apiBase, appId, privateKeyPem }) {
  const jwt = await appJwt(appId, privateKeyPem);
  const app = request.defaults({ baseUrl: apiBase, headers: { authorization: `Bearer ${jwt}` } });
  const installations = [];
  for (let page = 1; ; page += 1) {
    const { data } = await app("GET /app/installations", { per_page: 100, page });
    installations.push(...data);
    if (data.length < 100) break;
  }
  let repositories = 0;
  let withRelease = 0;
  for (const installation of installations) {
    const { data: minted } = await app("POST /app/installations/{installation_id}/access_tokens", { installation_id: installation.id });
    const auth = { authorization: `token ${minted.token}` };
    const rest = request.defaults({ baseUrl: apiBase, headers: auth });
    const query = graphql.defaults({ baseUrl: apiBase, headers: auth });
    for (let page = 1; ; page += 1) {
      const { data } = await rest("GET /installation/repositories", { per_page: 100, page });
      const names = data.repositories.map((r) => ({ owner: r.owner.login, name: r.name }));
      if (names.length > 0) {
        const variables = {};
        const fields = names.map((r, i) => {
          variables[`o${i}`] = r.owner;
          variables[`n${i}`] = r.name;
          return `r${i}: repository(owner: $o${i}, name: $n${i}) { ${QUERY_FIELDS} }`;
        });
        const declarations = names.map((_, i) => `$o${i}: String!, $n${i}: String!`).join(", ");
        const answer = await query(`query (${declarations}) { ${fields.join(" ")} }`, variables);
        repositories += names.length;
        withRelease += Object.values(answer).filter((r) => r?.releases?.nodes?.length > 0).length;
      }
      if (names.length < 100) break;
    }
  }
  return { repositories, withRelease };
}
