#!/usr/bin/env python3
"""Unsloth's offloaded gradient checkpointing (use_gradient_checkpointing="unsloth") measured on
the CPU with torch 2.x (issue 40: the recipes people run).

Source read: unsloth_zoo 2026.10.9 (pip download unsloth unsloth_zoo --no-deps), file
unsloth_zoo/gradient_checkpointing.py. use_gradient_checkpointing="unsloth" with
max_seq_length >= 512 calls patch_unsloth_smart_gradient_checkpointing (unsloth/models/_utils.py
apply_unsloth_gradient_checkpointing; below 512 it is plain gradient checkpointing). That patch
replaces torch.utils.checkpoint.CheckpointFunction with UnslothCheckpointFunction and
transformers.modeling_utils.checkpoint with unsloth_checkpoint, which forces use_reentrant=True,
so every HF decoder layer runs `UnslothCheckpointFunction.apply(partial(layer.forward, **kw),
preserve_rng_state, hidden_states)`: the mask and rotary tables travel in the partial, the only
tensor argument is the layer's input hidden states. Its rule, steady state (step >= 3):

  forward   args[0] (requires grad) is offloaded when its stored bytes (numel x 2 for float32,
            which is stored as bfloat16 unless UNSLOTH_OFFLOAD_FP32=exact; numel x itemsize
            otherwise) exceed MINIMUM_SIZE = 2 MiB and it is not the input of the step's last
            checkpointed layer (LAST_GC_INDEX, after the first pass: torchtune PR 1443). The
            copy goes into a pinned host slot from CPU_BUFFERS (200 slots made at init, grown in
            place, reused every step: no allocation in the step), on a side stream the main
            stream waits for after the layer's forward. Nothing else is saved for it, so the GPU
            input is freed after the layer's no_grad forward. Not offloaded: saved on the device
            with ctx.save_for_backward (torch's reentrant checkpoint).
  backward  the host slot is copied into a persistent GPU staging buffer (GPU_BUFFERS, and
            GPU_BUFFERS_B alternating once double buffering is on: from the second step, when
            the GPU has more than 512 MiB free), each created at 2 * 256 * 2048 elements of the
            buffer dtype (bfloat16 where supported: 2 MiB) and grown with resize_ to the largest
            stored size, never shrunk. The re-run's input is that buffer itself (a view: no
            allocation), or, when a float32 input was stored as bfloat16, `buffer.to(float32)`,
            a new device tensor held until the function's backward returns. Then the layer's
            forward re-runs under enable_grad and torch.autograd.backward runs through it, as in
            torch's reentrant CheckpointFunction.

This script reproduces UnslothCheckpointFunction's steady-state path line for line (one device,
double buffering on, UNSLOTH_GC_PREFETCH off, the default), with the GPU buffers as CPU tensors
and the streams as no-ops. The pinned host slots are made before the measured step (as
initialize_unsloth_gradient_checkpointing does), so the profiler's live bytes in the step are all
"device" bytes; the staging buffers are made in the warm-up steps and are resident at the start
of the measured step (their bytes are reported beside the peak).

--minimum-size and --initial-gpu-buffer scale Unsloth's two constants down to the tiny model
(at the shipped 2 MiB its 16 KiB hidden states are never offloaded).

Prints one JSON row per configuration (the unsloth lines of docs/offload_rows.jsonl):
  torch_step_peak_above_start_bytes  the profiler's live-bytes peak of the step above its start;
  torch_step_peak_bytes              the same plus the staging buffers, resident on the GPU since
                                     the warm-up (memplan plans them from the first offload on);
  offloaded_bytes                    the stored bytes of each input moved to a host slot.
usage: measure_unsloth_checkpointing.py [--batch 2] [--seq 64] [--configs shipped,scaled,...]
(--batch 8 --seq 2080 --configs shipped: hidden states of 16,640 x 64 x 2 B > 2 MiB move)
"""

import argparse
import functools
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live_bytes import live_bytes_peak  # noqa: E402
from measure_hf_checkpointing import CONFIG, tiny_llama  # noqa: E402

MIB = 1024 * 1024


