#!/usr/bin/env bash
# Builds Gameplane's three images from a Gameplane checkout, as its own e2e does (each
# component's Dockerfile, the checkout's root as the build context, VERSION set to the tag), and
# pushes them to the local registry the Kind nodes pull rehearsal.local/… from, under the names
# `rehearse cluster up --kind --helm-chart` gives the chart:
#
#   <registry>/<repository>/<component>:<tag>   for component in operator, agent, api
#
# which the nodes pull as rehearsal.local/<repository>/<component>:<tag> (chart values
# `--gameplane-registry rehearsal.local/<repository> --gameplane-tag <tag>
#  --gameplane-agent-image rehearsal.local/<repository>/agent:<tag>`).
#
#   scripts/build-gameplane-images.sh --src DIR --tag TAG --push HOST:PORT
#                                     [--engine docker|podman] [--repository NAME]
#
#   --src DIR          the Gameplane checkout (DIR/<component>/Dockerfile for each component)
#   --tag TAG          the images' tag and the VERSION build argument
#   --push HOST:PORT   the registry to push to, plain HTTP (e.g. the one
#                      `scripts/build-images.sh --start-registry 5001` started)
#   --engine           the container engine CLI (default: docker if on PATH, else podman)
#   --repository NAME  the repository prefix (default gameplane-test, as Gameplane's e2e names it)
#
# Prints one line per pushed image: `HOST:PORT/<repository>/<component>:<tag>`.
set -euo pipefail

engine=""
src=""
tag=""
push=""
repository=gameplane-test
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=${2:?--engine needs docker or podman}; shift 2 ;;
    --src) src=${2:?--src needs a Gameplane checkout}; shift 2 ;;
    --tag) tag=${2:?--tag needs a tag}; shift 2 ;;
    --push) push=${2:?--push needs HOST:PORT}; shift 2 ;;
    --repository) repository=${2:?--repository needs a name}; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "build-gameplane-images: unknown option '$1'; see --help" >&2; exit 2 ;;
  esac
done
[ -n "$src" ] || { echo "build-gameplane-images: --src DIR (a Gameplane checkout) is required" >&2; exit 2; }
[ -n "$tag" ] || { echo "build-gameplane-images: --tag TAG is required (e.g. rehearsal-<commit>)" >&2; exit 2; }
[ -n "$push" ] || { echo "build-gameplane-images: --push HOST:PORT is required (the local registry the Kind nodes pull from)" >&2; exit 2; }
if [ -z "$engine" ]; then
  if command -v docker >/dev/null; then engine=docker; else engine=podman; fi
fi
case "$engine" in
  docker|podman) ;;
  *) echo "build-gameplane-images: --engine must be docker or podman, not '$engine'" >&2; exit 2 ;;
esac
command -v "$engine" >/dev/null || { echo "build-gameplane-images: $engine is not installed; install it or pass --engine" >&2; exit 2; }
components=(operator agent api)
for component in "${components[@]}"; do
  [ -f "$src/$component/Dockerfile" ] || { echo "build-gameplane-images: $src/$component/Dockerfile not found; --src must be a Gameplane checkout" >&2; exit 2; }
done

# Without provenance attestations Docker pushes one single-platform manifest, as podman does.
engine_args=()
if [ "$engine" = docker ]; then engine_args=(--provenance=false); fi

for component in "${components[@]}"; do
  local_tag="$repository/$component:$tag"
  remote="$push/$repository/$component:$tag"
  "$engine" build -q "${engine_args[@]}" -f "$src/$component/Dockerfile" \
    --build-arg "VERSION=$tag" -t "$local_tag" "$src" >/dev/null
  "$engine" tag "$local_tag" "$remote"
  if [ "$engine" = podman ]; then
    "$engine" push -q --tls-verify=false "$remote"
  else
    # Docker treats 127.0.0.0/8 registries as insecure (plain HTTP) by default.
    "$engine" push -q "$remote" >/dev/null
  fi
  echo "$remote"
done
