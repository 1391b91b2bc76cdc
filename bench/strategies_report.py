#!/usr/bin/env python3
"""Tabulates a scripts/bench_strategies.sh run: per rank count, the median tokens/s of every variant (gradsweep
strategies, PyTorch DDP, the no-communication ceiling), their ratios to the ceiling and to DDP, where rank 0's
step time goes (against the ceiling's processes, which do the same per-rank work without communicating), and
the communication counters of the gradsweep strategies.

Usage: strategies_report.py OUT_DIR   (reads OUT_DIR/run.json and OUT_DIR/np<N>/round<r>/<variant>/, writes
OUT_DIR/report.md and OUT_DIR/results.json, prints the markdown). Standard library only. Never fails on a ratio;
a variant that failed or is missing in a round is left out of that round's figures and counted.
"""
import glob
import json
import os
import statistics
import sys

PHASES = ("data", "forward", "backward", "update")
GOALS = {"ddp": 1.1, "ceiling": 0.95}  # the goals for `ring`: >= 1.1x DDP, >= 0.95x the ceiling
# Every variant but the ceiling trains the same model on the same global batch: the first steps' losses agree
# to float rounding (allreduce order aside). A larger gap means they do not train the same thing.
EARLY_STEPS = 5
LOSS_MISMATCH = 1e-3


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def mean(xs):
    xs = list(xs)
    return statistics.fmean(xs) if xs else float("nan")


def load_gradsweep(d):
    with open(os.path.join(d, "summary.json")) as f:
        s = json.load(f)
    recs = read_jsonl(os.path.join(d, "metrics.jsonl"))
    measured = recs[1:]  # step 0 is the warm-up, as in summary.json
    split = {k: s["time_split_s"][k] for k in PHASES}
    # overlap is null on steps without communication (single).
    comm = {k: mean(r["comm"][k] for r in measured if r.get("comm", {}).get(k) is not None)
            for k in ("busy_s", "blocked_s", "overlap")}
    return {
        "tokens_per_sec_median": statistics.median(r["tokens_per_sec"] for r in measured),
        "tokens_per_sec_mean": s["tokens_per_sec"],
        "step_time_s": s["step_time_s"],
        "time_split_s": split,
        "comm_s": s["time_split_s"].get("comm", 0.0),
        "comm": comm,
        "bytes_sent_per_step": s.get("bytes_sent_per_step", 0.0),
        "world_size": s.get("world_size"),
        "threads": s.get("threads_per_rank"),
        "params": s["params"],
        "losses": [r["loss"] for r in recs],
        "final_train_loss": s["final_train_loss"],
    }


def load_ddp(d):
    with open(os.path.join(d, "ddp.json")) as f:
        p = json.load(f)
    return {
        "tokens_per_sec_median": p["tokens_per_sec_median"],
        "tokens_per_sec_mean": p["tokens_per_sec_mean"],
        "step_time_s": p["step_time_s"],
        "time_split_s": dict(p["time_split_s"]),
        "world_size": p["world_size"],
        "threads": p["threads"],
        "params": p["params"],
        "losses": [r["loss"] for r in p["records"]],
        "final_train_loss": p["final_train_loss"],
    }


def load_ceiling(d):
    procs = [load_gradsweep(p) for p in sorted(glob.glob(os.path.join(d, "proc*"))) if os.path.isdir(p)]
    if not procs:
        raise FileNotFoundError(d)
    # The job that would not communicate: its throughput is the sum of the processes'; a "step" of it is
    # the processes' mean step (each did the work of one rank).
    return {
        "tokens_per_sec_median": sum(p["tokens_per_sec_median"] for p in procs),
        "tokens_per_sec_mean": sum(p["tokens_per_sec_mean"] for p in procs),
        "step_time_s": mean(p["step_time_s"] for p in procs),
        "time_split_s": {k: mean(p["time_split_s"][k] for p in procs) for k in PHASES},
        "processes": len(procs),
        "process_tokens_per_sec": [p["tokens_per_sec_median"] for p in procs],
        "threads": procs[0]["threads"],
        "params": procs[0]["params"],
        "losses": None,  # another model: each process trains alone on a smaller batch
        "final_train_loss": mean(p["final_train_loss"] for p in procs),
    }


