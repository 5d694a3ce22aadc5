#!/usr/bin/env python3
"""memplan's prediction beside PyTorch's own CUDA allocator, model by model (issue 13).

For each model and configuration this script
  (a) builds the PyTorch model (torchvision, or Hugging Face transformers from a config with
      random weights: no hub access is needed),
  (b) exports it to ONNX in training mode (the TorchScript exporter at opset 17 where the installed
      torch still has it, else torch.export at opset 18),
  (c) runs `memplan analyze --json` with the same micro-batch, precision/AMP regime, attention
      implementation, optimizer and recompute,
  (d) runs real training steps and reads torch.cuda.max_memory_allocated() and
      max_memory_reserved() after warm-up,
  (e) runs PyTorch's MemTracker (torch.distributed._tools.mem_tracker) on one step, and
  (f) appends a row to the JSON-lines file (docs/gpu_validation.jsonl by default).

What is compared. memplan budgets the CUDA context and the cuBLAS workspaces apart from the
training step (`gpu.context_bytes`: docs/gpu_table.md); PyTorch allocates its cuBLAS workspaces
through the caching allocator. So before each model a warm-up matmul forward and backward (in the
configuration's dtype) creates them, and the allocated/reserved bytes then held are the row's
`torch_baseline_*`: the step's own figures are max − baseline, which is what
`predicted_allocated_bytes` (memplan's live-bytes peak, `exact_peak_bytes`) and
`predicted_peak_bytes` (its caching-allocator peak, `peak_bytes`) predict.

    python3 tools/gpu/compare_with_torch.py --memplan build/tools/memplan [--only NAME,...]
        [--out docs/gpu_validation.jsonl] [--deadline SECONDS] [--verify] [--list]

Needs a CUDA GPU for the memory figures; `--device cpu` runs the same pipeline without them (a
check of the script on a machine without a GPU: export, analyze and one CPU step per row).
"""
import argparse
import contextlib
import gc
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

MiB = 1 << 20


# ---------------------------------------------------------------------------------------------
# Models: each case builds a module whose forward takes the exported inputs and returns logits.


class LogitsOnly(nn.Module):
    """Hugging Face models return a ModelOutput; the export and the training step both see only
    the logits, which the loss reads."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        if len(inputs) == 2:  # encoder-decoder: input_ids, decoder_input_ids
            return self.model(input_ids=inputs[0], decoder_input_ids=inputs[1]).logits
        if inputs[0].is_floating_point():
            return self.model(pixel_values=inputs[0]).logits
        return self.model(input_ids=inputs[0]).logits


class Case:
    """One model: how to build it, its inputs at a batch, and memplan's flags for its dims."""

    def __init__(self, name, source, build, inputs, input_names, axes, batch, dims=(),
                 attention=False, modules=None):
        self.name = name
        self.source = source
        self.build = build  # (attn_implementation or None) -> nn.Module
        self.inputs = inputs  # (batch, device) -> tuple of tensors
        self.input_names = input_names
        self.axes = axes  # dynamic axes per input name (batch first)
        self.batch = batch
        self.dims = list(dims)  # memplan --dim flags
        self.attention = attention  # has attention: eager and sdpa rows
        self.modules = modules  # HF: supports gradient_checkpointing_enable


def torchvision_case(name, ctor, batch, size=224, video=False, attention=False):
    import torchvision

    def build(_attn):
        model = getattr(torchvision.models, ctor)() if not video else getattr(
            torchvision.models.video, ctor)()
        return model

    def inputs(b, device):
        shape = (b, 3, 16, 112, 112) if video else (b, 3, size, size)
        return (torch.randn(*shape, device=device),)

    return Case(name, "torchvision", build, inputs, ["input"], {"input": {0: "batch"}}, batch,
                attention=attention)


