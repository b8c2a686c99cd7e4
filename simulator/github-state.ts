// The fake platform's data: Apps, installations, repositories and issued tokens, plus the JSON
// shapes GitHub returns for them. Routes read and mutate this; tests inspect it directly.
import { createHash } from "node:crypto";
import { markReusable } from "./json-text.js";
import { takeKeyPair } from "./key-pool.js";
import { installationTokenText } from "./installation-token-text.js";
import type { AddInstallationOptions, AppState, InstallationState, IssuedToken, RepositoryState, TokenFormat } from "./types.js";
import { repositoryDetails, simpleUserJson } from "./rest-shapes.js";

/** Ids matching the default OIDC claims (repository_id 123456, repository_owner_id 654321). */
const WELL_KNOWN_IDS: Record<string, number> = { "octo-org": 654321, "octo-org/app": 123456 };

/** Stable per name (also across simulators), so tests can predict ids without asking. */
export function stableId(name: string): number {
  const known = WELL_KNOWN_IDS[name.toLowerCase()];
  if (known !== undefined) return known;
  return 1_000_000 + (createHash("sha256").update(name.toLowerCase()).digest().readUInt32BE(0) % 900_000_000);
}

/** GitHub's timestamp format: second precision, Z suffix. */
export const isoSeconds = (date: Date): string => date.toISOString().replace(/\.\d{3}Z$/, "Z");

export class GithubState {
  readonly apps = new Map<number, AppState>();
  readonly installations = new Map<number, InstallationState>();
  readonly repositories = new Map<string, RepositoryState>();
  readonly tokens = new Map<string, IssuedToken>();
  /** Account login (lowercased) → id. Ids are stable across renames and never reused. */
  private readonly accounts = new Map<string, number>();
  private readonly usedIds = new Set<number>();
  /** Bumped whenever `repositories` gains, loses or moves an entry: what `reposOf`'s memo is checked against. */
  private repositoriesVersion = 0;
  /** `reposOf` of an "all" installation, per account (lowercased), while `repositories` is unchanged. */
  private readonly accountRepositories = new Map<string, { version: number; repositories: readonly RepositoryState[] }>();
  private nextAppId = 100_001;
  private nextInstallationId = 50_000_001;

  constructor(private readonly now: () => number) {}

  createApp(opts: { id?: number; keyFormat?: "pkcs1" | "pkcs8" } = {}): { id: number; privateKeyPem: string } {
    const id = opts.id ?? this.nextAppId++;
    if (this.apps.has(id)) throw new Error(`simulator: App ${id} already exists`);
    const { privateKey, publicKey } = takeKeyPair();
    const privateKeyPem = String(privateKey.export({ type: opts.keyFormat ?? "pkcs1", format: "pem" }));
    this.apps.set(id, { id, slug: `tokensmith-test-${id}`, privateKeyPem, publicKey });
    return { id, privateKeyPem };
  }

  repository(owner: string, name: string): RepositoryState {
    const fullName = `${owner}/${name}`;
    const key = fullName.toLowerCase();
    let repo = this.repositories.get(key);
    if (!repo) {
      repo = { id: this.freshId(fullName), owner, ownerId: this.accountId(owner), name, fullName };
      this.repositories.set(key, repo);
      this.repositoriesVersion += 1;
    }
    return repo;
  }

  findRepository(owner: string, name: string): RepositoryState | undefined {
    return this.repositories.get(`${owner}/${name}`.toLowerCase());
  }

  /**
   * The ids GitHub would put in an OIDC token for owner/name, without creating anything: the
   * repository's own when it exists, else what it would get.
   */
  idsOf(owner: string, name: string): { repositoryId: number; ownerId: number } {
    const repo = this.repositories.get(`${owner}/${name}`.toLowerCase());
    if (repo) return { repositoryId: repo.id, ownerId: repo.ownerId };
    return { repositoryId: stableId(`${owner}/${name}`), ownerId: this.accounts.get(owner.toLowerCase()) ?? stableId(owner) };
  }

  /** The account's id: stable per login until the login changes hands (a rename frees it for a new account). */
  accountId(login: string): number {
    const key = login.toLowerCase();
    let id = this.accounts.get(key);
    if (id === undefined) {
      id = this.freshId(login);
      this.accounts.set(key, id);
    }
    return id;
  }

