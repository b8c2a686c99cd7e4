#!/usr/bin/env bash
# Tests deploy/compose.yaml with podman-compose: two broker instances and Redis against the
# platform simulator on the host (loopback only). Needs the image deploy/build-image.sh builds;
# builds the Redis image on the same local base when TOKENSMITH_REDIS_IMAGE is not given.
# The checks are in deploy/compose-test.mjs.
# Debian 12's podman-compose 1.0.3 needs deploy/podman-compose-host-network.sh for `network_mode: host`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="$PWD/deploy/containers.conf"
export TOKENSMITH_IMAGE="${TOKENSMITH_IMAGE:-localhost/tokensmith:latest}"
if ! command -v podman-compose >/dev/null; then
  if [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman-compose >/dev/null
  else
    echo "podman-compose is needed (Debian: apt-get install podman-compose)" >&2
    exit 1
  fi
fi
if [ -z "${TOKENSMITH_REDIS_IMAGE:-}" ]; then
  # Tagged by the Containerfile's digest: a changed Containerfile builds a new image, never reuses an old one.
  export TOKENSMITH_REDIS_IMAGE="localhost/tokensmith-redis:bookworm-$(sha256sum deploy/redis/Containerfile | cut -c1-12)"
  if ! podman image exists "$TOKENSMITH_REDIS_IMAGE"; then
    podman build --quiet --format docker --network host --pull=never \
      -t "$TOKENSMITH_REDIS_IMAGE" -f deploy/redis/Containerfile deploy/redis >/dev/null
  fi
fi
if [ ! -f build/simulator/index.js ]; then npx tsc -p tsconfig.build.json; fi
exec node deploy/compose-test.mjs
