#!/usr/bin/python3
"""Runs the torchrun DDP script that `memplan export --to pytorch` writes for a --parallel ddp
plan, as one rank (world size 1, gloo, CPU), on the torch twin of tests/fixtures/ci_check/mlp.onnx,
and checks that what runs is what was planned:

  * GPUS, NODES, MICRO_BATCH, ACCUMULATION_STEPS are the plan's, BUCKET_CAP_MB is DDP's default
    25 (the plan's bucket) and the model is wrapped in DistributedDataParallel with that bucket
    cap (bucket_bytes_cap = 25 MiB) and gradient_as_bucket_view=False;
  * gradients are all-reduced once per optimizer step, not per micro-batch (no_sync on all but
    the last micro-batch of an accumulation): a communication hook counts the bucket reductions;
  * the DistributedSampler hands the rank MICRO_BATCH samples per micro-batch, one optimizer
    (and scheduler) step per ACCUMULATION_STEPS micro-batches, and the weights move.

usage: run_torchrun_ddp.py PLAN.json EXPORTED_SCRIPT.py   (Debian's python3-torch 1.13 suffices)
This validates the script on one process; it is not a multi-GPU run.
"""

import json
import os
import socket
import sys

import torch
from torch.utils.data import DataLoader

from exported_script import Mlp, load_exported, train_mlp

OPTIMIZER_STEPS = 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    plan = json.load(open(sys.argv[1]))["plan"]
    script = load_exported(sys.argv[2], "exported_script")
    assert plan["parallel"] == "ddp", plan["parallel"]
    assert script.GPUS == plan["gpus"] == 1, (script.GPUS, plan["gpus"])
    assert script.NODES == plan["nodes"] == 1
    assert script.MICRO_BATCH == plan["micro_batch"], (script.MICRO_BATCH, plan["micro_batch"])
    assert script.ACCUMULATION_STEPS == plan["accumulation_steps"]
    assert script.ACCUMULATION_STEPS > 1, "the test plan must accumulate"
    assert script.BUCKET_CAP_MB == 25 and script.GRADIENT_AS_BUCKET_VIEW is False

    # One rank, as torchrun would describe it.
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
                       "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"})
    script.LEARNING_RATE = 0.05

    reductions = []
    wrapped = []
    shard_model = script.shard_model

    def counting_shard_model(model, device):
        ddp = shard_model(model, device)
        wrapped.append(ddp)

        def hook(state, bucket):
            reductions.append(bucket.buffer().numel())
            future = torch.futures.Future()
            future.set_result(bucket.buffer())
            return future

        ddp.register_comm_hook(None, hook)
        return ddp

    script.shard_model = counting_shard_model
    # Loader workers in the test process only slow it down.
    script.DataLoader = lambda *args, **kwargs: DataLoader(*args, **{**kwargs, "num_workers": 0})

    torch.manual_seed(0)
    model = Mlp()
    micro_batches = train_mlp(script, model, OPTIMIZER_STEPS)

    ddp = wrapped[0]
    assert isinstance(ddp, torch.nn.parallel.DistributedDataParallel)
    assert ddp.bucket_bytes_cap == 25 * 1024 * 1024, ddp.bucket_bytes_cap
    assert ddp.gradient_as_bucket_view is False
    # 16*32 + 32 + 32*4 + 4 = 676 gradient elements fit one bucket: one reduction per step.
    assert reductions == [676] * OPTIMIZER_STEPS, reductions
    print(f"PASS {plan['precision']}: {micro_batches} micro-batches of {script.MICRO_BATCH}, "
          f"{OPTIMIZER_STEPS} optimizer steps, {len(reductions)} all-reduces")


if __name__ == "__main__":
    main()
