#!/usr/bin/python3
"""Compares memplan's simulated saved-activation bytes with what PyTorch autograd really saves.

For each model: export it with torch.onnx.export in training mode, run
`memplan analyze --json --micro-batch 8 --precision fp32` and read `saved_activation_bytes`; run the
same model in PyTorch (CPU) under torch.autograd.graph.saved_tensors_hooks and count every saved
tensor once per storage, parameters and buffers excluded. Prints a markdown table (the one in
docs/measurements.md); its last two columns leave out the storages that only torch 1.13's mean.dim
keeps (1.13's MeanBackward1 holds `_saved_self` beside the sizes; the registry follows current
PyTorch, which keeps no input there: llama-1b's measured H100 peak with PyTorch 2.11 equals the
prediction), found by walking the backward graph's saved tensors. Needs Debian's python3-torch /
python3-torchvision (not needed by CI):

    /usr/bin/python3 tools/compare_saved_activations.py build/tools/memplan [--only GROUP|NAME]

Groups: `basic` (the first five models, opset 17), `fusion` (the models whose exports the import
fusions rewrite, graph/fusion/fusion_table.h: SiLU, Hardswish, LayerNorm and tanh-GELU written out
at opset 13), `suite` (the exporter suite of issue 9: torchvision classification, video and
segmentation models, ViT/Swin/MaxViT, a LLaMA-style decoder, an encoder with a padding mask, an
encoder-decoder, LSTM/GRU LMs, at opsets 11-17; tools/suite_models.py). Any other word selects
the models whose name contains it. Without --only, every model runs.
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
import suite_models  # noqa: E402  (tools/, beside this script)

BATCH = 8


def cuda_style_dropout(input, p=0.5, training=True, inplace=False):
    """F.dropout as PyTorch runs it on CUDA: native_dropout, which saves a 1-byte bool mask.

    On CPU, PyTorch 1.13's F.dropout multiplies by a float noise tensor and MulBackward saves that
    4-byte mask; memplan plans for the GPU kernel (docs/saved_for_backward.md), so the reference
    runs the same native_dropout on CPU."""
    if not training or p == 0:
        return input
    return torch.native_dropout(input, p, True)[0]


def saved_storages_by_node(loss):
    """{storage pointer: set of autograd node names that saved a tensor of it}, walking the
    backward graph of `loss` through each node's `_saved_*` tensors."""
    savers, stack, visited = {}, [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in visited:
            continue
        visited.add(node)
        for attribute in dir(node):
            if not attribute.startswith("_saved_"):
                continue
            try:
                value = getattr(node, attribute)
            except RuntimeError:  # a saved tensor already freed or not a tensor
                continue
            for t in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(t, torch.Tensor):
                    savers.setdefault(t.storage().data_ptr(), set()).add(node.name())
        stack.extend(next_node for next_node, _ in node.next_functions)
    return savers


def torch_saved_bytes(model, inputs, loss_fn):
    """(bytes autograd saves, the part of them only torch 1.13's mean.dim keeps).

    torch 1.13's MeanBackward1 keeps its input (`_saved_self`); current PyTorch keeps none, as
    memplan's registry (docs/saved_for_backward.md), so the second figure is what this torch keeps
    that a current one does not."""
    # Keyed by storage: a saved view (a chunk of a split, a slice) keeps its whole storage alive,
    # and two views of one storage are one allocation.
    persistent = {p.storage().data_ptr() for p in model.parameters()} | \
        {b.storage().data_ptr() for b in model.buffers()}
    seen = {}

    def pack(t):
        storage = t.storage()
        if storage.data_ptr() not in persistent:
            seen[storage.data_ptr()] = max(seen.get(storage.data_ptr(), 0), storage.nbytes())
        return t

    original_dropout = torch.nn.functional.dropout
    torch.nn.functional.dropout = cuda_style_dropout
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = loss_fn(model(*inputs))
    finally:
        torch.nn.functional.dropout = original_dropout
    savers = saved_storages_by_node(loss)
    mean_dim_only = sum(nbytes for ptr, nbytes in seen.items()
                        if savers.get(ptr) == {"MeanBackward1"})
    return sum(seen.values()), mean_dim_only


def memplan_saved_bytes(memplan, case):
    """memplan's saved bytes for the model as exported; `--attention eager` because the reference
    runs the models' own eager attention (memplan's default plans recognised attention as SDPA)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        case.model.train()
        torch.onnx.export(case.model, case.inputs, path, input_names=case.input_names,
                          output_names=["output"],
                          dynamic_axes={**case.input_axes, "output": case.output_axes},
                          opset_version=case.opset, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        out = subprocess.run([memplan, "analyze", path, "--gpu", "80GB", "--json", "--micro-batch",
                              str(BATCH), "--precision", "fp32", "--loss", "cross_entropy",
                              "--attention", "eager"] + case.flags,
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip() or f"memplan exited {out.returncode}")
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


class Case:
    """One model of the suite: its inputs (names, dynamic axes), the loss PyTorch computes on its
    output, the flags memplan needs (--dim for symbolic axes) and the export opset."""

    def __init__(self, name, model, inputs, input_names, input_axes, output_axes, loss, opset,
                 flags=(), group="suite"):
        self.name, self.model, self.inputs, self.opset = name, model, inputs, opset
        self.input_names, self.input_axes, self.output_axes = input_names, input_axes, output_axes
        self.loss, self.flags, self.group = loss, list(flags), group


CE = nn.CrossEntropyLoss()


def class_loss(out):
    """Cross entropy over dim 1 ([N, C] or [N, C, d...]) against random class ids."""
    target = torch.randint(0, out.shape[1], (out.shape[0],) + tuple(out.shape[2:]))
    return CE(out, target)


def token_loss(out):
    """Cross entropy of [batch, seq, vocab] logits against random next tokens."""
    return CE(out.reshape(-1, out.shape[-1]), torch.randint(0, out.shape[-1], (out.shape[0] * out.shape[1],)))


def image(name, model, size, opset, group="suite"):
    return Case(name, model, (torch.randn(BATCH, 3, size, size),), ["input"], {"input": {0: "batch"}},
                {0: "batch"}, class_loss, opset, group=group)


def video(name, model, opset, frames=8, size=112):
    return Case(name, model, (torch.randn(BATCH, 3, frames, size, size),), ["input"],
                {"input": {0: "batch"}}, {0: "batch"}, class_loss, opset)


def tokens(name, model, seq, vocab, opset, group="suite"):
    return Case(name, model, (torch.randint(0, vocab, (BATCH, seq)),), ["input"],
                {"input": {0: "batch", 1: "seq"}}, {0: "batch", 1: "seq"}, token_loss, opset,
                flags=["--dim", f"seq={seq}"], group=group)


class SegmentationLogits(nn.Module):
    """torchvision's segmentation models return {"out": logits}; the loss reads the logits."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def padded_encoder_case(opset):
    seq = 48
    ids = torch.randint(0, 200, (BATCH, seq))
    padding = torch.zeros(BATCH, seq, dtype=torch.bool)
    padding[:, seq - 8:] = True  # the last 8 positions are padding
    return Case(f"BERT-style encoder, padding mask (seq {seq}, opset {opset})",
                suite_models.PaddedEncoder(), (ids, padding), ["ids", "padding"],
                {"ids": {0: "batch", 1: "seq"}, "padding": {0: "batch", 1: "seq"}},
                {0: "batch", 1: "seq"}, token_loss, opset, flags=["--dim", f"seq={seq}"])


def seq2seq_case(opset):
    src, tgt = 40, 24
    return Case(f"nn.Transformer encoder-decoder (src {src}, tgt {tgt}, opset {opset})",
                suite_models.Seq2Seq(), (torch.randn(BATCH, src, 64), torch.randn(BATCH, tgt, 64)),
                ["src", "tgt"], {"src": {0: "batch", 1: "src"}, "tgt": {0: "batch", 1: "tgt"}},
                {0: "batch", 1: "tgt"}, token_loss, opset,
                flags=["--dim", f"src={src}", "--dim", f"tgt={tgt}"])


def without_stochastic_depth(model):
    """Stochastic depth off (p = 0): it is random per sample, and some builders fix its rate."""
    for module in model.modules():
        if isinstance(module, torchvision.ops.StochasticDepth):
            module.p = 0.0
    return model


def cases():
    """Factories, one per model: each model is built when its row runs (all at once do not fit
    comfortably in memory)."""
    tv = torchvision.models
    basic = [
        lambda: image("resnet18 (224x224)", tv.resnet18(), 224, 17, "basic"),
        lambda: image("resnet50 (224x224)", tv.resnet50(), 224, 17, "basic"),
        lambda: image("mobilenet_v2 (224x224)", tv.mobilenet_v2(), 224, 17, "basic"),
        lambda: Case("transformer encoder (seq 128)", TransformerModel(), (torch.randn(BATCH, 128, 64),),
             ["input"], {"input": {0: "batch", 1: "seq"}}, {0: "batch", 1: "seq"}, token_loss, 17,
             flags=["--dim", "seq=128"], group="basic"),
        lambda: tokens("tiny GPT (seq 32)", TinyGPT(), 32, 100, 17, "basic"),
    ]
    fusion = [
        lambda: image("SiLU/Hardswish/LayerNorm/tanh-GELU block (8x8, opset 13)", Activations(), 8, 13,
              "fusion"),
        lambda: image("efficientnet_b0 (224x224, opset 13)", tv.efficientnet_b0(stochastic_depth_prob=0.0),
              224, 13, "fusion"),
        lambda: image("mobilenet_v3_small (224x224, opset 13)", tv.mobilenet_v3_small(), 224, 13, "fusion"),
        lambda: Case("transformer encoder (seq 128, opset 13)", TransformerModel(),
             (torch.randn(BATCH, 128, 64),), ["input"], {"input": {0: "batch", 1: "seq"}},
             {0: "batch", 1: "seq"}, token_loss, 13, flags=["--dim", "seq=128"], group="fusion"),
        lambda: tokens("tiny GPT (seq 32, opset 13)", TinyGPT(), 32, 100, 13, "fusion"),
    ]
    seg = tv.segmentation
    suite = [
        lambda: image("resnet18 (224x224, opset 11)", tv.resnet18(), 224, 11),
        lambda: image("vgg11_bn (224x224, opset 14)", tv.vgg11_bn(), 224, 14),
        lambda: image("densenet121 (224x224, opset 13)", tv.densenet121(), 224, 13),
        lambda: image("squeezenet1_1 (224x224, opset 11)", tv.squeezenet1_1(), 224, 11),
        lambda: image("shufflenet_v2_x1_0 (224x224, opset 14)", tv.shufflenet_v2_x1_0(), 224, 14),
        lambda: image("googlenet (224x224, opset 13)", tv.googlenet(aux_logits=False, init_weights=True), 224, 13),
        lambda: image("mnasnet1_0 (224x224, opset 17)", tv.mnasnet1_0(), 224, 17),
        lambda: image("regnet_y_400mf (224x224, opset 17)", tv.regnet_y_400mf(), 224, 17),
        lambda: image("resnext50_32x4d (224x224, opset 14)", tv.resnext50_32x4d(), 224, 14),
        lambda: image("mobilenet_v3_large (224x224, opset 17)", tv.mobilenet_v3_large(), 224, 17),
        lambda: image("efficientnet_v2_s (224x224, opset 14)", without_stochastic_depth(tv.efficientnet_v2_s()),
              224, 14),
        lambda: image("convnext_tiny (224x224, opset 17)", without_stochastic_depth(tv.convnext_tiny()), 224, 17),
        lambda: image("vit_b_16 (224x224, opset 14)", tv.vit_b_16(), 224, 14),
        lambda: image("swin_t (224x224, opset 17)", without_stochastic_depth(tv.swin_t()), 224, 17),
        lambda: image("maxvit_t (224x224, opset 17)", without_stochastic_depth(tv.maxvit_t()), 224, 17),
        # Added in session 18, models no earlier row resembles closely (exact at first run).
        lambda: image("inception_v3 (299x299, opset 17)",
                      tv.inception_v3(aux_logits=False, init_weights=False), 299, 17),
        lambda: image("alexnet (224x224, opset 17)", tv.alexnet(), 224, 17),
        lambda: image("regnet_x_400mf (224x224, opset 17)", tv.regnet_x_400mf(), 224, 17),
        lambda: image("vit_b_32 (224x224, opset 17)", tv.vit_b_32(), 224, 17),
        lambda: image("wide_resnet50_2 (224x224, opset 17)", tv.wide_resnet50_2(), 224, 17),
        lambda: video("r3d_18 (8x112x112, opset 13)", tv.video.r3d_18(), 13),
        lambda: video("mc3_18 (8x112x112, opset 17)", tv.video.mc3_18(), 17),
        lambda: video("r2plus1d_18 (8x112x112, opset 11)", tv.video.r2plus1d_18(), 11),
        lambda: image("fcn_resnet50 (224x224, opset 13)",
              SegmentationLogits(seg.fcn_resnet50(weights_backbone=None, aux_loss=False)), 224, 13),
        lambda: image("deeplabv3_mobilenet_v3_large (224x224, opset 17)",
              SegmentationLogits(seg.deeplabv3_mobilenet_v3_large(weights_backbone=None, aux_loss=False)),
              224, 17),
        lambda: image("lraspp_mobilenet_v3_large (224x224, opset 14)",
              SegmentationLogits(seg.lraspp_mobilenet_v3_large(weights_backbone=None)), 224, 14),
        # Session 19: GroupNorm (InstanceNormalization in the export) and F.interpolate's Resize.
        lambda: image("small UNet: GroupNorm, interpolate x2 (64x64, opset 17)",
                      suite_models.SmallUNet(), 64, 17),
        lambda: tokens("LLaMA-style decoder: RMSNorm, rotary, SwiGLU, GQA (seq 64, opset 17)",
               suite_models.LlamaStyle(), 64, 256, 17),
        lambda: tokens("LLaMA-style decoder (seq 64, opset 14)", suite_models.LlamaStyle(), 64, 256, 14),
        lambda: padded_encoder_case(17),
        lambda: seq2seq_case(14),  # Trilu (the causal mask's triu) exists from opset 14
        lambda: tokens("LSTM LM, 2 layers (seq 32, opset 14)", suite_models.RecurrentLM("lstm"), 32, 200, 14),
        lambda: tokens("GRU LM, 2 layers (seq 32, opset 14)", suite_models.RecurrentLM("gru"), 32, 200, 14),
    ]
    return basic + fusion + suite


def main():
    memplan = sys.argv[1] if len(sys.argv) > 1 else "build/tools/memplan"
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    torch.manual_seed(0)
    print("| model | PyTorch autograd saved bytes | memplan saved_activation_bytes | difference |"
          " without 1.13's mean.dim input | difference |")
    print("|---|---:|---:|---:|---:|---:|")
    for make in cases():
        case = make()
        if only is not None and case.group != only and (
                only in ("basic", "fusion", "suite") or only.lower() not in case.name.lower()):
            continue
        case.model.train()
        reference, mean_dim_only = torch_saved_bytes(case.model, case.inputs, case.loss)
        current = reference - mean_dim_only
        try:
            predicted = memplan_saved_bytes(memplan, case)
        except Exception as error:  # noqa: BLE001 - the table reports the failure and goes on
            print(f"| {case.name} | {reference:,} | failed: {str(error).splitlines()[-1][:120]} | |"
                  f" {current:,} | |", flush=True)
            continue
        diff = 100.0 * (predicted - reference) / reference
        diff_current = 100.0 * (predicted - current) / current
        print(f"| {case.name} | {reference:,} | {predicted:,} | {diff:+.2f}% | {current:,} |"
              f" {diff_current:+.2f}% |", flush=True)


if __name__ == "__main__":
    main()
