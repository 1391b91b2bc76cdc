#!/usr/bin/env bash
# The GPU check, in one go (sized for well under 8 minutes on one H200), from the repository root:
#   1. build gradsweep with the NCCL backend against the machine's PyTorch wheel (LibTorch 2.x + CUDA)
#      and the wheel's NCCL (nvidia-nccl-cu13), with the Debian libraries the machine lacks unpacked
#      from gpu-debs/ (made by scripts/gpu/fetch-debs.sh; carry it along);
#   2. run the NCCL backend's collectives on one rank (scripts/gpu/nccl_check.cpp);
#   3. train GPT-2 124M (experiments/gpu/gpt2_124m.yaml) on one rank over the NCCL backend with
#      `single` in fp32 and bf16, `ring` (NCCL's own allreduce) in fp32 and `ring-amp` in bf16, and
#      `single` bf16 with dropout 0.1 (keyed dropout), and print tokens/s and MFU of each.
# Everything goes to $OUT (or ./gpu-out): gpu_check.log, the build log, each run's summary.json.
# A failing step says which one; later steps that do not depend on it still run (training needs the build).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
exec > >(tee "$out/gpu_check.log") 2>&1
started=$(date +%s)
failed=()

step() { printf '\n======== [%4ss] %s ========\n' "$(($(date +%s) - started))" "$*"; }
# Runs a named step (a command, or a function exported with export -f) under a time limit; records a
# failure instead of stopping the whole check.
run_step() {
  local name=$1 limit=$2
  shift 2
  step "$name"
  if ! timeout -k 10 "$limit" bash -c '"$@"' step "$@"; then
    echo "!!!!!!!! step failed: $name (an error, or no end within ${limit} s)"
    failed+=("$name")
    return 1
  fi
}

# ---- 0. what this machine has ----------------------------------------------------------------------
step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "nvidia-smi failed"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(), "cxx11abi", torch.compiled_with_cxx11_abi())'
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc_bin" --version | tail -2 || echo "no nvcc at $nvcc_bin"
cmake --version | head -1
nproc

