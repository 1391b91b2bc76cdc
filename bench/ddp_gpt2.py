#!/usr/bin/env python3
"""GPT-2 data-parallel training with PyTorch DDP (gloo): the reference side of scripts/bench_strategies.sh.

The model, initialisation, data slicing, optimizer, clipping and schedule are bench/gpt2_eager.py's (imported,
so they are the ones checked against gradsweep's `single`); this adds what a PyTorch user adds for data
parallelism: torch.distributed with the gloo backend and DistributedDataParallel with its defaults
(bucket_cap_mb 25, broadcast of rank 0's parameters) plus gradient_as_bucket_view=True. Each rank trains on
its share of the global batch exactly as host/data/batch_loader.cpp slices it (rank r owns sequences
[r*G/W, (r+1)*G/W), cut into micro-batches), so it runs the same optimizer steps on the same tokens as
`mpirun -np W gradsweep train` with `ring`.

Launch it like gradsweep, with mpirun (the rank and size come from OMPI_COMM_WORLD_RANK/SIZE; torchrun's
RANK/WORLD_SIZE also work):

  mpirun -np 2 --oversubscribe --bind-to none .venv/bin/python bench/ddp_gpt2.py \
      --init-method file:///tmp/ddp.rendezvous --preset gpt2-small-cpu --vocab 257 --data train.bin

Steps are timed as gradsweep's trainer times them, on rank 0: wall time from zero_grad through the optimizer
step; step 0 is a warm-up and is left out. tokens/s is the whole job's: global batch tokens / rank 0's step
time. The per-step loss is the mean over micro-batches and ranks (as gradsweep's metrics), gathered once
after the last step so that no extra collective lands inside the timed steps. Rank 0 prints one JSON line
(the fields of gpt2_eager.py's, plus world_size and DDP's settings); --out also writes the per-step records.
"""
import argparse
import contextlib
import datetime
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_eager  # noqa: E402  (the directory above is not a package)


class TrainingLoss(nn.Module):
    # DDP hooks into forward(): wrap the model so that forward() is the training loss, as a user would.
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        return self.model.loss(x, y)


def launcher_rank_and_size():
    for rank_key, size_key in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("RANK", "WORLD_SIZE")):
        if rank_key in os.environ and size_key in os.environ:
            return int(os.environ[rank_key]), int(os.environ[size_key])
    return 0, 1


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    gpt2_eager.add_arguments(ap)
    ap.add_argument("--micro-batch", type=int, default=0,
                    help="sequences per rank per forward/backward; 0 = batch_size / ranks (gradsweep's default)")
    ap.add_argument("--init-method", default="env://",
                    help="torch.distributed rendezvous: file:///PATH (a fresh file per job) or tcp://127.0.0.1:PORT")
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP's bucket size (its default: 25)")
    ap.add_argument("--no-bucket-view", action="store_true", help="gradient_as_bucket_view=False")
    ap.add_argument("--timeout-s", type=float, default=300.0, help="collective timeout (a dead rank ends the job)")
    return gpt2_eager.check_arguments(ap, ap.parse_args(argv))


def main(argv):
    args = parse_args(argv)
    rank, world = launcher_rank_and_size()
    G, T = args.batch_size, args.seq_len
    micro = args.micro_batch or G // world
    if G % (micro * world):
        print(f"ddp_gpt2: batch {G} is not a multiple of micro-batch x ranks = {micro} x {world}", file=sys.stderr)
        return 2
    micro_steps = G // (micro * world)
    # All ranks are on this host: without this gloo resolves the hostname, which may not reach 127.0.0.1.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method=args.init_method, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout_s))

    model = gpt2_eager.build_model(args)  # every rank seeds alike; DDP broadcasts rank 0's weights anyway
    if model is None:
        return 3
    params = sum(p.numel() for p in model.parameters())
    shard = gpt2_eager.open_shard(args)
    ddp = nn.parallel.DistributedDataParallel(TrainingLoss(model), bucket_cap_mb=args.bucket_cap_mb,
                                              gradient_as_bucket_view=not args.no_bucket_view)
    opt = gpt2_eager.make_optimizer(model, args)
    all_params = list(model.parameters())

    tokens_per_step = G * T  # the whole job's: every rank's share of the global batch
    ddp.train()
    records = []
    clock = time.perf_counter
    for step in range(args.steps):
        t_start = clock()
        opt.zero_grad()
        t_data = t_forward = t_backward = 0.0
        loss_sum = 0.0
        for m in range(micro_steps):
            t0 = clock()
            x, y = shard.batch(step, G, T, rank, world, micro, m)
            t_data += clock() - t0
            t0 = clock()
            # Gradient accumulation: only the last micro-batch's backward allreduces (DDP's no_sync).
            context = ddp.no_sync() if m + 1 < micro_steps else contextlib.nullcontext()
            with context:
                loss = ddp(x, y)
                loss_sum += loss.item()
                t_forward += clock() - t0
                t0 = clock()
                (loss / micro_steps).backward()  # DDP averages over ranks during this backward
                t_backward += clock() - t0
        t0 = clock()
        grad_norm, lr = gpt2_eager.clip_and_step(opt, all_params, step, args)
        t_end = clock()
        step_time = t_end - t_start
        records.append({"step": step, "loss": loss_sum / micro_steps, "lr": lr, "grad_norm": grad_norm,
                        "tokens_per_sec": tokens_per_step / step_time,
                        "time_s": {"step": step_time, "data": t_data, "forward": t_forward,
                                   "backward": t_backward, "update": t_end - t0}})

    # After the timed steps: every rank's losses and step times, for the mean loss and the spread.
    local = torch.tensor([[r["loss"] for r in records], [r["time_s"]["step"] for r in records]], dtype=torch.float64)
    gathered = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(gathered, local)
    for i, r in enumerate(records):
        r["rank_loss"] = r["loss"]
        r["loss"] = sum(float(g[0, i]) for g in gathered) / world
        r["ranks"] = {"step_time_s": [float(g[1, i]) for g in gathered]}
    if not all(math.isfinite(r["loss"]) for r in records):
        print("ddp_gpt2: the loss diverged", file=sys.stderr)
        return 1
    dist.barrier()
    dist.destroy_process_group()
    if rank != 0:
        return 0
    n_layer, n_head, n_embd, block_size, vocab = args.sizes
    result = {
        "framework": "pytorch-ddp",
        "backend": "gloo",
        "torch_version": torch.__version__,
        "world_size": world,
        "threads": torch.get_num_threads(),
        "bucket_cap_mb": args.bucket_cap_mb,
        "gradient_as_bucket_view": not args.no_bucket_view,
        "model": {"n_layer": n_layer, "n_head": n_head, "n_embd": n_embd, "block_size": block_size,
                  "vocab_size": vocab},
        "batch_size": G,
        "micro_batch": micro,
        "seq_len": T,
        "params": params,
        **gpt2_eager.summarize(records, tokens_per_step),
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
