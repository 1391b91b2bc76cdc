#!/usr/bin/env bash
# The README's test command: set up everything, build, and run the whole test suite, each test once.
#   1. every test not in tests/quarantine.txt, once: any failure fails the script (no retry, so that an
#      intermittent failure shows up instead of passing on its second try);
#   2. the quarantined tests, once, apart: their results are printed under their own heading, and do not
#      fail the script;
#   3. every skipped or disabled test is listed with its reason; under CI (CI=true) as root, one that is not
#      in tests/allowed_skips.txt fails the script (CI's machine has everything the tests need).
# A part of the suite: ctest directly (docs/howto/run-tests.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
source scripts/test_lib.sh

results=$PWD/build/Testing/gradsweep  # ctest's JUnit files of this run
rm -rf "$results" && mkdir -p "$results"
ctest_args=(--test-dir build --output-on-failure -j "$(nproc)" --timeout 900)
quarantine=$(list_entries tests/quarantine.txt | cut -f1 | names_regex)

# 1. Everything not quarantined, once.
main_rc=0
ctest "${ctest_args[@]}" ${quarantine:+-E "$quarantine"} --output-junit "$results/main.xml" || main_rc=$?
# Its JUnit file is what the summary and the skip check read: without one, the run fails.
main=""
if [ -f "$results/main.xml" ]; then
  main=$(junit_results "$results/main.xml")
else
  echo "error: ctest wrote no $results/main.xml"
  main_rc=1
fi

# 2. The quarantined tests, once; their result is reported, not counted.
if [ -n "$quarantine" ]; then
  echo
  echo "=== Quarantined tests (tests/quarantine.txt): run once, reported, not counted ==="
  ctest "${ctest_args[@]}" -R "$quarantine" --output-junit "$results/quarantined.xml" || true
  quarantined=""
  if [ -f "$results/quarantined.xml" ]; then quarantined=$(junit_results "$results/quarantined.xml"); fi
  echo
  echo "Quarantined tests:"
  # Each entry with its result in this run; "absent" when ctest has no such test (a stale or misspelt entry).
  list_entries tests/quarantine.txt | res=$quarantined awk -F'\t' '
    BEGIN { n = split(ENVIRON["res"], lines, "\n"); for (i = 1; i <= n; i++) { split(lines[i], f, "\t"); got[f[2]] = f[1] } }
    { printf "  %-8s %s  (%s)\n", ($1 in got ? got[$1] : "absent"), $1, $2 }'
fi

# 3. Skips. A skip is never silent: each is listed with the reason the test printed.
skipped=$(printf '%s\n' "$main" | awk -F'\t' '$1 == "skipped" || $1 == "disabled"')
allowed=$(list_entries tests/allowed_skips.txt | cut -f1)
skip_rc=0
if [ -n "$skipped" ]; then
  echo
  echo "Skipped or disabled tests ($(printf '%s\n' "$skipped" | wc -l)):"
  printf '%s\n' "$skipped" | awk -F'\t' '{ printf "  %-8s %s: %s\n", $1, $2, $3 }'
  if [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ]; then
    unexpected=$(printf '%s\n' "$skipped" | cut -f2 | grep -vxF -f <(printf '%s\n' "$allowed") || true)
    if [ -n "$unexpected" ]; then
      echo
      echo "error: under CI as root these tests must run, not skip (tests/allowed_skips.txt lists the only"
      echo "tests whose skip is legitimate on every machine):"
      printf '%s\n' "$unexpected" | sed 's/^/  /'
      skip_rc=1
    fi
  fi
fi

echo
counts=$(printf '%s\n' "$main" | awk -F'\t' 'NF { c[$1]++ } END { printf "%d passed, %d failed, %d skipped, %d disabled",
  c["passed"], c["failed"], c["skipped"], c["disabled"] }')
echo "Tests not quarantined: $counts (ctest exit status $main_rc)"
[ "$main_rc" = 0 ] && [ "$skip_rc" = 0 ]
