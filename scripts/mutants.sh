#!/usr/bin/env bash
# Mutation testing with cargo-mutants over the code whose mistakes change a verdict, judged by
# the tests that are meant to catch them. Writes each set's outcome files to mutants/<set>/
# (committed: caught.txt, missed.txt, timeout.txt, unviable.txt, outcomes.json and run.txt
# with the run time), so a maintainer sees what changed between runs with `git diff mutants/`.
#
#   scripts/mutants.sh evidence    receipts verify, summary, kill-matrix judge, JUnit, bundle
#                                  loading, report merging — judged by the rehearsal-evidence
#                                  crate's own tests (about 200 mutants; shard with
#                                  `-- --shard k/N`, k from 0 to N-1)
#   scripts/mutants.sh judge       case verdicts, the audit log's proof, the qualification's gate
#                                  decisions and batch arithmetic, the PVC identity check (the
#                                  evidence crate's judge module) — judged by its own tests
#   scripts/mutants.sh oracle      the exploration's oracle: every invariant (held, violated,
#                                  unknown), the history → trace conversion, the one judge of a
#                                  schedule, the catalogue's stated endings, a schedule's id and
#                                  shard, and its standing in the matrix — judged by
#                                  the evidence crate's tests on recorded traces
#   scripts/mutants.sh harness     qualify gates and cases/observe — judged by the rehearsal
#                                  crate's tests and the rollout scenario cases (about 300)
#   scripts/mutants.sh operator    the reference operator's backup, restore, restic and
#                                  incarnation code — judged by its own tests and the backup
#                                  scenario cases (about 270; hours on 2 cores)
#   scripts/mutants.sh module      the Module controller (images/reference-operator/src/module.rs) —
#                                  judged by the operator's module tests and the
#                                  candidate_module_digest_mismatch case (about 30)
#   scripts/mutants.sh SET -- ARGS extra cargo-mutants arguments, e.g. `-- --file
#                                  images/reference-operator/src/incarnation.rs` to run a part
#
# Survivors are triaged in mutants/survivors.md: each one is killed by a new or sharper check,
# or recorded there as equivalent with a one-line reason. Needs cargo-mutants
# (`cargo install --locked cargo-mutants`), cargo-nextest, and what the tests need
# (`scripts/setup.sh --tests`). Configuration: .cargo/mutants.toml, nextest profile `mutants`.
set -euo pipefail
cd "$(dirname "$0")/.."

set_name="${1:-}"
shift || true
[ "${1:-}" = "--" ] && shift
extra=("$@")

# Each set names the files it mutates and the tests that judge them: for the evidence code,
# the evidence crate's own unit and property tests; for the qualification and observation
# code, the rehearsal crate's tests and the scenario cases; for the reference operator, its own
# tests and the scenario cases.
case "$set_name" in
evidence)
  # The evidence crate's judging code, judged by the crate's own unit and property tests
  # (harness/evidence/tests): seconds per mutant, no cluster, no rehearsal crate.
  files=(harness/evidence/src/receipts/verify.rs harness/evidence/src/summary.rs
    harness/evidence/src/kill_matrix.rs harness/evidence/src/report/junit.rs
    harness/evidence/src/report/load.rs harness/evidence/src/report/model.rs)
  tests=(--test-package rehearsal-evidence)
  ;;
judge)
  # The harness's judgement outside the receipts and reports, as pure functions in the evidence
  # crate: case verdicts and check assessment, the RCON audit log's proof, the qualification's
  # gate decisions and batch arithmetic, and the PVC identity check — judged by the crate's
  # own tests (harness/evidence/tests/judge_*.rs): seconds per mutant, no cluster.
  files=('harness/evidence/src/judge/*.rs' harness/evidence/src/pvc_table.rs)
  tests=(--test-package rehearsal-evidence)
  ;;
oracle)
  # The exploration's oracle: the invariants (each one's held, violated or unknown) and the
  # matrix's standing of a schedule — judged by the evidence crate's tests on recorded traces
  # (harness/evidence/tests/invariants*.rs, way_back.rs, report_explore.rs): seconds per
  # mutant, no cluster. Shard with `-- --shard k/N`.
  files=(harness/evidence/src/invariants.rs 'harness/evidence/src/invariants/*.rs'
    harness/evidence/src/report/matrix.rs harness/evidence/src/catalogue.rs
    harness/evidence/src/place.rs)
  tests=(--test-package rehearsal-evidence)
  ;;
