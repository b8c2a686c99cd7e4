// The platform's OIDC issuer: discovery document, JWKS and a signer for GitHub-Actions-shaped
// ID tokens. `keyEndpoint` breaks both documents at once, as an outage of the issuer would.
import { randomBytes, randomUUID } from "node:crypto";
import { signCompact } from "./jws.js";
import { takeKeyPair } from "./key-pool.js";
import type { Router } from "./router.js";
import type { Claims, KeyEndpointMode, OidcIssuer, OidcKey, RecordedRequest, RouteResult, SignOptions, SubjectFormat } from "./types.js";

const CLAIMS_SUPPORTED = [
  "sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "sha", "repository", "repository_id", "repository_owner",
  "repository_owner_id", "enterprise", "enterprise_id", "run_id", "run_number", "run_attempt", "actor", "actor_id",
  "workflow", "workflow_ref", "workflow_sha", "head_ref", "base_ref", "event_name", "ref_type", "ref_protected",
  "environment", "environment_node_id", "job_workflow_ref", "job_workflow_sha", "repository_visibility",
  "runner_environment", "issuer_scope",
];

/** A fixed commit so tokens are reproducible apart from jti and the times. */
export const DEFAULT_SHA = "4f2c9a1e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39";

function newOidcKey(): OidcKey {
  const { privateKey, publicKey } = takeKeyPair();
  // A fresh kid per take: pooled keys may be recycled, kids must never repeat.
  const kid = randomBytes(16).toString("hex");
  const jwk = publicKey.export({ format: "jwk" });
  return {
    kid,
    privateKey,
    publicKey,
    publicKeyPem: String(publicKey.export({ type: "spki", format: "pem" })),
    publicJwk: { kty: "RSA", alg: "RS256", use: "sig", kid, n: String(jwk.n), e: String(jwk.e) },
  };
}

/** What GitHub Actions puts in a push-to-main token for octo-org/app, stamped at `nowSeconds`. */
export function defaultClaims(issuer: string, nowSeconds: number): Claims {
  return {
    iss: issuer,
    aud: "tokensmith",
    sub: "repo:octo-org/app:ref:refs/heads/main",
    repository: "octo-org/app",
    repository_owner: "octo-org",
    repository_id: "123456",
    repository_owner_id: "654321",
    ref: "refs/heads/main",
    sha: DEFAULT_SHA,
    run_id: "1001",
    run_attempt: "1",
    workflow: "release",
    run_number: "7",
    workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/heads/main",
    workflow_sha: DEFAULT_SHA,
    // A job not calling a reusable workflow: GitHub names the caller's own workflow here.
    job_workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/heads/main",
    job_workflow_sha: DEFAULT_SHA,
    actor: "octocat",
    actor_id: "583231",
    event_name: "push",
    ref_type: "branch",
    ref_protected: "true",
    head_ref: "",
    base_ref: "",
    repository_visibility: "private",
    runner_environment: "github-hosted",
    jti: randomUUID(),
    iat: nowSeconds,
    nbf: nowSeconds,
    exp: nowSeconds + 300,
  };
}

/** Merge overrides; a key explicitly set to undefined removes the claim. */
function mergeClaims(base: object, ...overrides: ReadonlyArray<Record<string, unknown> | undefined>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const override of overrides) {
    for (const [key, value] of Object.entries(override ?? {})) {
      if (value === undefined) delete out[key];
      else out[key] = value;
    }
  }
  return out;
}

/**
 * As GitHub does, `repository_owner`, `repository_id` and `repository_owner_id` describe the
 * `repository` claim: when a test names another repository, they follow it (from the simulated
 * state), unless the test sets them itself (the later override wins).
 */
function repositoryClaims(claims: Record<string, unknown> | undefined, idsOf: OidcIssuerDeps["idsOf"]): Record<string, unknown> {
  const repository = claims?.repository;
  const match = typeof repository === "string" ? /^([^/]+)\/([^/]+)$/.exec(repository) : null;
  if (!match || !idsOf) return {};
  const { repositoryId, ownerId } = idsOf(match[1]!, match[2]!);
  return { repository_owner: match[1], repository_id: String(repositoryId), repository_owner_id: String(ownerId) };
}

/**
 * As GitHub does, `ref_type` follows `ref` and `job_workflow_ref` follows `workflow_ref` when a
 * test names only the one (the test's own value for either still wins: it is applied later).
 */
function followingClaims(claims: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const ref = claims?.ref;
  if (typeof ref === "string") out.ref_type = ref.startsWith("refs/tags/") ? "tag" : "branch";
  if (typeof claims?.workflow_ref === "string") out.job_workflow_ref = claims.workflow_ref;
  return out;
}

/**
 * GitHub's default `sub` for the job the claims describe, as GitHub builds it from them: by
 * environment, else `pull_request` for a pull-request event, else the ref. "immutable" (github.com:
 * repositories created, renamed or transferred from 2026-06-18) puts each id after its name with an
 * `@`: `repo:octo-org@654321/app@123456:ref:refs/heads/main`
 * (https://docs.github.com/actions/concepts/security/openid-connect#immutable-subject-claims).
 */
