#!/usr/bin/env python3
"""Liger Kernel's RMSNorm and GeGLU as HF's use_liger_kernel=True patches them into a Gemma
(issue 40), measured on the CPU with torch 2.x, eager and patched.

apply_liger_kernel_to_gemma (liger_kernel/transformers/monkey_patch.py, 0.8.x) swaps GemmaRMSNorm
for LigerRMSNorm with offset=1.0, casting_mode="gemma", in_place=True (Gemma 2 and 3 patch the
same class with in_place=False) and GemmaMLP for LigerGEGLUMLP
(down_proj(LigerGELUMulFunction(gate_proj(x), up_proj(x)))). Their Triton kernels need a GPU, so
the two autograd functions are restated here on the CPU with what they allocate and save, read
from liger_kernel/ops (0.8.5):
  LigerRMSNormFunction (rms_norm.py, casting_mode "gemma", offset 1): forward makes Y (X's dtype)
    and an fp32 RSTD per row, computes in fp32 (X and W upcast in registers), y = x * rstd *
    (1 + w) cast back, ctx.save_for_backward(X, W, RSTD); backward writes dX into dY when
    in_place (else into a new zeros_like(dY)) and sums dW in an fp32 (SMs, hidden) buffer;
  LigerGELUMulFunction (geglu.py): forward makes c = gelu_tanh(a) * b,
    ctx.save_for_backward(a, b); backward recomputes gelu_tanh(a) and writes da into a's and db
    into b's storage (geglu_backward returns views of them; dc is left as is).
Liger's RoPE and fused linear cross entropy (also on by default) are left eager, as in
measure_liger_kernels.py: the row is the two kernels memplan's --fusions liger stands for.

The model is a tiny GemmaForCausalLM (random weights, eager attention, fp32, gelu_pytorch_tanh),
the sizes of measure_hf_checkpointing.py's tiny Llama. Prints one JSON row per configuration
(eager, Liger) for docs/recipe_rows.jsonl (tools/recipes/repredict_recipe_rows.py re-predicts
them); with --graphs DIR also writes the graph as DIR/tiny_gemma.onnx.xz, as the tiny Llama's.

usage: measure_liger_gemma.py [--batch 2] [--seq 64] [--graphs DIR]
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_hf_checkpointing import CONFIG, export_onnx, measure_lm_step  # noqa: E402
from measure_liger_kernels import gated_mul_liger, row_blocks  # noqa: E402

GEMMA_CONFIG = dict(CONFIG, head_dim=CONFIG["hidden_size"] // CONFIG["num_attention_heads"],
                    hidden_act="gelu_pytorch_tanh")
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def tiny_gemma():
    from transformers import GemmaConfig, GemmaForCausalLM
    torch.manual_seed(0)
    config = GemmaConfig(**GEMMA_CONFIG)
    config._attn_implementation = "eager"
    return GemmaForCausalLM(config)


class RmsNormGemmaLiger(torch.autograd.Function):
    """LigerRMSNormFunction's memory on the CPU, casting_mode "gemma": Y and an fp32 RSTD made,
    (X, W, RSTD) saved; backward writes dX into dY (in_place) or a new zeros_like(dY) and sums dW
    in an fp32 (1, hidden) buffer (one program on the CPU)."""

    @staticmethod
    def forward(ctx, x, weight, eps, offset, in_place):
        y = torch.empty_like(x)
        rstd = torch.empty(x.shape[:-1] + (1,), dtype=torch.float32)
        for xb, yb, rb in zip(row_blocks(x), row_blocks(y), row_blocks(rstd)):
            xf = xb.float()
            rb.copy_(torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps))
            yb.copy_((xf * rb * (offset + weight.float())).to(x.dtype))
        ctx.save_for_backward(x, weight, rstd)
        ctx.offset, ctx.in_place = offset, in_place
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, rstd = ctx.saved_tensors
        dx = dy if ctx.in_place else torch.zeros_like(dy)
        dw = torch.zeros((1, weight.shape[0]), dtype=torch.float32)
        w = weight.float() + ctx.offset
        for gb, xb, rb, ob in zip(row_blocks(dy), row_blocks(x), row_blocks(rstd),
                                  row_blocks(dx)):
            g, xf = gb.float(), xb.float()
            m = g * w
            dw += (g * (xf * rb)).sum(0)
            ob.copy_((rb * m - rb * (rb * rb * (m * xf).mean(-1, keepdim=True)) * xf)
                     .to(x.dtype))
        return dx, dw.sum(0).to(weight.dtype), None, None, None


def gelu_tanh(a):
    return 0.5 * a * (1 + torch.tanh(SQRT_2_OVER_PI * (a + 0.044715 * a * a * a)))


def gelu_tanh_slope(a):
    t = torch.tanh(SQRT_2_OVER_PI * (a + 0.044715 * a * a * a))
    return 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * SQRT_2_OVER_PI * (1 + 3 * 0.044715 * a * a)


GeluMulLiger = gated_mul_liger(gelu_tanh, gelu_tanh_slope)


def patch_liger(model, in_place=True):
    """apply_liger_kernel_to_gemma(rms_norm=True, geglu=True) on `model`'s modules (Gemma 1:
    in_place=True; apply_liger_kernel_to_gemma2/3 pass in_place=False)."""
    from transformers.models.gemma.modeling_gemma import GemmaMLP, GemmaRMSNorm
    for module in model.modules():
        if isinstance(module, GemmaRMSNorm):
            module.forward = (lambda m: lambda h: RmsNormGemmaLiger.apply(
                h, m.weight, m.eps, 1.0, in_place))(module)
        elif isinstance(module, GemmaMLP):
            module.forward = (lambda m: lambda h: m.down_proj(
                GeluMulLiger.apply(m.gate_proj(h), m.up_proj(h))))(module)


def check_gradients(batch, seq):
    """The CPU restatements compute eager's loss and gradients (so the measured step is the real
    one). GemmaRMSNorm's weight starts at zero (scale 1 + w = 1): it is set to random values first
    so that the offset and dW are exercised."""
    ids = torch.randint(0, GEMMA_CONFIG["vocab_size"], (batch, seq))
    losses, grads = [], []
    for liger in (False, True):
        model = tiny_gemma()
        from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for module in model.modules():
                if isinstance(module, GemmaRMSNorm):
                    module.weight.copy_(0.5 * torch.randn(module.weight.shape,
                                                          generator=generator))
        if liger:
            patch_liger(model)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        losses.append(loss.detach())
        grads.append([p.grad for p in model.parameters()])
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-5, atol=1e-6)
    for eager, patched in zip(*grads):
        torch.testing.assert_close(patched, eager, rtol=1e-4, atol=1e-5)


def measure(liger, batch, seq):
    model = tiny_gemma()
    model.train()
    if liger:
        patch_liger(model)
    ids = torch.randint(0, GEMMA_CONFIG["vocab_size"], (batch, seq))
    saved, forward_peak, step_peak = measure_lm_step(model, ids)
    flags = (f"--dim batch={batch} --dim seq={seq} --micro-batch {batch} --precision fp32 "
             "--gpu 80G --headroom 0 --allocator exact --optimizer sgd --loss cross_entropy "
             "--attention eager --recompute none")
    row = {"model": "tiny_gemma", "recipe": "hf-trainer",
           "feature": "liger_kernels" if liger else "eager",
           "config": "rms_norm + geglu" if liger else "fp32 eager, no checkpointing",
           "batch": batch, "seq": seq, "dtype": "float32", "torch": torch.__version__}
    if liger:
        row["liger_kernel"] = "0.8.5 functions restated on the CPU"
        flags += " --fusions liger"
    row.update({"flags": flags, "torch_saved_bytes": saved,
                "torch_forward_peak_bytes": forward_peak, "torch_step_peak_bytes": step_peak})
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--graphs", default="")
    args = parser.parse_args()
    torch.set_num_threads(1)
    check_gradients(args.batch, args.seq)
    for liger in (False, True):
        print(json.dumps(measure(liger, args.batch, args.seq)))
    if args.graphs:
        print("wrote", export_onnx(args.graphs, args.batch, args.seq, tiny_gemma, "tiny_gemma"),
              file=sys.stderr)


if __name__ == "__main__":
    main()