  /** stableId(name), unless an earlier account or repository of that name took it: ids are never reused. */
  private freshId(name: string): number {
    let id = stableId(name);
    while (this.usedIds.has(id)) id += 1;
    this.usedIds.add(id);
    return id;
  }

  /**
   * An account renamed, as on GitHub: same id, new login; its repositories and installations follow.
   * The old login is free: a later `repository(from, …)` belongs to a new account with a new id.
   */
  renameAccount(from: string, to: string): void {
    const id = this.accounts.get(from.toLowerCase());
    if (id === undefined) throw new Error(`simulator: no account ${from}`);
    if (this.accounts.has(to.toLowerCase())) throw new Error(`simulator: account ${to} already exists`);
    this.accounts.delete(from.toLowerCase());
    this.accounts.set(to.toLowerCase(), id);
    for (const [key, repo] of [...this.repositories]) {
      if (repo.ownerId !== id) continue;
      this.repositories.delete(key);
      const moved = { ...repo, owner: to, fullName: `${to}/${repo.name}` };
      this.repositories.set(moved.fullName.toLowerCase(), moved);
    }
    this.repositoriesVersion += 1;
    for (const inst of this.installations.values()) if (inst.accountId === id) inst.account = to;
  }

  /**
   * A repository deleted, as on GitHub: it leaves every installation's selection. Creating one of the
   * same name later (`repository(owner, name)`) gives it a new id.
   */
  deleteRepository(owner: string, name: string): void {
    const key = `${owner}/${name}`.toLowerCase();
    if (!this.repositories.delete(key)) throw new Error(`simulator: no repository ${owner}/${name}`);
    this.repositoriesVersion += 1;
    for (const inst of this.installations.values()) {
      if (inst.account.toLowerCase() !== owner.toLowerCase() || inst.repositories === "all") continue;
      inst.repositories = inst.repositories.filter((r) => r.toLowerCase() !== name.toLowerCase());
    }
  }

  addInstallation(opts: AddInstallationOptions): number {
    if (!this.apps.has(opts.appId)) throw new Error(`simulator: no App ${opts.appId}; call createApp first`);
    const id = opts.id ?? this.nextInstallationId++;
    if (this.installations.has(id)) throw new Error(`simulator: installation ${id} already exists`);
    const repositories = opts.repositories === "all" ? "all" : [...opts.repositories];
    if (repositories !== "all") for (const name of repositories) this.repository(opts.account, name);
    const now = new Date(this.now());
    this.installations.set(id, {
      id,
      appId: opts.appId,
      account: opts.account,
      accountId: this.accountId(opts.account),
      permissions: { ...opts.permissions },
      repositories,
      createdAt: now,
    });
    return id;
  }

  installation(id: number): InstallationState {
    const found = this.installations.get(id);
    if (!found) throw new Error(`simulator: no installation ${id}`);
    return found;
  }

  /** Uninstalling revokes every token the installation issued, as on GitHub. */
  removeInstallation(id: number): void {
    this.installations.delete(id);
    for (const issued of this.tokens.values()) if (issued.installationId === id) issued.revoked = true;
  }

  /** The installation of `appId` that covers owner/repo ("all" covers any repo of the account). */
  installationFor(appId: number, owner: string, repo: string): InstallationState | undefined {
    for (const inst of this.installations.values()) {
      if (inst.appId !== appId || inst.account.toLowerCase() !== owner.toLowerCase()) continue;
      if (this.covers(inst, repo)) return inst;
    }
    return undefined;
  }

  covers(inst: InstallationState, name: string): boolean {
    if (name.includes("/")) return false; // GitHub wants bare names; "owner/name" matches nothing
    return inst.repositories === "all" || inst.repositories.some((r) => r.toLowerCase() === name.toLowerCase());
  }

  /**
   * Repositories an installation can reach: its selection, or every known repo of the account. The
   * latter kept until a repository is added, deleted or moved: each listing page of an "all"
   * installation asks for it, and the scan of every repository the simulator holds was repeated on
   * each of a crawl's pages (50 for 5,000 repositories).
   */
  reposOf(inst: InstallationState): readonly RepositoryState[] {
    if (inst.repositories !== "all") return inst.repositories.map((name) => this.repository(inst.account, name));
    const account = inst.account.toLowerCase();
    const kept = this.accountRepositories.get(account);
    if (kept?.version === this.repositoriesVersion) return kept.repositories;
    const repositories = Object.freeze([...this.repositories.values()].filter((r) => r.owner.toLowerCase() === account));
    this.accountRepositories.set(account, { version: this.repositoriesVersion, repositories });
    return repositories;
  }

