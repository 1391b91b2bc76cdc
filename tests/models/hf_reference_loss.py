"""Hugging Face transformers as the reference for `gradsweep export --format hf` and `model.init_from`.

Loads a model directory with AutoModelForCausalLM.from_pretrained (config.json, model.safetensors),
computes the mean cross-entropy of one step's batch (sliced as gradsweep's loader does: bench/gpt2_eager.py's
Shard) and prints {"loss": ..., "architecture": ...} as JSON. With LOGITS_OUT, also writes the batch's
inputs and transformers' logits there (safetensors: "input_ids", "logits").

usage: hf_reference_loss.py MODEL_DIR SHARD STEP BATCH SEQ [LOGITS_OUT]
"""
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
from gpt2_eager import Shard  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402


def main(model_dir, shard_path, step, batch, seq, logits_out=None):
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    x, y = Shard(shard_path).batch(int(step), int(batch), int(seq))
    with torch.no_grad():
        logits = model(x).logits.float()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1)).item()
    if logits_out:
        save_file({"input_ids": x.contiguous(), "logits": logits.contiguous()}, logits_out)
    print(json.dumps({"loss": loss, "architecture": type(model).__name__}))


if __name__ == "__main__":
    main(*sys.argv[1:])
