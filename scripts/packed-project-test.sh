#!/usr/bin/env bash
# A fresh TypeScript project on the packed package (issue 41): examples/packed-project copied into
# an empty directory, the tarball installed with typescript, vitest and @types/node from the npm
# registry, type-checked under `strict`, then its tag-release job test run three ways: `node --test`
# on tsc's output, `node --test` on the .ts sources (Node's type stripping), and vitest.
# Usage: scripts/packed-project-test.sh [tokensmith-X.Y.Z.tgz]   (default: `npm pack` here first)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ $# -ge 1 ]; then
  tarball="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
else
  (cd "$repo" && npm pack --pack-destination "$work" >/dev/null)
  tarball="$(ls "$work"/tokensmith-*.tgz)"
fi

project="$work/project"
mkdir -p "$project"
cp -R "$repo/examples/packed-project/." "$project/"
cd "$project"
echo "-- Node $(node --version): npm install $(basename "$tarball") with the project's dev dependencies"
npm install --no-audit --no-fund "$tarball"
echo "-- typescript $(npx tsc --version | sed 's/^Version //'), vitest $(npx vitest --version | sed 's/^vitest\///; s/ .*//'): type-check under strict"
npm run --silent typecheck
echo "-- node --test on tsc's output"
npm run --silent build
npm run --silent test:node
echo "-- node --test on the TypeScript sources (type stripping)"
npm run --silent test:node-ts
echo "-- vitest"
npm run --silent test:vitest
echo "packed project: type-checked, node --test (compiled and stripped) and vitest passed"
