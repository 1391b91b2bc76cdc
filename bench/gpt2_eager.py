#!/usr/bin/env python3
"""GPT-2 training in PyTorch eager: the reference side of scripts/bench_single.sh.

The same network, initialisation, data slicing, optimizer, clipping and learning-rate schedule as
gradsweep's `gpt2` model plugin under the `single` strategy (plugins/models/gpt2/, sdk optimizer.hpp,
host/train/lr_schedule.hpp, host/data/batch_loader.hpp), written the way a PyTorch user would write it,
so that `gradsweep train` and this script can be timed side by side on the same shapes, batch, data and
threads. Each step is timed like gradsweep's trainer times it: wall time from zero_grad through the
optimizer step (data, forward incl. loss.item(), backward, clip, update); the first step is a warm-up
and is left out of the statistics, as gradsweep leaves it out of summary.json.

Prints one JSON line on stdout (tokens_per_sec median over steps and mean, params, final loss, per-phase
mean times); --out FILE also writes it with the per-step records.

Run with the project's interpreter (.venv/bin/python): its torch wheel is the LibTorch gradsweep links against.

Also a module: bench/ddp_gpt2.py imports the model, data slicing, optimizer and step statistics from here.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# plugins/models/gpt2/gpt2_config.cpp: (n_layer, n_head, n_embd, block_size, vocab_size)
PRESETS = {
    "gpt2-124m": (12, 12, 768, 1024, 50257),
    "gpt2-bai-100m": (12, 12, 768, 512, 26679),
    "gpt2-small-cpu": (4, 4, 128, 128, 50257),
    "gpt2-mid-cpu": (6, 8, 256, 128, 50257),
    "gpt2-big-cpu": (10, 8, 512, 128, 50257),
    "gpt2-tiny": (2, 2, 64, 64, 256),
}

SHARD_MAGIC = 20240520
SHARD_VERSION = 1
SHARD_HEADER_BYTES = 1024


# ----------------------------------------------------------------------------------------------- model
# Module and attribute order mirrors the C++ registration order, so named_parameters() lists the same
# names in the same order ("h.0.attn.c_attn.weight", ...) and the seeded generator is consumed in the same
# sequence (Linear/Embedding default init at construction, then GPT-2 init in parameter order).


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = dropout
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B,nh,T,hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        # As a PyTorch 2.x user writes it, and as gradsweep's default (model.attention: fused).
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_dropout if self.training else 0.0,
                                           is_causal=True)  # (B,nh,T,hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Mlp(nn.Module):
    def __init__(self, n_embd, dropout):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = Mlp(n_embd, dropout)

    def forward(self, x):
        h = x + self.attn(self.ln_1(x))
        return h + self.mlp(self.ln_2(h))


class Gpt2(nn.Module):
    def __init__(self, n_layer, n_head, n_embd, block_size, vocab_size, dropout=0.0, vocab_multiple=1):
        super().__init__()
        self.vocab_size = vocab_size
        # Rows rounded up to vocab_multiple, as gradsweep's model.vocab_multiple (nanoGPT's 50304); the
        # padding rows start at zero and their logits are masked, so they never train.
        padded = -(-vocab_size // vocab_multiple) * vocab_multiple
        # From empty memory, as gradsweep makes it: nn.Embedding's own draw would shift every later one.
        self.wte = nn.Embedding(padded, n_embd, _weight=torch.empty(padded, n_embd))  # also the tied output head
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList([Block(n_embd, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self._init_weights(n_layer)

    @torch.no_grad()
    def _init_weights(self, n_layer):
        # GPT-2: matrices and embeddings N(0, 0.02); residual projections N(0, 0.02/sqrt(2L)); biases 0;
        # LayerNorm gain 1, shift 0. Same rules and order as Gpt2Impl::init_weights.
        std = 0.02
        residual_std = std / math.sqrt(2.0 * n_layer)
        for name, p in self.named_parameters():
            if "ln_" in name:
                p.fill_(1.0) if name.endswith(".weight") else p.zero_()
            elif name.endswith(".bias"):
                p.zero_()
            elif name == "wte.weight":
                p[: self.vocab_size].normal_(0.0, std)
                p[self.vocab_size :].zero_()
            elif name.endswith("c_proj.weight"):
                p.normal_(0.0, residual_std)
            else:
                p.normal_(0.0, std)

    def forward(self, idx):
        T = idx.size(1)
        pos = torch.arange(T, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.ln_f(x)

    def loss(self, idx, targets):
        hidden = self.forward(idx)
        logits = F.linear(hidden, self.wte.weight).float()  # (B,T,Vp), cross-entropy in float32
        logits[..., self.vocab_size :] = float("-inf")
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def formula_params(n_layer, n_embd, block_size, vocab_size, vocab_multiple=1):
    # docs/models.md: Vp*C + block_size*C + n_layer*(12C^2 + 13C) + 2C, Vp = V rounded up to vocab_multiple
    C = n_embd
    padded = -(-vocab_size // vocab_multiple) * vocab_multiple
    return padded * C + block_size * C + n_layer * (12 * C * C + 13 * C) + 2 * C


# ------------------------------------------------------------------------------------------------ data


class Shard:
    """An llm.c token shard, memory-mapped; batches sliced exactly as host/data/batch_loader.cpp does."""

    def __init__(self, path):
        header = np.fromfile(path, dtype=np.int32, count=SHARD_HEADER_BYTES // 4)
        if header.size < 3 or header[0] != SHARD_MAGIC or header[1] != SHARD_VERSION:
            raise SystemExit(f"{path}: not an llm.c token shard (magic/version {header[:2].tolist()})")
        self.count = int(header[2])
        expected = SHARD_HEADER_BYTES + 2 * self.count
        if os.path.getsize(path) != expected:
            raise SystemExit(f"{path}: size {os.path.getsize(path)} != {expected} promised by the header")
        self.tokens = np.memmap(path, dtype=np.uint16, mode="r", offset=SHARD_HEADER_BYTES, shape=(self.count,))
        self.path = path

    def num_batches(self, G, T):
        return (self.count - 1) // (G * T) if self.count > 0 else 0

    def batch(self, step, G, T, rank=0, world=1, micro=None, m=0):
        # Global batch of step s: G consecutive sequences of T tokens from token (s mod num_batches)*G*T;
        # targets are the inputs shifted by one token. Rank r owns sequences [r*G/W, (r+1)*G/W), cut into
        # micro-batches of `micro` (default G/W) in order; this returns micro-batch m of rank r.
        micro = G // world if micro is None else micro
        if G % (micro * world):
            raise SystemExit(f"batch {G} is not a multiple of micro-batch x ranks = {micro} x {world}")
        nb = self.num_batches(G, T)
        if nb == 0:
            raise SystemExit(f"{self.path}: too small for one batch of {G} x {T} tokens")
        first_sequence = rank * (G // world) + m * micro
        start = (step % nb) * G * T + first_sequence * T
        buf = torch.from_numpy(self.tokens[start:start + micro * T + 1].astype(np.int64))
        return buf[:-1].view(micro, T), buf[1:].view(micro, T)


# -------------------------------------------------------------------------------------------- schedule


def learning_rate(step, total_steps, warmup_steps, peak, min_lr):
    # host/train/lr_schedule.hpp
    if step < warmup_steps:
        return peak * (step + 1) / warmup_steps
    decay_steps = total_steps - warmup_steps
    if decay_steps <= 1:
        return peak
    progress = (step - warmup_steps) / (decay_steps - 1)
    return min_lr + 0.5 * (peak - min_lr) * (1.0 + math.cos(math.pi * progress))


# ---------------------------------------------------------------------------------------------- main


def add_arguments(ap):
    """The model, data, batch and optimizer arguments, shared with ddp_gpt2.py."""
    ap.add_argument("--preset", choices=sorted(PRESETS), help="named size; the explicit sizes below override it")
    for key in ("n_layer", "n_head", "n_embd", "block_size", "vocab"):
        ap.add_argument("--" + key.replace("_", "-"), dest=key, type=int)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--vocab-multiple", type=int, default=128, help="pad the embedding's rows (model.vocab_multiple)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--data", required=True, help="training token shard (train.bin)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr", type=float, default=2e-4)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--expect-params", type=int, help="fail (exit 3) unless the model has exactly this many parameters")
    ap.add_argument("--gradsweep-summary", help="gradsweep summary.json whose `params` must equal ours (exit 3 if not)")
    ap.add_argument("--out", help="also write the result, with per-step records, to this JSON file")


def check_arguments(ap, args):
    """Resolves the model sizes into args.sizes and rejects impossible shapes."""
    sizes = list(PRESETS[args.preset]) if args.preset else [None] * 5
    for i, key in enumerate(("n_layer", "n_head", "n_embd", "block_size", "vocab")):
        if getattr(args, key) is not None:
            sizes[i] = getattr(args, key)
        if sizes[i] is None:
            ap.error(f"--{key.replace('_', '-')} is not set and no --preset was given")
        if sizes[i] <= 0:
            ap.error(f"{key} must be positive")
    args.sizes = sizes
    if args.vocab_multiple < 1:
        ap.error("--vocab-multiple must be at least 1")
    if sizes[2] % sizes[1]:
        ap.error("n_embd must be divisible by n_head")
    if args.seq_len > sizes[3]:
        ap.error(f"--seq-len {args.seq_len} exceeds block_size {sizes[3]}")
    if args.steps < 2:
        ap.error("--steps must be at least 2 (the first step is a warm-up)")
    return args


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    return check_arguments(ap, ap.parse_args(argv))


def build_model(args):
    """The seeded model; None after printing why if its parameter count disagrees with a reference."""
    n_layer, n_head, n_embd, block_size, vocab = args.sizes
    torch.manual_seed(args.seed)
    model = Gpt2(n_layer, n_head, n_embd, block_size, vocab, args.dropout, args.vocab_multiple)
    params = sum(p.numel() for p in model.parameters())
    checks = {"formula (docs/models.md)": formula_params(n_layer, n_embd, block_size, vocab, args.vocab_multiple)}
    if args.expect_params is not None:
        checks["--expect-params"] = args.expect_params
    if args.gradsweep_summary:
        with open(args.gradsweep_summary) as f:
            checks["gradsweep summary.json"] = int(json.load(f)["params"])
    for what, n in checks.items():
        print(f"gpt2_eager: params {params} vs {what} {n}", file=sys.stderr)
        if n != params:
            print(f"gpt2_eager: PARAMETER COUNT MISMATCH: pytorch {params} != {what} {n}", file=sys.stderr)
            return None
    return model


def open_shard(args):
    shard = Shard(args.data)
    if int(shard.tokens.max()) >= args.sizes[4]:
        raise SystemExit(f"{args.data}: token id {int(shard.tokens.max())} >= vocab {args.sizes[4]}")
    return shard


def make_optimizer(model, args):
    # As sdk make_optimizer: AdamW, fused, weight decay on matrices (dim >= 2) only.
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps, fused=True)


def clip_and_step(opt, params, step, args):
    """Clip to the global norm, set the step's learning rate, apply; returns (grad_norm, lr)."""
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, args.grad_clip)) if args.grad_clip > 0 else float("nan")
    lr = learning_rate(step, args.steps, args.warmup_steps, args.lr, args.min_lr)
    for group in opt.param_groups:
        group["lr"] = lr
    opt.step()
    return grad_norm, lr


