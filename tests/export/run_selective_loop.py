#!/usr/bin/python3
"""The exported PyTorch loop of a node-level plan: a torch >= 2.4 selective-checkpoint policy over
the ATen ops of the plan's recomputed nodes, and a whole-module fallback on older torch (issue 16).

usage: run_selective_loop.py KIND PLAN.json LOOP.py
KIND is the --recompute of the plan ("all" or "sqrt"), made with --recompute-unit node on the
BlockNet of run_module_loop.py. Checks:
  * LOOP.py compiles;
  * RECOMPUTED_ATEN_OPS is, per module, the ATen ops of the plan's recomputed nodes, derived here
    by a table of our own; for the "all" plan it is also the literal derived by hand below;
  * recomputes(op, module) answers for real ATen OpOverloads (torch.ops.aten.gelu.default);
  * SELECTIVE_CHECKPOINT is on exactly where torch has CheckpointPolicy (torch >= 2.4);
  * train() runs on CPU: every CHECKPOINTED_MODULES module goes through checkpoint once per
    micro-batch, with a context_fn where the policy exists and without one (the fallback: a
    whole-module checkpoint, all torch 1.13 can do) where it does not; the loss falls.
"""

import collections
import os
import py_compile
import sys

import torch
import torch.nn as nn
import torch.utils.checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_module_loop as blocknet  # noqa: E402  (the model)
from exported_script import load_exported  # noqa: E402

# BlockNet's ONNX op types as torch runs them: nn.Linear on [batch, features] is Gemm (aten.addmm,
# aten.mm without bias), the GELU memplan fuses from Div/Erf/Add/Mul is aten.gelu, the residual
# Add is aten.add.
ATEN = {"Gemm": ["aten.addmm", "aten.mm"], "Gelu": ["aten.gelu"], "Add": ["aten.add"]}
# torch 2.x exports BlockNet with the dynamo exporter, whose node names are the FX graph's
# ("/blocks.2/fc1/node_linear_5" once memplan adds the scopes): the same ops by their FX names.
ATEN.update({"node_linear": ATEN["Gemm"], "node_add": ATEN["Add"]})

# --recompute all recomputes fc1, the GELU and fc2 of every block and the head (not the residual
# Adds, which are the blocks' outputs, nor inp): by hand, each module's ATen ops.
ALL_PLAN_OPS = {
    **{f"blocks.{i}": ["aten.addmm", "aten.mm", "aten.gelu"] for i in range(blocknet.BLOCKS)},
    "head": ["aten.addmm", "aten.mm"],
}


def module_of(node):
    """'/blocks.2/fc1/Gemm' -> 'blocks.2'; '/head/Gemm' -> 'head' (BlockNet's scopes)."""
    return node.split("/")[1]


def op_type(node):
    last = node.rsplit("/", 1)[-1]
    stem, _, suffix = last.rpartition("_")
    return stem if stem and suffix.isdigit() else last


def expected_ops(recompute):
    ops = collections.OrderedDict()
    for node in recompute:
        listed = ops.setdefault(module_of(node), [])
        for op in ATEN[op_type(node)]:
            if op not in listed:
                listed.append(op)
    return dict(ops)


def main(kind, plan_path, loop_path):
    import json
    plan = json.load(open(plan_path))["plan"]
    assert plan["recompute_unit"] == "node", plan["recompute_unit"]
    assert plan["recompute"], "the test plan must recompute something"
    py_compile.compile(loop_path, doraise=True)
    loop = load_exported(loop_path, "exported_loop")

    derived = expected_ops(plan["recompute"])
    assert loop.RECOMPUTED_ATEN_OPS == derived, (loop.RECOMPUTED_ATEN_OPS, derived)
    if kind == "all":
        assert loop.RECOMPUTED_ATEN_OPS == ALL_PLAN_OPS, loop.RECOMPUTED_ATEN_OPS
    assert loop.CHECKPOINTED_MODULES == list(derived), (loop.CHECKPOINTED_MODULES, derived)

    aten = torch.ops.aten
    for module, ops in derived.items():
        assert loop.recomputes(aten.addmm.default, module) == ("aten.addmm" in ops)
        assert loop.recomputes(aten.gelu.default, module) == ("aten.gelu" in ops)
        assert loop.recomputes(aten.add.Tensor, module) == ("aten.add" in ops)
        assert not loop.recomputes(aten.relu.default, module)
    assert not loop.recomputes(aten.addmm.default, "no.such.module")

    has_policy = hasattr(torch.utils.checkpoint, "CheckpointPolicy")
    assert loop.SELECTIVE_CHECKPOINT == has_policy, (loop.SELECTIVE_CHECKPOINT, torch.__version__)

    loop.LEARNING_RATE = blocknet.LEARNING_RATE
    torch.manual_seed(0)
    model = blocknet.BlockNet()
    names = {id(module): name for name, module in model.named_modules()}
    data = blocknet.dataset()
    loss_before = blocknet.mean_loss(model, data)

    calls = collections.Counter()
    with_context = set()
    original_checkpoint = loop.checkpoint

    def recording_checkpoint(function, *args, **kwargs):
        name = names.get(id(getattr(function, "__self__", None)), repr(function))
        calls[name] += 1
        assert kwargs.get("use_reentrant") is False, kwargs
        if "context_fn" in kwargs:
            with_context.add(name)
        return original_checkpoint(function, *args, **kwargs)

    loop.checkpoint = recording_checkpoint
    loop.train(model, data, lambda out, y: nn.functional.cross_entropy(out.float(), y),
               lambda optimizer: torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0),
               epochs=blocknet.EPOCHS, device="cpu")

    micro_batches = blocknet.EPOCHS * (blocknet.SAMPLES // loop.MICRO_BATCH)
    assert dict(calls) == {m: micro_batches for m in derived}, (dict(calls), list(derived))
    assert with_context == (set(derived) if has_policy else set()), (with_context, has_policy)
    loss_after = blocknet.mean_loss(model, data)
    assert loss_after < 0.8 * loss_before, (loss_before, loss_after)
    path = "selective policy" if has_policy else "whole-module fallback"
    print(f"PASS {kind}: torch {torch.__version__}, {path}, {loop.RECOMPUTED_ATEN_OPS}, "
          f"loss {loss_before:.3f} -> {loss_after:.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
