// GraphQL side of the git state: the `createCommitOnBranch` mutation and the Repository fields
// `ref(qualifiedName:)` and `defaultBranchRef`, answering the way GitHub does — a moved branch is
// HTTP 200 with `errors: [{type: "STALE_DATA"}]` and `data.createCommitOnBranch: null`.
// https://docs.github.com/graphql/reference/mutations#createcommitonbranch
import { GraphqlTypedError, nodeId, tokenCoversRepository, tokenPermission, type GraphqlContext } from "./graphql-endpoint.js";
import type { CommitState, GitStore } from "./git-state.js";
import type { Simulator } from "./types.js";

const DEFAULT_BRANCH = "main";

interface CreateCommitInput {
  branch: { repositoryNameWithOwner?: string | null; branchName?: string | null; id?: string | null };
  clientMutationId?: string | null;
  expectedHeadOid: string;
  message: { headline: string; body?: string | null };
  fileChanges?: { additions?: Array<{ path: string; contents: string }> | null; deletions?: Array<{ path: string }> | null } | null;
}

export function registerGitGraphql(sim: Simulator, store: GitStore): void {
  const commitObject = (commit: CommitState): Record<string, unknown> => ({
    __typename: "Commit",
    id: nodeId("C", commit.oid),
    oid: commit.oid,
    abbreviatedOid: commit.oid.slice(0, 7),
    url: `https://github.com/${commit.repository}/commit/${commit.oid}`,
    message: commit.body ? `${commit.headline}\n\n${commit.body}` : commit.headline,
    messageHeadline: commit.headline,
    messageBody: commit.body,
    committedDate: commit.committedDate.toISOString().replace(/\.\d{3}Z$/, "Z"),
    author: { ...commit.author, date: commit.committedDate.toISOString() },
    committer: commit.signedByGitHub
      ? { name: "GitHub", email: "noreply@github.com", date: commit.committedDate.toISOString() }
      : { ...commit.author, date: commit.committedDate.toISOString() },
    // GitSignature is an interface: web-flow commits carry GitHub's GPG signature.
    signature: commit.signedByGitHub
      ? { __typename: "GpgSignature", email: "noreply@github.com", isValid: true, keyId: "B5690EEEBB952194", payload: `tree ${commit.oid}\n`, signature: "-----BEGIN PGP SIGNATURE-----\n\n-----END PGP SIGNATURE-----\n", state: "VALID", wasSignedByGitHub: true }
      : null,
    parents: ({ first }: { first?: number }) => {
      const parents = commit.parents.map((oid) => store.commits.get(oid)!).filter(Boolean);
      return { totalCount: parents.length, nodes: parents.slice(0, first ?? parents.length).map(commitObject) };
    },
  });

  const refObject = (repository: string, branch: string): Record<string, unknown> | null => {
    const oid = store.head(repository, branch);
    if (!oid) return null;
    return {
      __typename: "Ref",
      id: nodeId("REF", `${repository}:refs/heads/${branch}`),
      name: branch,
      prefix: "refs/heads/",
      target: commitObject(store.commits.get(oid)!),
    };
  };

  // A tag ref: its target is the commit, or the annotated tag object (a Tag) naming it.
  const tagRefObject = (repository: string, tag: string): Record<string, unknown> | null => {
    const oid = store.tagsOf(repository).get(tag);
    if (!oid) return null;
    const commit = store.commits.get(oid);
    const annotated = commit ? undefined : store.objects.tags.get(oid);
    if (!commit && !annotated) return null;
    return {
      __typename: "Ref",
      id: nodeId("REF", `${repository}:refs/tags/${tag}`),
      name: tag,
      prefix: "refs/tags/",
      target: commit
        ? commitObject(commit)
        : { __typename: "Tag", id: nodeId("TAG", oid), oid, abbreviatedOid: oid.slice(0, 7), name: annotated!.tag, message: annotated!.message },
    };
  };

  sim.graphql.extendRepository((repo) => ({
    defaultBranchRef: () => refObject(repo.fullName, DEFAULT_BRANCH),
    // "Fully qualified matches are checked in order (refs/heads/master) before falling back onto
    // checks for short name matches (master)." gh release create asks for `refs/tags/<tag>` to
    // learn whether the tag is already pushed.
    ref: ({ qualifiedName }: { qualifiedName: string }) => {
      if (qualifiedName.startsWith("refs/heads/")) return refObject(repo.fullName, qualifiedName.slice("refs/heads/".length));
      if (qualifiedName.startsWith("refs/tags/")) return tagRefObject(repo.fullName, qualifiedName.slice("refs/tags/".length));
      return refObject(repo.fullName, qualifiedName) ?? tagRefObject(repo.fullName, qualifiedName);
    },
  }));

  sim.graphql.mutation("createCommitOnBranch", (args, ctx) => createCommit(args.input as CreateCommitInput, ctx));

  function createCommit(input: CreateCommitInput, ctx: GraphqlContext): Record<string, unknown> {
    const { repositoryNameWithOwner, branchName } = input.branch;
    if (!repositoryNameWithOwner || !branchName) {
      throw new GraphqlTypedError("UNPROCESSABLE", "simulator: only branch {repositoryNameWithOwner, branchName} is implemented");
    }
    const [owner = "", name = ""] = repositoryNameWithOwner.split("/");
    if (!tokenCoversRepository(ctx, owner, name)) {
      throw new GraphqlTypedError("NOT_FOUND", `Could not resolve to a Repository with the name '${repositoryNameWithOwner}'.`);
    }
    if (tokenPermission(ctx, "contents") !== "write") throw new GraphqlTypedError("FORBIDDEN", "Resource not accessible by integration");
    const repository = sim.repository(owner, name).fullName;
    const head = store.head(repository, branchName);
    if (!head) throw new GraphqlTypedError("NOT_FOUND", `Could not resolve to a Ref with the name 'refs/heads/${branchName}'.`);
    if (head !== input.expectedHeadOid) {
      throw new GraphqlTypedError("STALE_DATA", `Expected branch to point to "${input.expectedHeadOid}" but it did not. Pull and try again.`);
    }
    const files = store.commits.get(head)!.files;
    const changes = new Map<string, string | null>();
    for (const { path } of input.fileChanges?.deletions ?? []) {
      if (!files.has(path)) throw new GraphqlTypedError("UNPROCESSABLE", `A path was requested for deletion which does not exist as of commit oid \`${head}\``);
      changes.set(path, null);
    }
    for (const { path, contents } of input.fileChanges?.additions ?? []) changes.set(path, contents);
    const app = sim.apps.get(ctx.installation.appId);
    const slug = app?.slug ?? `app-${ctx.installation.appId}`;
    const author = { name: `${slug}[bot]`, email: `${ctx.installation.appId}+${slug}[bot]@users.noreply.github.com` };
    const commit = store.advance(repository, branchName, changes, { headline: input.message.headline, body: input.message.body ?? undefined }, author, true);
    store.mutationCommits.push(commit);
    return { clientMutationId: input.clientMutationId ?? null, commit: commitObject(commit), ref: refObject(repository, branchName) };
  }
}
