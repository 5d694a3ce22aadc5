#!/usr/bin/python3
"""Compares memplan's simulated saved-activation bytes with what PyTorch autograd really saves.

For each model: export it with torch.onnx.export in training mode, run
`memplan analyze --json --micro-batch 8 --precision fp32` and read `saved_activation_bytes`; run the
same model in PyTorch (CPU) under torch.autograd.graph.saved_tensors_hooks and count every saved
tensor once per storage, parameters and buffers excluded. Prints a markdown table (the one in
docs/measurements.md). Needs Debian's python3-torch / python3-torchvision (not needed by CI):

    /usr/bin/python3 tools/compare_saved_activations.py build/tools/memplan [--only fusion]

`--only fusion` runs the models whose exports the import fusions rewrite (graph/fusion/
fusion_table.h): SiLU, Hardswish, LayerNorm and tanh-GELU written out at opset 13.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
from make_torch_fixtures import TinyGPT, TransformerModel  # noqa: E402

BATCH = 8


def cuda_style_dropout(input, p=0.5, training=True, inplace=False):
    """F.dropout as PyTorch runs it on CUDA: native_dropout, which saves a 1-byte bool mask.

    On CPU, PyTorch 1.13's F.dropout multiplies by a float noise tensor and MulBackward saves that
    4-byte mask; memplan plans for the GPU kernel (docs/saved_for_backward.md), so the reference
    runs the same native_dropout on CPU."""
    if not training or p == 0:
        return input
    return torch.native_dropout(input, p, True)[0]


def torch_saved_bytes(model, inputs, loss_fn):
    persistent = {p.data_ptr() for p in model.parameters()} | {b.data_ptr() for b in model.buffers()}
    seen = {}

    def pack(t):
        if t.data_ptr() not in persistent:
            seen[t.data_ptr()] = max(seen.get(t.data_ptr(), 0), t.storage().nbytes())
        return t

    original_dropout = torch.nn.functional.dropout
    torch.nn.functional.dropout = cuda_style_dropout
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss_fn(model(inputs))
    finally:
        torch.nn.functional.dropout = original_dropout
    return sum(seen.values())


def memplan_saved_bytes(memplan, model, example, dynamic_axes, extra_flags, opset=17):
    """memplan's saved bytes for the model as exported; `--attention eager` because the reference
    runs the models' own eager attention (memplan's default plans recognised attention as SDPA)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        model.train()
        torch.onnx.export(model, (example,), path, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": dynamic_axes, "output": dynamic_axes},
                          opset_version=opset, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        out = subprocess.run([memplan, "analyze", path, "--gpu", "80GB", "--json", "--micro-batch",
                              str(BATCH), "--precision", "fp32", "--loss", "cross_entropy",
                              "--attention", "eager"] + extra_flags,
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)["saved_activation_bytes"]


class Activations(nn.Module):
    """A small MLP-and-conv block with the activations and norms exporters write out below their
    fused opsets: nn.SiLU (x * Sigmoid(x) below 24), nn.Hardswish (x * HardSigmoid(x) below 14),
    nn.LayerNorm (ReduceMean/Sub/Pow/Sqrt/Div below 17), F.gelu tanh (below 20), Dropout(p=0)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.silu = nn.SiLU()
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.hardswish = nn.Hardswish()
        self.norm = nn.LayerNorm(64)
        self.fc = nn.Linear(64, 64)
        self.drop = nn.Dropout(0.0)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        h = self.hardswish(self.conv2(self.silu(self.conv(x))))  # [B, 16, 8, 8]
        h = self.norm(h.flatten(2))  # [B, 16, 64]
        h = self.drop(nn.functional.gelu(self.fc(h), approximate="tanh"))
        return self.head(h).mean(1)


def classification(name, model, size, opset, batch_axes=None):
    ce = nn.CrossEntropyLoss()
    return (name, model, torch.randn(BATCH, 3, size, size), batch_axes or {0: "batch"}, [],
            lambda out: ce(out, torch.randint(0, out.shape[1], (BATCH,))), opset)


def main():
    memplan = sys.argv[1] if len(sys.argv) > 1 else "build/tools/memplan"
    only_fusion = "--only" in sys.argv and sys.argv[sys.argv.index("--only") + 1] == "fusion"
    torch.manual_seed(0)
    ce = nn.CrossEntropyLoss()
    fusion_cases = [
        classification("SiLU/Hardswish/LayerNorm/tanh-GELU block (8x8, opset 13)", Activations(), 8, 13),
        classification("efficientnet_b0 (224x224, opset 13)",
                       torchvision.models.efficientnet_b0(stochastic_depth_prob=0.0), 224, 13),
        classification("mobilenet_v3_small (224x224, opset 13)",
                       torchvision.models.mobilenet_v3_small(), 224, 13),
        ("transformer encoder (seq 128, opset 13)", TransformerModel(), torch.randn(BATCH, 128, 64),
         {0: "batch", 1: "seq"}, ["--dim", "seq=128"],
         lambda out: ce(out.reshape(-1, 10), torch.randint(0, 10, (BATCH * 128,))), 13),
        ("tiny GPT (seq 32, opset 13)", TinyGPT(), torch.randint(0, 100, (BATCH, 32)),
         {0: "batch", 1: "seq"}, ["--dim", "seq=32"],
         lambda out: ce(out.reshape(-1, 100), torch.randint(0, 100, (BATCH * 32,))), 13),
    ]
    cases = [
        ("resnet18 (224x224)", torchvision.models.resnet18(), torch.randn(BATCH, 3, 224, 224),
         {0: "batch"}, [], lambda out: ce(out, torch.randint(0, 1000, (BATCH,)))),
        ("resnet50 (224x224)", torchvision.models.resnet50(), torch.randn(BATCH, 3, 224, 224),
         {0: "batch"}, [], lambda out: ce(out, torch.randint(0, 1000, (BATCH,)))),
        ("mobilenet_v2 (224x224)", torchvision.models.mobilenet_v2(), torch.randn(BATCH, 3, 224, 224),
         {0: "batch"}, [], lambda out: ce(out, torch.randint(0, 1000, (BATCH,)))),
        ("transformer encoder (seq 128)", TransformerModel(), torch.randn(BATCH, 128, 64),
         {0: "batch", 1: "seq"}, ["--dim", "seq=128"],
         lambda out: ce(out.reshape(-1, 10), torch.randint(0, 10, (BATCH * 128,)))),
        ("tiny GPT (seq 32)", TinyGPT(), torch.randint(0, 100, (BATCH, 32)),
         {0: "batch", 1: "seq"}, ["--dim", "seq=32"],
         lambda out: ce(out.reshape(-1, 100), torch.randint(0, 100, (BATCH * 32,)))),
    ]
    cases = [c + (17,) for c in cases]
    if only_fusion:
        cases = fusion_cases
    else:
        cases += fusion_cases
    print("| model | PyTorch autograd saved bytes | memplan saved_activation_bytes | difference |")
    print("|---|---:|---:|---:|")
    for name, model, example, axes, flags, loss_fn, opset in cases:
        model.train()
        reference = torch_saved_bytes(model, example, loss_fn)
        predicted = memplan_saved_bytes(memplan, model, example, axes, flags, opset)
        diff = 100.0 * (predicted - reference) / reference
        print(f"| {name} | {reference:,} | {predicted:,} | {diff:+.2f}% |")


if __name__ == "__main__":
    main()