  issueToken(installationId: number, permissions: Record<string, string>, repositories: string[] | "all", format: TokenFormat): { token: string; issued: IssuedToken } {
    const token = installationTokenText(format, { appId: this.installation(installationId).appId, installationId }, Math.floor(this.now() / 1000));
    const expiresAt = new Date(Math.floor(this.now() / 1000) * 1000 + 3_600_000);
    const issued: IssuedToken = { installationId, permissions: { ...permissions }, repositories, expiresAt, revoked: false };
    this.tokens.set(token, issued);
    return { token, issued };
  }

  /** A usable token's record, or undefined when unknown, revoked, expired or uninstalled. */
  liveToken(token: string): IssuedToken | undefined {
    const issued = this.tokens.get(token);
    if (!issued || issued.revoked || issued.expiresAt.getTime() <= this.now()) return undefined;
    if (!this.installations.has(issued.installationId)) return undefined;
    return issued;
  }

  installationJson(inst: InstallationState, urls: { apiBase: string; url: string }): Record<string, unknown> {
    const app = this.apps.get(inst.appId);
    const stamp = isoSeconds(inst.createdAt);
    return {
      id: inst.id,
      client_id: `Iv1.${inst.appId.toString(16).padStart(16, "0")}`,
      account: accountJson(inst.account, inst.accountId, urls),
      repository_selection: inst.repositories === "all" ? "all" : "selected",
      access_tokens_url: `${urls.apiBase}/app/installations/${inst.id}/access_tokens`,
      repositories_url: `${urls.apiBase}/installation/repositories`,
      html_url: `${urls.url}/organizations/${inst.account}/settings/installations/${inst.id}`,
      app_id: inst.appId,
      app_slug: app?.slug ?? `app-${inst.appId}`,
      target_id: inst.accountId,
      target_type: "Organization",
      permissions: { ...inst.permissions },
      events: [],
      created_at: stamp,
      updated_at: stamp,
      single_file_name: null,
      has_multiple_single_files: false,
      single_file_paths: [],
      suspended_by: null,
      suspended_at: null,
    };
  }
}

function accountJson(login: string, id: number, urls: { apiBase: string; url: string }): Record<string, unknown> {
  return simpleUserJson(login, id, "Organization", urls);
}

/**
 * Built once per repository (and again when it is renamed or moved): GitHub's full repository
 * object has some 90 fields, and a crawl's listings and mints send each one several times. The
 * object is frozen, so a route that tried to change the shared copy would fail loudly.
 */
const repositoryJsonCache = new WeakMap<RepositoryState, { key: string; json: Readonly<Record<string, unknown>> }>();

export function repositoryJson(repo: RepositoryState, urls: { apiBase: string; url: string }): Record<string, unknown> {
  const key = [repo.id, repo.owner, repo.ownerId, repo.name, repo.fullName, urls.apiBase, urls.url].join("\0");
  const cached = repositoryJsonCache.get(repo);
  if (cached?.key === key) return cached.json;
  // Frozen, so its JSON bytes can be kept too (json-text.ts).
  const json = markReusable(deepFreeze(buildRepositoryJson(repo, urls)));
  repositoryJsonCache.set(repo, { key, json });
  return json;
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) if (inner !== null && typeof inner === "object") deepFreeze(inner as object);
  return Object.freeze(value);
}

function buildRepositoryJson(repo: RepositoryState, urls: { apiBase: string; url: string }): Record<string, unknown> {
  return {
    ...repositoryDetails(repo.fullName, urls),
    id: repo.id,
    node_id: `R_${Buffer.from(String(repo.id)).toString("base64url")}`,
    name: repo.name,
    full_name: repo.fullName,
    private: true,
    visibility: "private",
    owner: accountJson(repo.owner, repo.ownerId, urls),
    html_url: `${urls.url}/${repo.fullName}`,
    url: `${urls.apiBase}/repos/${repo.fullName}`,
    fork: false,
    archived: false,
    disabled: false,
    default_branch: "main",
  };
}
