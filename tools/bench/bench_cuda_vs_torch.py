#!/usr/bin/env python3
"""Step time of memplan's CUDA backend against PyTorch eager, model by model.

For each zoo model (ResNet-50, BERT-base, GPT-2 small, ViT-B/16; generated into build/zoo) this
runs `memplan verify MODEL --device cuda --batch B --json` and one PyTorch eager training step
loop on the same architecture, batch, sequence length and precision, then prints both step times
and their ratio (memplan / torch; the goal in issue 5 is <= 1.5).

The PyTorch models: torchvision's resnet50 and vit_b_16 (the architectures the zoo exports), and
for BERT-base / GPT-2 small the Hugging Face models when `transformers` is installed, otherwise a
plain torch transformer of the same shape (layers, width, heads, MLP width, vocabulary), which
runs the same GEMMs and so the same FLOPs. Both sides use Adam and cross entropy on random data.

Needs a CUDA GPU, PyTorch with CUDA, and a memplan build with the CUDA backend:

    python3 tools/bench/bench_cuda_vs_torch.py --memplan build/tools/memplan --zoo build/zoo \
        [--models resnet50,gpt2_small] [--batch 8] [--seq 128] [--precision fp32|fp16] [--steps 10]
"""

import argparse
import json
import os
import subprocess
import sys
import time

MODELS = {
    # name: (zoo file, kind, default batch)
    "resnet50": ("resnet50.onnx", "vision", 32),
    "bert_base": ("bert_base.onnx", "bert", 8),
    "gpt2_small": ("gpt2_small.onnx", "gpt2", 8),
    "vit_b16": ("vit_b16.onnx", "vision", 32),
}


def memplan_step_seconds(memplan, model_path, kind, batch, seq, precision, steps):
    """Mean optimizer-step time of `memplan verify --device cuda` (its JSON `step_seconds`)."""
    cmd = [memplan, "verify", model_path, "--device", "cuda", "--batch", str(batch),
           "--precision", precision, "--steps", str(steps), "--json"]
    if kind in ("bert", "gpt2"):
        cmd += ["--dim", "seq=%d" % seq]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode not in (0, 1):  # 1 = a check failed; the timing is still valid
        raise RuntimeError("memplan verify failed (exit %d): %s"
                           % (result.returncode, result.stderr.strip()))
    report = json.loads(result.stdout)
    return float(report["step_seconds"]), report


def torch_model(name, seq):
    import torch
    import torchvision

    if name == "resnet50":
        return torchvision.models.resnet50(), "vision"
    if name == "vit_b16":
        return torchvision.models.vit_b_16(), "vision"
    try:
        import transformers
        if name == "bert_base":
            config = transformers.BertConfig()
            return transformers.BertModel(config), "hf_bert"
        config = transformers.GPT2Config()
        return transformers.GPT2LMHeadModel(config), "hf_gpt2"
    except ImportError:
        pass

    class PlainTransformer(torch.nn.Module):
        """Embedding + 12 x (attention, MLP) of width 768, 12 heads, MLP 3072 + head."""

        def __init__(self, vocab, causal):
            super().__init__()
            self.causal = causal
            self.embed = torch.nn.Embedding(vocab, 768)
            self.position = torch.nn.Embedding(1024, 768)
            layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.1,
                                                     activation="gelu", batch_first=True,
                                                     norm_first=causal)
            self.encoder = torch.nn.TransformerEncoder(layer, 12)
            self.head = torch.nn.Linear(768, vocab if causal else 2, bias=not causal)

        def forward(self, ids):
            positions = torch.arange(ids.shape[1], device=ids.device)
            x = self.embed(ids) + self.position(positions)
            mask = None
            if self.causal:
                mask = torch.nn.Transformer.generate_square_subsequent_mask(ids.shape[1]).to(
                    ids.device)
            x = self.encoder(x, mask=mask)
            return self.head(x if self.causal else x[:, 0])

    if name == "bert_base":
        return PlainTransformer(30522, causal=False), "plain"
    return PlainTransformer(50257, causal=True), "plain"


def torch_step_seconds(name, batch, seq, precision, steps, warmup=3):
    """Mean time of a PyTorch eager training step (forward, loss, backward, Adam)."""
    import torch

    device = torch.device("cuda")
    model, flavour = torch_model(name, seq)
    model = model.to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    scaler = torch.cuda.amp.GradScaler(enabled=precision == "fp16")
    autocast_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)
    loss_fn = torch.nn.CrossEntropyLoss()

    if flavour == "vision":
        inputs = torch.randn(batch, 3, 224, 224, device=device)
        labels = torch.randint(0, 1000, (batch,), device=device)
    else:
        vocab = 30522 if name == "bert_base" else 50257
        inputs = torch.randint(0, vocab, (batch, seq), device=device)
        labels = torch.randint(0, 2 if name == "bert_base" else vocab,
                               (batch,) if name == "bert_base" else (batch, seq), device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=autocast_dtype or torch.float32,
                            enabled=autocast_dtype is not None):
            if flavour == "hf_bert":
                out = model(input_ids=inputs).pooler_output[:, :2]
            elif flavour == "hf_gpt2":
                out = model(input_ids=inputs).logits
            else:
                out = model(inputs)
            loss = loss_fn(out.reshape(-1, out.shape[-1]).float(), labels.reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memplan", default="build/tools/memplan", help="the memplan binary")
    parser.add_argument("--zoo", default="build/zoo", help="folder of the generated zoo models")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated subset")
    parser.add_argument("--batch", type=int, default=0, help="batch (0 = each model's default)")
    parser.add_argument("--seq", type=int, default=128, help="sequence length (BERT, GPT-2)")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"])
    parser.add_argument("--steps", type=int, default=10, help="timed optimizer steps per side")
    args = parser.parse_args()

    try:
        import torch
    except ImportError:
        sys.exit("bench_cuda_vs_torch: PyTorch is not installed")
    if not torch.cuda.is_available():
        sys.exit("bench_cuda_vs_torch: no CUDA device available")

    print("%-11s %5s %12s %12s %7s" % ("model", "batch", "memplan ms", "torch ms", "ratio"))
    failed = False
    for name in args.models.split(","):
        if name not in MODELS:
            sys.exit("bench_cuda_vs_torch: unknown model '%s' (known: %s)"
                     % (name, ", ".join(MODELS)))
        file, kind, default_batch = MODELS[name]
        batch = args.batch or default_batch
        path = os.path.join(args.zoo, file)
        try:
            ours, _ = memplan_step_seconds(args.memplan, path, kind, batch, args.seq,
                                           args.precision, args.steps)
        except (RuntimeError, ValueError, KeyError) as error:
            print("%-11s %5d  memplan failed: %s" % (name, batch, error))
            failed = True
            continue
        theirs = torch_step_seconds(name, batch, args.seq, args.precision, args.steps)
        print("%-11s %5d %12.2f %12.2f %7.2f" % (name, batch, ours * 1e3, theirs * 1e3,
                                                 ours / theirs))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
