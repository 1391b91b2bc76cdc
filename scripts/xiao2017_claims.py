#!/usr/bin/env python3
"""The Xiao et al. (2017) claims, checked against a finished `gradsweep run experiments/xiao2017.yaml`.

Reads DIR/results.csv (and each cell's metrics.jsonl for the sampled strategy's byte counters) and prints
a markdown table per rank count plus the four comparisons of docs/measurements/xiao2017.md:
  bytes sent per step, sampled vs dense on the same transport (all ranks summed; and the dense-equivalent
  payload the sampled strategy reports);
  time to the same tokens at the largest rank count, sampled over ps async vs ps async (tokens/s ratio:
  every cell processes the same steps x global batch);
  one rank, sampled vs single;
  validation perplexity (full softmax) of sampled vs dense ring, same tokens.
Usage: scripts/xiao2017_claims.py runs/xiao2017
"""
import csv
import json
import math
import sys
from pathlib import Path


def sent_per_step(row):
    return sum(float(x) for x in row["bytes_sent_per_step_by_rank"].split(";") if x)


def plugin_metric(cell_dir, name):
    values = []
    with open(cell_dir / "metrics.jsonl") as f:
        for line in f:
            plugin = json.loads(line).get("plugin", {})
            if name in plugin:
                values.append(plugin[name])
    return sum(values) / len(values) if values else math.nan


def main(out_dir):
    out = Path(out_dir)
    rows = [r for r in csv.DictReader(open(out / "results.csv")) if r["status"] == "ok"]
    cells = {}
    for r in rows:
        key = (r["strategy"], int(r["world_size"]))
        cells[key] = r
        r["_sent"] = sent_per_step(r)
        if r["strategy"].startswith("sampled"):
            d = out / "cells" / r["id"]
            r["_payload"] = plugin_metric(d, "gradient_bytes")
            r["_dense_payload"] = plugin_metric(d, "dense_gradient_bytes")
            r["_rows"] = plugin_metric(d, "exchanged_rows")

    print("| strategy | ranks | tokens/s | step s | val loss | val ppl | MB sent/step (all ranks) | gradient payload MB (dense-equivalent) | rows scored |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (strategy, ranks), r in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        payload, rows_scored = "", ""
        if "_payload" in r:
            payload = f"{r['_payload'] / 1e6:.2f} ({r['_dense_payload'] / 1e6:.2f})"
            rows_scored = f"{r['_rows']:.0f}"
        print(f"| {strategy} | {ranks} | {float(r['tokens_per_sec']):,.0f} | {float(r['step_time_s']):.3f} | "
              f"{float(r['val_loss']):.4f} | {float(r['val_ppl']):.1f} | {r['_sent'] / 1e6:.2f} | {payload} | "
              f"{rows_scored} |")

    def find(prefix, ranks):
        for (strategy, n), r in cells.items():
            if n == ranks and (strategy == prefix or strategy.startswith(prefix + "(")):
                yield strategy, r

    def one(prefix, ranks, must=""):
        for strategy, r in find(prefix, ranks):
            if must in strategy:
                return r
        return None

    top = max(n for _, n in cells)
    print()
    print("| claim | measured | goal |")
    print("|---|---|---|")
    for ranks in sorted({n for _, n in cells if n > 1}):
        for transport, dense in (("transport=ps", one("ps", ranks)), ("transport=ring", one("ring", ranks))):
            sampled = one("sampled", ranks, transport)
            if sampled and dense:
                print(f"| bytes sent per step, {ranks} ranks, dense {dense['strategy']} / sampled {transport} | "
                      f"{dense['_sent'] / sampled['_sent']:.2f}x (payload vs its dense equivalent "
                      f"{sampled['_dense_payload'] / sampled['_payload']:.2f}x) | >= 5x |")
    ps, sampled_ps = one("ps", top), one("sampled", top, "transport=ps")
    if ps and sampled_ps:
        print(f"| speed at {top} ranks, sampled over ps async / ps async (same tokens) | "
              f"{float(sampled_ps['tokens_per_sec']) / float(ps['tokens_per_sec']):.2f}x | >= 2.1x (paper: 2.1x) |")
    single = one("single", 1)
    for transport in ("transport=ps", "transport=ring"):
        s1 = one("sampled", 1, transport)
        if single and s1:
            print(f"| speed on one rank, sampled {transport} / single | "
                  f"{float(s1['tokens_per_sec']) / float(single['tokens_per_sec']):.2f}x | >= 1.3x |")
    def perplexity(ranks, s, dense):
        if s and dense:
            print(f"| val perplexity, {ranks} ranks, {s['strategy']} vs {dense['strategy']} | "
                  f"{float(s['val_ppl']):.1f} vs {float(dense['val_ppl']):.1f} "
                  f"({100 * (float(s['val_ppl']) / float(dense['val_ppl']) - 1):+.2f}%) | within 2% |")

    for ranks in sorted({n for _, n in cells}):
        ring = one("ring", ranks) or (single if ranks == 1 else None)
        for transport in ("transport=ps", "transport=ring"):
            perplexity(ranks, one("sampled", ranks, transport), ring)
        if ranks > 1:  # the asynchronous pair: the same update rule, dense and sampled
            perplexity(ranks, one("sampled", ranks, "transport=ps"), one("ps", ranks))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/xiao2017")
