#!/usr/bin/env bash
# The GPU check, in one go (sized for under 8 minutes on one H200):
#   1. build gradsweep against the machine's PyTorch wheel (LibTorch 2.x + CUDA), with the Debian
#      libraries it lacks unpacked from gpu-debs/ (see fetch-debs.sh);
#   2. train GPT-2 124M on the GPU with `single` in fp32 and in bf16 autocast and print tokens/s and MFU.
# Output goes to $OUT (or ./gpu-out) and to stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-out}
mkdir -p "$out"
exec > >(tee "$out/gpu_check.log") 2>&1

prefix=$PWD/gpu-prefix
if [ -d gpu-debs ]; then
  mkdir -p "$prefix"
  for d in gpu-debs/*.deb; do dpkg -x "$d" "$prefix"; done
fi
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRADSWEEP_BUILD_TESTS=OFF \
  "-DCMAKE_PREFIX_PATH=$torch_prefix;$prefix/usr;$prefix/usr/lib/x86_64-linux-gnu/cmake" \
  -DCMAKE_CUDA_COMPILER=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cmake --build build-gpu -j "$(nproc)"
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}

# Data: byte-level text is enough to time GPT-2 124M (the vocabulary is 50257 rows either way).
data=$out/data
if [ -d /usr/share/games/fortunes ]; then src=/usr/share/games/fortunes; else src=README.md; fi
./build-gpu/gradsweep prepare --tokenizer byte --input "$src" docs --out "$data"

for precision in fp32 bf16; do
  ./build-gpu/gradsweep train experiments/gpu/gpt2_124m.yaml --out "$out/gpt2-124m-$precision" --fresh \
    --set data.train="$PWD/$data/train.bin" --set data.val="$PWD/$data/val.bin" \
    --set strategy.precision=$precision
done
python3 - "$out" <<'PY'
import json, sys, pathlib
for p in sorted(pathlib.Path(sys.argv[1]).glob("gpt2-124m-*/summary.json")):
    s = json.loads(p.read_text())
    print(f"{p.parent.name}: {s['tokens_per_sec']:.0f} tokens/s, MFU {s['mfu']:.3f} "
          f"(peak {s['peak_flops_per_rank']:.3g} FLOP/s), step {s['step_time_s']*1e3:.1f} ms, loss {s['final_train_loss']:.3f}")
PY
