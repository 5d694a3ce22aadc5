#!/usr/bin/python3
"""Pins what torch.autocast really keeps and compares it with memplan's --amp-mode autocast plan.

PyTorch runs autocast on the CPU too (torch.autocast("cpu", dtype=torch.bfloat16)), so its
behaviour can be checked without a GPU:

  * the parameters stay fp32 and every .grad is fp32 (autocast casts per op; ToCopyBackward casts
    the half gradient back to the parameter's dtype);
  * what autograd saves (saved-tensor hooks, counted once per storage) are bf16 casts: the input
    cast and the weight cast a Linear saves for its input's gradient, the bf16 ReLU output;
  * an fp32 activation read by three Linears is cast three times (autocast caches only leaf
    tensors), and a Mul of a bf16 and an fp32 tensor saves both as they are (type promotion in
    the kernel, no copy): the `Readers` model.

memplan's prediction for the same model, exported to ONNX: `memplan analyze --precision bf16
--amp-mode autocast --json` gives saved_activation_bytes and model_state_bytes, which must equal
PyTorch's. Exit 0 when they do, 1 when not, 77 (skipped) without Debian's python3-torch:

    /usr/bin/python3 tools/compare_autocast.py build/tools/memplan
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("compare_autocast: no torch (apt-get install python3-torch); skipped")
    sys.exit(77)

BATCH = 4


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Readers(nn.Module):
    """An fp32 activation read by three projections, and a Mul of a bf16 and an fp32 tensor: what
    autocast keeps per reader and what type promotion keeps."""

    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(8, 16)
        self.q = nn.Linear(16, 16)
        self.k = nn.Linear(16, 16)
        self.v = nn.Linear(16, 16)

    def forward(self, x):
        h = torch.relu(self.fc0(x)).float()  # an fp32 hidden state, as a norm's output would be
        a = self.q(h) + self.k(h)             # bf16
        return a * h + self.v(h)              # bf16 * fp32 promotes in the kernel: fp32


def torch_autocast_run(model, x):
    """Runs one autocast forward/backward; returns (saved bytes per storage, saved dtypes,
    parameter bytes, gradient bytes, gradient dtypes)."""
    params = {p.data_ptr() for p in model.parameters()}
    saved = {}
    dtypes = set()

    def pack(t):
        if t.data_ptr() not in params:
            saved[t.data_ptr()] = max(saved.get(t.data_ptr(), 0), t.storage().nbytes())
            dtypes.add(t.dtype)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
            loss = out.float().sum()  # memplan's sum loss is fp32-required: it reads an fp32 cast
    loss.backward()
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    grad_bytes = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters())
    grad_dtypes = {p.grad.dtype for p in model.parameters()}
    param_dtypes = {p.dtype for p in model.parameters()}
    return sum(saved.values()), dtypes, param_bytes, param_dtypes, grad_bytes, grad_dtypes


def memplan_plan(memplan, model):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mlp.onnx")
        torch.onnx.export(model, (torch.randn(BATCH, 8),), path, input_names=["input"],
                          output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        out = subprocess.run([memplan, "analyze", path, "--gpu", "24G", "--json", "--micro-batch",
                              str(BATCH), "--precision", "bf16", "--amp-mode", "autocast",
                              "--loss", "sum", "--optimizer", "sgd", "--headroom", "0"],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)


def readers_checks(memplan):
    """Readers: torch and memplan keep the same bytes, derived by hand."""
    model = Readers()
    saved, saved_dtypes, _, _, _, _ = torch_autocast_run(model, torch.randn(BATCH, 8))
    plan = memplan_plan(memplan, model)
    # fc0: bf16 x (4 x 8 x 2 = 64 B); ReLU its bf16 output (4 x 16 x 2 = 128 B); q, k and v each
    # their own bf16 cast of h (3 x 128 B) and of their weight (3 x 16 x 16 x 2 = 3 x 512 B); the
    # Mul a (bf16, 128 B) and h (fp32, 4 x 16 x 4 = 256 B): 64 + 128 + 384 + 1536 + 128 + 256.
    hand = 64 + 128 + 3 * 128 + 3 * 512 + 128 + 256
    return [
        ("readers: saved bytes (hand: %d)" % hand,
         saved == hand and plan["saved_activation_bytes"] == saved,
         "torch %d, memplan %d" % (saved, plan["saved_activation_bytes"])),
        ("readers: saved dtypes", saved_dtypes == {torch.bfloat16, torch.float32},
         str(saved_dtypes)),
    ]


def main():
    memplan = sys.argv[1] if len(sys.argv) > 1 else "build/tools/memplan"
    torch.manual_seed(0)
    model = Mlp()
    x = torch.randn(BATCH, 8)
    saved, saved_dtypes, param_bytes, param_dtypes, grad_bytes, grad_dtypes = \
        torch_autocast_run(model, x)
    plan = memplan_plan(memplan, model)
    state = plan["model_state_bytes"]
    checks = [
        ("parameters stay fp32", param_dtypes == {torch.float32}, str(param_dtypes)),
        (".grad is fp32", grad_dtypes == {torch.float32}, str(grad_dtypes)),
        ("autograd saves only bf16 casts", saved_dtypes == {torch.bfloat16}, str(saved_dtypes)),
        # fc1 saves x as bf16 (4 x 8 x 2 = 64 B); ReLU its bf16 output (4 x 16 x 2 = 128 B), which
        # fc2 saves too; fc2 the bf16 cast of its weight (4 x 16 x 2 = 128 B): 320 B.
        ("saved bytes (hand: 320)", saved == 320 and plan["saved_activation_bytes"] == saved,
         "torch %d, memplan %d" % (saved, plan["saved_activation_bytes"])),
        # (8 x 16 + 16 + 16 x 4 + 4) = 212 parameters x 4 B = 848 B.
        ("parameter bytes (hand: 848)", state["parameters"] == param_bytes == 848,
         "torch %d, memplan %d" % (param_bytes, state["parameters"])),
        ("no master copy", state["master_weights"] == 0, str(state["master_weights"])),
        ("gradient bytes (hand: 848)", state["gradients"] == grad_bytes == 848,
         "torch %d, memplan %d" % (grad_bytes, state["gradients"])),
        ("plan.amp_mode", plan["plan"].get("amp_mode") == "autocast",
         str(plan["plan"].get("amp_mode"))),
    ] + readers_checks(memplan)
    failed = 0
    for name, ok, detail in checks:
        print("%-34s %s  (%s)" % (name, "ok" if ok else "MISMATCH", detail))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
