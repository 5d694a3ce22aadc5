#!/usr/bin/env python3
"""torchtune's activation offloading (enable_activation_offloading: training.OffloadActivations,
torchtune/training/_activation_offloading.py) as the recipes run it, measured on the CPU with
torch 2.x (issue 40, item 5).

The model is the tiny Llama of measure_hf_checkpointing.py (its graph is
tests/fixtures/recipe_rows/tiny_llama.onnx.xz). Its lm_head is also registered as `model.output`,
the attribute torchtune's get_act_offloading_ctx_manager looks for, so the real function wraps
the output head in NoOpManager as it does for a torchtune TransformerDecoder. The recipe's step:

    with ctx:                       # OffloadActivations, around the model's forward only
        logits = model(input_ids)
    loss = F.cross_entropy(...)     # outside the context, as the recipes compute the loss
    loss.backward()

with activation checkpointing (non-reentrant torch.utils.checkpoint on every decoder layer, as
torchtune's set_activation_checkpointing wraps TransformerSelfAttentionLayer) or without it
(the context alone; the recipes refuse that pairing, a library user may not), and with
use_streams True (what get_act_offloading_ctx_manager builds) or False.

The CPU has no device/host split. OffloadActivations runs unchanged except for its `torch.cuda`
(a stub: streams and events do nothing, the copy is synchronous) and its host allocation
(torch.empty_like(..., device="cpu") returns a `HostCopy`, whose `.to("cuda")` makes a plain CPU
tensor, the "device" copy). Each pack is recorded with its bytes and the hook's decision
(offloaded, or kept: below min_offload_size, an nn.Parameter, or under the NoOpManager of the
output head, which never calls the pack). The device bytes are the live bytes of torch.profiler's
CPU memory events minus the host copies: each allocation made inside the pack hook (a
record_function range around it) is a host copy, matched to its free by address. So the device
peak is torch's own allocation trace with what the hooks moved to the host taken out.

Prints one JSON row per configuration (the lines of docs/offload_rows.jsonl), with memplan's flags
for the same step, which tools/recipes/repredict_recipe_rows.py re-predicts:
  torch_step_peak_bytes   device live-bytes peak of forward + loss + backward above the start;
  torch_total_peak_bytes  the same with the host copies counted (what the CPU measured);
  packs                   per decision: count and bytes of the saved tensors the hook saw.

usage: measure_activation_offloading.py [--batch 2] [--seq 64] [--verbose]
"""

import argparse
import json
import os
import sys
import types

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_hf_checkpointing import CONFIG, tiny_llama  # noqa: E402


class HostCopy(torch.Tensor):
    """The pinned host tensor of a pack: `.to("cuda")` brings back a plain tensor."""
    __torch_function__ = torch._C._disabled_torch_function_impl

    def to(self, *args, **kwargs):
        if args and args[0] == "cuda":
            return DeviceCopy.of(self)
        return super().to(*args, **kwargs)


class DeviceCopy(torch.Tensor):
    """A tensor brought back to the "device": record_stream is a no-op (one stream here)."""
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def of(host):
        return torch.Tensor.clone(host.as_subclass(torch.Tensor)).as_subclass(DeviceCopy)

    def record_stream(self, stream):
        pass


class _Event:
    def synchronize(self):
        pass


class _Stream:
    def wait_event(self, event):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self):
        return _Event()


def _cuda_stub():
    import contextlib
    return types.SimpleNamespace(default_stream=lambda: _Stream(), Stream=_Stream,
                                 stream=lambda s: contextlib.nullcontext())


class _TorchOnCpu:
    """What _activation_offloading.py sees as `torch`: torch itself but for torch.cuda and the
    host allocation."""
    cuda = _cuda_stub()

    @staticmethod
    def empty_like(t, pin_memory=False, device=None, **kwargs):
        return torch.empty_like(t, device="cpu", **kwargs).as_subclass(HostCopy)

    def __getattr__(self, name):
        return getattr(torch, name)


