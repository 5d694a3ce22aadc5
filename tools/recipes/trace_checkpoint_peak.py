#!/usr/bin/env python3
"""Per-allocation trace of the tiny Llama's step under HF gradient checkpointing (issue 40, item
10): which tensors torch holds at the live-bytes peak, and the allocations leading to it.

Runs the model of measure_hf_checkpointing.py (same config, same shapes) for one forward +
backward under torch.profiler (profile_memory, record_shapes, with_stack), then prints

  * the profiler's CPU memory events (signed bytes, running live bytes, innermost ops) from
    --window events before the peak to the peak;
  * every tensor alive at the peak that is not a parameter or gradient, with its size, the
    memory profiler's category (torch.profiler._memory_profiler: INPUT, ACTIVATION,
    AUTOGRAD_DETAIL, TEMPORARY...) and the ops that allocated it.

The trace is how the checkpointed rows of docs/recipe_rows.jsonl were explained (docs/
measurements.md): at the peak torch holds, besides the re-run block's saved tensors, the causal
mask and the rotary cos/sin the model built from the sequence length and passed to every
checkpointed layer (the checkpoint frame keeps its args until the layer's backward ends), and,
reentrant, the re-run's output and the CPU RNG states of the earlier blocks' ctx.

--model bert traces the tiny BERT of measure_encoder.py instead (batch 2 x seq 128, dropout as
native_dropout, as on CUDA).

usage: trace_checkpoint_peak.py {none,false,true} [--window 40] [--model llama|bert]
"""

import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_hf_checkpointing import CONFIG, tiny_llama  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("use_reentrant", choices=["none", "false", "true"])
    parser.add_argument("--window", type=int, default=40)
    parser.add_argument("--model", choices=["llama", "bert"], default="llama")
    args = parser.parse_args()
    torch.set_num_threads(1)
    reentrant = {"none": None, "false": False, "true": True}[args.use_reentrant]
    if args.model == "bert":
        import torch.nn.functional as F
        import measure_encoder
        F.dropout = measure_encoder.cuda_style_dropout
        model = measure_encoder.tiny_bert()
        ids_shape, vocab = (2, 128), measure_encoder.CONFIG["vocab_size"]
    else:
        model = tiny_llama()
        ids_shape, vocab = (2, 64), CONFIG["vocab_size"]
    model.train()
    if reentrant is not None:
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": reentrant})
        if reentrant:
            model.enable_input_require_grads()
    ids = torch.randint(0, vocab, ids_shape)

    def forward():
        return model(input_ids=ids, labels=ids).loss

    forward().backward()  # warm-up, as measure_hf_checkpointing.py
    model.zero_grad(set_to_none=True)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        forward().backward()
    events = list(prof.profiler.kineto_results.events())
    memory = sorted((e.start_ns(), e.nbytes()) for e in events
                    if e.name() == "[memory]"
                    and e.device_type() == torch.autograd.DeviceType.CPU)
    ops = [(e.start_ns(), e.end_ns(), e.name()) for e in events if e.name() != "[memory]"]

    def context(t):
        enclosing = sorted((o for o in ops if o[0] <= t <= o[1]), key=lambda o: o[0])
        return " > ".join(o[2].split("/")[-1][:48] for o in enclosing[-3:])

    live = peak = 0
    running = []
    for t, nbytes in memory:
        live += nbytes
        running.append((t, nbytes, live))
        peak = max(peak, live)
    at = max(i for i, r in enumerate(running) if r[2] == peak)
    print(f"live-bytes peak {peak} at memory event {at}")
    for i in range(max(0, at - args.window), at + 1):
        t, nbytes, now = running[i]
        print(f"  {i:5d} {nbytes:+9d} {now:9d}  {context(t)}")

    from torch.profiler._memory_profiler import Action
    profile_ = prof._memory_profile()
    t_peak = running[at][0]
    alive = {}
    for t, action, (key, version), size in profile_.timeline:
        if t > t_peak:
            break
        if action == Action.CREATE:
            alive[key] = (size, t, version)
        elif action == Action.DESTROY:
            alive.pop(key, None)
    print("alive at the peak (parameters and gradients left out):")
    for key, (size, t, version) in sorted(alive.items(), key=lambda kv: kv[1][1]):
        category = str(profile_._categories.get(key, version)).replace("Category.", "")
        if category in ("PARAMETER", "GRADIENT"):
            continue
        print(f"  {size:9d} {category:16s} {context(t)}")


if __name__ == "__main__":
    main()
