"""What the runners of exported scripts share (run_exported_loop.py, run_torchrun_ddp.py,
run_module_loop.py): the exported file loaded as a module, the torch twin of
tests/fixtures/ci_check/mlp.onnx with random data for it, a scheduler that counts its steps, and
a training run of the exported train() on that data."""

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


def train_mlp(script, model, optimizer_steps, **train_kwargs):
    """Runs the exported script's train() on `model` (an Mlp) over `optimizer_steps` optimizer
    steps' worth of random samples; checks that the scheduler stepped once per optimizer step and
    that the parameters changed. Returns the number of micro-batches it ran."""
    micro_batches = optimizer_steps * script.ACCUMULATION_STEPS
    samples = micro_batches * script.MICRO_BATCH
    dataset = mlp_dataset(samples)
    scheduler_calls = []
    make_scheduler = counting_scheduler(scheduler_calls)

    before = [p.detach().clone() for p in model.parameters()]
    script.train(model, dataset, nn.CrossEntropyLoss(), make_scheduler, epochs=1, **train_kwargs)

    assert len(scheduler_calls) - 1 == optimizer_steps, scheduler_calls
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters())), "no update"
    return micro_batches
