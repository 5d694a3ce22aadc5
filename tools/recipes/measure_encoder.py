#!/usr/bin/env python3
"""An encoder without checkpointing as HF Trainer runs it (issue 40, item 9), on the CPU with
torch 2.x: a small BERT (BertForMaskedLM from a BertConfig, no download, eager attention, fp32,
dropout 0.1 as BERT's defaults), HF's loss from labels, one forward + backward.

F.dropout runs as on CUDA (torch.native_dropout: a 1-byte bool mask saved; backward allocates
only its result, as CUDA's masked_scale kernel: CudaDropout below). On the CPU, F.dropout multiplies by a float noise tensor that
MulBackward0 saves at 4 bytes per element (aten/src/ATen/native/Dropout.cpp, _dropout_impl), which
alone puts a CPU measurement ~15% above the GPU's on this model; memplan plans the GPU kernel.

Measures the live-bytes peak above the parameters and the saved bytes (tools/recipes/live_bytes.py)
and prints one row of docs/recipe_rows.jsonl; with --graphs DIR writes the model's ONNX export
(weights stripped, xz) as DIR/tiny_bert.onnx.xz.

usage: measure_encoder.py [--batch 2] [--seq 128] [--graphs DIR] [--checkpointing]
"""

import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live_bytes import live_bytes_peak, saved_bytes  # noqa: E402

CONFIG = dict(vocab_size=512, hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
              intermediate_size=256, max_position_embeddings=256)


class CudaDropout(torch.autograd.Function):
    """torch.native_dropout with the memory of its CUDA backward. Forward is native_dropout
    itself, its 1-byte bool mask saved. The CUDA backward (aten/src/ATen/native/cuda/Dropout.cu,
    dropout_backward_cuda: masked_scale_kernel) writes grad * mask * scale into one new tensor;
    the CPU one (native/Dropout.cpp: grad * mask * scale) first casts the bool mask to the
    gradient's dtype and keeps grad * mask while it scales, two more tensors of the gradient's
    size that the GPU never holds. Here the mask is inverted in place after forward (the same
    bytes) so backward is one allocation, grad * scale, then masked_fill_ in place."""

    @staticmethod
    def forward(ctx, input, p):
        out, mask = torch.native_dropout(input, p, True)
        ctx.scale = 1.0 / (1.0 - p)
        ctx.save_for_backward(mask.logical_not_())
        return out

    @staticmethod
    def backward(ctx, grad):
        (dropped,) = ctx.saved_tensors
        return grad.mul(ctx.scale).masked_fill_(dropped, 0), None


def cuda_style_dropout(input, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        return input
    return CudaDropout.apply(input, p)


def tiny_bert():
    from transformers import BertConfig, BertForMaskedLM
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(attn_implementation="eager", **CONFIG))
    model.train()
    return model


def export_onnx(model, ids, directory):
    import lzma
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
    from compare_with_torch import strip_weights

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids).logits

    os.makedirs(directory, exist_ok=True)
    full = os.path.join(directory, "tiny_bert.full.onnx")
    torch.onnx.export(Logits(model), (ids,), full, input_names=["input_ids"],
                      output_names=["logits"], opset_version=17, dynamo=False,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                    "logits": {0: "batch", 1: "seq"}})
    stripped = os.path.join(directory, "tiny_bert.onnx")
    strip_weights(full, stripped)
    os.remove(full)
    with open(stripped, "rb") as f, lzma.open(stripped + ".xz", "wb") as out:
        out.write(f.read())
    os.remove(stripped)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--graphs", default="")
    parser.add_argument("--checkpointing", action="store_true",
                        help="also the rows of HF gradient checkpointing, use_reentrant False "
                             "and True (issue 40, item 10)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    F.dropout = cuda_style_dropout  # BERT's modules call nn.functional.dropout
    model = tiny_bert()
    ids = torch.randint(0, CONFIG["vocab_size"], (args.batch, args.seq))

    saved, peak = measure_step(model, ids)
    flags = (f"--dim batch={args.batch} --dim seq={args.seq} --micro-batch {args.batch} "
             "--precision fp32 --gpu 80G --headroom 0 --allocator exact --optimizer sgd "
             "--loss cross_entropy --attention eager --recompute none")
    print(json.dumps({"model": "tiny_bert", "recipe": "hf-trainer", "feature": "encoder",
                      "config": "fp32 eager, no checkpointing", "batch": args.batch,
                      "seq": args.seq, "dtype": "float32", "torch": torch.__version__,
                      "dropout": "native_dropout, CUDA backward (as on CUDA)", "flags": flags,
                      "torch_saved_bytes": saved, "torch_step_peak_bytes": peak}))
    if args.checkpointing:
        for reentrant in (False, True):
            print(json.dumps(checkpointing_row(args, reentrant, flags)))
    if args.graphs:
        export_onnx(model, ids, args.graphs)


def measure_step(model, ids):
    """One training step of `model` on `ids` after a warm-up step: the bytes autograd saved (what
    saved_tensors_hooks see, parameters and inputs excluded) and the step's live-bytes peak."""
    def forward():
        return model(input_ids=ids, labels=ids).loss

    forward().backward()  # warm-up
    model.zero_grad(set_to_none=True)
    out = {}

    def step():
        n, loss = saved_bytes(forward, live=list(model.parameters()) + [ids])
        out["saved"] = n
        loss.backward()

    peak, _ = live_bytes_peak(step)
    return out["saved"], peak


def checkpointing_row(args, reentrant, flags):
    """One step of the same model under gradient_checkpointing_enable(use_reentrant=...), as HF
    Trainer runs it (tools/recipes/measure_hf_checkpointing.py does the same for a Llama)."""
    model = tiny_bert()
    model.gradient_checkpointing_enable(
        gradient_checkpointing_kwargs={"use_reentrant": reentrant})
    if reentrant:
        model.enable_input_require_grads()
    ids = torch.randint(0, CONFIG["vocab_size"], (args.batch, args.seq))

    saved, peak = measure_step(model, ids)
    flags = flags.replace("--recompute none", "--recompute all --recompute-unit module")
    if reentrant:
        flags += " --recompute-reentrant"
    return {"model": "tiny_bert", "recipe": "hf-trainer", "feature": "gradient_checkpointing",
            "config": "reentrant" if reentrant else "non-reentrant", "use_reentrant": reentrant,
            "batch": args.batch, "seq": args.seq, "dtype": "float32",
            "torch": torch.__version__, "dropout": "native_dropout, CUDA backward (as on CUDA)", "flags": flags,
            "torch_saved_bytes": saved, "torch_step_peak_bytes": peak}


if __name__ == "__main__":
    main()
