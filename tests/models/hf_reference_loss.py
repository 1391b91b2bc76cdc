"""Hugging Face transformers as the reference for `gradsweep export --format hf`.

Loads an exported directory with AutoModelForCausalLM.from_pretrained (config.json, model.safetensors),
computes the mean cross-entropy of one step's batch (sliced as gradsweep's loader does: bench/gpt2_eager.py's
Shard) and prints {"loss": ..., "architecture": ...} as JSON.

usage: hf_reference_loss.py EXPORT_DIR SHARD STEP BATCH SEQ
"""
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
from gpt2_eager import Shard  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402


def main(export_dir, shard_path, step, batch, seq):
    model = AutoModelForCausalLM.from_pretrained(export_dir, torch_dtype=torch.float32).eval()
    x, y = Shard(shard_path).batch(int(step), int(batch), int(seq))
    with torch.no_grad():
        logits = model(x).logits.float()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1)).item()
    print(json.dumps({"loss": loss, "architecture": type(model).__name__}))


if __name__ == "__main__":
    main(*sys.argv[1:])
