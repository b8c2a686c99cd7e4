// The example repository policy of docs/policies.md: tag releases from release.yml get
// write, pull-request workflows read. The policy tests share it so they agree on the same rules.
export const EXAMPLE_POLICY = `rules:
  - name: release
    if:
      ref: refs/tags/v*
      event: [push, workflow_dispatch]
      workflow: .github/workflows/release.yml
    permissions: {contents: write, pull_requests: write}
  - name: pull-requests
    if: {event: [pull_request, pull_request_target]}
    permissions: {contents: read}
`;