def load_variant(d, name):
    if os.path.exists(d + ".failed"):
        return None
    try:
        if name == "ddp":
            return load_ddp(d)
        if name == "ceiling":
            return load_ceiling(d)
        return load_gradsweep(d)
    except (OSError, KeyError, ValueError, statistics.StatisticsError):
        return None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def f0(x):
    return "–" if x is None else f"{x:,.0f}"


def f3(x):
    return "–" if x is None else f"{x:.3f}"


def ms(x):
    return "–" if x is None else f"{x * 1e3:.1f}"


def summarize_n(out_dir, run, n):
    variants = run["variants"]
    rounds = []
    for r in range(1, run["rounds"] + 1):
        rdir = os.path.join(out_dir, f"np{n}", f"round{r}")
        if not os.path.isdir(rdir):
            continue
        meta = {"round": r}
        if os.path.exists(os.path.join(rdir, "round.json")):
            with open(os.path.join(rdir, "round.json")) as f:
                meta = json.load(f)
        meta["runs"] = {v["name"]: load_variant(os.path.join(rdir, v["dir"]), v["name"]) for v in variants}
        meta["failed"] = [v["name"] for v in variants if os.path.exists(os.path.join(rdir, v["dir"]) + ".failed")]
        rounds.append(meta)
    per_variant = {}
    for v in variants:
        name = v["name"]
        runs = [rd["runs"][name] for rd in rounds if rd["runs"][name] is not None]
        entry = {"rounds_ok": len(runs), "rounds": len(rounds)}
        if runs:
            entry.update({
                "tokens_per_sec_median": med(x["tokens_per_sec_median"] for x in runs),
                "tokens_per_sec_mean": med(x["tokens_per_sec_mean"] for x in runs),
                "step_time_s": med(x["step_time_s"] for x in runs),
                "time_split_s": {k: med(x["time_split_s"][k] for x in runs) for k in PHASES},
                "final_train_loss": med(x["final_train_loss"] for x in runs),
            })
            if "comm" in runs[0]:
                entry["comm"] = {k: med(x["comm"][k] for x in runs) for k in ("busy_s", "blocked_s", "overlap")}
                entry["bytes_sent_per_step"] = med(x["bytes_sent_per_step"] for x in runs)
        per_variant[name] = entry

    def ratio(a, b):
        ta = per_variant.get(a, {}).get("tokens_per_sec_median")
        tb = per_variant.get(b, {}).get("tokens_per_sec_median")
        return ta / tb if ta and tb else None

    def round_ratios(a, b):
        out = []
        for rd in rounds:
            x, y = rd["runs"].get(a), rd["runs"].get(b)
            if x and y:
                out.append(x["tokens_per_sec_median"] / y["tokens_per_sec_median"])
        return out

    for name, entry in per_variant.items():
        entry["vs_ceiling"] = ratio(name, "ceiling")
        entry["vs_ddp"] = ratio(name, "ddp")
        entry["per_round_vs_ceiling"] = round_ratios(name, "ceiling")
        entry["per_round_vs_ddp"] = round_ratios(name, "ddp")

    # Loss agreement with the first gradsweep variant (normally ring), per round.
    reference = next((v["name"] for v in variants if v["name"] not in ("ddp", "ceiling")), None)
    mismatches = []
    for rd in rounds:
        ref = rd["runs"].get(reference) if reference else None
        if not ref:
            continue
        for name, x in rd["runs"].items():
            if x and x["losses"] and name != reference:
                k = min(EARLY_STEPS, len(x["losses"]), len(ref["losses"]))
                diff = max(abs(a - b) for a, b in zip(x["losses"][:k], ref["losses"][:k]))
                per_variant[name].setdefault("early_loss_diff_vs_" + reference, []).append(diff)
                if diff > LOSS_MISMATCH:
                    mismatches.append((rd["round"], name, diff))
    return rounds, per_variant, mismatches


