#!/usr/bin/env python3
"""Tabulates a scripts/bench_single.sh run: per-round and median tokens/s of gradsweep and PyTorch eager,
their ratio, the losses after the same steps, and where the step time goes in each.

Usage: bench_report.py OUT_DIR   (reads OUT_DIR/<preset>/round<r>/..., writes OUT_DIR/report.md and
OUT_DIR/results.json, prints the markdown on stdout). Standard library only.
"""
import json
import os
import statistics
import sys

PHASES = ("data", "forward", "backward", "update")
# Same seed, init order, data and LibTorch: the first steps' losses agree to float rounding (~1e-6; later
# steps drift apart slowly, ~1e-3 after a few hundred steps, because the clipping norm is summed in double
# by gradsweep and in float by PyTorch). A gap in the first steps means the two sides do not train the
# same model (e.g. build/ holds a plugin built from other sources than bench/gpt2_eager.py mirrors, or
# the data changed in between): the throughput ratio is then not like for like.
EARLY_STEPS = 5
LOSS_MISMATCH = 1e-4


def median_step_tps(records):
    # Step 0 is the warm-up in both (gradsweep leaves it out of summary.json too).
    return statistics.median(r["tokens_per_sec"] for r in records[1:])


def load_round(path):
    gs_dir = os.path.join(path, "gradsweep")
    with open(os.path.join(gs_dir, "summary.json")) as f:
        gs_summary = json.load(f)
    with open(os.path.join(gs_dir, "metrics.jsonl")) as f:
        gs_records = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(path, "pytorch.json")) as f:
        pt = json.load(f)
    with open(os.path.join(path, "round.json")) as f:
        meta = json.load(f)
    if gs_summary["params"] != pt["params"]:
        sys.exit(f"{path}: PARAMETER COUNT MISMATCH: gradsweep {gs_summary['params']} != PyTorch {pt['params']}")
    n = len(gs_records) - 1
    # summary.json's time_split_s has no "other": zero_grad (begin_step) and the strategy's bookkeeping
    # lie inside the step but outside the four phases; show them as the remainder, for both.
    gs_split = {k: gs_summary["time_split_s"][k] for k in PHASES}
    gs_split["other"] = gs_summary["step_time_s"] - sum(gs_split.values())
    pt_split = {k: pt["time_split_s"][k] for k in PHASES}
    pt_split["other"] = pt["step_time_s"] - sum(pt_split.values())
    losses_gs = [r["loss"] for r in gs_records]
    losses_pt = [r["loss"] for r in pt["records"]]
    common = min(len(losses_gs), len(losses_pt))
    return {
        "round": meta["round"],
        "order": meta["order"],
        "load_avg_1m": meta.get("load_avg_1m"),
        "gradsweep": {
            "tokens_per_sec_median": median_step_tps(gs_records),
            "tokens_per_sec_mean": gs_summary["tokens_per_sec"],
            "step_time_s": gs_summary["step_time_s"],
            "time_split_s": gs_split,
            "measured_steps": gs_summary["measured_steps"] if "measured_steps" in gs_summary else n,
            "params": gs_summary["params"],
            "final_train_loss": gs_summary["final_train_loss"],
            "threads": gs_summary.get("threads_per_rank"),
        },
        "pytorch": {
            "tokens_per_sec_median": pt["tokens_per_sec_median"],
            "tokens_per_sec_mean": pt["tokens_per_sec_mean"],
            "step_time_s": pt["step_time_s"],
            "time_split_s": pt_split,
            "measured_steps": pt["measured_steps"],
            "params": pt["params"],
            "final_train_loss": pt["final_train_loss"],
            "threads": pt["threads"],
        },
        "max_abs_loss_diff": max(abs(a - b) for a, b in zip(losses_gs[:common], losses_pt[:common])),
        "early_abs_loss_diff": max(abs(a - b) for a, b in zip(losses_gs[:EARLY_STEPS], losses_pt[:EARLY_STEPS])),
        "loss_steps_compared": common,
    }


def fmt(x, digits=0):
    return f"{x:,.{digits}f}"


