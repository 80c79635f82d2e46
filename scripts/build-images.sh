#!/usr/bin/env bash
# Builds the workspace's images FROM scratch over a root filesystem assembled here from the
# workspace's own binaries (the binary, the shared libraries `ldd` names, CA certificates), so
# the same Dockerfiles build on a GitHub runner (docker) and on a machine that can pull nothing
# (podman). Optionally pushes them to a registry.
#
#   scripts/build-images.sh [--engine docker|podman] [--bin-dir DIR] [--work DIR]
#                           [--push HOST:PORT | --start-registry PORT [--registry-name NAME]]
#                           [--registry-image]
#
#   --engine          the container engine CLI (default: docker if on PATH, else podman)
#   --bin-dir         where fixture-game and reference-operator were built (default target/release)
#   --work            where the build contexts are assembled (default: a temporary directory)
#   --push HOST:PORT  tag every image HOST:PORT/<repository>:<tag> and push it there (plain HTTP)
#   --registry-image  also build rehearsal.local/registry:2 from this machine's docker-registry
#                     (Debian/Ubuntu package `docker-registry`), the registry the Kind nodes pull
#                     from in CI; it is not pushed
#   --start-registry PORT
#                     build that registry image, run it as container NAME (--registry-name,
#                     default rehearsal-registry; an existing one is reused) published on
#                     127.0.0.1:PORT, wait until it answers, then push there as --push does.
#                     Connect NAME to the Kind network with `rehearse cluster up --kind` and
#                     REHEARSAL_REGISTRY=127.0.0.1:PORT (README, "Kind").
#
# Images (the tags the cases use; harness/src/deploy/images.rs lists them):
#   rehearsal.local/fixture-game:{1.0,1.1-compat,2.0-format,http-only,crash,refuse-login,
#                                 stall-configuration}, rehearsal.local/fixture-agent:{1.0,legacy}
#   rehearsal.local/reference-operator:dev
# Prints one line per image: `<local tag>` or, with --push, `<pushed reference>`; with
# --start-registry first `registry NAME 127.0.0.1:PORT`.
set -euo pipefail
cd "$(dirname "$0")/.."

engine=""
bin_dir=target/release
work=""
push=""
registry_image=false
start_registry=""
registry_name=rehearsal-registry
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=${2:?--engine needs docker or podman}; shift 2 ;;
    --bin-dir) bin_dir=${2:?--bin-dir needs a directory}; shift 2 ;;
    --work) work=${2:?--work needs a directory}; shift 2 ;;
    --push) push=${2:?--push needs HOST:PORT}; shift 2 ;;
    --registry-image) registry_image=true; shift ;;
    --start-registry) start_registry=${2:?--start-registry needs a port}; registry_image=true; shift 2 ;;
    --registry-name) registry_name=${2:?--registry-name needs a name}; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "build-images: unknown option '$1'; see --help" >&2; exit 2 ;;
  esac
done
if [ -n "$start_registry" ]; then
  [ -z "$push" ] || { echo "build-images: --push and --start-registry exclude each other" >&2; exit 2; }
  case "$start_registry" in
    ''|*[!0-9]*) echo "build-images: --start-registry needs a port number, not '$start_registry'" >&2; exit 2 ;;
  esac
fi
if [ -z "$engine" ]; then
  if command -v docker >/dev/null; then engine=docker; else engine=podman; fi
fi
case "$engine" in
  docker|podman) ;;
  *) echo "build-images: --engine must be docker or podman, not '$engine'" >&2; exit 2 ;;
esac
command -v "$engine" >/dev/null || { echo "build-images: $engine is not installed; install it or pass --engine" >&2; exit 2; }
for bin in fixture-game reference-operator; do
  [ -f "$bin_dir/$bin" ] || { echo "build-images: $bin_dir/$bin not found; build it (cargo build --release -p $bin) or pass --bin-dir" >&2; exit 2; }
done
certs=/etc/ssl/certs/ca-certificates.crt
[ -f "$certs" ] || { echo "build-images: $certs not found; install the ca-certificates package" >&2; exit 2; }
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