def hf_config(kind):
    import transformers as tf
    if kind == "gpt2":
        return tf.GPT2Config(n_positions=1024, use_cache=False), tf.GPT2LMHeadModel
    if kind == "llama-1b":  # TinyLlama-1.1B's shape
        return tf.LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                              num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                              max_position_embeddings=2048, use_cache=False), tf.LlamaForCausalLM
    if kind == "bert-base":
        return tf.BertConfig(), tf.BertForMaskedLM
    if kind == "t5-small":
        return tf.T5Config(d_model=512, d_ff=2048, num_layers=6, num_heads=8, d_kv=64,
                           vocab_size=32128, use_cache=False), tf.T5ForConditionalGeneration
    if kind == "vit-base":
        return tf.ViTConfig(), tf.ViTForImageClassification
    raise ValueError(kind)


def hf_case(name, kind, batch, seq=None, tgt=None, image=False):
    """transformers is imported only when a Hugging Face case runs (not on a CPU-only check)."""

    def build(attn):
        cfg, klass = hf_config(kind)
        try:
            return LogitsOnly(klass._from_config(cfg, attn_implementation=attn or "eager"))
        except TypeError:  # a transformers whose _from_config takes no attn_implementation
            cfg._attn_implementation = attn or "eager"
            return LogitsOnly(klass(cfg))

    def vocab():
        return hf_config(kind)[0].vocab_size

    if image:
        def inputs(b, device):
            return (torch.randn(b, 3, 224, 224, device=device),)
        names, axes = ["pixel_values"], {"pixel_values": {0: "batch"}}
    elif tgt:
        def inputs(b, device):
            return (torch.randint(0, vocab(), (b, seq), device=device),
                    torch.randint(0, vocab(), (b, tgt), device=device))
        names = ["input_ids", "decoder_input_ids"]
        axes = {"input_ids": {0: "batch"}, "decoder_input_ids": {0: "batch"}}
    else:
        def inputs(b, device):
            return (torch.randint(0, vocab(), (b, seq), device=device),)
        names, axes = ["input_ids"], {"input_ids": {0: "batch"}}
    return Case(name, "transformers", build, inputs, names, axes, batch, attention=True,
                modules=True)


def cases():
    """The models, the most asked-about first (a --deadline run keeps the front of the list)."""
    return [
        torchvision_case("resnet50", "resnet50", 64),
        hf_case("gpt2", "gpt2", 8, seq=512),
        torchvision_case("vit_b_16", "vit_b_16", 32, attention=True),
        hf_case("bert-base", "bert-base", 16, seq=512),
        hf_case("llama-1b", "llama-1b", 4, seq=512),
        torchvision_case("convnext_tiny", "convnext_tiny", 32),
        torchvision_case("efficientnet_b0", "efficientnet_b0", 64),
        torchvision_case("mobilenet_v3_large", "mobilenet_v3_large", 64),
        torchvision_case("swin_t", "swin_t", 32),
        torchvision_case("r3d_18", "r3d_18", 8, video=True),
        hf_case("t5-small", "t5-small", 16, seq=512, tgt=128),
        hf_case("vit-base-hf", "vit-base", 32, image=True),
    ]


# ---------------------------------------------------------------------------------------------
# Configurations: the flags of one row, for memplan and for the PyTorch step.


class Config:
    def __init__(self, precision="fp32", attention=None, checkpointing=False, lora=None,
                 train=None, batch=None, near_limit=False):
        self.precision = precision
        self.attention = attention  # None (no attention) | eager | sdpa
        self.checkpointing = checkpointing
        self.lora = lora  # (rank, [target module names]) or None
        self.train = train  # regex of the trained parameters (the rest frozen) or None
        self.batch = batch
        self.near_limit = near_limit

    def label(self):
        parts = [self.precision]
        if self.attention:
            parts.append(self.attention)
        if self.checkpointing:
            parts.append("checkpoint")
        if self.lora:
            parts.append(f"lora{self.lora[0]}")
        if self.train:
            parts.append("frozen-backbone")
        if self.near_limit:
            parts.append("near-limit")
        return "/".join(parts)


