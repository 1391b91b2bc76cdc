#!/usr/bin/env bash
# Installs everything gradsweep needs to build, test and run, on a fresh Debian 12 machine:
#   - Debian packages (compiler, CMake, Open MPI, yaml-cpp, spdlog, Boost, GoogleTest, CLI11, JSON, Slurm, ...);
#   - a project-local Python environment, .venv (GRADSWEEP_VENV overrides), with the pinned packages of
#     scripts/requirements.txt: the torch wheel, whose LibTorch (with CUDA) and NCCL the build links, the
#     benchmark peers, and GPT-2's BPE files.
# Idempotent: present packages are skipped; safe to run again. The first run downloads about 4 GB of wheels
# (pip keeps them in its cache, so a second clone's .venv installs from there).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  ccache                                      # repeated builds (CI, worktrees, clean clones) reuse objects
  python3 python3-venv                        # the .venv that holds the torch wheel (LibTorch)
  libopenmpi-dev openmpi-bin                  # launch, bootstrap, CPU collectives
  libyaml-cpp-dev libspdlog-dev libfmt-dev
  libboost-dev libboost-filesystem-dev        # Boost.DLL
  libgtest-dev libcli11-dev nlohmann-json3-dev
  libpcre2-dev                                # Hugging Face tokenizer.json patterns (\p{L}, \p{N}) in prepare
  libprotobuf-dev protobuf-compiler           # TensorBoard event files (host/tensorboard: TensorBoard's .proto)
  libcurl4-openssl-dev                        # MLflow tracking over its REST API (host/tracking)
  clang-format-14                             # scripts/format.sh: the tree's .clang-format (version 14)
  clang-14 libclang-rt-14-dev                 # tests/fuzz: libFuzzer (-fsanitize=fuzzer) over the config parsers
  gnuplot-nox                                 # plots in reports
  libjs-chart.js                              # report.html's charts: Chart.js, compiled into gradsweep
  chromium                                    # the report page test loads report.html headless
  fortunes                                    # the quickstart corpus: real English text
  slurm-wlm munge                             # a real local Slurm for the Slurm tests (slurmctld, slurmd, clients)
  slurm-wlm-basic-plugins libpmix-dev         # srun --mpi=pmix: mpi_pmix.so dlopens libpmix.so (in the -dev package)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} Debian packages present"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Python environment. The python3 first on PATH makes it (a pyenv or conda python works as well as
# Debian's); pip skips what is already installed at the pinned version. It lives outside the clone, one
# per torch pin, and .venv links to it: every clone then builds against the same paths (ccache reuses
# their objects), and the libraries stay readable by other users when a clone's folder is private (the
# tests run gradsweep as `nobody`). Only the torch pin names it: the build embeds the venv's path, so a
# new test reference installs into the same venv instead of moving it and rebuilding everything.
pins=$(grep -E '^torch==' scripts/requirements.txt | sha256sum | cut -c1-12)
shared=${GRADSWEEP_CACHE:-/var/cache/gradsweep}
mkdir -p "$shared" 2>/dev/null && [ -w "$shared" ] || shared=$HOME/.cache/gradsweep
venv=${GRADSWEEP_VENV:-$shared/venv-$pins}
if [ -L .venv ] || [ ! -e .venv ]; then
  mkdir -p "$venv" && ln -sfn "$venv" .venv
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" || /usr/bin/python3 -m venv "$venv"
fi
if ! "$venv/bin/pip" install -q --disable-pip-version-check -r scripts/requirements.txt; then
  echo "install-deps: pip could not install scripts/requirements.txt into $venv" >&2
  exit 1
fi
"$venv/bin/python" - <<'PY'
import torch
print(f"install-deps: torch {torch.__version__} (CUDA {torch.version.cuda}, NCCL "
      f"{'.'.join(map(str, torch.cuda.nccl.version()))}) in {torch.utils.cmake_prefix_path}")
PY