harness)
  files=('harness/src/qualify/*.rs' harness/src/cases/observe.rs)
  tests=(--test-package rehearsal --test-package rehearsal-scenarios)
  ;;
operator)
  files=('images/reference-operator/src/backup/*.rs' 'images/reference-operator/src/restore/*.rs'
    images/reference-operator/src/restic.rs images/reference-operator/src/incarnation.rs)
  tests=(--test-package reference-operator --test-package rehearsal-scenarios)
  ;;
module)
  files=(images/reference-operator/src/module.rs)
  tests=(--test-package reference-operator --test-package rehearsal-scenarios
    -- -E 'binary(module) | test(=candidate_module_digest_mismatch)')
  ;;
*)
  echo "usage: scripts/mutants.sh evidence|judge|oracle|harness|operator|module [-- CARGO-MUTANTS-ARGS]" >&2
  exit 2
  ;;
esac

if ! cargo mutants --version >/dev/null 2>&1; then
  echo "cargo-mutants is not installed: run \`cargo install --locked cargo-mutants\`" >&2
  exit 2
fi

args=()
for f in "${files[@]}"; do args+=(--file "$f"); done
# A shard (`-- --shard k/N`, k from 0 to N-1) keeps its own outcome files: mutants/<set>/shard-k-of-N/.
part="$set_name"
for ((i = 0; i < ${#extra[@]}; i++)); do
  shard=""
  case "${extra[$i]}" in
  --shard) shard="${extra[$((i + 1))]:-}" ;;
  --shard=*) shard="${extra[$i]#--shard=}" ;;
  esac
  if [ -n "$shard" ]; then part="$set_name/shard-${shard%/*}-of-${shard#*/}"; fi
done
out="target/mutants/$part"
mkdir -p "$out"
start=$(date +%s)
export DOCKER_HOST="${DOCKER_HOST:-unix:///run/podman/podman.sock}"
# cargo-mutants exits 2 when mutants were missed and 3 on timeouts: outcomes, not errors.
mutants() {
  local status=0
  # --baseline skip: cargo-mutants 27 runs the baseline with the mutated package's tests and the
  # named targets (which live in another package), so it cannot build; the unmutated tree is
  # the one CI keeps green, and .cargo/mutants.toml sets the test timeout the baseline would.
  cargo mutants --no-shuffle --baseline skip --timeout 900 --build-timeout 900 "${args[@]}" --output "$out" "${extra[@]}" "$@" || status=$?
  case "$status" in 0 | 2 | 3) ;; *)
    echo "cargo-mutants failed (exit $status); its log: $out/mutants.out/debug.log" >&2
    exit "$status"
    ;;
  esac
}
rm -rf "$out/mutants.out"
mutants "${tests[@]}"
end=$(date +%s)
dest="mutants/$part"
mkdir -p "$dest"
for f in caught.txt missed.txt timeout.txt unviable.txt outcomes.json; do
  if [ -f "$out/mutants.out/$f" ]; then cp "$out/mutants.out/$f" "$dest/$f"; else : >"$dest/$f"; fi
done
count() { grep -c . "$dest/$1" || true; }
{
  echo "set: $set_name"
  echo "commit: $(git rev-parse --short HEAD)"
  echo "cargo-mutants: $(cargo mutants --version)"
  echo "files: ${files[*]}"
  echo "tests: ${tests[*]}"
  echo "extra arguments: ${extra[*]}"
  echo "run time: $((end - start)) s on $(nproc) cores"
  echo "caught: $(count caught.txt)  missed: $(count missed.txt)  timeout: $(count timeout.txt)  unviable: $(count unviable.txt)"
} >"$dest/run.txt"
cat "$dest/run.txt"
if [ -s "$dest/missed.txt" ]; then
  echo "missed mutants (triage each in mutants/survivors.md):"
  cat "$dest/missed.txt"
fi