def configs_for(case):
    rows = []
    attentions = ["sdpa", "eager"] if case.attention and case.source == "transformers" else [None]
    if case.name == "vit_b_16":
        attentions = ["sdpa"]  # nn.MultiheadAttention runs scaled_dot_product_attention
    for precision in ("fp32", "bf16"):
        for attention in attentions:
            rows.append(Config(precision, attention))
    if case.modules:
        rows.append(Config("bf16", "sdpa", checkpointing=True))
    if case.name == "llama-1b":
        rows.append(Config("bf16", "sdpa", lora=(8, ["q_proj", "v_proj"])))
    if case.name == "resnet50":
        rows.append(Config("fp32", train=r"^fc\."))
    if case.name == "gpt2":
        rows.append(Config("bf16", "sdpa", near_limit=True))
    return rows


# ---------------------------------------------------------------------------------------------
# Export and memplan.


def register_diff_symbolic():
    """transformers 5 finds packed sequences with torch.diff, which the TorchScript exporter has
    no symbolic for at opset 17: diff(x, n=1, dim) = x[1:] - x[:-1] along dim."""
    from torch.onnx import symbolic_helper

    def diff(g, x, n, dim, prepend, append):
        axis = symbolic_helper._get_const(dim, "i", "dim")

        def ints(values):
            return g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))
        later = g.op("Slice", x, ints([1]), ints([2 ** 62]), ints([axis]))
        earlier = g.op("Slice", x, ints([0]), ints([-1]), ints([axis]))
        return g.op("Sub", later, earlier)

    torch.onnx.register_custom_op_symbolic("aten::diff", diff, 17)


def export(case, model, inputs, path):
    """TorchScript exporter, opset 17, training mode; torch.export at opset 18 where the installed
    torch cannot export the model the former way. Returns the exporter's name for the row."""
    kwargs = dict(input_names=case.input_names, output_names=["logits"],
                  opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                  do_constant_folding=False,
                  dynamic_axes={**case.axes, "logits": {0: "batch"}})
    has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
    try:
        if has_dynamo:
            kwargs["dynamo"] = False
        register_diff_symbolic()
        with torch.no_grad():
            torch.onnx.export(model, inputs, path, **kwargs)
        return "torchscript-opset17"
    except Exception as error:  # noqa: BLE001 - fall back, and say so in the row
        if not has_dynamo:
            raise
        print(f"  torchscript export failed ({type(error).__name__}: {str(error)[:200]}); "
              "trying torch.export", flush=True)
    kwargs.update(dynamo=True, opset_version=18, external_data=True)
    for key in ("training", "do_constant_folding", "dynamic_axes"):
        kwargs.pop(key, None)
    torch.onnx.export(model, inputs, path, **kwargs)
    return "dynamo-opset18"


class ExportJob:
    """One model's export in a child process, on the CPU: an exporter keeps references to the
    model (torch.export's caches) that must not stay in the measuring process, and the children
    run side by side while the rows of earlier models are measured on the GPU."""

    def __init__(self, args, case, path):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--export-one", case.name, "--export-to",
             path, "--device", "cpu", "--batch", str(args.batch)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    def result(self):
        """The exporter's name; raises with the child's last lines when it failed."""
        stdout, stderr = self.process.communicate()
        lines = [line for line in stdout.splitlines() if line.startswith("exported ")]
        if self.process.returncode != 0 or not lines:
            tail = [line for line in stderr.splitlines() if line.strip()][-3:]
            raise RuntimeError(f"export exit {self.process.returncode}: {' | '.join(tail)[:400]}")
        return lines[-1].split()[1]


def export_one(args):
    case = next(c for c in cases() if c.name == args.export_one)
    # One export per model, attention as written (eager): memplan's --attention decides whether
    # it runs as sdpa, as the row's torch model does.
    model = case.build("eager").to(args.device).train()
    source = export(case, model, case.inputs(args.batch or case.batch, args.device),
                    args.export_to)
    print(f"exported {source}")
    return 0