# rootfs DIR BINARY DEST: the binary at DEST, the libraries it links at their paths, CA
# certificates, passwd/group naming root and nonroot (65532), and a /tmp.
rootfs() {
  local root=$1 binary=$2 dest=$3 lib
  rm -rf "$root"
  mkdir -p "$root$(dirname "$dest")" "$root/etc/ssl/certs" "$root/tmp"
  chmod 1777 "$root/tmp"
  install -m 0755 "$binary" "$root$dest"
  # Every absolute path ldd prints: the libraries (`=> /path`) and the loader itself.
  for lib in $(ldd "$binary" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  cp "$certs" "$root/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"
}

# Docker (BuildKit) adds provenance attestations by default, which turns each image into an
# index; without them a push is one single-platform manifest with either engine.
engine_args=()
if [ "$engine" = docker ]; then engine_args=(--provenance=false); fi

built=()
build() { # context dockerfile tag [build args...]
  local context=$1 dockerfile=$2 tag=$3
  shift 3
  "$engine" build -q "${engine_args[@]}" -f "$dockerfile" -t "$tag" "$@" "$context" >/dev/null
  built+=("$tag")
}

push_all() { # HOST:PORT
  local tag remote
  for tag in "${built[@]}"; do
    remote="$1/${tag#rehearsal.local/}"
    "$engine" tag "$tag" "$remote"
    if [ "$engine" = podman ]; then
      "$engine" push -q --tls-verify=false "$tag" "docker://$remote"
    else
      # Docker treats 127.0.0.0/8 registries as insecure (plain HTTP) by default.
      "$engine" push -q "$remote" >/dev/null
    fi
    echo "$remote"
  done
}

game_ctx="$work/fixture-game"
rootfs "$game_ctx/rootfs" "$bin_dir/fixture-game" /usr/local/bin/fixture-game
mkdir -p "$game_ctx/rootfs/data"
cp images/fixture-game/Dockerfile "$game_ctx/Dockerfile"
game() { # tag mode version
  build "$game_ctx" "$game_ctx/Dockerfile" "rehearsal.local/fixture-game:$1" --target game \
    --build-arg "FIXTURE_MODE=$2" --build-arg "FIXTURE_GAME_VERSION=$3"
}
agent() { # tag legacy
  build "$game_ctx" "$game_ctx/Dockerfile" "rehearsal.local/fixture-agent:$1" --target agent \
    --build-arg "FIXTURE_AGENT_LEGACY=$2"
}
game 1.0 normal 1.0
game 1.1-compat compat 1.1
game 2.0-format format 2.0
game http-only http-only 1.0
game crash crash 1.0
game refuse-login refuse-login 1.0
game stall-configuration stall-configuration 1.0
agent 1.0 false
agent legacy true

op_ctx="$work/reference-operator"
rootfs "$op_ctx/rootfs" "$bin_dir/reference-operator" /usr/local/bin/reference-operator
cp images/reference-operator/Dockerfile "$op_ctx/Dockerfile"
build "$op_ctx" "$op_ctx/Dockerfile" rehearsal.local/reference-operator:dev

if $registry_image; then
  registry=$(command -v docker-registry) || { echo "build-images: docker-registry is not installed (apt-get install docker-registry)" >&2; exit 2; }
  reg_ctx="$work/registry"
  rootfs "$reg_ctx/rootfs" "$registry" /usr/bin/docker-registry
  mkdir -p "$reg_ctx/rootfs/etc/docker/registry" "$reg_ctx/rootfs/var/lib/registry"
  printf 'version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: /var/lib/registry\n  delete:\n    enabled: true\nhttp:\n  addr: :5000\n' \
    > "$reg_ctx/rootfs/etc/docker/registry/config.yml"
  printf 'FROM scratch\nCOPY rootfs/ /\nEXPOSE 5000\nENTRYPOINT ["/usr/bin/docker-registry"]\nCMD ["serve", "/etc/docker/registry/config.yml"]\n' > "$reg_ctx/Dockerfile"
  "$engine" build -q "${engine_args[@]}" -f "$reg_ctx/Dockerfile" -t rehearsal.local/registry:2 "$reg_ctx" >/dev/null
fi

if [ -n "$start_registry" ]; then
  if [ "$("$engine" inspect --format '{{.State.Running}}' "$registry_name" 2>/dev/null)" != true ]; then
    "$engine" rm -f "$registry_name" >/dev/null 2>&1 || true
    "$engine" run -d --name "$registry_name" -p "127.0.0.1:$start_registry:5000" rehearsal.local/registry:2 >/dev/null
  fi
  # Bounded wait until the registry answers /v2/.
  for _ in $(seq 1 100); do
    curl -fsS --max-time 2 "http://127.0.0.1:$start_registry/v2/" >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -fsS --max-time 2 "http://127.0.0.1:$start_registry/v2/" >/dev/null || {
    echo "build-images: registry container $registry_name does not answer on 127.0.0.1:$start_registry within 20 s" >&2
    "$engine" logs "$registry_name" >&2 || true
    exit 1
  }
  echo "registry $registry_name 127.0.0.1:$start_registry"
  push=127.0.0.1:$start_registry
fi

if [ -n "$push" ]; then
  push_all "$push"
else
  printf '%s\n' "${built[@]}"
  if $registry_image; then echo rehearsal.local/registry:2; fi
fi
