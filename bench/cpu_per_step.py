#!/usr/bin/env python3
"""CPU time per training step, gradsweep vs PyTorch eager: a lower-noise companion to bench_single.sh.

On a shared machine a step's wall time includes the time the process waited for a core. This probe runs
each side twice, with S1 and S2 steps (same config as scripts/bench_single.sh), and takes the difference
of the process's CPU time (user+sys, getrusage of the child) and wall time: (X(S2) - X(S1)) / (S2 - S1)
is the cost of one steady-state step with start-up, the final eval and the checkpoint cancelled out.
Rounds alternate which side runs first. CPU time still moves with cache and SMT contention, and it would
hide time a process spends blocked (neither side blocks at one thread), so read it next to the wall-time
ratio of bench_single.sh, not instead of it.

Usage: bench/cpu_per_step.py [--presets gpt2-tiny,gpt2-small-cpu] [--rounds 3] [--s1 5] [--s2 25]
                             [--threads 1] [--batch-size 16] [--out runs/bench-cpu]
Standard library only; run from the repository root.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

PRESET_SIZES = {"gpt2-124m": 1024, "gpt2-bai-100m": 512, "gpt2-small-cpu": 128, "gpt2-tiny": 64}  # block_size
HYPER = {"lr": "2e-3", "min_lr": "2e-4", "warmup_steps": "5", "weight_decay": "0.1", "grad_clip": "1.0", "seed": "1234"}


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, log, env):
    c0, w0 = child_cpu(), time.perf_counter()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
    if rc != 0:
        sys.exit(f"cpu_per_step: {' '.join(cmd)} failed (rc {rc}); see {log}")
    return child_cpu() - c0, time.perf_counter() - w0


def commands(a, preset, steps, out_dir):
    block = PRESET_SIZES[preset]
    T = min(a.seq_len, block)
    data = os.path.abspath(a.data)
    gs = [a.gradsweep, "train", "bench/gpt2_single.yaml", "--out", os.path.join(out_dir, "gradsweep"), "--fresh"]
    for k, v in [("model.preset", preset), ("model.vocab_size", a.vocab), ("model.block_size", block),
                 ("data.train", f"{data}/train.bin"), ("data.val", f"{data}/val.bin"), ("train.steps", steps),
                 ("train.batch_size", a.batch_size), ("train.seq_len", T), ("runtime.threads", a.threads)] + \
            [(f"train.{k}", v) for k, v in HYPER.items()]:
        gs += ["--set", f"{k}={v}"]
    pt = [a.python, "bench/gpt2_eager.py", "--preset", preset, "--vocab", str(a.vocab), "--block-size", str(block),
          "--batch-size", str(a.batch_size), "--seq-len", str(T), "--steps", str(steps), "--threads", str(a.threads),
          "--data", f"{data}/train.bin", "--lr", HYPER["lr"], "--min-lr", HYPER["min_lr"],
          "--warmup-steps", HYPER["warmup_steps"], "--weight-decay", HYPER["weight_decay"],
          "--grad-clip", HYPER["grad_clip"], "--seed", HYPER["seed"], "--out", os.path.join(out_dir, "pytorch.json")]
    return {"gradsweep": gs, "pytorch": pt}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", default="gpt2-tiny,gpt2-small-cpu")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--s1", type=int, default=5)
    ap.add_argument("--s2", type=int, default=25)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=257)
    ap.add_argument("--data", default="data/fortunes-byte")
    ap.add_argument("--gradsweep", default=os.environ.get("GRADSWEEP", "build/gradsweep"))
    ap.add_argument("--python", default=os.environ.get("PYTHON", ".venv/bin/python"))
    ap.add_argument("--out", default="runs/bench-cpu")
    a = ap.parse_args()
    if a.s2 <= a.s1 or a.s1 < 2:
        ap.error("need 2 <= s1 < s2")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", str(a.threads)))
    lines = [f"CPU and wall time per step by differencing {a.s2} and {a.s1} steps; threads {a.threads} "
             f"(OPENBLAS_NUM_THREADS={env['OPENBLAS_NUM_THREADS']}), batch {a.batch_size}; {a.rounds} rounds, "
             f"alternating order; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", ""]
    results = {}
    for preset in a.presets.split(","):
        per = {"gradsweep": {"cpu": [], "wall": []}, "pytorch": {"cpu": [], "wall": []}}
        for r in range(1, a.rounds + 1):
            order = ["gradsweep", "pytorch"] if r % 2 else ["pytorch", "gradsweep"]
            for side in order:
                x = {}
                for steps in (a.s1, a.s2):
                    d = os.path.join(a.out, preset, f"round{r}", f"{side}-{steps}")
                    os.makedirs(d, exist_ok=True)
                    x[steps] = run(commands(a, preset, steps, d)[side], os.path.join(d, "log.txt"), env)
                n = a.s2 - a.s1
                per[side]["cpu"].append((x[a.s2][0] - x[a.s1][0]) / n)
                per[side]["wall"].append((x[a.s2][1] - x[a.s1][1]) / n)
                print(f"[cpu_per_step] {preset} round {r} {side}: cpu {per[side]['cpu'][-1] * 1e3:.1f} ms/step, "
                      f"wall {per[side]['wall'][-1] * 1e3:.1f} ms/step", file=sys.stderr)
        med = {s: {k: statistics.median(v) for k, v in d.items()} for s, d in per.items()}
        results[preset] = {"per_round": per, "median": med,
                           "ratio_cpu": med["pytorch"]["cpu"] / med["gradsweep"]["cpu"],
                           "ratio_wall": med["pytorch"]["wall"] / med["gradsweep"]["wall"]}
        lines += [f"## {preset}", "", "| round | gradsweep CPU ms/step | PyTorch CPU ms/step | ratio (tok/s basis) | "
                  "gradsweep wall ms/step | PyTorch wall ms/step |", "|---|---|---|---|---|---|"]
        for i in range(a.rounds):
            g, p = per["gradsweep"], per["pytorch"]
            lines.append(f"| {i + 1} | {g['cpu'][i] * 1e3:.1f} | {p['cpu'][i] * 1e3:.1f} | {p['cpu'][i] / g['cpu'][i]:.3f} | "
                         f"{g['wall'][i] * 1e3:.1f} | {p['wall'][i] * 1e3:.1f} |")
        lines += [f"| **median** | **{med['gradsweep']['cpu'] * 1e3:.1f}** | **{med['pytorch']['cpu'] * 1e3:.1f}** | "
                  f"**{results[preset]['ratio_cpu']:.3f}** | {med['gradsweep']['wall'] * 1e3:.1f} | "
                  f"{med['pytorch']['wall'] * 1e3:.1f} |", "",
                  f"gradsweep/PyTorch throughput on CPU time: **{results[preset]['ratio_cpu']:.3f}**; "
                  f"on wall time (incl. the run's non-step work per step): {results[preset]['ratio_wall']:.3f}", ""]
    text = "\n".join(lines)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