def strip_weights(path, out_path):
    """The exported graph without its weight bytes (initializers become external data in a file
    that is not shipped: `truncate -s` recreates it sparse), for reading the graph elsewhere."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    offset = 0
    for tensor in model.graph.initializer:
        size = len(tensor.raw_data)
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            # The TorchScript exporter writes one file per tensor and no length: dims x size.
            count = 1
            for d in tensor.dims:
                count *= d
            itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize \
                if hasattr(onnx.helper, "tensor_dtype_to_np_dtype") else \
                onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tensor.data_type].itemsize
            size = count * itemsize
        elif not tensor.raw_data:
            continue  # typed data fields: small constants, kept inline
        tensor.ClearField("raw_data")
        del tensor.external_data[:]
        for key, value in (("location", "weights.bin"), ("offset", str(offset)),
                           ("length", str(size))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        tensor.data_location = onnx.TensorProto.EXTERNAL
        offset += size
    onnx.save(model, out_path)
    return offset


def memplan_flags(case, config, batch):
    flags = ["--gpu", "H100", "--micro-batch", str(batch), "--optimizer", "adam",
             "--optimizer-impl", "foreach", "--loss", "cross_entropy", "--headroom", "0",
             "--precision", config.precision]
    if config.precision != "fp32":
        flags += ["--amp-mode", "autocast"]
    flags += ["--attention", config.attention or "auto"]
    flags += ["--recompute", "all" if config.checkpointing else "none"]
    if config.checkpointing:
        flags += ["--recompute-unit", "module"]
    if config.lora:
        flags += ["--lora", str(config.lora[0]), "--lora-targets", "|".join(config.lora[1])]
    if config.train:
        flags += ["--train", config.train]
    for dim in case.dims:
        flags += ["--dim", dim]
    return flags


def run_memplan(memplan, verb, path, flags, timeout=600):
    out = subprocess.run([memplan, verb, path, "--json", *flags], capture_output=True, text=True,
                         timeout=timeout)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"memplan {verb} exit {out.returncode}: {out.stderr.strip()[:300]}")
    return json.loads(out.stdout)


# ---------------------------------------------------------------------------------------------
# The PyTorch step.


def loss_of(logits, labels):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))


def labels_for(logits_shape, device):
    """A class index per logits row, below the logits' last dim (the classes or the vocabulary)."""
    return torch.randint(0, logits_shape[-1], logits_shape[:-1], device=device)


def autocast(config, device):
    if config.precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if config.precision == "bf16" else torch.float16
    return torch.autocast(device, dtype=dtype)


def warm_up_handles(config, device):
    """Creates the cuBLAS handles and workspaces a training step uses (forward thread and
    autograd's device thread), so the row's baseline holds them."""
    a = torch.randn(64, 64, device=device, requires_grad=True)
    bias = torch.randn(64, device=device, requires_grad=True)
    with autocast(config, device):
        out = (a @ a).float().sum() + F.linear(a, a, bias).float().sum()
    out.backward()
    del a, bias, out


def prepare(case, config, device):
    model = case.build(config.attention).to(device).train()
    if config.checkpointing:
        model.model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False})
    if config.lora:
        import peft
        lora = peft.LoraConfig(r=config.lora[0], lora_alpha=config.lora[0],
                               target_modules=config.lora[1], lora_dropout=0.0)
        model.model = peft.get_peft_model(model.model, lora)
    if config.train:
        import re
        for name, param in model.named_parameters():
            param.requires_grad_(re.search(config.train, name) is not None)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=1e-4, foreach=True if device == "cuda" else None)
    return model, optimizer


def train_step(model, optimizer, inputs, labels, config, device):
    """As memplan's exported loops write it (`loss = loss_fn(model(inputs), targets)`): no
    variable holds the logits through backward, so they live only as long as the loss keeps them
    (a loop that keeps `output = model(x)` alive holds them too, one [B, S, V] tensor more)."""
    optimizer.zero_grad(set_to_none=True)
    with autocast(config, device):
        loss = loss_of(model(*inputs), labels)
    loss.backward()
    optimizer.step()
    return loss.detach()


