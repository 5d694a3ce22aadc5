#!/usr/bin/python3
"""The exported PyTorch loop of a module plan, run on CPU: what it checkpoints at run time is
exactly plan.recompute_modules (issue 16).

The model is defined here and exported to ONNX here, so the ONNX node names memplan plans from
("/blocks.2/fc1/Gemm": an nn.ModuleList iterated in forward) and the torch modules the loop wraps
are one model. Subcommands:

  run_module_loop.py onnx OUT.onnx
      exports BlockNet (4 residual blocks) in training mode with a dynamic batch axis.
  run_module_loop.py budget PLAN_NONE.json PLAN_ALL.json
      prints a --gpu size in bytes whose budget lies halfway between the peak without recompute
      and the peak with every block checkpointed: the optimal plan must then checkpoint some
      blocks but not all.
  run_module_loop.py run PLAN.json LOOP.py
      runs LOOP.py's train() on BlockNet on CPU and checks, at run time:
        * torch.utils.checkpoint.checkpoint (the loop's `checkpoint`) is called on exactly the
          modules of plan.recompute_modules, once per micro-batch each, on no other module;
        * every module inside a checkpointed block runs forward twice per micro-batch (forward,
          then the recompute in backward) and every other module once: nothing else is
          recomputed and nothing planned is skipped;
        * each micro-batch holds MICRO_BATCH == plan.micro_batch samples and the optimizer steps
          after every ACCUMULATION_STEPS == plan.accumulation_steps micro-batches;
        * under a bf16/fp16 plan the Linear layers compute in that dtype (fp32 otherwise);
        * the loss on the training set falls.

Debian's python3-torch 1.13 suffices.
"""

import collections
import inspect
import json
import sys

import torch
import torch.nn as nn
from torch.utils.data import TensorDataset

from exported_script import load_exported

BLOCKS = 4
FEATURES = 16
CLASSES = 4
SAMPLES = 512  # 8 micro-batches of 64 per epoch
EPOCHS = 2
LEARNING_RATE = 0.01


class Block(nn.Module):
    """x + fc2(gelu(fc1(x))). No LayerNorm: torch 1.13's CPU autocast does not cast layer_norm
    and fails on a bfloat16 input with float32 weights (CUDA autocast runs it in float32)."""

    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, 2 * width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))


class BlockNet(nn.Module):
    """x[batch, 16] -> inp -> blocks.0 .. blocks.3 (an nn.ModuleList) -> head -> 4 logits."""

    def __init__(self, width=32):
        super().__init__()
        self.inp = nn.Linear(FEATURES, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(BLOCKS)])
        self.head = nn.Linear(width, CLASSES)

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def export_onnx(path):
    """torch 2.x: the dynamo exporter at opset 18, whose node names memplan scopes from the
    node metadata (a conversion down to opset 17 would drop that metadata); torch 1.13: the
    TorchScript exporter, which writes the scopes into the names."""
    torch.manual_seed(0)
    model = BlockNet().train()
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        torch.onnx.export(model, (torch.randn(2, FEATURES),), path, dynamo=True, opset_version=18,
                          input_names=["x"], output_names=["logits"],
                          dynamic_shapes={"x": {0: torch.export.Dim("batch", min=2)}})
        return
    torch.onnx.export(model, (torch.randn(2, FEATURES),), path, input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)


