// Two schemas. The platform's: GitHub's published schema (@octokit/graphql-schema), which every
// document is validated against and executed with, so the simulator can neither accept a document
// GitHub refuses nor answer a null where GitHub's schema promises a value. And the simulator's
// subset below: the types and fields it implements, with GitHub's names; a document GitHub accepts
// that reaches beyond it is answered "not implemented", loudly, never with made-up nulls.
// Reference: https://docs.github.com/graphql/reference
import { readFileSync } from "node:fs";
import { buildClientSchema, buildSchema, type GraphQLSchema, type IntrospectionQuery } from "graphql";
import { packageFile } from "./package-file.js";

const GITHUB_SDL = /* GraphQL */ `
  scalar GitObjectID
  scalar DateTime
  scalar URI
  scalar Base64String
  scalar GitTimestamp

  type Query {
    repository(owner: String!, name: String!, followRenames: Boolean = true): Repository
    rateLimit(dryRun: Boolean = false): RateLimit
  }

  type Mutation {
    createCommitOnBranch(input: CreateCommitOnBranchInput!): CreateCommitOnBranchPayload
  }

  type RateLimit {
    cost: Int!
    limit: Int!
    nodeCount: Int!
    remaining: Int!
    resetAt: DateTime!
    used: Int!
  }

  interface RepositoryOwner {
    id: ID!
    login: String!
  }

  type Organization implements RepositoryOwner {
    id: ID!
    login: String!
  }

  type Repository {
    id: ID!
    databaseId: Int
    name: String!
    nameWithOwner: String!
    owner: RepositoryOwner!
    isPrivate: Boolean!
    url: URI!
    defaultBranchRef: Ref
    ref(qualifiedName: String!): Ref
    latestRelease: Release
    releases(first: Int, last: Int, after: String, before: String, orderBy: ReleaseOrder): ReleaseConnection!
  }

  type Ref {
    id: ID!
    name: String!
    prefix: String!
    target: GitObject
  }

  interface GitObject {
    id: ID!
    oid: GitObjectID!
    abbreviatedOid: String!
  }

  type Commit implements GitObject {
    id: ID!
    oid: GitObjectID!
    abbreviatedOid: String!
    url: URI!
    message: String!
    messageHeadline: String!
    messageBody: String!
    committedDate: DateTime!
    author: GitActor
    committer: GitActor
    signature: GitSignature
    parents(first: Int): CommitConnection!
  }

  type Tag implements GitObject {
    id: ID!
    oid: GitObjectID!
    abbreviatedOid: String!
    name: String!
    message: String
  }

  type CommitConnection {
    totalCount: Int!
    nodes: [Commit]
  }

  type GitActor {
    name: String
    email: String
    date: GitTimestamp
  }

  interface GitSignature {
    email: String!
    isValid: Boolean!
    payload: String!
    signature: String!
    state: GitSignatureState!
    wasSignedByGitHub: Boolean!
  }

  type GpgSignature implements GitSignature {
    email: String!
    isValid: Boolean!
    keyId: String
    payload: String!
    signature: String!
    state: GitSignatureState!
    wasSignedByGitHub: Boolean!
  }

  enum GitSignatureState {
    VALID
    INVALID
    UNSIGNED
  }

  type Release {
    id: ID!
    databaseId: Int
    name: String
    tagName: String!
    url: URI!
    isDraft: Boolean!
    isPrerelease: Boolean!
    isLatest: Boolean!
    createdAt: DateTime!
    publishedAt: DateTime
  }

  type ReleaseConnection {
    totalCount: Int!
    nodes: [Release]
    pageInfo: PageInfo!
  }

  type PageInfo {
    hasNextPage: Boolean!
    hasPreviousPage: Boolean!
    startCursor: String
    endCursor: String
  }

  input ReleaseOrder {
    field: ReleaseOrderField!
    direction: OrderDirection!
  }

  enum ReleaseOrderField {
    CREATED_AT
    NAME
  }

  enum OrderDirection {
    ASC
    DESC
  }

  input CreateCommitOnBranchInput {
    branch: CommittableBranch!
    clientMutationId: String
    expectedHeadOid: GitObjectID!
    fileChanges: FileChanges
    message: CommitMessage!
  }

  input CommittableBranch {
    branchName: String
    id: ID
    repositoryNameWithOwner: String
  }

  input FileChanges {
    additions: [FileAddition!]
    deletions: [FileDeletion!]
  }

  input FileAddition {
    contents: Base64String!
    path: String!
  }

  input FileDeletion {
    path: String!
  }

  input CommitMessage {
    body: String
    headline: String!
  }

  type CreateCommitOnBranchPayload {
    clientMutationId: String
    commit: Commit
    ref: Ref
  }
`;

let built: GraphQLSchema | undefined;
let platform: GraphQLSchema | undefined;

/** What the simulator implements; built once per process. */
export function implementedSchema(): GraphQLSchema {
  built ??= buildSchema(GITHUB_SDL);
  return built;
}

/**
 * GitHub's schema from the package's introspection result (its SDL repeats two fields, which
 * graphql-js refuses to build); built once per process. Abstract types resolve through each
 * object's `__typename`.
 */
export function platformSchema(): GraphQLSchema {
  if (!platform) {
    const introspection = JSON.parse(readFileSync(packageFile("@octokit/graphql-schema", "schema.json"), "utf8")) as { data?: IntrospectionQuery } & IntrospectionQuery;
    platform = buildClientSchema(introspection.data ?? introspection);
  }
  return platform;
}