def report(out_dir):
    with open(os.path.join(out_dir, "run.json")) as f:
        run = json.load(f)
    names = [v["name"] for v in run["variants"]]
    lines = [f"# Strategy throughput ({run['date']})", "", f"Command: `{run['command']}`", "",
             f"Host {run['host']}, {run['cores']} cores; {run['preset']} (vocab {run['vocab']}, block {run['block_size']}), "
             f"global batch {run['batch_size']} x seq {run['seq_len']} = {run['batch_size'] * run['seq_len']:,} tokens/step, "
             f"micro-batch {run['micro_batch'] or 'batch / ranks'}; {run['threads']} thread(s) per rank "
             f"(OPENBLAS_NUM_THREADS={run['openblas_threads'] or 'unset'}); {run['steps']} steps per run (step 0 = warm-up); "
             f"{run['rounds']} rounds, order alternating; torch {run['torch_version']}; {run.get('mpirun', '')}; "
             f"gradsweep {run['gradsweep']} (binary + plugins sha256 {run['gradsweep_sha256'][:12]}).", "",
             "tokens/s of a run: the whole job's (global batch tokens / rank 0's step time), median over the measured "
             "steps (in brackets: tokens per step / mean step time). The ceiling: the sum over its independent "
             "processes. Per variant: the median over rounds; ratios are of those medians (per-round ratios in the JSON).", ""]
    results = {"run": run, "ranks": {}}
    for n in run["ranks"]:
        rounds, pv, mismatches = summarize_n(out_dir, run, n)
        if not rounds:
            continue
        lines += [f"## {n} ranks", "",
                  "| variant | tok/s | / ceiling | / DDP | step ms | forward | backward | update | comm busy | blocked | overlap | MB sent/step | final loss | rounds |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for name in names:
            e = pv[name]
            if not e.get("tokens_per_sec_median"):
                lines.append(f"| {name} | no result | | | | | | | | | | | | 0/{e['rounds']} |")
                continue
            c = e.get("comm")
            sp = e["time_split_s"]
            comm_cells = (f"{ms(c['busy_s'])} | {ms(c['blocked_s'])} | {f3(c['overlap'])} | "
                          f"{e['bytes_sent_per_step'] / 1e6:.2f}") if c else " | | | "
            lines.append(
                f"| {name} | **{f0(e['tokens_per_sec_median'])}** ({f0(e['tokens_per_sec_mean'])}) | {f3(e['vs_ceiling'])} | "
                f"{f3(e['vs_ddp'])} | {ms(e['step_time_s'])} | {ms(sp['forward'])} | {ms(sp['backward'])} | "
                f"{ms(sp['update'])} | {comm_cells} | {e['final_train_loss']:.4f} | {e['rounds_ok']}/{e['rounds']} |")
        lines += ["", "Phases: rank 0's mean per measured step, ms (for the ceiling: its processes' mean; DDP's allreduce "
                  "waits land in backward, gradsweep's in update). comm busy/blocked: mean seconds per step inside "
                  "communicator calls / waiting on them; overlap: the fraction of communication hidden behind compute.", ""]
        head = "| round | order | load (1m) | " + " | ".join(names) + " |"
        lines += ["Per round, tok/s:", "", head, "|" + "---|" * (3 + len(names))]
        for rd in rounds:
            cells = [f0(rd["runs"][x]["tokens_per_sec_median"]) if rd["runs"][x]
                     else ("failed" if x in rd["failed"] else "–") for x in names]
            lines.append(f"| {rd['round']} | {rd.get('order', '').split(' ')[0]} first | {rd.get('load_avg_1m', '')} | "
                         + " | ".join(cells) + " |")
        lines.append("")
        if "ring" in pv:
            ring = pv["ring"]
            for other, goal in GOALS.items():
                if other not in pv:
                    continue
                r = ring.get("vs_" + other)
                per = ring.get("per_round_vs_" + other, [])
                verdict = "–" if r is None else ("goal met" if r >= goal else "goal missed")
                lines.append(f"- **ring / {'DDP' if other == 'ddp' else 'ceiling'} = {f3(r)}** (goal >= {goal}: {verdict}; "
                             f"per round {', '.join(f3(x) for x in per) or '–'}, their median {f3(med(per))})")
            lines.append("")
        for rnd, name, diff in mismatches:
            lines.append(f"WARNING: round {rnd}: {name}'s first {EARLY_STEPS} losses differ from the reference by {diff:.1e}: "
                         "not the same training; its ratio is suspect.")
        if mismatches:
            lines.append("")
        results["ranks"][str(n)] = {"variants": pv, "rounds": [
            {k: v for k, v in rd.items() if k != "runs"} | {"tokens_per_sec": {
                x: (rd["runs"][x]["tokens_per_sec_median"] if rd["runs"][x] else None) for x in names}}
            for rd in rounds]}
    text = "\n".join(lines)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=lambda o: None)
        f.write("\n")
    print(text)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    report(sys.argv[1])