def budget(none_path, all_path):
    none = json.load(open(none_path))
    every = json.load(open(all_path))
    assert every["peak_bytes"] < none["peak_bytes"], (every["peak_bytes"], none["peak_bytes"])
    # --gpu is the device's memory; memplan plans against it less the CUDA context (and reserve).
    overhead = none["gpu"]["memory_bytes"] - none["budget_bytes"]
    print(overhead + (none["peak_bytes"] + every["peak_bytes"]) // 2)


def inside(name, planned):
    return any(name.startswith(block + ".") for block in planned)


def dataset():
    """A learnable task: labels of a fixed random linear teacher."""
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(SAMPLES, FEATURES, generator=generator)
    teacher = torch.randn(FEATURES, CLASSES, generator=generator)
    return TensorDataset(x, (x @ teacher).argmax(dim=1))


def mean_loss(model, data):
    with torch.no_grad():
        x, y = data.tensors
        return nn.functional.cross_entropy(model(x), y).item()


def run(plan_path, loop_path):
    plan = json.load(open(plan_path))["plan"]
    loop = load_exported(loop_path, "exported_loop")
    precision = plan["precision"]
    planned = plan["recompute_modules"]
    assert plan["recompute_unit"] == "module", plan["recompute_unit"]
    assert plan["checkpointable_modules"] == BLOCKS, plan["checkpointable_modules"]
    assert 0 < len(planned) < BLOCKS, f"the test budget must checkpoint some blocks: {planned}"
    assert loop.MICRO_BATCH == plan["micro_batch"], (loop.MICRO_BATCH, plan["micro_batch"])
    assert loop.ACCUMULATION_STEPS == plan["accumulation_steps"]
    assert loop.ACCUMULATION_STEPS > 1, "the test plan must accumulate"
    loop.LEARNING_RATE = LEARNING_RATE

    torch.manual_seed(0)
    model = BlockNet()
    names = {id(module): name for name, module in model.named_modules()}
    data = dataset()
    loss_before = mean_loss(model, data)

    # Run-time record 1: what the loop hands to torch.utils.checkpoint.checkpoint.
    checkpointed = collections.Counter()
    original_checkpoint = loop.checkpoint

    def recording_checkpoint(function, *args, **kwargs):
        owner = getattr(function, "__self__", None)
        checkpointed[names.get(id(owner), repr(function))] += 1
        return original_checkpoint(function, *args, **kwargs)

    loop.checkpoint = recording_checkpoint

    # Run-time record 2: forward calls of every module (a hook fires on module(...) calls, so a
    # checkpointed block's own hook fires once and its children's hooks fire again in backward).
    forwards = collections.Counter()
    linear_dtypes = set()
    counting = [False]

    # Calls are counted on entry: torch >= 2.1's non-reentrant checkpoint stops a recomputation
    # once backward's tensors are recomputed (early stop), so a recomputed forward may not return.
    def pre_hook(module, _inputs):
        if counting[0]:
            forwards[names[id(module)]] += 1

    def hook(module, _inputs, output):
        if counting[0] and isinstance(module, nn.Linear):
            linear_dtypes.add(output.dtype)

    handles = [module.register_forward_pre_hook(pre_hook) for module in model.modules()]
    handles += [module.register_forward_hook(hook) for module in model.modules()]

    micro_batch_sizes = []
    steps_at = []  # micro-batches run when each scheduler step happens

    def loss_fn(outputs, targets):
        micro_batch_sizes.append(outputs.shape[0])
        return nn.functional.cross_entropy(outputs.float(), targets)

    def make_scheduler(optimizer):
        # LambdaLR calls the lambda once at construction and once per scheduler.step().
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: steps_at.append(len(micro_batch_sizes)) or 1.0)

    counting[0] = True
    loop.train(model, data, loss_fn, make_scheduler, epochs=EPOCHS, device="cpu")
    counting[0] = False
    for handle in handles:
        handle.remove()

    micro_batches = EPOCHS * (SAMPLES // loop.MICRO_BATCH)
    assert micro_batch_sizes == [loop.MICRO_BATCH] * micro_batches, micro_batch_sizes
    k = loop.ACCUMULATION_STEPS
    assert steps_at[1:] == list(range(k, micro_batches + 1, k)), steps_at

    assert dict(checkpointed) == {m: micro_batches for m in planned}, (dict(checkpointed), planned)
    # The ModuleList is a container forward() iterates, never called itself.
    expected = {name: (2 if inside(name, planned) else 1) * micro_batches
                for name, module in model.named_modules() if not isinstance(module, nn.ModuleList)}
    wrong = {name: (forwards[name], count) for name, count in expected.items()
             if forwards[name] != count}
    assert not wrong, f"forward calls (seen, expected): {wrong}"

    expected_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    assert linear_dtypes == {expected_dtype[precision]}, (linear_dtypes, precision)

    loss_after = mean_loss(model, data)
    assert loss_after < 0.8 * loss_before, (loss_before, loss_after)
    print(f"PASS {precision}: checkpointed {planned} of {BLOCKS} blocks at run time, "
          f"{micro_batches} micro-batches of {loop.MICRO_BATCH}, a step every {k}, "
          f"loss {loss_before:.3f} -> {loss_after:.3f}")


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    {"onnx": export_onnx, "budget": budget, "run": run}[command](*arguments)
