#!/usr/bin/env python3
"""What torch.compile saves for backward against eager (issue 40, item 6), on the CPU.

AOTAutograd traces forward and backward into one joint graph and splits it with
min_cut_rematerialization_partition (torch/_functorch/partitioners.py; what Inductor's compile_fx
uses for training): cheap fusible pointwise chains are recomputed in backward from a smaller
saved set instead of saving every op's saved tensors. This script compiles small blocks with an
aot_autograd backend that uses that partitioner and keeps the forward graph it produced; the
forward graph's outputs beyond the block's own are what the compiled function saves
(ctx.save_for_backward). Parameters and the block's inputs are excluded (they live anyway), as are
views of them. The eager figure is saved_tensors_hooks on the same block, once per storage,
parameters and the input excluded (tools/recipes/live_bytes.py).

With --backend inductor, torch.compile(module) runs Inductor itself (its decompositions, CPU
kernels built) and the forward graph is the one its own min_cut_rematerialization_partition call
returned; two more blocks (a BERT layer with dropout, a ResNet basic block) are measured.

usage: measure_compile.py [--graphs DIR] [--backend aot|inductor]
Prints one JSON row per block (docs/compile_rows.jsonl). With --graphs, also writes each block's
ONNX export (training mode, weights stripped, xz) as DIR/compile_<block>.onnx.xz, so memplan's
planned saved bytes (eager, and the partitioner's set once memplan models it) can be re-predicted
without torch.
"""

import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from functorch.compile import make_boxed_func, min_cut_rematerialization_partition
from torch._dynamo.backends.common import aot_autograd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live_bytes import saved_bytes  # noqa: E402