# ---- 1. dependencies: Debian libraries unpacked into a prefix, the wheels' LibTorch and NCCL ---------
step "dependencies"
prefix=$root/gpu-prefix
if compgen -G "gpu-debs/*.deb" >/dev/null; then
  rm -rf "$prefix" && mkdir -p "$prefix"
  for d in gpu-debs/*.deb; do dpkg -x "$d" "$prefix"; done
  echo "unpacked $(ls gpu-debs/*.deb | wc -l) .deb files into $prefix"
else
  echo "no gpu-debs/*.deb: relying on the machine's own yaml-cpp, spdlog, fmt, Boost, CLI11, nlohmann-json, MPI"
fi
libdir=$prefix/usr/lib/x86_64-linux-gnu
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
nccl_root=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || echo /usr/local/cuda)
torch_lib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
cuda_root=$(dirname "$(dirname "$(readlink -f "$nvcc_bin")")")
echo "LibTorch: $torch_prefix"
echo "NCCL:     $nccl_root ($(ls "$nccl_root"/lib/libnccl.so* 2>/dev/null | tr '\n' ' '))"
echo "CUDA:     $cuda_root"

cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DGRADSWEEP_BUILD_TESTS=OFF -DGRADSWEEP_WITH_NCCL=ON
  "-DGRADSWEEP_PYTHON=$(command -v python3)" "-DCMAKE_PREFIX_PATH=$torch_prefix;$prefix/usr;$libdir/cmake"
  "-DNCCL_ROOT=$nccl_root" "-DCUDAToolkit_ROOT=$cuda_root" "-DCMAKE_CUDA_COMPILER=$nvcc_bin")
# Open MPI from the .debs: point FindMPI at the library and headers (its wrapper compiler's paths
# would be Debian's /usr, not the prefix). A machine with its own mpicxx uses that instead.
if ! command -v mpicxx >/dev/null && [ -e "$libdir/openmpi/lib/libmpi.so" ]; then
  cmake_args+=(-DMPI_CXX_SKIP_MPICXX=ON -DMPI_CXX_LIB_NAMES=mpi "-DMPI_mpi_LIBRARY=$libdir/openmpi/lib/libmpi.so"
    "-DMPI_CXX_COMPILER_INCLUDE_DIRS=$libdir/openmpi/include" -DMPI_CXX_COMPILER=MPI_CXX_COMPILER-NOTFOUND)
fi
# The unpacked libraries (and the wheels' CUDA libraries) must be found at link and run time.
export LD_LIBRARY_PATH=$libdir:$torch_lib:$nccl_root/lib:${LD_LIBRARY_PATH:-}
# Steps run in child shells (for their time limits): what they need is exported.
export out
CMAKE_ARGS_LINES=$(printf '%s\n' "${cmake_args[@]}")
export CMAKE_ARGS_LINES

# ---- 2. build ----------------------------------------------------------------------------------------
build() {
  local args
  mapfile -t args <<<"$CMAKE_ARGS_LINES"
  cmake -S . -B build-gpu "${args[@]}" >"$out/cmake-configure.log" 2>&1 ||
    { tail -60 "$out/cmake-configure.log"; return 1; }
  grep -E "NCCL backend|Found (MPI|Torch|CUDA)" "$out/cmake-configure.log" || true
  cmake --build build-gpu -j "$(nproc)" --target gradsweep gradsweep_plugins nccl_check >"$out/build.log" 2>&1 ||
    { grep -E -B2 -A12 "error|FAILED" "$out/build.log" | head -100; return 1; }
  ./build-gpu/gradsweep --version || return 1
  ./build-gpu/gradsweep plugins || return 1
  ldd build-gpu/gradsweep | grep -E "nccl|cudart|torch_cuda|mpi|not found" || true
}
export -f build
if ! run_step "build gradsweep with NCCL" 420 build; then
  step "summary"
  echo "FAILED: ${failed[*]} (see $out/cmake-configure.log, $out/build.log)"
  exit 1
fi

# ---- 3. the NCCL backend on one rank ------------------------------------------------------------------
run_step "NCCL backend collectives (one rank)" 120 ./build-gpu/host/nccl_check || true

# ---- 4. GPT-2 124M, one rank, NCCL backend -------------------------------------------------------------
# Byte-level text is enough to time GPT-2 124M (its 50304-row padded embedding is there either way); the
# repository's own text makes a shard large enough for 16 x 1024-token batches without any download.
src=(README.md docs host sdk plugins)
[ -d /usr/share/games/fortunes ] && src=(/usr/share/games/fortunes "${src[@]}")
run_step "prepare data" 60 ./build-gpu/gradsweep prepare --tokenizer byte --input "${src[@]}" --out "$out/data" || true

# One rank over the NCCL backend, chosen by the configuration key (not the environment) on purpose.
train() {  # name, then --set overrides
  local name=$1
  shift
  ./build-gpu/gradsweep train experiments/gpu/gpt2_124m.yaml --out "$out/$name" --fresh \
    --set data.train="$out/data/train.bin" --set data.val="$out/data/val.bin" --set runtime.comm=nccl "$@" || return 1
  grep -m1 "communicator: nccl" "$out/$name/rank-0.log" || { echo "$name did not run on the NCCL backend"; return 1; }
}
export -f train
# --set strategy={...} replaces the file's whole strategy section (its `precision` is single's option).
run_step "single fp32" 150 train single-fp32 --set 'strategy={name: single, precision: fp32}' || true
# The bf16 run also splits 5 steps by kernel class (metrics.kernel_profile): the issue's GEMM, attention,
# elementwise/norm, optimizer and other.
run_step "single bf16" 120 train single-bf16 --set 'strategy={name: single, precision: bf16}' \
  --set metrics.kernel_profile=5 || true
run_step "ring fp32 (NCCL allreduce)" 150 train ring-fp32 --set 'strategy={name: ring, algorithm: native}' || true
run_step "ring-amp bf16 (NCCL allreduce)" 120 train ring-amp-bf16 \
  --set 'strategy={name: ring-amp, precision: bf16, algorithm: native}' || true
# GPT-2 124M's shape as a Llama (llama-120m: RMSNorm, rotary, SwiGLU, grouped-query attention), bf16.
run_step "llama-120m bf16" 120 train llama-120m-bf16 --set 'strategy={name: single, precision: bf16}' \
  --set 'model={name: llama, preset: llama-120m}' || true
# Dropout keyed by (seed, step, sample) (sdk/sample_dropout.hpp) is integer tensor arithmetic: run it on CUDA.
run_step "single bf16, dropout 0.1 (keyed dropout on CUDA)" 120 train single-bf16-dropout \
  --set 'strategy={name: single, precision: bf16}' --set model.dropout=0.1 || true

# ---- 5. summary --------------------------------------------------------------------------------------
step "summary"
python3 - "$out" <<'PY'
import json, sys, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).glob("*/summary.json")):
    s = json.loads(p.read_text())
    print(f"{p.parent.name:>14}: {s.get('tokens_per_sec', 0):9.0f} tokens/s, MFU {s.get('mfu', 0):.3f} "
          f"(peak {s.get('peak_flops_per_rank', 0):.3g} FLOP/s), step {s.get('step_time_s', 0)*1e3:6.1f} ms, "
          f"loss {s.get('final_train_loss', float('nan')):.3f}, comm {s.get('comm_backend', '?')}, status {s.get('status')}")
    k = s.get("kernel_profile")
    if k:
        busy = k["busy_seconds"] or 1.0
        print(f"{'':>14}  kernels ({k['source']}, {k['steps']} steps), ms per step of {k['step_seconds']*1e3:.1f}: "
              + ", ".join(f"{c} {v*1e3:.1f} ({100*v/busy:.0f}%)" for c, v in k["seconds"].items()))
        for t in k["top"][:8]:
            print(f"{'':>16}{t['seconds']*1e3:8.2f} ms  {t['class']:<16} {t['name'][:90]}")
# Goals (issue 23): 200,000 tokens/s from LibTorch alone, 471,000 (llm.c's per-GPU rate) in the end.
PY
echo "total $(($(date +%s) - started)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "ALL STEPS PASSED"
