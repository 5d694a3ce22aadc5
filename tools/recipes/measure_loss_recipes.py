#!/usr/bin/env python3
"""Measures, with torch 2.x on the CPU, the live-bytes peak of one training step of a tiny
language-model head under the loss and optimizer recipes of issue 40 (items 1-3), and writes the
weight-free ONNX graphs memplan re-predicts them from.

    /work/memplan-venv/bin/python tools/recipes/measure_loss_recipes.py \
        --out tests/fixtures/recipe_rows

The model is the smallest one where the loss's [tokens, vocab] buffers dominate:

    x [B, T, H] -> MatMul W1 [H, H] (proj) -> h -> MatMul W [H, V] (lm_head) -> logits [B, T, V]
    (lm_head_cast: then Cast(to=float), HF's `logits.float()`, as a bf16 export writes it)

and cross entropy over the B*T tokens against int64 labels. A row runs the recipe's real code:
F.cross_entropy on the logits as the recipe holds them, torchtune's CEWithChunkedOutputLoss over
per-chunk output projections (the model's chunked_output), torchtune's optimizer-in-backward
hooks (register_post_accumulate_grad_hook: step, then zero_grad(set_to_none) per parameter).

What is measured (PyTorch's own tools, on the CPU device):
  * torch_peak_bytes: the live-bytes peak over the whole step (forward, loss, backward, optimizer
    step, zero_grad), from torch.profiler(profile_memory=True)'s [memory] events (every
    allocation and free of the CPU allocator, in order) plus the bytes alive before the step
    (parameters, the input batch and the labels);
  * torch_saved_bytes: the distinct storages saved for backward (saved_tensors_hooks).

Each row carries the memplan flags that describe the same recipe; tools/recipes/
repredict_loss_rows.py runs `memplan analyze --json` with them and compares exact_peak_bytes.
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

LABEL_SEED = 0
# name -> (seq, hidden, vocab, upcast in the graph). lm_head: the loss's [tokens, vocab] tensors
# dominate; wide_head: the parameters do (for the optimizer-in-backward rows).
MODELS = {"loss_lm_head": (128, 64, 4096, False), "loss_lm_head_cast": (128, 64, 4096, True),
          "loss_wide_head": (16, 512, 4096, False)}


def make_graph(out, name):
    """An fp32 graph with the batch symbolic, weights stripped (initializers point at a
    weights.bin that is not shipped; memplan reads no weight bytes)."""
    import onnx
    from onnx import TensorProto, helper
    T, H, V, cast = MODELS[name]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="/proj/MatMul"),
             helper.make_node("MatMul", ["h", "W"], ["lm" if cast else "logits"],
                              name="/lm_head/MatMul")]
    if cast:
        nodes.append(helper.make_node("Cast", ["lm"], ["logits"], name="/Cast",
                                      to=TensorProto.FLOAT))
    inits = []
    offset = 0
    for wname, shape in (("W1", (H, H)), ("W", (H, V))):
        t = onnx.TensorProto()
        t.name = wname
        t.data_type = TensorProto.FLOAT
        t.dims.extend(shape)
        size = shape[0] * shape[1] * 4
        for key, value in (("location", "weights.bin"), ("offset", str(offset)),
                           ("length", str(size))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        t.data_location = TensorProto.EXTERNAL
        offset += size
        inits.append(t)
    g = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", T, H])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", T, V])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="memplan-recipes")
    model.ir_version = 8
    onnx.save(model, os.path.join(out, name + ".onnx"))


def live_peak(step):
    """The peak of live bytes allocated while step() runs, relative to its start."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    live = peak = 0
    for e in events:
        live += e.nbytes()
        peak = max(peak, live)
    return peak


def saved_bytes(forward_and_loss):
    """Bytes of the distinct storages autograd saves during forward and loss."""
    seen = {}

    def pack(t):
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = forward_and_loss()
    return sum(seen.values()), loss


def chunked_ce_loss(num_chunks):
    """torchtune's CEWithChunkedOutputLoss, the recipe's own code. Loaded from its file:
    `import torchtune` pulls torchao, whose installed version may not match torchtune's."""
    import importlib.util
    spec = importlib.util.find_spec("torchtune")
    if spec is None:
        raise ImportError("torchtune is not installed")
    path = os.path.join(os.path.dirname(spec.origin), "modules", "loss",
                        "ce_chunked_output_loss.py")
    loader = importlib.util.spec_from_file_location("ce_chunked_output_loss", path)
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module.CEWithChunkedOutputLoss(num_output_chunks=num_chunks)


def optimizer_in_backward(params, make):
    """torchtune.training.register_optim_in_bwd_hooks' rule: one optimizer per parameter, stepped
    and zeroed (set_to_none) by a post-accumulate-grad hook."""
    optimizers = {p: make([p]) for p in params}

    def hook(p):
        optimizers[p].step()
        optimizers[p].zero_grad()

    for p in params:
        p.register_post_accumulate_grad_hook(hook)
    return optimizers


