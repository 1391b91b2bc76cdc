"""A model directory written by Hugging Face transformers itself, for `model.init_from`'s tests.

Reads the architecture from SOURCE's config.json (a gradsweep export), initialises that model afresh with
transformers' own initialisation (seeded) and writes it with save_pretrained to DEST: weights gradsweep
has never seen, in the files transformers writes.

usage: hf_fresh_model.py SOURCE DEST
"""
import sys

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def main(source, dest):
    torch.manual_seed(7)
    config = AutoConfig.from_pretrained(source)
    AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32).save_pretrained(dest)


if __name__ == "__main__":
    main(*sys.argv[1:])