class Mlp(nn.Module):
    def __init__(self, d=64, h=256):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class NormMlp(nn.Module):  # pre-norm residual MLP (a transformer's second half)
    def __init__(self, d=64, h=256):
        super().__init__()
        self.norm, self.mlp = nn.LayerNorm(d), Mlp(d, h)

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class SwiGlu(nn.Module):  # Llama's MLP
    def __init__(self, d=64, h=176):
        super().__init__()
        self.gate, self.up, self.down = nn.Linear(d, h, False), nn.Linear(d, h, False), \
            nn.Linear(h, d, False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):  # a GPT block: pre-norm attention + pre-norm MLP, eager softmax
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = Mlp(d, 4 * d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-1, -2)) / (d // self.heads) ** 0.5
        mask = torch.ones(s, s, dtype=torch.bool).tril()
        att = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class BertLayer(nn.Module):  # post-norm encoder layer: attention and FFN, dropout 0.1, LayerNorm
    def __init__(self, d=64, heads=4, p=0.1):
        super().__init__()
        self.heads, self.p = heads, p
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        att = ((q @ k.transpose(-1, -2)) / (d // self.heads) ** 0.5).softmax(-1)
        att = F.dropout(att, self.p, self.training)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + F.dropout(self.out(y), self.p, self.training))
        h = F.dropout(self.fc2(F.gelu(self.fc1(x))), self.p, self.training)
        return self.ln2(x + h)


class ConvBlock(nn.Module):  # a ResNet basic block: conv-bn-relu-conv-bn + identity, relu
    def __init__(self, c=16):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False), \
            nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1, self.bn2 = nn.BatchNorm2d(c), nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


def saved_of_forward_graph(gm, n_user=1):
    """What a partitioned forward graph saves: its outputs beyond the block's own, parameters,
    inputs and views of them excluded, once per storage."""
    placeholders = {n for n in gm.graph.nodes if n.op == "placeholder"}
    outputs = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    total, ops = 0, []
    bases = set()  # once per storage: a saved view and its base are one tensor
    for node in outputs[n_user:]:
        if not isinstance(node, torch.fx.Node) or not isinstance(node.meta.get("val"),
                                                                  torch.Tensor):
            continue
        base = node
        while base.op == "call_function" and getattr(base.target, "is_view", False):
            base = base.args[0]
        if base in placeholders or base in bases:
            continue  # a parameter, the input, or a view of one (live anyway); or counted
        bases.add(base)
        val = base.meta["val"]
        total += val.numel() * val.element_size()
        ops.append(str(base.target).replace("aten.", "").replace(".default", ""))
    return total, ops


def inductor_saved_bytes(module, x):
    """torch.compile(module) with Inductor, its own partitioner call recorded: the forward graph
    min_cut_rematerialization_partition returned, with Inductor's decompositions (dropout as
    rand + comparison, the norms' decompositions)."""
    import torch._inductor.compile_fx as compile_fx
    graphs = []
    original = compile_fx.min_cut_rematerialization_partition

    def recording(*args, **kwargs):
        fw, bw = original(*args, **kwargs)
        graphs.append(fw)
        return fw, bw

    compile_fx.min_cut_rematerialization_partition = recording
    try:
        torch._dynamo.reset()
        out = torch.compile(module)(x)
        out.sum().backward()
    finally:
        compile_fx.min_cut_rematerialization_partition = original
    return saved_of_forward_graph(graphs[-1])


def compiled_saved_bytes(module, x):
    graphs = []

    def fw_compiler(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    backend = aot_autograd(fw_compiler=fw_compiler,
                           bw_compiler=lambda gm, _: make_boxed_func(gm.forward),
                           partition_fn=min_cut_rematerialization_partition)
    torch._dynamo.reset()
    out = torch.compile(module, backend=backend)(x)
    out.sum().backward()
    return saved_of_forward_graph(graphs[-1])


def eager_saved_bytes(module, x):
    n, out = saved_bytes(lambda: module(x), live=list(module.parameters()) + [x])
    out.sum().backward()
    return n


def export_onnx(module, x, directory, name):
    import lzma
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
    from compare_with_torch import strip_weights
    os.makedirs(directory, exist_ok=True)
    full = os.path.join(directory, name + ".full.onnx")
    torch.onnx.export(module, (x,), full, input_names=["x"], output_names=["y"], opset_version=17,
                      dynamo=False, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    stripped = os.path.join(directory, name + ".onnx")
    strip_weights(full, stripped)
    os.remove(full)
    with open(stripped, "rb") as f, lzma.open(stripped + ".xz", "wb") as out:
        out.write(f.read())
    os.remove(stripped)


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", default="")
    parser.add_argument("--backend", choices=("aot", "inductor"), default="aot",
                        help="aot: aot_autograd with the min-cut partitioner, no decompositions "
                        "(the first rows); inductor: torch.compile's default backend")
    args = parser.parse_args()
    torch.manual_seed(0)
    blocks = [("mlp_gelu", Mlp, (2, 64, 64)), ("norm_mlp_residual", NormMlp, (2, 64, 64)),
              ("swiglu", SwiGlu, (2, 64, 64)), ("gpt_block", Block, (2, 64, 64))]
    if args.backend == "inductor":
        blocks += [("bert_layer", BertLayer, (2, 64, 64)), ("conv_block", ConvBlock, (2, 16, 16, 16))]
    for name, make, shape in blocks:
        module = make()
        x = torch.randn(*shape, requires_grad=True)
        eager = eager_saved_bytes(module, x)
        if args.backend == "inductor":
            compiled, ops = inductor_saved_bytes(module, x)
        else:
            compiled, ops = compiled_saved_bytes(module, x)
        if args.graphs:
            export_onnx(module, x.detach(), args.graphs, "compile_" + name)
        config = "aot_autograd min-cut" if args.backend == "aot" else "inductor"
        print(json.dumps({"model": "compile_" + name, "recipe": "torch.compile", "feature": "compile",
                          "config": config, "shape": list(shape),
                          "dtype": "float32", "torch": torch.__version__,
                          "torch_eager_saved_bytes": eager, "torch_compiled_saved_bytes": compiled,
                          "compiled_saved_ops": ops}), flush=True)


if __name__ == "__main__":
    main()