def run(config):
    torch.manual_seed(0)
    T, H, V, _ = MODELS[config["model"]]
    B = config["batch"]
    dtype = torch.bfloat16 if config["params"] == "bf16" else torch.float32
    W1 = torch.randn(H, H, dtype=dtype).requires_grad_()
    W = torch.randn(H, V, dtype=dtype).requires_grad_()
    x = torch.randn(B, T, H, dtype=dtype)
    g = torch.Generator().manual_seed(LABEL_SEED)
    labels = torch.randint(0, V, (B, T), generator=g)
    params = [W1, W]
    before = sum(t.untyped_storage().nbytes() for t in (W1, W, x, labels))
    make = lambda ps: torch.optim.AdamW(ps, lr=1e-3, foreach=False)
    in_backward = config.get("optimizer_in_backward", False)
    opt = optimizer_in_backward(params, make) if in_backward else make(params)
    chunks = config.get("loss_chunks", 0)
    loss_fn = chunked_ce_loss(chunks) if chunks else None

    def forward_and_loss():
        ctx = (torch.autocast("cpu", dtype=torch.bfloat16) if config["autocast"]
               else torch.autocast("cpu", enabled=False))
        with ctx:
            h = x @ W1
            if chunks:
                # TransformerDecoder.chunked_output: the output projection per chunk of tokens.
                logits = [c @ W for c in h.chunk(chunks, dim=1)]
                loss = loss_fn(logits, labels)
                del logits  # the recipe frees the logits before backward
                return loss
            logits = h @ W
            if config.get("upcast"):
                logits = logits.float()  # HF's causal-LM head / loss
            return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1))

    def step():
        loss = forward_and_loss()
        loss.backward()
        del loss
        if not in_backward:
            opt.step()
            opt.zero_grad(set_to_none=True)

    def two_steps():
        # The first step creates the optimizer states; the second is the steady state, as
        # memplan simulates two iterations.
        step()
        step()

    saved, loss = saved_bytes(forward_and_loss)
    for p in params:
        p.grad = None
    del loss
    peak = live_peak(two_steps)
    return before + peak, saved


BASE = ["--gpu", "80G", "--optimizer", "adamw", "--optimizer-impl",
        "for-loop", "--loss", "cross_entropy", "--recompute", "none", "--headroom", "0",
        "--allocator", "exact"]

CONFIGS = [
    # Item 1: where the loss lives and in which dtype.
    {"config": "fp32", "model": "loss_lm_head", "batch": 4, "params": "fp32", "autocast": False,
     "flags": ["--precision", "fp32"]},
    {"config": "autocast-bf16", "model": "loss_lm_head", "batch": 4, "params": "fp32", "autocast": True,
     "flags": ["--precision", "bf16", "--amp-mode", "autocast"]},
    {"config": "pure-bf16", "model": "loss_lm_head", "batch": 4, "params": "bf16", "autocast": False,
     "flags": ["--precision", "bf16", "--amp-mode", "pure"]},
    {"config": "pure-bf16-upcast-graph", "model": "loss_lm_head_cast", "batch": 4, "params": "bf16",
     "autocast": False, "upcast": True, "flags": ["--precision", "bf16", "--amp-mode", "pure"]},
    {"config": "pure-bf16-upcast-flag", "model": "loss_lm_head", "batch": 4, "params": "bf16", "autocast": False,
     "upcast": True, "flags": ["--precision", "bf16", "--amp-mode", "pure", "--loss-dtype",
                               "fp32"]},
    # Item 3: optimizer step in backward, on a head whose parameters outweigh its activations.
    {"config": "wide-fp32", "model": "loss_wide_head", "batch": 1, "params": "fp32",
     "autocast": False, "flags": ["--precision", "fp32"]},
    {"config": "wide-fp32-optimizer-in-backward", "model": "loss_wide_head", "batch": 1,
     "params": "fp32", "autocast": False, "optimizer_in_backward": True,
     "flags": ["--precision", "fp32", "--optimizer-in-backward"]},
    {"config": "wide-pure-bf16-optimizer-in-backward", "model": "loss_wide_head", "batch": 1,
     "params": "bf16", "autocast": False, "optimizer_in_backward": True,
     "flags": ["--precision", "bf16", "--amp-mode", "pure", "--optimizer-in-backward"]},
    # Item 2: torchtune's chunked cross entropy (8 chunks, each upcast on its own).
    {"config": "pure-bf16-chunked-8", "model": "loss_lm_head", "batch": 4, "params": "bf16", "autocast": False,
     "loss_chunks": 8,
     "flags": ["--precision", "bf16", "--amp-mode", "pure", "--loss-chunks", "8"]},
    # The same rule at other chunk counts: 4 chunks of 32 tokens, and 3 that torch.chunk makes
    # uneven (ceil(128 / 3) = 43: 43, 43 and 42 tokens).
    {"config": "pure-bf16-chunked-4", "model": "loss_lm_head", "batch": 4, "params": "bf16",
     "autocast": False, "loss_chunks": 4,
     "flags": ["--precision", "bf16", "--amp-mode", "pure", "--loss-chunks", "4"]},
    {"config": "pure-bf16-chunked-3", "model": "loss_lm_head", "batch": 4, "params": "bf16",
     "autocast": False, "loss_chunks": 3,
     "flags": ["--precision", "bf16", "--amp-mode", "pure", "--loss-chunks", "3"]},
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the graphs and rows.jsonl")
    parser.add_argument("--only", default="", help="configs whose name contains this")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in MODELS:
        make_graph(args.out, name)
    rows = []
    for config in CONFIGS:
        if args.only not in config["config"]:
            continue
        try:
            peak, saved = run(config)
        except ImportError as error:
            print(f"skip {config['config']}: {error}")
            continue
        row = {"model": config["model"], "config": config["config"],
               "torch": torch.__version__, "device": "cpu",
               "flags": BASE + ["--micro-batch", str(config["batch"])] + config["flags"],
               "torch_peak_bytes": peak,
               "torch_saved_bytes": saved}
        print(json.dumps(row))
        rows.append(row)
    with open(os.path.join(args.out, "loss_rows.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
