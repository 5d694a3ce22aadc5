"""Live tensor bytes over a training step on the CPU, as PyTorch's own profiler records them.

torch.profiler.profile(profile_memory=True) records every allocation and free of the CPU
allocator as a "[memory]" Kineto event with its signed size (prof.profiler.kineto_results: the
FunctionEvent list folds allocations made inside an op into the op); their running sum in time
order is the live
bytes, whose maximum over a window is the window's live-bytes peak (the CPU analogue of
torch.cuda.max_memory_allocated minus what was allocated before). Shared by the
tools/recipes/measure_*.py scripts.
"""

import torch
from torch.profiler import ProfilerActivity, profile


def live_bytes_peak(step):
    """Runs step() under the profiler; returns (peak of live bytes above the start, bytes still
    live at the end above the start)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = [(e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
              if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU]
    events.sort(key=lambda e: e[0])
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak, live


def saved_bytes(forward, live=()):
    """Bytes autograd saves for backward during forward(), once per storage; storages of the
    tensors in `live` (parameters, inputs: they exist anyway, and ops often save a view of them,
    e.g. addmm's weight.t()) excluded. Returns (bytes, forward's result)."""
    storages = {}
    excluded = {t.untyped_storage().data_ptr() for t in live}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in excluded and not isinstance(t, torch.nn.Parameter):
            storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = forward()
    return sum(storages.values()), out
