"""Reads gradsweep's TensorBoard files with TensorBoard's own reader and prints what it found as JSON.

  tensorboard_read.py cell CELL_DIR     every scalar of metrics.jsonl against what EventAccumulator reads from
                                        CELL_DIR/tensorboard, and the HParams session's start and end
  tensorboard_read.py experiment DIR    the HParams plugin's experiment at the top of a sweep's DIR

The tag of a metrics.jsonl number is its top-level key's group (TAG_OF_KEY, docs/results.md#tensorboard)
followed by its nested keys and array indices joined with "/".
"""
import json
import sys

import numpy as np
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.plugins.hparams import api_pb2, metadata

TAG_OF_KEY = {
    "loss": "train/loss", "lr": "train/lr", "grad_norm": "train/grad_norm",
    "update_applied": "train/update_applied", "tokens_per_sec": "throughput/tokens_per_sec",
    "mfu": "throughput/mfu", "time_s": "time", "bytes_sent": "comm/bytes_sent",
    "bytes_received": "comm/bytes_received", "comm": "comm", "peak_rss_mb": "memory/peak_rss_mb",
    "minor_faults": "memory/minor_faults", "val_loss": "val/loss", "val_ppl": "val/ppl",
}


def leaves(tag, value, out):
    if isinstance(value, bool):
        out[tag] = 1.0 if value else 0.0
    elif isinstance(value, (int, float)):
        out[tag] = float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            leaves(tag + "/" + k, v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            leaves(tag + "/" + str(i), v, out)


def expected_scalars(line):
    out = {}
    for key, value in line.items():
        if key != "step":
            leaves(TAG_OF_KEY.get(key, key), value, out)
    return out


def load(path):
    acc = event_accumulator.EventAccumulator(
        path, size_guidance={event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0})
    acc.Reload()
    return acc


def value_json(v):
    kind = v.WhichOneof("kind")
    return {"number_value": v.number_value, "bool_value": v.bool_value, "string_value": v.string_value}.get(kind)


def cell(cell_dir):
    acc = load(cell_dir + "/tensorboard")
    read = {}  # step -> {tag: value}
    for tag in acc.Tags()["scalars"]:
        for event in acc.Scalars(tag):
            read.setdefault(event.step, {})[tag] = event.value
    lines = [json.loads(l) for l in open(cell_dir + "/metrics.jsonl")]
    problems, compared, steps_read = [], 0, 0
    for line in lines:
        if line["step"] not in read:
            continue
        steps_read += 1
        got = read[line["step"]]
        want = expected_scalars(line)
        for tag, value in want.items():
            compared += 1
            if tag not in got:
                problems.append(f"step {line['step']}: {tag} missing")
            elif np.float32(value) != np.float32(got[tag]):
                problems.append(f"step {line['step']}: {tag} {got[tag]!r} != {np.float32(value)!r}")
        for tag in set(got) - set(want):
            problems.append(f"step {line['step']}: {tag} not in metrics.jsonl")
    content = acc.PluginTagToContent(metadata.PLUGIN_NAME)
    start = end = None
    if metadata.SESSION_START_INFO_TAG in content:
        info = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
        start = {k: value_json(v) for k, v in info.hparams.items()}
    if metadata.SESSION_END_INFO_TAG in content:
        info = metadata.parse_session_end_info_plugin_data(content[metadata.SESSION_END_INFO_TAG])
        end = api_pb2.Status.Name(info.status)
    print(json.dumps({"metrics_lines": len(lines), "steps_read": steps_read, "steps_in_events": sorted(read),
                      "compared": compared, "problems": problems[:20], "val_loss_steps":
                      [e.step for e in acc.Scalars("val/loss")] if "val/loss" in acc.Tags()["scalars"] else [],
                      "hparams": start, "session_end": end}))


def experiment(top):
    acc = load(top)
    content = acc.PluginTagToContent(metadata.PLUGIN_NAME)
    exp = metadata.parse_experiment_plugin_data(content[metadata.EXPERIMENT_TAG])
    print(json.dumps({
        "hparams": {h.name: [value_json(v) for v in h.domain_discrete.values] for h in exp.hparam_infos},
        "types": {h.name: api_pb2.DataType.Name(h.type) for h in exp.hparam_infos},
        "metrics": [m.name.tag for m in exp.metric_infos]}))


if __name__ == "__main__":
    {"cell": cell, "experiment": experiment}[sys.argv[1]](sys.argv[2])
