#!/usr/bin/env bash
# Starts podman's Docker-compatible API service for the bollard/testcontainers tests.
# Idempotent: rewrites the engine configuration this machine needs (see DESIGN.md: runc,
# cgroupfs, file events logger, bounded ulimits), starts the service only if the socket does
# not answer yet, waits (bounded) until it answers /_ping and prints the DOCKER_HOST to export.
set -euo pipefail

SOCK_DIR=/run/podman
SOCK="$SOCK_DIR/podman.sock"
LOG=${PODMAN_SERVICE_LOG:-/tmp/podman-service.log}

command -v podman >/dev/null || { echo "start-podman: podman is not installed; run: apt-get install -y podman runc" >&2; exit 2; }
command -v runc >/dev/null || { echo "start-podman: runc is not installed; run: apt-get install -y runc" >&2; exit 2; }
command -v curl >/dev/null || { echo "start-podman: curl is not installed; run: apt-get install -y curl" >&2; exit 2; }

mkdir -p /etc/containers
cat > /etc/containers/containers.conf <<'CONF'
# Written by scripts/start-podman.sh: the settings under which Debian's podman works here.
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF

ping() { curl -fsS --max-time 2 --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1; }

if ! ping; then
    mkdir -p "$SOCK_DIR"
    rm -f "$SOCK"
    # setsid: the service must outlive this script (CI runs the tests afterwards).
    setsid podman system service --time=0 "unix://$SOCK" >"$LOG" 2>&1 < /dev/null &
    for _ in $(seq 1 100); do
        ping && break
        sleep 0.1
    done
    if ! ping; then
        echo "start-podman: the podman service did not answer on $SOCK within 10 s; see $LOG" >&2
        tail -n 20 "$LOG" >&2 || true
        exit 1
    fi
fi

echo "DOCKER_HOST=unix://$SOCK"
