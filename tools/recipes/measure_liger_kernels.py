#!/usr/bin/env python3
"""Liger Kernel's RMSNorm and SwiGLU as HF's use_liger_kernel=True patches them into a Llama
(`--fusions liger`), measured on the CPU with torch 2.x.

Liger's kernels are Triton (GPU only), so its two autograd functions are restated here on the CPU
with what they allocate and save, read from liger_kernel/ops (0.8.x):
  LigerRMSNormFunction (rms_norm.py, casting_mode "llama"): forward makes Y and an fp32 RSTD per
    row, ctx.save_for_backward(X, W, RSTD); backward writes dX into dY (in_place=True) and sums
    dW in fp32;
  LigerSiLUMulFunction (swiglu.py): forward makes c = silu(a) * b, ctx.save_for_backward(a, b);
    backward recomputes silu(a) and writes da and db into a's and b's storage (swiglu_backward
    returns views of them).
apply_liger_kernel_to_llama(rope, rms_norm, swiglu) swaps LlamaRMSNorm for LigerRMSNorm and
LlamaMLP for LigerSwiGLUMLP (down_proj(LigerSiLUMulFunction(gate_proj(x), up_proj(x)))); Liger's
RoPE saves cos and sin, as eager's q * cos + rotate_half(q) * sin does, so it is left eager here.

The model is tools/recipes/measure_hf_checkpointing.py's tiny Llama (eager attention, fp32), the
graph its --graphs wrote (tests/fixtures/recipe_rows/tiny_llama.onnx.xz). Prints one JSON row per
configuration for docs/recipe_rows.jsonl (tools/recipes/repredict_recipe_rows.py re-predicts it):
the bytes autograd saved and the live-bytes peak of one forward + backward above the parameters.

usage: measure_liger_kernels.py [--batch 2] [--seq 64]
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_hf_checkpointing import CONFIG, measure_lm_step, tiny_llama  # noqa: E402


ROWS = 8  # rows per block: a Triton program handles one row in registers; blocks keep the
# CPU's temporaries a few rows small, so only the tensors Liger allocates are of a tensor's size.


def row_blocks(t):
    """Views of `t` flattened to rows, ROWS at a time."""
    flat = t.reshape(-1, t.shape[-1])
    return [flat[i:i + ROWS] for i in range(0, flat.shape[0], ROWS)]


class RmsNormLiger(torch.autograd.Function):
    """LigerRMSNormFunction's memory on the CPU: Y and an fp32 RSTD made, (X, W, RSTD) saved;
    backward writes dX into dY and accumulates dW in fp32."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        y = torch.empty_like(x)
        rstd = torch.empty(x.shape[:-1] + (1,), dtype=torch.float32)
        for xb, yb, rb in zip(row_blocks(x), row_blocks(y), row_blocks(rstd)):
            rb.copy_(torch.rsqrt(xb.float().square().mean(-1, keepdim=True) + eps))
            yb.copy_(xb * rb.to(x.dtype) * weight)
        ctx.save_for_backward(x, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, rstd = ctx.saved_tensors
        dw = torch.zeros(weight.shape, dtype=torch.float32)
        for gb, xb, rb in zip(row_blocks(dy), row_blocks(x), row_blocks(rstd)):
            dw += (gb * xb * rb).float().sum(0)
            g = gb * weight
            inner = (g * xb).mean(-1, keepdim=True) * rb * rb
            gb.copy_((g - xb * inner) * rb)
        return dy, dw.to(weight.dtype), None


def gated_mul_liger(activation, slope):
    """Liger's gated MLP product act(a) * b on the CPU (LigerSiLUMulFunction, swiglu.py;
    LigerGELUMulFunction, geglu.py): c made, (a, b) saved; backward recomputes act(a) and writes
    da = dc * b * act'(a) into a and db = dc * act(a) into b. `activation` and `slope` compute act
    and act' in fp32, as the kernels do in registers."""

    class GatedMulLiger(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            c = torch.empty_like(a)
            for ab, bb, cb in zip(row_blocks(a), row_blocks(b), row_blocks(c)):
                cb.copy_(activation(ab.float()).to(bb.dtype) * bb)
            ctx.save_for_backward(a, b)
            return c

        @staticmethod
        def backward(ctx, dc):
            a, b = ctx.saved_tensors
            for gb, ab, bb in zip(row_blocks(dc), row_blocks(a), row_blocks(b)):
                af = ab.float()
                da = gb * bb * slope(af).to(gb.dtype)
                bb.copy_(gb * activation(af).to(gb.dtype))
                ab.copy_(da)
            return a, b

    return GatedMulLiger


def silu_slope(a):
    s = torch.sigmoid(a)
    return s * (1 + a * (1 - s))


SiluMulLiger = gated_mul_liger(torch.nn.functional.silu, silu_slope)


def patch_liger(model):
    """apply_liger_kernel_to_llama(rms_norm=True, swiglu=True) on `model`'s modules."""
    from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm
    for module in model.modules():
        if isinstance(module, LlamaRMSNorm):
            module.forward = (lambda m: lambda h: RmsNormLiger.apply(h, m.weight,
                                                                     m.variance_epsilon))(module)
        elif isinstance(module, LlamaMLP):
            module.forward = (lambda m: lambda h: m.down_proj(
                SiluMulLiger.apply(m.gate_proj(h), m.up_proj(h))))(module)


def check_gradients(batch, seq):
    """The CPU restatements compute eager's gradients (so the measured step is the real one)."""
    ids = torch.randint(0, CONFIG["vocab_size"], (batch, seq))
    grads = []
    for liger in (False, True):
        model = tiny_llama()
        if liger:
            patch_liger(model)
        model(input_ids=ids, labels=ids).loss.backward()
        grads.append([p.grad for p in model.parameters()])
    for eager, patched in zip(*grads):
        torch.testing.assert_close(patched, eager, rtol=1e-4, atol=1e-5)


def measure(batch, seq):
    model = tiny_llama()
    model.train()
    patch_liger(model)
    ids = torch.randint(0, CONFIG["vocab_size"], (batch, seq))
    saved, forward_peak, step_peak = measure_lm_step(model, ids)
    flags = (f"--dim batch={batch} --dim seq={seq} --micro-batch {batch} --precision fp32 "
             "--gpu 80G --headroom 0 --allocator exact --optimizer sgd --loss cross_entropy "
             "--attention eager --recompute none --fusions liger")
    return {"model": "tiny_llama", "recipe": "hf-trainer", "feature": "liger_kernels",
            "config": "rms_norm + swiglu", "batch": batch, "seq": seq, "dtype": "float32",
            "torch": torch.__version__, "liger_kernel": "0.8.5 functions restated on the CPU",
            "flags": flags, "torch_saved_bytes": saved,
            "torch_forward_peak_bytes": forward_peak, "torch_step_peak_bytes": step_peak}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    check_gradients(args.batch, args.seq)
    print(json.dumps(measure(args.batch, args.seq)))


if __name__ == "__main__":
    main()
