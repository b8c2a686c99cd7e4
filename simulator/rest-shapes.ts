// The parts of GitHub's REST objects the description makes required but the simulator has no state
// for: a user's and a repository's hypermedia URLs, counts and flags, with GitHub's values for a
// fresh private repository. Checked by test/simulator-conformance.test.ts against @octokit/openapi.
// https://docs.github.com/rest/repos/repos#get-a-repository
type Urls = { apiBase: string; url: string };

/** GitHub's `simple-user` (an organization account is one too, with type "Organization"). */
export function simpleUserJson(login: string, id: number, type: "User" | "Organization" | "Bot", urls: Urls): Record<string, unknown> {
  const api = `${urls.apiBase}/users/${login}`;
  return {
    login,
    id,
    node_id: `${type === "Organization" ? "O" : "U"}_${Buffer.from(String(id)).toString("base64url")}`,
    avatar_url: `${urls.url}/avatars/u/${id}?v=4`,
    gravatar_id: "",
    url: api,
    html_url: `${urls.url}/${login}`,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type,
    user_view_type: "public",
    site_admin: false,
  };
}

const CREATED = "2020-01-01T00:00:00Z";

/** A `repository`'s URLs, counts and flags (its identity fields are github-state's repositoryJson). */
export function repositoryDetails(fullName: string, urls: Urls): Record<string, unknown> {
  const api = `${urls.apiBase}/repos/${fullName}`;
  const host = new URL(urls.url).host;
  return {
    description: null,
    archive_url: `${api}/{archive_format}{/ref}`,
    assignees_url: `${api}/assignees{/user}`,
    blobs_url: `${api}/git/blobs{/sha}`,
    branches_url: `${api}/branches{/branch}`,
    collaborators_url: `${api}/collaborators{/collaborator}`,
    comments_url: `${api}/comments{/number}`,
    commits_url: `${api}/commits{/sha}`,
    compare_url: `${api}/compare/{base}...{head}`,
    contents_url: `${api}/contents/{+path}`,
    contributors_url: `${api}/contributors`,
    deployments_url: `${api}/deployments`,
    downloads_url: `${api}/downloads`,
    events_url: `${api}/events`,
    forks_url: `${api}/forks`,
    git_commits_url: `${api}/git/commits{/sha}`,
    git_refs_url: `${api}/git/refs{/sha}`,
    git_tags_url: `${api}/git/tags{/sha}`,
    hooks_url: `${api}/hooks`,
    issue_comment_url: `${api}/issues/comments{/number}`,
    issue_events_url: `${api}/issues/events{/number}`,
    issues_url: `${api}/issues{/number}`,
    keys_url: `${api}/keys{/key_id}`,
    labels_url: `${api}/labels{/name}`,
    languages_url: `${api}/languages`,
    merges_url: `${api}/merges`,
    milestones_url: `${api}/milestones{/number}`,
    notifications_url: `${api}/notifications{?since,all,participating}`,
    pulls_url: `${api}/pulls{/number}`,
    releases_url: `${api}/releases{/id}`,
    stargazers_url: `${api}/stargazers`,
    statuses_url: `${api}/statuses/{sha}`,
    subscribers_url: `${api}/subscribers`,
    subscription_url: `${api}/subscription`,
    tags_url: `${api}/tags`,
    teams_url: `${api}/teams`,
    trees_url: `${api}/git/trees{/sha}`,
    clone_url: `${urls.url}/${fullName}.git`,
    git_url: `git://${host}/${fullName}.git`,
    ssh_url: `git@${host}:${fullName}.git`,
    svn_url: `${urls.url}/${fullName}`,
    mirror_url: null,
    homepage: null,
    language: null,
    license: null,
    forks: 0,
    forks_count: 0,
    open_issues: 0,
    open_issues_count: 0,
    stargazers_count: 0,
    watchers: 0,
    watchers_count: 0,
    size: 0,
    has_downloads: true,
    has_issues: true,
    has_projects: true,
    has_wiki: false,
    has_pages: false,
    has_discussions: false,
    created_at: CREATED,
    updated_at: CREATED,
    pushed_at: CREATED,
  };
}

/** What `GET /repos/{owner}/{repo}` (`full-repository`) adds to a `repository`. */
export const FULL_REPOSITORY_EXTRAS: Readonly<Record<string, unknown>> = Object.freeze({ network_count: 0, subscribers_count: 0 });
