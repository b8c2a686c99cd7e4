// `npm start`: builds the broker if the build is missing or stale, then runs it in this same
// process (no child), and package.json's `exec` makes this process npm's direct child. npm passes
// SIGTERM and SIGINT on to its child only: with `sh -c node build/server/main.js` between them,
// npm's SIGTERM ended the shell and left the broker running under init (issue 26). Now a
// supervisor's stop reaches the broker, which drains and exits as it does under `tokensmith serve`.
await import("./build-if-stale.js");
await import("../build/server/main.js");
