#!/usr/bin/python3
"""Reference numbers for program_models_test.cc: the bytes autograd keeps for backward after one
forward + cross-entropy loss of torchvision's resnet18 (the model of
tests/fixtures/resnet18_opset*.onnx, exported by make_torch_fixtures.py) in training mode, at
batch 32 and 64x64 images (the fixture's symbolic input [batch, 3, 64, 64] bound to batch 32).

Every tensor passed to a saved_tensors_hooks pack hook is counted once per storage, parameters and
buffers excluded (they are persistent, not activations): saved_bytes_reference.py. Run with
Debian's python (torch 1.13):

    /usr/bin/python3 tests/analyzer/derivation/program_saved_reference.py
    -> resnet18 batch 32: saved bytes 58166020 (84 tensors)

The 58166020 include nll_loss's 4-byte total_weight scalar, which the op registry does not model.

It also prints the figures for the transformer fixtures (TinyGPT and nn.TransformerEncoder from
tests/fixtures/make_torch_fixtures.py) at batch 32, seq 32, with F.dropout replaced by
native_dropout: that is the kernel PyTorch runs on CUDA (a 1-byte mask saved), while CPU's
F.dropout saves a 4-byte float mask; memplan plans for the GPU.
    -> gpt batch 32 seq 32: saved bytes 11938068
    -> transformer batch 32 seq 32: saved bytes 9519124
"""
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
from make_torch_fixtures import TinyGPT, TransformerModel  # noqa: E402
from saved_bytes_reference import saved_bytes  # noqa: E402


def cuda_style_dropout(input, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        return input
    return torch.native_dropout(input, p, True)[0]


def model_saved_bytes(model, inputs, loss_fn):
    persistent = list(model.parameters()) + list(model.buffers())
    return saved_bytes(persistent, lambda: loss_fn(model(inputs)))


def main():
    torch.manual_seed(0)
    model = torchvision.models.resnet18()
    model.train()
    batch = 32
    x = torch.randn(batch, 3, 64, 64)
    labels = torch.randint(0, 1000, (batch,))
    total, count = model_saved_bytes(model, x,
                                     lambda out: torch.nn.functional.cross_entropy(out, labels))
    print(f"resnet18 batch {batch}: saved bytes {total} ({count} tensors)")

    torch.nn.functional.dropout = cuda_style_dropout
    for name, net, x, classes in [
            ("gpt", TinyGPT(), torch.randint(0, 100, (32, 32)), 100),
            ("transformer", TransformerModel(), torch.randn(32, 32, 64), 10)]:
        net.train()
        total, count = model_saved_bytes(
            net, x, lambda out: torch.nn.functional.cross_entropy(
                out.reshape(-1, classes), torch.randint(0, classes, (out.numel() // classes,))))
        print(f"{name} batch 32 seq 32: saved bytes {total} ({count} tensors)")


if __name__ == "__main__":
    main()