def phase_peaks(model, optimizer, inputs, labels, config, device, baseline):
    """One more step, its allocated peak per phase (above the baseline), and the model-state
    bytes PyTorch holds: where a difference from memplan sits."""
    def peak():
        torch.cuda.synchronize()
        value = torch.cuda.max_memory_allocated() - baseline
        torch.cuda.reset_peak_memory_stats()
        return value

    optimizer.zero_grad(set_to_none=True)
    torch.cuda.reset_peak_memory_stats()
    # What autograd saves, once per storage, parameters excluded (memplan's
    # saved_activation_bytes), by dtype: where an autocast difference sits.
    param_ptrs = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in param_ptrs:
            saved[ptr] = (max(saved.get(ptr, (0, ""))[0], t.untyped_storage().nbytes()),
                          str(t.dtype).replace("torch.", ""))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast(config, device):
        loss = loss_of(model(*inputs), labels)
    forward = peak()
    saved_by_dtype = {}
    for nbytes, dtype in saved.values():
        saved_by_dtype[dtype] = saved_by_dtype.get(dtype, 0) + nbytes
    after_forward = torch.cuda.memory_allocated() - baseline
    loss.backward()
    del loss
    backward = peak()
    params = [p for p in model.parameters()]
    gradient_bytes = sum(p.grad.numel() * p.grad.element_size() for p in params
                         if p.grad is not None)
    optimizer.step()
    step = peak()
    state_bytes = sum(t.numel() * t.element_size() for state in optimizer.state.values()
                      for t in state.values() if torch.is_tensor(t) and t.is_cuda)
    return {"torch_phase_peak_bytes": {"forward": forward, "backward": backward,
                                       "optimizer": step},
            "torch_after_forward_bytes": after_forward,
            "torch_saved_bytes": sum(saved_by_dtype.values()),
            "torch_saved_bytes_by_dtype": saved_by_dtype,
            "torch_model_state_bytes": {
                "parameters": sum(p.numel() * p.element_size() for p in params),
                "gradients": gradient_bytes, "optimizer_state": state_bytes}}


def memtracker_peak(model, optimizer, inputs, labels, config, device):
    try:
        from torch.distributed._tools.mem_tracker import MemTracker
    except ImportError as error:
        return None, f"MemTracker unavailable: {error}"
    try:
        tracker = MemTracker()
        tracker.track_external(model, optimizer)
        with tracker:
            train_step(model, optimizer, inputs, labels, config, device)
        snapshot = tracker.get_tracker_snapshot("peak")
        dev = torch.device(device, torch.cuda.current_device())
        return int(snapshot[dev]["Total"]), None
    except Exception as error:  # noqa: BLE001 - the anchor is optional; say why it is missing
        return None, f"{type(error).__name__}: {str(error)[:200]}"


def torch_measure(case, config, batch, device, memtracker):
    result = {}
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
        warm_up_handles(config, device)
        torch.cuda.synchronize()
        result["torch_baseline_allocated_bytes"] = torch.cuda.memory_allocated()
        result["torch_baseline_reserved_bytes"] = torch.cuda.memory_reserved()
    model, optimizer = prepare(case, config, device)
    inputs = case.inputs(batch, device)
    with torch.no_grad(), autocast(config, device):
        shape = model(*inputs).shape
    labels = labels_for(shape, device)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    try:
        steps = 3 if device == "cuda" else 1
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            train_step(model, optimizer, inputs, labels, config, device)
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        result["torch_step_seconds"] = min(times)
        if device == "cuda":
            result["torch_max_allocated_bytes"] = torch.cuda.max_memory_allocated()
            result["torch_max_reserved_bytes"] = torch.cuda.max_memory_reserved()
            result.update(phase_peaks(model, optimizer, inputs, labels, config, device,
                                      result["torch_baseline_allocated_bytes"]))
            if memtracker:
                result["memtracker_peak_bytes"], why = memtracker_peak(
                    model, optimizer, inputs, labels, config, device)
                if why:
                    result["memtracker_error"] = why
    except torch.cuda.OutOfMemoryError as error:
        result["torch_error"] = f"OutOfMemoryError: {str(error).splitlines()[0][:200]}"
    del model, optimizer, inputs, labels
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    return result


# ---------------------------------------------------------------------------------------------


