#!/usr/bin/env bash
# Runs the test suite N times and writes a markdown table of the tests that failed at least once, with how
# often: the evidence for a quarantine entry (tests/quarantine.txt) or for taking one out. Each test runs
# once per round, no retry, as scripts/test.sh runs it; quarantined tests are counted like the rest.
#   scripts/flake_table.sh N [CTEST_ARGS...]     e.g. scripts/flake_table.sh 10, or 5 -R FlatLayout
# Needs a build (scripts/build.sh or scripts/test.sh first); builds nothing. CTEST_ARGS come after the
# defaults (-j nproc, --timeout 900), so `-j 1` overrides. Writes build/flake-table/<time>/: table.md, and
# per round run-<i>.xml (ctest's JUnit file, with each test's output) and run-<i>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/flake_table.sh N [CTEST_ARGS...]" >&2
  exit 2
fi
rounds=$1
shift
[ -f build/CTestTestfile.cmake ] || { echo "flake_table: no build/ (run scripts/build.sh first)" >&2; exit 2; }
source scripts/test_lib.sh

out=$PWD/build/flake-table/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
for i in $(seq "$rounds"); do
  ctest --test-dir build -j "$(nproc)" --timeout 900 "$@" --output-junit "$out/run-$i.xml" >"$out/run-$i.log" 2>&1 || true
  # A round whose JUnit file is missing (ctest itself failed) would count as all-pass: stop instead.
  [ -f "$out/run-$i.xml" ] || { echo "flake_table: round $i wrote no $out/run-$i.xml; see run-$i.log" >&2; exit 1; }
  junit_results "$out/run-$i.xml" | awk -v i="$i" '{ print i "\t" $0 }' >"$out/run-$i.tsv"
  echo "round $i/$rounds: $(awk -F'\t' '$2 == "failed"' "$out/run-$i.tsv" | wc -l) failed" \
    "of $(wc -l <"$out/run-$i.tsv") tests"
done

# One row per test that failed in some round: failures, rounds it ran in (passed or failed; a skip is not a
# run), which rounds failed (their output is in run-<i>.xml), and whether it is quarantined.
quarantined=$(list_entries tests/quarantine.txt | cut -f1)
{
  echo "# Flake table: $rounds rounds of ctest${*:+ $*}"
  echo
  echo "$(date -u +%Y-%m-%d), $(hostname), $(nproc) CPUs, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')," \
    "CI=${CI:-unset}, uid $(id -u). Each test once per round, no retry."
  echo
  echo "| test | failed | of runs | failed in rounds | quarantined |"
  echo "|---|---:|---:|---|---|"
  cat "$out"/run-*.tsv | q=$quarantined awk -F'\t' '
    BEGIN { n = split(ENVIRON["q"], names, "\n"); for (k = 1; k <= n; k++) quarantined[names[k]] = 1 }
    $2 == "passed" || $2 == "failed" { runs[$3]++ }
    $2 == "failed" { failed[$3]++; rounds[$3] = rounds[$3] (rounds[$3] == "" ? "" : " ") $1 }
    END { for (t in failed) printf "| `%s` | %d | %d | %s | %s |\n", t, failed[t], runs[t], rounds[t], (t in quarantined ? "yes" : "") }' |
    sort -t'|' -k3,3nr -k2,2
  tests=$(cat "$out"/run-*.tsv | cut -f3 | sort -u | wc -l)
  flaky=$(cat "$out"/run-*.tsv | awk -F'\t' '$2 == "failed" { print $3 }' | sort -u | wc -l)
  echo
  echo "$flaky of $tests tests failed at least once."
} >"$out/table.md"
cat "$out/table.md"
echo
echo "written: $out/table.md"