def offloading_context(model, use_streams):
    """The context the recipe builds, with the pack hook recorded."""
    import torchtune.training._activation_offloading as offloading
    offloading.torch = _TorchOnCpu()
    if use_streams:
        # The recipes' own call: OffloadActivations() with its defaults (use_streams=True,
        # max_fwd_stash_size=5, min_offload_size=1024) and NoOpManager on model.output.
        ctx = offloading.get_act_offloading_ctx_manager(model, True)
    else:
        ctx = offloading.OffloadActivations(use_streams=False)
        noop = offloading.NoOpManager()
        model.output.register_forward_pre_hook(lambda *args: noop.__enter__())
        model.output.register_forward_hook(lambda *args: noop.__exit__(), always_call=True)
    packs = []
    pack = ctx.pack_hook

    def recorded_pack(t):
        with record_function("offload_pack"):
            tensor_id = pack(t)
        offloaded = ctx.tracker[tensor_id][1]
        nbytes = t.element_size() * t.nelement()
        reason = ("offloaded" if offloaded else
                  "parameter" if isinstance(t, torch.nn.Parameter) else "small")
        packs.append({"id": tensor_id, "bytes": nbytes, "decision": reason,
                      "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")})
        return tensor_id

    ctx.pack_hook = recorded_pack
    return ctx, packs


def device_and_total_peaks(prof):
    """(device peak, total peak) of the live bytes above the start: allocations made inside an
    offload_pack range are host copies."""
    from torch._C._profiler import _EventType
    host_allocs = set()
    allocs = []

    def walk(e, in_pack):
        in_pack = in_pack or e.name == "offload_pack"
        if e.typed[0] == _EventType.Allocation:
            f = e.extra_fields
            if f.device.type == "cpu":
                allocs.append((e.start_time_ns, f.ptr, f.alloc_size))
                if in_pack and f.alloc_size > 0:
                    host_allocs.add((e.start_time_ns, f.ptr))
        for c in e.children:
            walk(c, in_pack)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root, False)
    allocs.sort()
    live_kind = {}
    device = total = device_peak = total_peak = 0
    for start, ptr, size in allocs:
        if size > 0:
            live_kind[ptr] = (start, ptr) in host_allocs
            is_host = live_kind[ptr]
        else:
            is_host = live_kind.pop(ptr, False)
        total += size
        if not is_host:
            device += size
        device_peak = max(device_peak, device)
        total_peak = max(total_peak, total)
    return device_peak, total_peak


def measure(checkpointing, use_streams, batch, seq, verbose):
    model = tiny_llama()
    model.train()
    model.output = model.lm_head  # the attribute torchtune's output-head detection reads
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ctx, packs = offloading_context(model, use_streams)
    ids = torch.randint(0, CONFIG["vocab_size"], (batch, seq))

    def step():
        with ctx:
            logits = model(input_ids=ids, use_cache=False).logits
        loss = F.cross_entropy(logits.flatten(0, 1), ids.flatten())
        del logits
        loss.backward()

    step()  # warm-up: lazily made state (rotary caches) exists before the measured step
    model.zero_grad(set_to_none=True)  # the gradients are allocated inside it, as memplan plans
    packs.clear()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    device_peak, total_peak = device_and_total_peaks(prof)
    summary = {}
    for p in packs:
        s = summary.setdefault(p["decision"], {"count": 0, "bytes": 0})
        s["count"] += 1
        s["bytes"] += p["bytes"]
    if verbose:
        for p in packs:
            print(p, file=sys.stderr)
    hooks = "torchtune-streams" if use_streams else "torchtune"
    flags = (f"--dim batch={batch} --dim seq={seq} --micro-batch {batch} --precision fp32 "
             "--gpu 80G --headroom 0 --allocator exact --optimizer sgd --loss cross_entropy "
             "--attention eager")
    flags += (" --recompute all --recompute-unit module" if checkpointing
              else " --recompute none")
    flags += f" --offload activations --offload-hooks {hooks}"
    return {"model": "tiny_llama", "recipe": "torchtune", "feature": "activation_offloading",
            "config": ("checkpointing + " if checkpointing else "alone, ") +
            ("use_streams" if use_streams else "no streams"),
            "use_streams": use_streams, "activation_checkpointing": checkpointing,
            "batch": batch, "seq": seq, "dtype": "float32", "torch": torch.__version__,
            "flags": flags, "packs": summary, "torch_total_peak_bytes": total_peak,
            "torch_step_peak_bytes": device_peak}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for checkpointing in (False, True):
        for use_streams in (False, True):
            print(json.dumps(measure(checkpointing, use_streams, args.batch, args.seq,
                                     args.verbose)))


if __name__ == "__main__":
    main()