class UnslothState:
    """The module globals of unsloth_zoo/gradient_checkpointing.py this path reads."""

    def __init__(self, minimum_size, initial_gpu_buffer, fp32_exact, buffer_dtype=torch.bfloat16):
        self.MINIMUM_SIZE = minimum_size
        self.INITIAL_GPU_BUFFER_SIZE = initial_gpu_buffer
        self.FP32_OFFLOAD_EXACT = fp32_exact
        self.GPU_BUFFER_DTYPE = buffer_dtype
        # initialize_unsloth_gradient_checkpointing: 200 host slots of 128 KiB elements.
        self.CPU_BUFFERS = [torch.empty(128 * 1024, dtype=buffer_dtype) for _ in range(200)]
        self.GPU_BUFFERS = None    # made by _ensure_device_buffers at the first offload
        self.GPU_BUFFERS_B = None
        self.USE_DOUBLE_BUFFER = False
        self.NEXT_BUFFER_SLOT = 0
        self.BACKWARD_PASS = True
        self.FIRST_PASS = True
        self.LAST_GC_INDEX = 0
        self.CURRENT_GC_INDEX = 0
        self.CPU_INDEX = 0
        self.offloads = []         # (bytes stored, shape) per offload of the current step

    def new_gpu_buffer(self):
        return torch.empty(self.INITIAL_GPU_BUFFER_SIZE, dtype=self.GPU_BUFFER_DTYPE)

    def staging_bytes(self):
        return sum(b.untyped_storage().nbytes() for b in (self.GPU_BUFFERS, self.GPU_BUFFERS_B)
                   if b is not None)


STATE = None


