"""What the runners of exported scripts share (run_exported_loop.py, run_torchrun_ddp.py,
run_module_loop.py): the exported file loaded as a module, the torch twin of
tests/fixtures/ci_check/mlp.onnx with random data for it, and a scheduler that counts its steps."""

import importlib.util

import torch
import torch.nn as nn
from torch.utils.data import TensorDataset


def load_exported(path, name):
    """The Python file `memplan export` wrote at `path`, imported as module `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Mlp(nn.Module):
    """mlp.onnx as torch modules: x[batch,16] -> fc1 (16x32) -> relu1 -> fc2 (32x4)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


def mlp_dataset(samples):
    """`samples` random inputs for Mlp with random class labels (torch's global generator)."""
    return TensorDataset(torch.randn(samples, 16), torch.randint(0, 4, (samples,)))


def counting_scheduler(calls):
    """A make_scheduler(optimizer) for train() whose LambdaLR appends to `calls` each time it is
    called: once at construction and once per scheduler.step(). The learning rate is unchanged."""

    def make_scheduler(optimizer):
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: calls.append(step) or 1.0)

    return make_scheduler