function defaultSubject(claims: Record<string, unknown>, format: SubjectFormat): string | undefined {
  const match = typeof claims.repository === "string" ? /^([^/]+)\/([^/]+)$/.exec(claims.repository) : null;
  if (!match) return undefined;
  const repo = format === "immutable" ? `${match[1]}@${String(claims.repository_owner_id)}/${match[2]}@${String(claims.repository_id)}` : `${match[1]}/${match[2]}`;
  if (typeof claims.environment === "string" && claims.environment !== "") return `repo:${repo}:environment:${claims.environment}`;
  if (claims.event_name === "pull_request") return `repo:${repo}:pull_request`;
  return `repo:${repo}:ref:${String(claims.ref)}`;
}

interface OidcIssuerDeps {
  issuer: string;
  /** The issuer's path relative to the simulator URL (routes are registered there). */
  issuerPath: string;
  router: Router;
  requests: readonly RecordedRequest[];
  now: () => number;
  /** The platform's ids for owner/name, so a token's id claims agree with the simulated state. */
  idsOf?: (owner: string, name: string) => { repositoryId: number; ownerId: number };
  /** The `sub` form of owner/name's jobs (default: classic). */
  subjectFormatOf?: (owner: string, name: string) => SubjectFormat;
}

export function createOidcIssuer(deps: OidcIssuerDeps): OidcIssuer {
  const { issuer, issuerPath, router } = deps;
  const jwksPath = `${issuerPath}/.well-known/jwks`;
  let keys: OidcKey[] = [newOidcKey()];
  let keyEndpoint: KeyEndpointMode = "ok";

  // Both documents honour keyEndpoint: a real outage takes the whole issuer host down.
  const serve = (document: () => unknown): RouteResult | Promise<RouteResult> => {
    switch (keyEndpoint) {
      case "fail":
        return { status: 503, body: { message: "Service Unavailable" } };
      case "hang":
        return new Promise<RouteResult>(() => {}); // never settles; sim.close() drops the socket
      case "garbage":
        return { status: 200, headers: { "content-type": "application/json; charset=utf-8" }, body: "not json{" };
      default:
        return { status: 200, body: document() };
    }
  };

  router.add("GET", `${issuerPath}/.well-known/openid-configuration`, () =>
    serve(() => ({
      issuer,
      jwks_uri: `${issuer}/.well-known/jwks`,
      subject_types_supported: ["public", "pairwise"],
      response_types_supported: ["id_token"],
      claims_supported: CLAIMS_SUPPORTED,
      id_token_signing_alg_values_supported: ["RS256"],
      scopes_supported: ["openid"],
    })),
  );
  router.add("GET", jwksPath, () => serve(() => ({ keys: keys.map((k) => ({ ...k.publicJwk })) })));

  return {
    issuer,
    jwksUri: `${issuer}/.well-known/jwks`,
    get currentKey() {
      return keys[0]!;
    },
    get keys() {
      return [...keys];
    },
    get keyEndpoint() {
      return keyEndpoint;
    },
    set keyEndpoint(mode: KeyEndpointMode) {
      keyEndpoint = mode;
    },
    // Derived from the request log so clearRequests() resets it between tests.
    get jwksRequests() {
      return deps.requests.filter((r) => r.method === "GET" && r.path === jwksPath).length;
    },
    async sign(claims?: Partial<Claims> & Record<string, unknown>, opts: SignOptions = {}): Promise<string> {
      const current = keys[0]!;
      const alg = opts.alg ?? "RS256";
      const header: Record<string, unknown> = { alg, typ: "JWT" };
      const kid = opts.kid === undefined ? current.kid : opts.kid;
      if (kid !== null) header.kid = kid;
      Object.assign(header, opts.header);
      // HS* without a key: the classic confusion attack, keyed with the public key PEM.
      const key = opts.privateKey ?? (alg.startsWith("HS") ? current.publicKeyPem : current.privateKey);
      const payload = mergeClaims(defaultClaims(issuer, Math.floor(deps.now() / 1000)), repositoryClaims(claims, deps.idsOf), followingClaims(claims), claims);
      // As GitHub does, `sub` follows the job's other claims, unless the test sets (or removes) it.
      if (!(claims && "sub" in claims)) {
        const [owner = "", name = ""] = String(payload.repository).split("/");
        const sub = defaultSubject(payload, deps.subjectFormatOf?.(owner, name) ?? "classic");
        if (sub !== undefined) payload.sub = sub;
      }
      return signCompact(header, payload, key);
    },
    rotateKey(opts: { keepOld?: boolean } = {}): OidcKey {
      const fresh = newOidcKey();
      keys = opts.keepOld ? [fresh, ...keys] : [fresh];
      return fresh;
    },
  };
}
