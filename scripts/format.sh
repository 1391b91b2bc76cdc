#!/usr/bin/env bash
# Formats gradsweep's C++ sources with clang-format and the tree's .clang-format (docs/development.md).
#   scripts/format.sh            rewrites every tracked .cpp/.hpp/.h file in place
#   scripts/format.sh --check    lists the files that differ from their formatted selves; exits 1 if any do
#   scripts/format.sh FILE...    only these files (with or without --check); files that are not C++ are skipped
# Exits 77 (ctest's skip code here) when clang-format is not installed. Version 14 (Debian 12) is the one
# the tree is formatted with: other versions break some lines differently.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
files=()
for a in "$@"; do
  if [ "$a" = "--check" ]; then check=1; else files+=("$a"); fi
done
tool=""
for t in clang-format-14 clang-format; do
  if command -v "$t" >/dev/null; then tool=$t; break; fi
done
if [ -z "$tool" ]; then
  echo "format: clang-format not found (scripts/install-deps.sh installs clang-format-14); skipped"
  exit 77
fi
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
fi
# Only C++ sources: clang-format would rewrite a README or a CMakeLists.txt given by mistake (as in
# `scripts/format.sh $(git diff --name-only)`), so other files are named and left alone.
cxx=()
for f in "${files[@]}"; do
  case "$f" in
    *.cpp | *.hpp | *.h | *.cu | *.cuh) cxx+=("$f") ;;
    *) echo "format: $f is not a C++ source; left alone" >&2 ;;
  esac
done
files=("${cxx[@]}")
[ ${#files[@]} -eq 0 ] && { echo "format: no C++ sources given"; exit 0; }

if [ $check -eq 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 "$tool" -i --style=file
  exit 0
fi
differ=0
for f in "${files[@]}"; do
  if ! "$tool" --style=file "$f" | cmp -s - "$f"; then
    echo "$f"
    differ=$((differ + 1))
  fi
done
if [ $differ -gt 0 ]; then
  echo "format: $differ of ${#files[@]} files differ from .clang-format ($tool); scripts/format.sh fixes them" >&2
  exit 1
fi
echo "format: ${#files[@]} files follow .clang-format ($tool)"
