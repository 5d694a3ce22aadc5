"""What the runners of exported scripts share (run_exported_loop.py, run_torchrun_ddp.py,
run_module_loop.py): the exported file loaded as a module, and the torch twin of
tests/fixtures/ci_check/mlp.onnx."""

import importlib.util

import torch.nn as nn


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
