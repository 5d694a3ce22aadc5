#!/usr/bin/python3
"""Reference numbers for program_models_test.cc: the bytes autograd keeps for backward after one
forward + cross-entropy loss of torchvision's resnet18 (the model of
tests/fixtures/resnet18_opset*.onnx, exported by make_torch_fixtures.py) in training mode, at
batch 32 and 64x64 images (the fixture's symbolic input [batch, 3, 64, 64] bound to batch 32).

Every tensor passed to a saved_tensors_hooks pack hook is counted once per storage, parameters and
buffers excluded (they are persistent, not activations). Run with Debian's python (torch 1.13):

    /usr/bin/python3 tests/analyzer/program_saved_reference.py
    -> resnet18 batch 32: saved bytes 58166020 (84 tensors)

The 58166020 include nll_loss's 4-byte total_weight scalar, which the op registry does not model.
"""
import torch
import torchvision


def saved_bytes(model, inputs, loss_fn):
    params = {p.data_ptr() for p in model.parameters()} | {b.data_ptr() for b in model.buffers()}
    seen = {}

    def pack(t):
        if t.data_ptr() not in params:
            seen[t.data_ptr()] = max(seen.get(t.data_ptr(), 0), t.storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss_fn(model(inputs))
    return sum(seen.values()), len(seen)


def main():
    torch.manual_seed(0)
    model = torchvision.models.resnet18()
    model.train()
    batch = 32
    x = torch.randn(batch, 3, 64, 64)
    labels = torch.randint(0, 1000, (batch,))
    total, count = saved_bytes(model, x,
                               lambda out: torch.nn.functional.cross_entropy(out, labels))
    print(f"resnet18 batch {batch}: saved bytes {total} ({count} tensors)")


if __name__ == "__main__":
    main()
