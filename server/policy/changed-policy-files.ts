// Which policy files a pull request changes, read with the broker's own contents-read reader token
// of the installation (the one /token's policy reads keep, reader-tokens.ts): each file at the pull
// request's head and at its base, compared by blob sha. No token is minted for a pull request that
// changes none (the reader is minted once per installation and kept, shared with /token), and
// these reads spend the installation's budget, not the App's.
// https://docs.github.com/rest/repos/contents#get-repository-content
import type { AppCredentials } from "../app-credentials.js";
import type { PolicyService } from "./policy-service.js";
import type { InstallationDeps } from "../installation/repository-installation.js";
import { mintInstallationToken } from "../installation/mint-installation-token.js";
import type { PlatformSettings } from "../settings.js";
import { fetchPolicyFile, PolicyReadFailure, type FileRead } from "./fetch-policy-file.js";
import { POLICY_FILES, type PolicyKind } from "./policy-types.js";
import { readerCovers, readerFromMint } from "./reader-tokens.js";

interface PullRequestSides {
  owner: string;
  repo: string;
  installationId: number;
  headSha: string;
  /** The base's sha when the delivery names it, else its branch. */
  base: string;
}

/** A policy file the pull request changes, as its head has it. */
export interface ChangedPolicyFile {
  kind: PolicyKind;
  path: string;
  /** `absent`: the pull request removes it. */
  head: FileRead;
}

/** Mints App tokens (5 points of the App's budget): the caller decides within what share. */
export type AppCall = <T>(points: number, call: () => Promise<T>) => Promise<T>;

export async function changedPolicyFiles(ctx: Pick<InstallationDeps, "appJwt" | "clientFor" | "retry" | "now"> & { policies: Pick<PolicyService, "readers"> }, where: { platform: PlatformSettings; app: AppCredentials; appCall: AppCall }, pr: PullRequestSides): Promise<ChangedPolicyFile[]> {
  const paths: Array<[PolicyKind, string]> = [["repository", POLICY_FILES.repository], ...(pr.repo === ".github" ? [["owner", POLICY_FILES.owner] as [PolicyKind, string]] : [])];
  const client = ctx.clientFor(where.platform);
  const readerKey = ctx.policies.readers.key(where.platform.apiBase, where.app.appId, pr.installationId);
  const mintReader = () =>
    where.appCall(5, async () => {
      const minted = await ctx.appJwt.withJwt(where.app, (appJwt) => mintInstallationToken({ client, appJwt, installationId: pr.installationId, permissions: { contents: "read" }, retry: ctx.retry, now: ctx.now }));
      return readerFromMint(minted, ctx.now());
    });
  const changed: ChangedPolicyFile[] = [];
  for (const [kind, path] of paths) {
    // A reader the platform no longer takes (401: revoked, permissions changed) is dropped and the read made once more.
    for (let attempt = 1; ; attempt += 1) {
      let reader = await ctx.policies.readers.get(readerKey, mintReader);
      if (!readerCovers(reader, pr.repo)) {
        // Minted before the repository joined the installation (the delivery proves it is in it):
        // both sides would read 404, "unchanged" (docs/security.md "A stale reader token never reads ...").
        ctx.policies.readers.drop(readerKey, reader.token);
        reader = await ctx.policies.readers.get(readerKey, mintReader);
      }
      const read = (ref: string) => fetchPolicyFile({ client, token: reader.token, owner: pr.owner, repo: pr.repo, path, ref });
      try {
        const head = await read(pr.headSha);
        const base = await read(pr.base);
        if (fingerprint(head) !== fingerprint(base)) changed.push({ kind, path, head });
        break;
      } catch (error) {
        if (!(error instanceof PolicyReadFailure && error.status === 401) || attempt >= 2) throw error;
        ctx.policies.readers.drop(readerKey, reader.token);
      }
    }
  }
  return changed;
}

/** What identifies a side's file: its blob sha, or that there is none. */
function fingerprint(read: FileRead): string {
  if (read.kind === "file") return read.sha;
  if (read.kind === "unreadable") return read.sha ?? "unreadable";
  return read.kind;
}
