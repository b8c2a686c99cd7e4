#!/usr/bin/env bash
# Smoke test of the broker's image: `deploy/smoke-test.sh [IMAGE]` (default localhost/tokensmith:latest,
# as deploy/build-image.sh tags it). The platform simulator runs here on the host (loopback only);
# the container shares the host's network and is told to listen on 127.0.0.1, so nothing is
# published beyond loopback. The checks are in deploy/smoke-test.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="$PWD/deploy/containers.conf"
image="${1:-${IMAGE:-localhost/tokensmith:latest}}"
# The simulator comes from this checkout's build (what `npm test` builds); built if missing.
if [ ! -f build/simulator/index.js ] || [ ! -d node_modules/typescript ]; then
  [ -d node_modules/typescript ] || npm ci --no-audit --no-fund
  npx tsc -p tsconfig.build.json
fi
exec node deploy/smoke-test.mjs "$image"