def report(out_dir):
    with open(os.path.join(out_dir, "run.json")) as f:
        run = json.load(f)
    lines = [f"# gradsweep vs PyTorch eager, single rank ({run['date']})", "",
             f"Command: `{run['command']}`", "",
             f"Host {run['host']}, {run['cores']} cores; threads {run['threads']} "
             f"(OPENBLAS_NUM_THREADS={run['openblas_threads'] or 'unset'}); batch {run['batch_size']}, "
             f"{run['steps']} steps per run (step 0 = warm-up, not measured), {run['rounds']} rounds, "
             f"alternating which framework runs first; torch {run['torch_version']}; "
             f"gradsweep {run.get('gradsweep', 'build/gradsweep')} (binary+gpt2 plugin sha256 {run['gradsweep_sha256'][:12]}), "
             f"train.bin sha256 {run.get('train_bin_sha256', '?')[:12]}.", ""]
    results = {"run": run, "presets": {}}
    for preset in run["presets"]:
        pdir = os.path.join(out_dir, preset["name"])
        rounds = [load_round(os.path.join(pdir, f"round{r}")) for r in range(1, run["rounds"] + 1)
                  if os.path.exists(os.path.join(pdir, f"round{r}", "pytorch.json"))]
        if not rounds:
            continue
        med = lambda side, key: statistics.median(r[side][key] for r in rounds)
        gs_med, pt_med = med("gradsweep", "tokens_per_sec_median"), med("pytorch", "tokens_per_sec_median")
        gs_mean, pt_mean = med("gradsweep", "tokens_per_sec_mean"), med("pytorch", "tokens_per_sec_mean")
        ratio = gs_med / pt_med
        per_round_ratios = [r["gradsweep"]["tokens_per_sec_median"] / r["pytorch"]["tokens_per_sec_median"] for r in rounds]
        p = rounds[0]
        lines += [f"## {preset['name']} (n_layer {preset['n_layer']}, n_head {preset['n_head']}, n_embd {preset['n_embd']}, "
                  f"block_size {preset['block_size']}, vocab {preset['vocab']}; {p['gradsweep']['params']:,} params; "
                  f"batch {run['batch_size']} x seq {preset['seq_len']} = {run['batch_size'] * preset['seq_len']:,} tokens/step)", "",
                  "Tokens/s: the median over the measured steps of one run (in brackets: tokens per step / mean step time, "
                  "summary.json's definition).", "",
                  f"| round | first | load (1m) | gradsweep tok/s | PyTorch tok/s | ratio | gradsweep loss | PyTorch loss | loss diff, first {EARLY_STEPS} steps / all |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r, rr in zip(rounds, per_round_ratios):
            g, t = r["gradsweep"], r["pytorch"]
            lines.append(f"| {r['round']} | {r['order'].split(',')[0]} | {r.get('load_avg_1m') or ''} | "
                         f"{fmt(g['tokens_per_sec_median'])} ({fmt(g['tokens_per_sec_mean'])}) | "
                         f"{fmt(t['tokens_per_sec_median'])} ({fmt(t['tokens_per_sec_mean'])}) | {rr:.3f} | "
                         f"{g['final_train_loss']:.4f} | {t['final_train_loss']:.4f} | {r['early_abs_loss_diff']:.1e} / "
                         f"{r['max_abs_loss_diff']:.1e}{' (MISMATCH)' if r['early_abs_loss_diff'] > LOSS_MISMATCH else ''} |")
        lines.append(f"| **median** | | | **{fmt(gs_med)}** ({fmt(gs_mean)}) | **{fmt(pt_med)}** ({fmt(pt_mean)}) | "
                     f"**{ratio:.3f}** | {med('gradsweep', 'final_train_loss'):.4f} | {med('pytorch', 'final_train_loss'):.4f} | |")
        bad = [r["round"] for r in rounds if r["early_abs_loss_diff"] > LOSS_MISMATCH]
        if bad:
            lines += ["", f"WARNING: in round(s) {', '.join(map(str, bad))} the losses of the first {EARLY_STEPS} steps "
                      f"differ by more than {LOSS_MISMATCH:g}: the two sides did not train the same model (was the gpt2 plugin in build/ "
                      "rebuilt from different sources?); treat those rounds' ratios as suspect."]
        lines += ["", f"**ratio median(gradsweep) / median(PyTorch) = {ratio:.3f}** "
                  f"(mean-based: {gs_mean / pt_mean:.3f}; per-round ratios {', '.join(f'{x:.3f}' for x in per_round_ratios)}, "
                  f"their median {statistics.median(per_round_ratios):.3f}); "
                  f"round 1 losses after step {p['loss_steps_compared'] - 1}: gradsweep {p['gradsweep']['final_train_loss']:.6f}, "
                  f"PyTorch {p['pytorch']['final_train_loss']:.6f}.", "",
                  "Mean time per measured step (ms), median over rounds; `other` = step time minus the four phases "
                  "(zero_grad and bookkeeping):", "",
                  "| phase | gradsweep | PyTorch | gradsweep - PyTorch |", "|---|---|---|---|"]
        split = {}
        for phase in PHASES + ("other",):
            g = statistics.median(r["gradsweep"]["time_split_s"][phase] for r in rounds) * 1e3
            t = statistics.median(r["pytorch"]["time_split_s"][phase] for r in rounds) * 1e3
            split[phase] = {"gradsweep_ms": g, "pytorch_ms": t}
            lines.append(f"| {phase} | {g:.2f} | {t:.2f} | {g - t:+.2f} |")
        g = med("gradsweep", "step_time_s") * 1e3
        t = med("pytorch", "step_time_s") * 1e3
        lines += [f"| **step** | **{g:.2f}** | **{t:.2f}** | **{g - t:+.2f}** |", ""]
        results["presets"][preset["name"]] = {
            "preset": preset, "rounds": rounds,
            "gradsweep_tokens_per_sec_median": gs_med, "pytorch_tokens_per_sec_median": pt_med,
            "ratio": ratio, "ratio_mean_based": gs_mean / pt_mean, "per_round_ratios": per_round_ratios,
            "median_per_round_ratio": statistics.median(per_round_ratios),
            "time_split_ms": split}
    text = "\n".join(lines)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    print(text)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    report(sys.argv[1])
