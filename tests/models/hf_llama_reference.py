"""Hugging Face transformers' LlamaForCausalLM as the reference for gradsweep's `llama` plugin.

Loads the parameters of a gradsweep checkpoint (rank 0's model.pt) into LlamaForCausalLM built with the
same sizes, computes the loss of the step's batch (sliced as gradsweep's loader does, bench/gpt2_eager.py's
Shard) over the real vocabulary, and prints {"transformers": loss} as JSON. The padding rows of the token
matrices are cut off; transformers has no masked padding.

usage: hf_llama_reference.py MODEL_PT SHARD STEP BATCH SEQ SIZES_JSON
"""
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
from gpt2_eager import Shard  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402


def main(model_pt, shard_path, step, batch, seq, sizes_json):
    sizes = json.loads(sizes_json)
    vocab = sizes["vocab_size"]
    archive = torch.jit.load(model_pt)
    params = {n[len("param/"):]: p.detach() for n, p in archive.named_parameters() if n.startswith("param/")}
    config = LlamaConfig(vocab_size=vocab, hidden_size=sizes["n_embd"], intermediate_size=sizes["intermediate_size"],
                         num_hidden_layers=sizes["n_layer"], num_attention_heads=sizes["n_head"],
                         num_key_value_heads=sizes["n_kv_head"], max_position_embeddings=sizes["block_size"],
                         rms_norm_eps=sizes["norm_eps"], rope_theta=sizes["rope_theta"],
                         tie_word_embeddings=sizes["tie_embeddings"], attention_bias=False, mlp_bias=False)
    model = LlamaForCausalLM(config).eval()
    state = {}
    for name, tensor in params.items():
        if name in ("embed_tokens.weight", "lm_head.weight"):
            tensor = tensor[:vocab]
        state[name if name == "lm_head.weight" else "model." + name] = tensor
    result = model.load_state_dict(state, strict=not sizes["tie_embeddings"])
    if result.unexpected_keys:
        raise SystemExit(f"unexpected parameters: {result.unexpected_keys}")
    x, y = Shard(shard_path).batch(int(step), int(batch), int(seq))
    with torch.no_grad():
        logits = model(x).logits.float()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1)).item()
    print(json.dumps({"transformers": loss}))


if __name__ == "__main__":
    main(*sys.argv[1:])
