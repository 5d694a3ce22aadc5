#!/usr/bin/python3
"""Runs the plain-PyTorch loop that `memplan export --to pytorch` wrote, on CPU, on the torch twin
of tests/fixtures/ci_check/mlp.onnx, and checks that what runs is what was planned:

  * MICRO_BATCH, ACCUMULATION_STEPS and the checkpointed modules are exactly the plan's (the
    module of every node in plan.recompute: "/fc1/MatMul" -> fc1);
  * no learning rate is invented: LEARNING_RATE is None and make_optimizer refuses to run until
    it is set;
  * every checkpointed module really is recomputed: its forward runs twice per micro-batch (once
    in forward, once in backward);
  * autocast runs on the device train() was given: under a bf16 (fp16, where CPU autocast has
    float16: torch 2.x) plan on CPU the modules compute in bfloat16 (float16); an autocast
    hard-coded to "cuda" is disabled on a CPU and computes in float32;
  * one optimizer (and scheduler) step per ACCUMULATION_STEPS micro-batches, and the weights move.

usage: run_exported_loop.py PLAN.json EXPORTED_LOOP.py   (Debian's python3-torch 1.13 suffices)
"""

import json
import sys

import torch

from exported_script import Mlp, load_exported, train_mlp

OPTIMIZER_STEPS = 3  # the dataset holds this many optimizer steps' worth of samples


def main():
    plan = json.load(open(sys.argv[1]))["plan"]
    loop = load_exported(sys.argv[2], "exported_loop")
    precision = plan["precision"]

    assert loop.MICRO_BATCH == plan["micro_batch"], (loop.MICRO_BATCH, plan["micro_batch"])
    assert loop.ACCUMULATION_STEPS == plan["accumulation_steps"]
    planned = sorted({node.split("/")[1] for node in plan["recompute"]})
    assert planned, "the test plan must recompute something"
    assert sorted(loop.CHECKPOINTED_MODULES) == planned, (loop.CHECKPOINTED_MODULES, planned)

    torch.manual_seed(0)
    model = Mlp()
    assert loop.LEARNING_RATE is None, "the export invented a learning rate"
    try:
        loop.make_optimizer(model.parameters())
        raise AssertionError("make_optimizer ran without a learning rate")
    except ValueError as error:
        assert "LEARNING_RATE" in str(error), error
    loop.LEARNING_RATE = 0.05

    # Count each planned module's forward calls and the dtype it computes in. Installed before
    # train() so enable_recompute wraps the counting forward, as it would the module's own.
    # Entries are counted before the forward runs: torch >= 2.1's non-reentrant checkpoint stops
    # the recomputation as soon as the tensors backward needs are recomputed (early stop), so a
    # recomputed forward may never return.
    calls = {name: [] for name in planned}
    entries = {name: 0 for name in planned}
    for name in planned:
        module = model.get_submodule(name)

        def counting_forward(*args, _forward=module.forward, _name=name, **kwargs):
            entries[_name] += 1
            out = _forward(*args, **kwargs)
            calls[_name].append(out.dtype)
            return out

        module.forward = counting_forward

    micro_batches = train_mlp(loop, model, OPTIMIZER_STEPS, device="cpu")
    expected_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16,
                      "fp16": torch.float16}[precision]
    for name, dtypes in calls.items():
        assert entries[name] == 2 * micro_batches, (name, entries[name], 2 * micro_batches)
        assert len(dtypes) >= micro_batches, (name, len(dtypes), micro_batches)
        assert set(dtypes) == {expected_dtype}, (name, set(dtypes), expected_dtype)
    print(f"PASS {precision}: {micro_batches} micro-batches of {loop.MICRO_BATCH}, "
          f"{OPTIMIZER_STEPS} optimizer steps, recomputed {planned}")


if __name__ == "__main__":
    main()