def summarize(records, tokens_per_step):
    """Statistics over the measured steps (step 0 is the warm-up, as in gradsweep's summary)."""
    measured = records[1:]
    mean_time = {k: statistics.fmean(r["time_s"][k] for r in measured)
                 for k in ("step", "data", "forward", "backward", "update")}
    median_tps = statistics.median(r["tokens_per_sec"] for r in measured)
    return {
        "steps": len(records),
        "measured_steps": len(measured),
        "tokens_per_step": tokens_per_step,
        "tokens_per_sec": median_tps,  # = the median below
        "tokens_per_sec_median": median_tps,
        # as gradsweep's summary.json: tokens per step / mean step time over the measured steps
        "tokens_per_sec_mean": tokens_per_step / mean_time["step"],
        "step_time_s": mean_time["step"],
        "time_split_s": {k: v for k, v in mean_time.items() if k != "step"},
    }


def main(argv):
    args = parse_args(argv)
    n_layer, n_head, n_embd, block_size, vocab = args.sizes
    torch.set_num_threads(args.threads)
    model = build_model(args)
    if model is None:
        return 3
    params = sum(p.numel() for p in model.parameters())
    shard = open_shard(args)
    opt = make_optimizer(model, args)
    all_params = list(model.parameters())

    G, T = args.batch_size, args.seq_len
    tokens_per_step = G * T
    model.train()
    records = []
    clock = time.perf_counter
    for step in range(args.steps):
        t_start = clock()
        opt.zero_grad()
        t0 = clock()
        x, y = shard.batch(step, G, T)
        t_data = clock() - t0
        t0 = clock()
        loss = model.loss(x, y)
        loss_value = loss.item()
        t_forward = clock() - t0
        t0 = clock()
        loss.backward()
        t_backward = clock() - t0
        t0 = clock()
        grad_norm, lr = clip_and_step(opt, all_params, step, args)
        t_end = clock()
        step_time = t_end - t_start
        if not math.isfinite(loss_value):
            raise SystemExit(f"step {step}: loss is {loss_value} (diverged)")
        records.append({"step": step, "loss": loss_value, "lr": lr, "grad_norm": grad_norm,
                        "tokens_per_sec": tokens_per_step / step_time,
                        "time_s": {"step": step_time, "data": t_data, "forward": t_forward,
                                   "backward": t_backward, "update": t_end - t0}})

    result = {
        "framework": "pytorch-eager",
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "model": {"n_layer": n_layer, "n_head": n_head, "n_embd": n_embd, "block_size": block_size,
                  "vocab_size": vocab},
        "batch_size": G,
        "seq_len": T,
        "params": params,
        **summarize(records, tokens_per_step),
        "first_loss": records[0]["loss"],
        "final_train_loss": records[-1]["loss"],
    }
    print(json.dumps(result), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(result, records=records), f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