def _view_bytes_as(buffer, nbytes, dtype, shape):
    if buffer.dtype == dtype:
        return buffer[:nbytes // dtype.itemsize].view(shape)
    return buffer.view(torch.uint8)[:nbytes].view(dtype).view(shape)


class UnslothCheckpointFunction(torch.autograd.Function):
    """unsloth_zoo's UnslothCheckpointFunction, the steady-state path on one device."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        s = STATE
        ctx.run_function = run_function
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        ctx._requires_gradient = False
        ctx._saved_metadata = None
        for i, arg in enumerate(args):
            if torch.is_tensor(arg):
                if arg.requires_grad:
                    ctx._requires_gradient = True
                if i == 0 and arg.requires_grad:
                    if s.FIRST_PASS:
                        s.LAST_GC_INDEX += 1
                    s.CURRENT_GC_INDEX += 1
                    store_dtype = (torch.bfloat16 if arg.dtype == torch.float32 and
                                   not s.FP32_OFFLOAD_EXACT else arg.dtype)
                    new_size = arg.numel() * store_dtype.itemsize
                    if new_size > s.MINIMUM_SIZE and (s.CURRENT_GC_INDEX != s.LAST_GC_INDEX or
                                                      s.FIRST_PASS):
                        if s.GPU_BUFFERS is None:  # _ensure_device_buffers
                            s.GPU_BUFFERS = s.new_gpu_buffer()
                            s.GPU_BUFFERS_B = s.new_gpu_buffer()
                        if s.BACKWARD_PASS:
                            s.BACKWARD_PASS = False
                            s.offloads = []
                            s.CPU_INDEX = 0
                            if not s.FIRST_PASS and not s.USE_DOUBLE_BUFFER:
                                s.USE_DOUBLE_BUFFER = True  # free memory > 512 MiB on a GPU
                        x = s.CPU_BUFFERS[s.CPU_INDEX]
                        host_numel = -(-new_size // x.element_size())
                        if host_numel > x.numel():
                            x = torch.empty(host_numel, dtype=x.dtype)
                            s.CPU_BUFFERS[s.CPU_INDEX] = x
                        gpu_numel = -(-new_size // s.GPU_BUFFERS.element_size())
                        if gpu_numel > s.GPU_BUFFERS.numel():
                            s.GPU_BUFFERS.resize_(gpu_numel)
                        if s.USE_DOUBLE_BUFFER and gpu_numel > s.GPU_BUFFERS_B.numel():
                            s.GPU_BUFFERS_B.resize_(gpu_numel)
                        x = _view_bytes_as(x, new_size, store_dtype, arg.shape)
                        x.copy_(arg)  # the pinned host slot, on the side stream
                        buffer_slot = s.NEXT_BUFFER_SLOT
                        s.NEXT_BUFFER_SLOT ^= 1
                        ctx._saved_metadata = (new_size, arg.shape, s.CPU_INDEX, buffer_slot)
                        ctx._saved_dtype = arg.dtype
                        ctx._store_dtype = store_dtype
                        s.offloads.append(new_size)
                        s.CPU_INDEX += 1
                        tensor_inputs.append(None)
                    else:
                        tensor_inputs.append(arg)
                else:
                    tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        if ctx._requires_gradient:
            ctx.save_for_backward(*tensor_inputs)
        with torch.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        s = STATE
        if not ctx._requires_gradient:
            return None
        inputs = list(ctx.inputs)
        tensor_indices = ctx.tensor_indices
        tensors = ctx.saved_tensors
        if ctx._saved_metadata is not None:
            new_size, shape, cpu_index, buffer_slot = ctx._saved_metadata
            saved_dtype, store_dtype = ctx._saved_dtype, ctx._store_dtype
            staging = (s.GPU_BUFFERS_B if s.USE_DOUBLE_BUFFER and buffer_slot == 1
                       else s.GPU_BUFFERS)
            buffer = _view_bytes_as(staging, new_size, store_dtype, shape)
            x = _view_bytes_as(s.CPU_BUFFERS[cpu_index], new_size, store_dtype, shape)
            buffer.copy_(x)  # host slot -> staging buffer, on the side stream
        elif tensor_indices:
            inputs[tensor_indices[0]] = tensors[0]
        for i, idx in enumerate(tensor_indices[1:], start=1):
            inputs[idx] = tensors[i]
        s.BACKWARD_PASS = True
        s.FIRST_PASS = False
        s.CURRENT_GC_INDEX = 0
        detached_inputs = []
        for inp in inputs:
            if not isinstance(inp, torch.Tensor):
                detached_inputs.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            detached_inputs.append(x)
        if ctx._saved_metadata is not None:
            x = buffer.detach() if store_dtype == saved_dtype else buffer.to(saved_dtype)
            x.requires_grad_(True)
            detached_inputs[0] = x
        with torch.enable_grad():
            outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        outputs_with_grad, args_with_grad = [], []
        for i in range(len(outputs)):
            if torch.is_tensor(outputs[i]) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if outputs_with_grad:
            torch.autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, torch.Tensor) else None
                      for inp in detached_inputs)
        for i in range(len(detached_inputs)):
            detached_inputs[i] = None
            inputs[i] = None
        return (None, None) + grads


def unsloth_checkpoint(function, *args, use_reentrant=None, **kwargs):
    """unsloth_checkpoint: use_reentrant forced True, keywords bound into the callable."""
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        function = functools.partial(function, **kwargs)
    return UnslothCheckpointFunction.apply(function, preserve, *args)


def measure(minimum_size, initial_gpu_buffer, fp32_exact, batch, seq):
    global STATE
    import transformers.modeling_utils
    STATE = UnslothState(minimum_size, initial_gpu_buffer, fp32_exact)
    transformers.modeling_utils.checkpoint = unsloth_checkpoint  # the patch Unsloth applies
    model = tiny_llama()
    model.train()
    model.gradient_checkpointing_enable()
    ids = torch.randint(0, CONFIG["vocab_size"], (batch, seq))

    def step():
        model(input_ids=ids, labels=ids).loss.backward()

    # Step 1 is the first pass (every layer offloads, LAST_GC_INDEX counted), step 2 turns
    # double buffering on: the measured step 3 is the steady state.
    for _ in range(2):
        step()
        model.zero_grad(set_to_none=True)
    staging = STATE.staging_bytes()
    peak, _ = live_bytes_peak(step)
    flags = (f"--dim batch={batch} --dim seq={seq} --micro-batch {batch} --precision fp32 "
             "--gpu 80G --headroom 0 --allocator exact --optimizer sgd --loss cross_entropy "
             "--attention eager --recompute all --recompute-unit module --recompute-reentrant "
             "--offload activations --offload-hooks unsloth")
    return {"model": "tiny_llama", "recipe": "unsloth", "feature": "offloaded_checkpointing",
            "config": (f"MINIMUM_SIZE={minimum_size} INITIAL_GPU_BUFFER_SIZE={initial_gpu_buffer}"
                       f" UNSLOTH_OFFLOAD_FP32={'exact' if fp32_exact else 'bf16'}"),
            "batch": batch, "seq": seq, "dtype": "float32", "torch": torch.__version__,
            "flags": flags, "offloaded_bytes": STATE.offloads,
            "staging_buffer_bytes": staging,
            "torch_step_peak_above_start_bytes": peak,
            "torch_step_peak_bytes": peak + staging}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--configs", default="shipped,scaled,scaled-exact",
                        help="shipped: Unsloth's constants; scaled: both set to 0")
    args = parser.parse_args()
    torch.set_num_threads(1)
    configs = {"shipped": (2 * MIB, 2 * 256 * 2048, False), "scaled": (0, 0, False),
               "scaled-exact": (0, 0, True)}
    for name in args.configs.split(","):
        print(json.dumps(measure(*configs[name], args.batch, args.seq)))


if __name__ == "__main__":
    main()
