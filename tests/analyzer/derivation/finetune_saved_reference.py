#!/usr/bin/python3
"""Reference numbers for finetune_test.cc: the bytes autograd keeps for backward when parameters
are frozen with requires_grad_(False), counted with saved_tensors_hooks exactly as
program_saved_reference.py counts them (saved_bytes_reference.py: once per storage, parameters and
buffers excluded).

Run with Debian's python (torch 1.13):

    /usr/bin/python3 tests/analyzer/derivation/finetune_saved_reference.py

It prints:
  * the two-layer MLP of finetune_test.cc (x[2,4] @ W1[4,8] -> relu -> @ W2[8,3], sum loss), all
    trained and with W1 frozen;
  * the LoRA projection of finetune_test.cc (x[2,16] @ W[16,12] + (x @ A[16,4]) @ B[4,12], W
    frozen), as PEFT computes it with scaling 1 and no dropout;
  * torchvision's resnet18 (the model of tests/fixtures/resnet18_opset*.onnx) at batch 32, 64x64,
    cross-entropy, with the stem and layer1 frozen (parameters whose name matches
    ^(conv1|bn1|layer1)\\.), and with everything but fc frozen (--train '^fc\\.').
"""
import re

import torch
import torchvision

from saved_bytes_reference import saved_bytes


def mlp(freeze_first):
    w1 = torch.randn(4, 8, requires_grad=not freeze_first)
    w2 = torch.randn(8, 3, requires_grad=True)
    x = torch.randn(2, 4)
    return saved_bytes([w1, w2], lambda: torch.relu(x @ w1) @ w2)


def lora_projection():
    w = torch.randn(16, 12)  # frozen base
    a = torch.randn(16, 4, requires_grad=True)
    b = torch.zeros(4, 12, requires_grad=True)
    x = torch.randn(2, 16)
    return saved_bytes([w, a, b], lambda: (x @ w + (x @ a) @ b).sum())


def resnet18_frozen(pattern, train_matching):
    torch.manual_seed(0)
    model = torchvision.models.resnet18()
    model.train()
    for name, p in model.named_parameters():
        p.requires_grad_(bool(re.search(pattern, name)) == train_matching)
    x = torch.randn(32, 3, 64, 64)
    labels = torch.randint(0, 1000, (32,))
    params = list(model.parameters()) + list(model.buffers())
    return saved_bytes(
        params, lambda: torch.nn.functional.cross_entropy(model(x), labels))


def main():
    print("mlp all trained: saved bytes %d (%d tensors)" % mlp(False))
    print("mlp first layer frozen: saved bytes %d (%d tensors)" % mlp(True))
    print("lora projection rank 4: saved bytes %d (%d tensors)" % lora_projection())
    print("resnet18 freeze ^(conv1|bn1|layer1)\\.: saved bytes %d (%d tensors)"
          % resnet18_frozen(r"^(conv1|bn1|layer1)\.", train_matching=False))
    print("resnet18 train ^fc\\.: saved bytes %d (%d tensors)"
          % resnet18_frozen(r"^fc\.", train_matching=True))


if __name__ == "__main__":
    main()
