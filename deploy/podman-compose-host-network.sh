#!/usr/bin/env bash
# What podman-compose runs as podman (`podman-compose --podman-path deploy/podman-compose-host-network.sh`):
# Debian 12's podman-compose 1.0.3 adds `--net <project>_default --network-alias <service>` to
# every container, even one with `network_mode: host`, and podman refuses the pair
# ("cannot set multiple networks without bridge network mode"). For a container on the host's
# network, drop them; pass everything else to podman unchanged.
set -euo pipefail
args=("$@")
host=false
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
  if [ "${args[i]}" = "--network" ] && [ "${args[i+1]}" = "host" ]; then host=true; fi
done
if [ "$host" = false ]; then exec podman "$@"; fi
kept=()
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --net | --network-alias) i=$((i + 1)) ;;
    *) kept+=("${args[i]}") ;;
  esac
done
exec podman "${kept[@]}"
