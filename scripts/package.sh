#!/usr/bin/env bash
# Packs the three binaries a rehearsal needs — rehearse, reference-operator and fixture-game, which
# rehearse finds beside itself — from one build into an archive for users who do not build:
#
#   scripts/package.sh [--profile release|quick|…] [--target TRIPLE] [--out DIR]
#       writes DIR/rehearsal-v<version>-<target>.tar.gz and its .sha256 (default: release, the
#       host's target, dist/); prints the archive's path
#   scripts/package.sh --check ARCHIVE
#       verifies the checksum, unpacks the archive into a temporary directory outside the
#       repository and runs a full `rehearse run` from the unpacked copy (needs what
#       scripts/setup.sh installs), then `rehearse receipts verify` on its bundle
#
# Install from a release (x86_64 or aarch64 Linux; then run scripts/setup.sh's packages):
#   curl -fsSL "$RELEASE/rehearsal-v0.1.0-$(uname -m)-unknown-linux-gnu.tar.gz" | tar xz
set -euo pipefail
cd "$(dirname "$0")/.."

BINARIES=(rehearse reference-operator fixture-game)

usage() {
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

check() {
  local archive="$1"
  [ -f "$archive" ] || { echo "package.sh: no archive at $archive; build one with scripts/package.sh first" >&2; exit 2; }
  archive="$(cd "$(dirname "$archive")" && pwd)/$(basename "$archive")"
  (cd "$(dirname "$archive")" && sha256sum --check --quiet "$(basename "$archive").sha256") || {
    echo "package.sh: $archive does not match its .sha256; rebuild it" >&2
    exit 1
  }
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  tar -xzf "$archive" -C "$tmp"
  local dir
  dir="$tmp/$(basename "$archive" .tar.gz)"
  for bin in "${BINARIES[@]}"; do
    [ -x "$dir/$bin" ] || { echo "package.sh: $archive lacks $bin" >&2; exit 1; }
  done
  # Outside the repository, with no cargo target on PATH: only the unpacked copy can be found.
  (cd "$tmp" && env -u REHEARSAL_BIN_DIR -u REHEARSAL_REFERENCE_OPERATOR \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    "$dir/rehearse" run --reports "$tmp/reports")
  local bundle
  bundle="$(find "$tmp/reports" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
  if [ -z "$bundle" ] || [ ! -f "$bundle/report.html" ] || [ ! -f "$bundle/bundle.json" ]; then
    echo "package.sh: the unpacked rehearse wrote no bundle and report under $tmp/reports" >&2
    exit 1
  fi
  "$dir/rehearse" receipts verify "$bundle"
  echo "package.sh: $(basename "$archive") runs the rehearsal from an unpacked copy"
}

profile=release
target=""
out=dist
while [ $# -gt 0 ]; do
  case "$1" in
  --check) [ $# -eq 2 ] || usage; check "$2"; exit 0 ;;
  --profile) profile="${2:?--profile needs a name}"; shift 2 ;;
  --target) target="${2:?--target needs a triple}"; shift 2 ;;
  --out) out="${2:?--out needs a directory}"; shift 2 ;;
  -h | --help) usage ;;
  *) echo "package.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
  esac
done

version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
host="$(rustc -vV | sed -n 's/^host: //p')"
triple="${target:-$host}"
# Cargo's directory for a profile: `dev` builds into debug/.
profile_dir="$profile"
[ "$profile" = dev ] && profile_dir=debug
bin_dir="target/${target:+$target/}$profile_dir"
for bin in "${BINARIES[@]}"; do
  [ -x "$bin_dir/$bin" ] || {
    echo "package.sh: $bin_dir/$bin is missing; build it first: cargo build --profile $profile --locked --bins${target:+ --target $target}" >&2
    exit 2
  }
done

name="rehearsal-v$version-$triple"
mkdir -p "$out"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
for bin in "${BINARIES[@]}"; do cp "$bin_dir/$bin" "$stage/$name/"; done
cp README.md "$stage/$name/"
# Reproducible: sorted entries, fixed owner and time.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$stage" -czf "$out/$name.tar.gz" "$name"
(cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "$out/$name.tar.gz"