def row_for(case, config, args, onnx_path, source):
    batch = config.batch or args.batch or case.batch
    flags = memplan_flags(case, config, batch)
    row = {"model": case.name, "source": f"{case.source}/{source}", "config": config.label(),
           "flags": " ".join(flags), "batch": batch,
           "gpu": torch.cuda.get_device_name() if args.device == "cuda" else "none",
           "torch": torch.__version__}
    if config.near_limit:
        # The largest micro-batch memplan says fits an H100 with no headroom, then run it.
        search = [f for f in flags]
        i = search.index("--micro-batch")
        del search[i:i + 2]
        plan = run_memplan(args.memplan, "analyze", onnx_path, search)
        batch = plan["plan"].get("max_micro_batch") or plan["plan"]["micro_batch"]
        flags = memplan_flags(case, config, batch)
        row.update(batch=batch, flags=" ".join(flags))
    try:
        report = run_memplan(args.memplan, "analyze", onnx_path, flags)
        row["predicted_allocated_bytes"] = report["exact_peak_bytes"]
        row["predicted_peak_bytes"] = report["peak_bytes"]
        row["predicted_breakdown"] = report["breakdown"]
        row["predicted_saved_activation_bytes"] = report.get("saved_activation_bytes")
        row["predicted_model_state_bytes"] = report.get("model_state_bytes")
        row["predicted_context_bytes"] = report["gpu"].get("context_bytes")
        row["predicted_peak_at"] = report.get("peak")
        row["attention_fused"] = report["plan"].get("attention", {}).get("fused")
    except Exception as error:  # noqa: BLE001 - the row says what failed
        row["memplan_error"] = str(error)[:400]
    first = config.label() == configs_for(case)[0].label()
    row.update(torch_measure(case, config, batch, args.device, args.memtracker and first))
    if args.verify and args.device == "cuda" and "memplan_error" not in row:
        try:
            verify = run_memplan(args.memplan, "verify", onnx_path,
                                 flags + ["--device", "cuda", "--steps", "2"], timeout=300)
            row["memplan_verify_cuda_passed"] = verify.get("passed")
            row["memplan_verify_cuda_measured_bytes"] = verify.get("measured_peak_bytes")
        except Exception as error:  # noqa: BLE001
            row["memplan_verify_cuda_error"] = str(error)[:400]
    if "torch_max_allocated_bytes" in row and "predicted_allocated_bytes" in row:
        step_alloc = row["torch_max_allocated_bytes"] - row["torch_baseline_allocated_bytes"]
        step_reserved = row["torch_max_reserved_bytes"] - row["torch_baseline_reserved_bytes"]
        if step_alloc > 0:
            row["allocated_error_pct"] = round(
                100.0 * (row["predicted_allocated_bytes"] - step_alloc) / step_alloc, 2)
        if step_reserved > 0:
            row["reserved_error_pct"] = round(
                100.0 * (row["predicted_peak_bytes"] - step_reserved) / step_reserved, 2)
    return row


def run_row(args, case, config, onnx_path, source):
    """Measures one row, appends it to --out and prints a line of the table."""
    t0 = time.time()
    try:
        row = row_for(case, config, args, onnx_path, source)
    except Exception as error:  # noqa: BLE001 - the row says what failed
        traceback.print_exc()
        row = {"model": case.name, "config": config.label(),
               "error": f"{type(error).__name__}: {str(error)[:300]}"}
    with open(args.out, "a") as out:
        out.write(json.dumps(row) + "\n")
    step = row.get("torch_max_allocated_bytes", 0) - row.get("torch_baseline_allocated_bytes", 0)
    problem = row.get("memplan_error", row.get("torch_error", row.get("error", "")))
    print(f"  {case.name:18s} {config.label():24s} predicted "
          f"{row.get('predicted_allocated_bytes', 0) / MiB:9.1f} MiB  torch {step / MiB:9.1f} MiB"
          f"  error {row.get('allocated_error_pct')}%  reserved error "
          f"{row.get('reserved_error_pct')}%  ({time.time() - t0:.0f} s)"
          f"{'  ' + problem if problem else ''}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memplan", default="build/tools/memplan")
    parser.add_argument("--out", default="docs/gpu_validation.jsonl")
    parser.add_argument("--only", default="", help="comma list of model names")
    parser.add_argument("--configs", default="", help="comma list of config labels to keep")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--deadline", type=float, default=0, help="stop starting rows after N s")
    parser.add_argument("--verify", action="store_true", help="also run memplan verify --device cuda")
    parser.add_argument("--memtracker", action="store_true",
                        help="also run PyTorch's MemTracker (each model's first row; it keeps "
                             "references, so the rows after it have no clean reserved figure)")
    parser.add_argument("--keep-onnx", default="", help="folder to keep the exports in")
    parser.add_argument("--batch", type=int, default=0, help="every model at this micro-batch")
    parser.add_argument("--graphs", default="", help="also keep each export, weights stripped, here")
    parser.add_argument("--export-one", default="", help=argparse.SUPPRESS)
    parser.add_argument("--export-to", default="", help=argparse.SUPPRESS)
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when a row could not be exported, analyzed or measured")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.export_one:
        return export_one(args)
    warnings.filterwarnings("ignore")  # exporter deprecation notes would bury the table
    start = time.time()
    wanted = [w for w in args.only.split(",") if w]
    keep_configs = [w for w in args.configs.split(",") if w]
    selected = [c for c in cases() if not wanted or c.name in wanted]
    if args.list:
        for case in selected:
            print(case.name, [c.label() for c in configs_for(case)])
        return 0
    torch.manual_seed(0)
    folder = args.keep_onnx or tempfile.mkdtemp(prefix="memplan-gpu-")
    os.makedirs(folder, exist_ok=True)
    written = 0
    work = []
    for case in selected:
        configs = [c for c in configs_for(case) if not keep_configs or c.label() in keep_configs]
        if not configs:
            continue
        onnx_dir = os.path.join(folder, case.name)
        os.makedirs(onnx_dir, exist_ok=True)
        onnx_path = os.path.join(onnx_dir, "model.onnx")
        work.append((case, configs, onnx_path, ExportJob(args, case, onnx_path)))
    # A row near the GPU's limit runs last, when nothing else holds memory.
    last = []
    for case, configs, onnx_path, job in work:
        if args.deadline and time.time() - start > args.deadline:
            print(f"deadline: {case.name} and later not run", flush=True)
            job.process.kill()
            continue
        t0 = time.time()
        try:
            source = job.result()
        except Exception as error:  # noqa: BLE001
            traceback.print_exc()
            row = {"model": case.name, "source": case.source,
                   "export_error": f"{type(error).__name__}: {str(error)[:300]}"}
            with open(args.out, "a") as out:
                out.write(json.dumps(row) + "\n")
            continue
        print(f"{case.name}: exported ({source}) in {time.time() - t0:.0f} s", flush=True)
        if args.graphs:
            try:
                os.makedirs(args.graphs, exist_ok=True)
                size = strip_weights(onnx_path, os.path.join(args.graphs, case.name + ".onnx"))
                with open(os.path.join(args.graphs, case.name + ".weights"), "w") as f:
                    f.write(f"{size}\n")
            except Exception as error:  # noqa: BLE001 - a convenience; the row goes on
                print(f"  could not strip the graph: {error}", flush=True)
        last += [(case, config, onnx_path, source) for config in configs if config.near_limit]
        for config in [c for c in configs if not c.near_limit]:
            if args.deadline and time.time() - start > args.deadline:
                break
            run_row(args, case, config, onnx_path, source)
            written += 1
    for case, config, onnx_path, source in last:
        run_row(args, case, config, onnx_path, source)
        written += 1
    print(f"{written} rows appended to {args.out}")
    if args.strict:
        with open(args.out) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        failed = [r for r in rows if any(k in r for k in (
            "export_error", "memplan_error", "torch_error", "error"))]
        if failed or not rows:
            print(f"--strict: {len(failed)} of {len(rows)} rows failed", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
