#!/usr/bin/env python3
"""Runs what `memplan export` writes for fine-tuning plans in the real frameworks, on the CPU,
with a tiny GPT-2 (transformers, random weights), and asserts at run time that what runs is the
plan: the micro-batch each forward sees, one optimizer step per ACCUMULATION_STEPS micro-batches,
the modules run under torch.utils.checkpoint, the trainable parameter count, the optimizer class
and its state dtype, the LoRA rank and adapted modules, the nf4 base (bitsandbytes Linear4bit).

The HF Trainer runs a plan of every block (gradient_checkpointing=True is then exactly the plan);
`accelerate launch --config_file` runs the exported YAML with the lines its comments give the
script, on one process, 2 (DDP) and as DeepSpeed ZeRO 1, 2 and 3; torchrun runs DDP and FSDP on
2 gloo ranks and hybrid shard on 4 (a 2 x 2 mesh), and the FSDP runs check every parameter is a
DTensor shard whose ranks add up to the model. DeepSpeed's engine runs on the CPU (its CPU
accelerator, gloo): deepspeed.initialize takes the exported JSON of ZeRO 1, 2 and 3 on 2 ranks,
ZeRO-2 with the optimizer offloaded and ZeRO-3 with optimizer and parameters offloaded
(DeepSpeedCPUAdam), and the HF Trainer's deepspeed= and accelerate's DeepSpeed plugin run ZeRO 1,
2 and 3 (accelerate also ZeRO-2 with the optimizer offloaded and ZeRO-3 with both offloads: the
DeepSpeedCPUAdam accelerate substitutes, offload_param). The 8-bit optimizers (AdamW8bit,
PagedAdamW8bit) of a full fine-tune step in the loop's train(), under `accelerate launch`
(1 process, ZeRO-2) and the DeepSpeed engine (ZeRO-2, the optimizer its _not_expressed names),
8-bit AdamW in the HF Trainer and Lightning: uint8 state from 4096 elements. The offloads'
QLoRA configs are checked with DeepSpeedConfig, and the LoraConfig / BitsAndBytesConfig its note names built by peft and
transformers. Pure bf16 runs in the loop, torchrun and Lightning ("bf16-true");
a node plan runs under the exported selective policy (the ops it recomputes and saves recorded)
with activation offload (save_on_cpu's packed tensors counted).

What a framework refuses on the CPU is asserted, so the check fails, and the cell gets a run,
once a release allows it: fp16 in the HF Trainer, accelerate and Lightning (no autocast and no
scaler; Lightning switches to bf16), while the loop and torchrun run fp16 (torch 2.x's float16 CPU
autocast and torch.amp.GradScaler("cpu")); FSDP in the HF Trainer (it trains DDP), accelerate
(FullyShardedDataParallelPlugin refuses the CPU) and Lightning (FSDPStrategy needs CUDA), and
Lightning's DeepSpeed strategy (CUDA only).

CI does not need this: it needs the venv tools/setup_torch_env.sh makes (torch, transformers,
peft, accelerate, lightning, deepspeed, bitsandbytes). Results and versions: docs/config_export.md.

usage: /work/memplan-venv/bin/python tools/run_exported_plans.py MEMPLAN_BINARY [WORK_DIR]
Prints one line per check and the framework versions; exit 0 when every check held.
ONLY="NAME,NAME" in the environment runs only those runs (the names in main()'s list, e.g.
ONLY="hf-trainer zero3,deepspeed zero3 engine offload optimizer+params").
"""

import contextlib
import importlib
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import Dataset, TensorDataset  # noqa: E402



def peft_without_old_torchao():
    """torchtune's setup pins torchao 0.14, older than peft 0.21 accepts: peft then raises for
    every plain nn.Linear it adapts. These plans use no torchao layer, so peft is told there is
    none."""
    with contextlib.suppress(Exception):
        import peft.tuners.lora.torchao as torchao_dispatch
        torchao_dispatch.is_torchao_available = lambda: False


peft_without_old_torchao()

VOCAB, SEQ, EMBED, LAYERS = 64, 8, 32, 2
RANK = 4
OPTIMIZER_STEPS = 2
# GPT-2's c_attn is a Conv1D of EMBED -> 3 * EMBED: LoRA adds r * (in + out) elements per layer.
EXPECTED_TRAINABLE = LAYERS * RANK * (EMBED + 3 * EMBED)  # 2 * 4 * (32 + 96) = 1024
# The whole tiny GPT-2 (lm_head tied to wte): wte 64 x 32, wpe (2 x SEQ) x 32, per block ln_1, ln_2
# (2 x 32 each), c_attn 32 x 96 + 96, attn.c_proj 32 x 32 + 32, c_fc 32 x 128 + 128,
# mlp.c_proj 128 x 32 + 32, and ln_f: 2048 + 512 + 2 * 12704 + 64 = 28032.
BLOCK_ELEMENTS = (4 * EMBED + EMBED * 3 * EMBED + 3 * EMBED + EMBED * EMBED + EMBED
                  + EMBED * 4 * EMBED + 4 * EMBED + 4 * EMBED * EMBED + EMBED)
FULL_ELEMENTS = VOCAB * EMBED + 2 * SEQ * EMBED + LAYERS * BLOCK_ELEMENTS + 2 * EMBED

RESULTS = []


def elements(parameter):
    """A parameter's element count, also under ZeRO-3, which leaves an empty placeholder in the
    module (numel() 0) and records the full count as ds_numel."""
    return getattr(parameter, "ds_numel", None) or parameter.numel()


def zero_facts(engine):
    """What a DeepSpeedEngine runs, read from the engine: the ZeRO stage, batch sizes, bf16, the
    ZeRO optimizer's class and whether it partitions gradients (stage 2; stage 1 keeps them
    whole), and this rank's ZeRO-3 parameter shard elements against the model's."""
    zero = engine.optimizer
    params = list(engine.module.parameters())
    return {"stage": engine.zero_optimization_stage(),
            "micro": engine.train_micro_batch_size_per_gpu(),
            "accumulation": engine.gradient_accumulation_steps(),
            "train_batch": engine.train_batch_size(), "bf16": engine.bfloat16_enabled(),
            "optimizer": type(zero).__name__,
            "partition_gradients": bool(getattr(zero, "partition_gradients", False)),
            "shard_elements": sum(p.ds_tensor.numel() for p in params
                                  if getattr(p, "ds_tensor", None) is not None),
            "full_elements": sum(elements(p) for p in params)}


def zero_offload_facts(engine):
    """The offloads a DeepSpeedEngine runs, read from the engine. ZeRO-Offload: the step runs on
    the host, DeepSpeedCPUAdam over the fp32 partitions (adam_w_mode: AdamW's decoupled weight
    decay). ZeRO-3's parameter offload (stage3.py): offload_param on, the coordinator's offload
    device, and the trainable parameters' shards kept in the host's flat buffers
    (param_groups_fp16_flat_cpu_memory) instead of one flat device buffer (lp_param_buffer).
    On the CPU accelerator every tensor is on "cpu" either way, so the device of a shard says
    nothing: these are the engine's own decisions."""
    zero = engine.optimizer
    inner = getattr(zero, "optimizer", None)
    out = {"cpu_offload": bool(engine.zero_cpu_offload()),
           "inner_optimizer": type(inner).__name__,
           "adam_w_mode": getattr(inner, "adam_w_mode", None)}
    if engine.zero_optimization_stage() != 3:
        return out
    trainable = [p for p in engine.module.parameters() if p.requires_grad]
    host = getattr(zero, "param_groups_fp16_flat_cpu_memory", None) or []
    spans = [(b.data_ptr(), b.data_ptr() + b.numel() * b.element_size()) for b in host]
    offload = getattr(zero, "parameter_offload", None)
    out.update({
        "offload_param": bool(getattr(zero, "offload_param", False)),
        "param_offload_device": str(getattr(getattr(offload, "offload_device", None), "value",
                                            getattr(offload, "offload_device", None))),
        "host_flat_elements": sum(b.numel() for b in host),
        "device_flat_buffer": getattr(zero, "lp_param_buffer", None) is not None,
        "trainable_shards_in_host_buffers": bool(spans) and all(
            any(lo <= p.ds_tensor.data_ptr() < hi for lo, hi in spans) for p in trainable)})
    return out


def check_optimizer_offload(where, facts, offload):
    """ZeRO-Offload on exactly when the plan offloads: DeepSpeedCPUAdam, in AdamW mode (the
    plan's AdamW), steps the host's fp32 partitions."""
    check(f"{where}: optimizer offload " + ("on: DeepSpeedCPUAdam (AdamW mode) steps the host's "
          "fp32 partitions" if offload else "off"),
          (facts["cpu_offload"], facts["inner_optimizer"] == "DeepSpeedCPUAdam")
          == (bool(offload), bool(offload)) and (not offload or facts["adam_w_mode"] is True),
          str(facts))


def check_parameter_offload(where, facts, offload):
    """ZeRO-3's parameter offload on exactly for the plan's "optimizer+params"."""
    params = offload == "optimizer+params"
    got = (facts["offload_param"], facts["param_offload_device"], facts["device_flat_buffer"],
           facts["trainable_shards_in_host_buffers"], facts["host_flat_elements"] > 0)
    check(f"{where}: parameter offload " + (
          "on: offload_param, the coordinator's offload device cpu, the trainable "
          "shards in the host's flat buffers (no device flat buffer)" if params
          else "off: the shards in one device flat buffer"),
          got == ((True, "cpu", False, True, True) if params
                  else (False, "None", True, False, False)), str(facts))


def check_zero_engine(where, facts, stage):
    """The ZeRO optimizer of `stage` as the engine built it: DeepSpeedZeroOptimizer for 1 and 2
    (gradients partitioned from 2 on), DeepSpeedZeroOptimizer_Stage3 with every parameter
    partitioned, a part of it on this rank."""
    if stage == 3:
        check(f"{where}: DeepSpeedZeroOptimizer_Stage3; every parameter partitioned, a part "
              "of it held here", facts["optimizer"] == "DeepSpeedZeroOptimizer_Stage3"
              and 0 < facts["shard_elements"] < facts["full_elements"], str(facts))
    else:
        check(f"{where}: DeepSpeedZeroOptimizer, gradients "
              + ("partitioned" if stage == 2 else "whole (optimizer state partitioned only)"),
              (facts["optimizer"], facts["partition_gradients"], facts["shard_elements"])
              == ("DeepSpeedZeroOptimizer", stage == 2, 0), str(facts))


def check(name, ok, detail=""):
    RESULTS.append(bool(ok))
    print(("ok    " if ok else "FAIL  ") + name + (f": {detail}" if detail else ""), flush=True)


def plan_json(micro_batch, accumulation, base_dtype, optimizer, parallel=None, gpus=None,
              recompute_modules=("transformer.h.0",), nodes=None, precision="bf16"):
    plan = {
        "micro_batch": micro_batch,
        "accumulation_steps": accumulation,
        "precision": precision,
        "amp_mode": "autocast",
        "optimizer": optimizer,
        "zero_grad": "none",
        "clip_gradients": True,
        "recompute": [],
        "recompute_unit": "module",
        "recompute_modules": list(recompute_modules),
        "checkpointable_modules": LAYERS,
        "lora": {
            "rank": RANK,
            "alpha": RANK,
            "dropout": 0.0,
            "target_modules": [f"transformer.h.{i}.attn.c_attn" for i in range(LAYERS)],
            "peft_target_modules": ["c_attn"],
        },
    }
    if base_dtype:
        plan["base_dtype"] = base_dtype
    if parallel:
        plan["parallel"] = parallel
        plan["gpus"] = gpus
        if nodes:
            plan["nodes"] = nodes
        if parallel.startswith("zero"):
            plan["amp_mode"] = "master-weights"
            plan["optimizer_impl"] = "fused"
    return {"schema": "memplan/1", "model": {"path": "tiny-gpt2", "name": "tiny-gpt2"},
            "plan": plan}


def export(memplan, plan, target, work, name):
    plan_path = os.path.join(work, name + ".json")
    with open(plan_path, "w") as f:
        json.dump(plan, f)
    result = subprocess.run([memplan, "export", plan_path, "--to", target, "--lr", "0.001",
                             "--weight-decay", "0.01"], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"memplan export --to {target}: {result.stderr.strip()}")
    suffix = {"deepspeed": ".json", "accelerate": ".yaml"}.get(target, ".py")
    out = os.path.join(work, f"{name}_{target}{suffix}")
    with open(out, "w") as f:
        f.write(result.stdout)
    return out


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_gpt2_dir(work):
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    config = GPT2Config(n_layer=LAYERS, n_embd=EMBED, n_head=2, vocab_size=VOCAB,
                        n_positions=SEQ * 2)
    path = os.path.join(work, "tiny-gpt2")
    GPT2LMHeadModel(config).save_pretrained(path)
    return path


def load_model(model_dir, load_kwargs):
    from transformers import GPT2LMHeadModel
    kwargs = dict(load_kwargs)
    if "quantization_config" in kwargs:
        kwargs["device_map"] = "cpu"
    return GPT2LMHeadModel.from_pretrained(model_dir, **kwargs)


def tokens(samples):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, VOCAB, (samples, SEQ), generator=g)
    return ids


def lm_loss(outputs, targets):
    logits = outputs.logits if hasattr(outputs, "logits") else outputs
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())


class Watch:
    """Counts what the model sees: the batch of every forward, the modules checkpointed."""

    def __init__(self, model, planned_modules):
        self.batches = []
        self.checkpointed = set()
        self.with_context = set()  # checkpointed with a context_fn: a selective policy
        self.model = model
        self.planned = {model.get_submodule(p): p for p in planned_modules}
        self.all_blocks = {model.get_submodule(f"transformer.h.{i}"): f"transformer.h.{i}"
                           for i in range(LAYERS)}
        model.get_submodule("transformer.wte").register_forward_pre_hook(
            lambda module, args: self.batches.append(args[0].shape[0]))
        # Forward entries per block, counted on its first layer (ln_1): a checkpointed block
        # runs it twice per micro-batch (its forward, then its recomputation in backward;
        # counted on entry, since torch >= 2.1's non-reentrant checkpoint may stop a
        # recomputation early), any other block once. Not on the block itself: transformers 5
        # checkpoints the block's forward, inside the block's own __call__ and its hooks.
        self.entries = {path: 0 for path in self.all_blocks.values()}
        for path in self.all_blocks.values():
            model.get_submodule(path + ".ln_1").register_forward_pre_hook(
                lambda m, args, _p=path: self.entries.__setitem__(_p, self.entries[_p] + 1))

    def recomputed_blocks(self):
        """The blocks entered twice per micro-batch: the ones that ran under checkpoint."""
        micro_batches = len(self.batches)
        return sorted(p for p, n in self.entries.items() if micro_batches and n == 2 * micro_batches)

    def checkpoint_spy(self, real_checkpoint):
        def spy(function, *args, **kwargs):
            owner = getattr(function, "__self__", None)
            if owner in self.all_blocks:
                self.checkpointed.add(self.all_blocks[owner])
                if "context_fn" in kwargs:
                    self.with_context.add(self.all_blocks[owner])
            return real_checkpoint(function, *args, **kwargs)
        return spy


def check_lora_and_base(label, model, base_dtype):
    from peft.tuners.lora import LoraLayer
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    check(f"{label}: trainable parameters = {EXPECTED_TRAINABLE} (2 layers x r 4 x (32 + 96))",
          trainable == EXPECTED_TRAINABLE, str(trainable))
    adapted = {n for n, m in model.named_modules() if isinstance(m, LoraLayer)}
    ranks = {m.r["default"] for m in model.modules() if isinstance(m, LoraLayer)}
    alphas = {m.lora_alpha["default"] for m in model.modules() if isinstance(m, LoraLayer)}
    check(f"{label}: LoRA rank {RANK}, alpha {RANK} on both c_attn",
          ranks == {RANK} and alphas == {RANK} and len(adapted) == LAYERS
          and all(n.endswith("attn.c_attn") for n in adapted), f"{sorted(adapted)} r={ranks}")
    if base_dtype == "nf4":
        import bitsandbytes
        four_bit = [m for m in model.modules() if isinstance(m, bitsandbytes.nn.Linear4bit)]
        quant = {m.weight.quant_type for m in four_bit}
        check(f"{label}: the frozen base is bitsandbytes nf4 (Linear4bit)",
              len(four_bit) >= LAYERS and quant == {"nf4"}, f"{len(four_bit)} layers {quant}")


def check_optimizer(label, optimizer, paged):
    """bitsandbytes' 8-bit AdamW, paged or not: PagedAdamW8bit / AdamW8bit, or the AdamW class
    with optim_bits=8 that the Trainer's optim="paged_adamw_8bit" builds."""
    inner = getattr(optimizer, "optimizer", optimizer)  # Accelerate / Lightning wrappers
    bits = getattr(getattr(inner, "args", None), "optim_bits", None)
    is_paged = getattr(inner, "is_paged", None)
    name = f"{type(inner).__module__}.{type(inner).__name__}"
    check(f"{label}: optimizer is bitsandbytes' 8-bit AdamW, paged={paged}",
          name.startswith("bitsandbytes.") and "AdamW" in name and bits == 8
          and is_paged == paged, f"{name} optim_bits={bits} is_paged={is_paged}")
    # bitsandbytes keeps 8-bit state for tensors of >= 4096 elements, 32-bit below
    # (analyzer/program/optimizer_state.h); the adapters here are all below.
    dtypes = set()
    wrong = []
    for group in inner.param_groups:
        for p in group["params"]:
            state = inner.state.get(p, {})
            if "state1" not in state:
                continue
            expected = torch.uint8 if p.numel() >= 4096 else torch.float32
            dtypes.add(str(state["state1"].dtype))
            if state["state1"].dtype != expected:
                wrong.append((tuple(p.shape), state["state1"].dtype))
    check(f"{label}: optimizer state dtype follows bitsandbytes' 4096-element rule",
          dtypes and not wrong, f"{sorted(dtypes)} {wrong}")


def eight_bit_facts(optimizer):
    """The bitsandbytes optimizer under its wrappers (accelerate's AcceleratedOptimizer, ZeRO's
    optimizer, which steps it over this rank's flat fp32 partition): its class, bits, paging,
    and for each state its parameter's elements and the state's dtype. None without one."""
    inner = optimizer
    while inner is not None and not type(inner).__module__.startswith("bitsandbytes."):
        inner = getattr(inner, "optimizer", None)
    if inner is None:
        return None
    states = [[p.numel(), str(inner.state[p]["state1"].dtype)]
              for group in inner.param_groups for p in group["params"]
              if "state1" in inner.state.get(p, {})]
    return {"class": f"{type(inner).__module__}.{type(inner).__name__}",
            "optim_bits": getattr(getattr(inner, "args", None), "optim_bits", None),
            "is_paged": getattr(inner, "is_paged", None), "states": states}


def check_eight_bit(label, facts, cls, paged):
    """The plan's 8-bit optimizer stepped: bitsandbytes' `cls`, 8 bits, paged as planned, and
    its state uint8 for every tensor of >= 4096 elements, fp32 below (bitsandbytes' rule), with
    at least one such tensor: a full fine-tune of the tiny GPT-2 has them (c_fc, c_proj: 4096
    elements; a ZeRO rank's flat partition: 14528)."""
    facts = facts or {}
    states = facts.get("states") or []
    check(f"{label}: bitsandbytes.optim.{cls}, optim_bits 8, paged={paged}",
          (facts.get("class"), facts.get("optim_bits"), facts.get("is_paged"))
          == (f"bitsandbytes.optim.adamw.{cls}", 8, paged), str(facts)[:400])
    check(f"{label}: stepped; its state uint8 from 4096 elements, fp32 below, some uint8",
          states and all((n >= 4096) == (dtype == "torch.uint8") for n, dtype in states)
          and any(dtype == "torch.uint8" for _, dtype in states), str(states)[:400])


def run_pytorch(memplan, work, model_dir):
    plan = plan_json(2, 3, "nf4", "paged-adamw8bit")
    script = load(export(memplan, plan, "pytorch", work, "qlora"), "exported_pytorch")
    p = plan["plan"]
    check("pytorch: MICRO_BATCH, ACCUMULATION_STEPS are the plan's",
          (script.MICRO_BATCH, script.ACCUMULATION_STEPS) == (p["micro_batch"],
                                                               p["accumulation_steps"]))
    model = load_model(model_dir, script.MODEL_LOAD_KWARGS)
    watch = Watch(model, p["recompute_modules"])
    script.checkpoint = watch.checkpoint_spy(script.checkpoint)
    made = []
    make_optimizer = script.make_optimizer

    def spy_optimizer(params):
        optimizer = make_optimizer(params)
        optimizer.register_step_post_hook(lambda *a: made.append(1))
        made.append(optimizer)
        return optimizer

    script.make_optimizer = spy_optimizer
    real_loader = script.DataLoader
    script.DataLoader = lambda *a, **k: real_loader(*a, **{**k, "num_workers": 0,
                                                          "pin_memory": False})
    micro_batches = OPTIMIZER_STEPS * script.ACCUMULATION_STEPS
    ids = tokens(micro_batches * script.MICRO_BATCH)
    peft_model = {}
    apply = script.apply_fine_tuning
    script.apply_fine_tuning = lambda m: peft_model.setdefault("m", apply(m))
    script.train(model, TensorDataset(ids, ids), lm_loss,
                 lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0), device="cpu")
    check("pytorch: every forward sees MICRO_BATCH samples",
          watch.batches and set(watch.batches) == {p["micro_batch"]}, str(watch.batches))
    steps = sum(1 for x in made if x == 1)
    check("pytorch: one optimizer step per ACCUMULATION_STEPS micro-batches",
          steps == OPTIMIZER_STEPS and len(watch.batches) == micro_batches,
          f"{steps} steps, {len(watch.batches)} micro-batches")
    check("pytorch: checkpointed modules are the plan's",
          watch.checkpointed == set(p["recompute_modules"]), str(sorted(watch.checkpointed)))
    check("pytorch: only the planned blocks recompute (2 entries per micro-batch)",
          watch.recomputed_blocks() == p["recompute_modules"], str(watch.entries))
    check_lora_and_base("pytorch", peft_model["m"], "nf4")
    check_optimizer("pytorch", made[0], paged=True)


def run_pytorch_eight_bit(memplan, work, model_dir, optimizer):
    """The loop's `train()` of a full fine-tune with bitsandbytes' 8-bit AdamW, paged or not
    (`optimizer` a key of EIGHT_BIT): make_optimizer's class steps every parameter of the tiny
    GPT-2, with uint8 state for the tensors of >= 4096 elements (c_fc, mlp.c_proj)."""
    plan = eight_bit_plan(optimizer)
    script = load(export(memplan, plan, "pytorch", work, f"full_{optimizer}"),
                  f"exported_pytorch_{optimizer.replace('-', '_')}")
    p = plan["plan"]
    label = f"pytorch {optimizer}"
    model = load_model(model_dir, getattr(script, "MODEL_LOAD_KWARGS", {}))
    watch = Watch(model, p["recompute_modules"])
    script.checkpoint = watch.checkpoint_spy(script.checkpoint)
    made, steps = [], []
    make_optimizer = script.make_optimizer

    def spy_optimizer(params):
        made.append(make_optimizer(params))
        made[0].register_step_post_hook(lambda *a: steps.append(1))
        return made[0]

    script.make_optimizer = spy_optimizer
    real_loader = script.DataLoader
    script.DataLoader = lambda *a, **k: real_loader(*a, **{**k, "num_workers": 0,
                                                          "pin_memory": False})
    micro_batches = OPTIMIZER_STEPS * script.ACCUMULATION_STEPS
    ids = tokens(micro_batches * script.MICRO_BATCH)
    script.train(model, TensorDataset(ids, ids), lm_loss,
                 lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0), device="cpu")
    check(f"{label}: every forward sees MICRO_BATCH samples, one optimizer step per "
          "ACCUMULATION_STEPS micro-batches",
          set(watch.batches) == {p["micro_batch"]} and len(steps) == OPTIMIZER_STEPS
          and len(watch.batches) == micro_batches, f"{watch.batches} {len(steps)} steps")
    check(f"{label}: only the planned blocks recompute",
          watch.checkpointed == set(p["recompute_modules"])
          and watch.recomputed_blocks() == p["recompute_modules"], str(watch.entries))
    trainable = sum(t.numel() for t in model.parameters() if t.requires_grad)
    check(f"{label}: the {FULL_ELEMENTS} parameters of the model train",
          trainable == FULL_ELEMENTS, str(trainable))
    check_eight_bit(label, eight_bit_facts(made[0]), *EIGHT_BIT[optimizer])


# GradScaler's defaults (torch/amp/grad_scaler.py): the scale starts at 2**16 and halves on every
# step whose gradients hold an inf or NaN (that step is skipped); it doubles only after 2000
# clean steps, which a 2-step run never reaches.
INITIAL_LOSS_SCALE = 2.0 ** 16


class PrecisionWatch:
    """What a precision regime runs, seen at a Linear-like layer in every forward (GPT-2's Conv1D
    is an addmm, which autocast runs in half): the dtype it computes in, the dtype of its weight
    (half only in a pure regime, or gathered half by FSDP's policy) and whether autocast is on."""

    def __init__(self, model):
        self.dtypes, self.weights, self.autocast = set(), set(), set()
        layer = model.get_submodule("transformer.h.0.mlp.c_fc")
        layer.register_forward_pre_hook(self.before)
        layer.register_forward_hook(
            lambda module, args, output: self.dtypes.add(str(output.dtype)))

    def before(self, module, args):
        """A pre-hook: returns None, so forward's inputs stay as they are."""
        self.weights.add(str(module.weight.dtype))
        self.autocast.add(torch.is_autocast_enabled("cpu"))

    def facts(self):
        return {"fc_dtypes": sorted(self.dtypes), "fc_weight_dtypes": sorted(self.weights),
                "autocast": sorted(self.autocast)}


class SelectiveWatch:
    """The decisions the exported selective-checkpoint policy takes in forward, per checkpointed
    module: the ATen ops it recomputes in backward and the ops whose outputs it saves. Wraps
    the script's selective_context_fn, which enable_recompute calls for each planned module."""

    def __init__(self, script):
        self.recomputed, self.saved = {}, {}
        if not getattr(script, "SELECTIVE_CHECKPOINT", False):
            return
        from torch.utils.checkpoint import CheckpointPolicy
        real_create = script.create_selective_checkpoint_contexts
        real_context_fn = script.selective_context_fn

        def context_fn(path):
            def create(policy, *a, **k):
                def recording(ctx, op, *args, **kwargs):
                    decision = policy(ctx, op, *args, **kwargs)
                    if not ctx.is_recompute:
                        into = (self.recomputed if decision == CheckpointPolicy.PREFER_RECOMPUTE
                                else self.saved)
                        into.setdefault(path, set()).add(str(op.overloadpacket))
                    return decision
                return real_create(recording, *a, **k)

            # selective_context_fn reads the name when called: the recording policy for `path`.
            script.create_selective_checkpoint_contexts = create
            try:
                return real_context_fn(path)
            finally:
                script.create_selective_checkpoint_contexts = real_create

        script.selective_context_fn = context_fn

    def facts(self):
        return {"recomputed_ops": {k: sorted(v) for k, v in self.recomputed.items()},
                "saved_ops": {k: sorted(v) for k, v in self.saved.items()}}


class OffloadWatch:
    """Counts what torch.autograd.graph.save_on_cpu moves: the tensors its pack hook copies to
    host memory in forward, those its unpack hook brings back in backward, its pin_memory."""

    def __init__(self):
        self.packed = self.unpacked = 0
        self.pin_memory = set()
        watch = self
        real = torch.autograd.graph.save_on_cpu

        class Counting(real):
            def __init__(self, pin_memory=False, *args, **kwargs):
                super().__init__(pin_memory, *args, **kwargs)
                watch.pin_memory.add(pin_memory)
                pack, unpack = self.pack_hook, self.unpack_hook

                def counted_pack(tensor):
                    watch.packed += 1
                    return pack(tensor)

                def counted_unpack(packed):
                    watch.unpacked += 1
                    return unpack(packed)

                self.pack_hook, self.unpack_hook = counted_pack, counted_unpack

        self.real = real
        torch.autograd.graph.save_on_cpu = Counting

    def facts(self):
        return {"offload_packed": self.packed, "offload_unpacked": self.unpacked,
                "offload_pin_memory": sorted(self.pin_memory)}


def scaler_facts(scaler):
    """What a run's GradScaler was: its class, whether it scales, its device, and its scale now
    (None when no loss went through it: scale() makes _scale on first use)."""
    enabled = scaler is not None and scaler.is_enabled()
    return {"scaler": type(scaler).__name__, "enabled": enabled,
            "device": getattr(scaler, "_device", None),
            "scale": scaler.get_scale() if enabled and scaler._scale is not None else None}


def check_loss_scaler(label, facts, optimizer_steps, device="cpu"):
    """A dynamic GradScaler on `device` that scaled this run's losses: its scale is 2**16 halved
    once per skipped step, and the skipped steps and the optimizer's steps add up."""
    check(f"{label}: a dynamic GradScaler on the {device} ({facts['scaler']})",
          facts["enabled"] and facts["device"] == device, str(facts))
    skipped = OPTIMIZER_STEPS - optimizer_steps
    check(f"{label}: the losses went through it; scale 2**16 x 0.5 per skipped step",
          facts["scale"] is not None and 0 <= skipped
          and facts["scale"] == INITIAL_LOSS_SCALE * 0.5 ** skipped,
          f"scale {facts['scale']}, {optimizer_steps} optimizer steps of {OPTIMIZER_STEPS}")


def run_pytorch_regime(memplan, work, model_dir, precision, amp="autocast", offload=False):
    """A LoRA plan's loop in `precision` and `amp` regime, with --offload activations or not.
    torch 2.x runs float16 autocast on the CPU and torch.amp.GradScaler("cpu") scales there;
    pure moves the model to half; save_on_cpu runs on the CPU: the loop runs as written."""
    plan = plan_json(2, 3, None, "adamw", precision=precision)
    plan["plan"]["amp_mode"] = amp
    if offload:
        plan["plan"]["offload"] = {"mode": "activations"}
    label = "pytorch " + precision + ("" if amp == "autocast" else " " + amp) + (
        " offload activations" if offload else "")
    script = load(export(memplan, plan, "pytorch", work, label.replace(" ", "_")),
                  "exported_" + label.replace(" ", "_"))
    p = plan["plan"]
    model = load_model(model_dir, getattr(script, "MODEL_LOAD_KWARGS", {}))
    watch = Watch(model, p["recompute_modules"])
    regime = PrecisionWatch(model)
    moved = OffloadWatch()
    steps, scalers = [], []
    make_optimizer = script.make_optimizer

    def spy_optimizer(params):
        optimizer = make_optimizer(params)
        optimizer.register_step_post_hook(lambda *a: steps.append(1))
        return optimizer

    script.make_optimizer = spy_optimizer
    one_epoch = script.train_one_epoch

    def spy_epoch(model, loader, loss_fn, optimizer, scheduler, scaler, device):
        scalers.append(scaler)
        return one_epoch(model, loader, loss_fn, optimizer, scheduler, scaler, device)

    script.train_one_epoch = spy_epoch
    real_loader = script.DataLoader
    script.DataLoader = lambda *a, **k: real_loader(*a, **{**k, "num_workers": 0,
                                                          "pin_memory": False})
    ids = tokens(OPTIMIZER_STEPS * script.ACCUMULATION_STEPS * script.MICRO_BATCH)
    try:
        script.train(model, TensorDataset(ids, ids), lm_loss,
                     lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0),
                     device="cpu")
    finally:
        torch.autograd.graph.save_on_cpu = moved.real
    check(f"{label}: every forward sees MICRO_BATCH samples, ACCUMULATION_STEPS per step",
          set(watch.batches) == {p["micro_batch"]} and len(steps) == OPTIMIZER_STEPS
          and len(watch.batches) == OPTIMIZER_STEPS * p["accumulation_steps"],
          f"{watch.batches}, {len(steps)} steps")
    facts = {**regime.facts(), "steps": len(steps),
             "loss_scaler": scaler_facts(scalers[0]) if scalers and scalers[0] else None,
             **moved.facts()}
    check_precision(label, facts, precision, amp)
    if offload:
        check(f"{label}: save_on_cpu(pin_memory=True) packed {moved.packed} saved tensors and "
              f"unpacked {moved.unpacked} in backward",
              moved.packed > 0 and moved.unpacked > 0 and moved.pin_memory == {True}, str(facts))
    else:
        check(f"{label}: no activation offload", moved.packed == 0, str(facts))


def hf_cpu_arguments(output_dir, **more):
    """What a CPU run of a few steps changes of the exported TrainingArguments(...)."""
    return {"use_cpu": True, "output_dir": output_dir, "max_steps": OPTIMIZER_STEPS,
            "dataloader_num_workers": 0, "dataloader_pin_memory": False, "report_to": [],
            "save_strategy": "no", **more}


def load_hf_trainer(path, name, **cpu):
    """Imports the exported HF Trainer script with its TrainingArguments(...) built for this CPU
    (`cpu` replaces those keywords); returns the script and the keywords the export wrote."""
    import transformers
    import transformers.training_args
    written = {}
    real = transformers.training_args.TrainingArguments

    def cpu_arguments(**kwargs):
        written.update(kwargs)
        return real(**{**kwargs, **cpu})

    # transformers' lazy module resolves the name from its submodule: patch both.
    transformers.training_args.TrainingArguments = cpu_arguments
    transformers.TrainingArguments = cpu_arguments
    try:
        script = load(path, name)
    finally:
        transformers.training_args.TrainingArguments = real
        transformers.TrainingArguments = real
    return script, written


class LmSamples(Dataset):
    """Token rows as the Trainer takes them: input_ids, and the same ids as labels."""

    def __init__(self, ids):
        self.ids = ids

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def run_hf_trainer(memplan, work, model_dir):
    from transformers import Trainer, TrainerCallback
    # A module plan of every block: TrainingArguments' gradient_checkpointing=True runs exactly
    # it (a plan of fewer blocks is exported with a comment: the Trainer checkpoints them all).
    every_block = [f"transformer.h.{i}" for i in range(LAYERS)]
    plan = plan_json(2, 3, "nf4", "paged-adamw8bit", recompute_modules=every_block)
    path = export(memplan, plan, "hf-trainer", work, "qlora_all_blocks")
    p = plan["plan"]
    # The exported TrainingArguments(...) as written, plus what a CPU run of a few steps needs.
    script, recorded = load_hf_trainer(path, "exported_hf",
                                       **hf_cpu_arguments(os.path.join(work, "hf-output")))
    args = script.args
    check("hf-trainer: per_device_train_batch_size, gradient_accumulation_steps are the plan's",
          (args.per_device_train_batch_size, args.gradient_accumulation_steps)
          == (p["micro_batch"], p["accumulation_steps"]))
    check("hf-trainer: optim, weight_decay, max_grad_norm, bf16 as exported",
          (recorded["optim"], recorded["weight_decay"], recorded["max_grad_norm"],
           recorded["bf16"]) == ("paged_adamw_8bit", 0.01, 1.0, True), str(recorded))
    check("hf-trainer: gradient_checkpointing (non-reentrant) for the plan of every block",
          recorded.get("gradient_checkpointing") is True
          and recorded.get("gradient_checkpointing_kwargs") == {"use_reentrant": False},
          str(recorded))
    model = load_model(model_dir, script.MODEL_LOAD_KWARGS)
    watch = Watch(model, p["recompute_modules"])
    model = script.apply_fine_tuning(model)
    steps = []

    class Count(TrainerCallback):
        def on_step_end(self, a, state, control, **kw):
            steps.append(state.global_step)

    ids = tokens(OPTIMIZER_STEPS * p["accumulation_steps"] * p["micro_batch"])
    trainer = Trainer(model=model, args=args, train_dataset=LmSamples(ids), callbacks=[Count()])
    trainer.train()
    check("hf-trainer: every forward sees the micro-batch",
          watch.batches and set(watch.batches) == {p["micro_batch"]}, str(watch.batches))
    check("hf-trainer: one optimizer step per gradient_accumulation_steps micro-batches",
          len(steps) == OPTIMIZER_STEPS
          and len(watch.batches) == OPTIMIZER_STEPS * p["accumulation_steps"],
          f"{len(steps)} steps, {len(watch.batches)} micro-batches")
    check("hf-trainer: the Trainer ran the planned blocks under checkpoint (2 entries per "
          "micro-batch each)", watch.recomputed_blocks() == p["recompute_modules"],
          f"{watch.entries} over {len(watch.batches)} micro-batches")
    check_lora_and_base("hf-trainer", model, "nf4")
    check_optimizer("hf-trainer", trainer.optimizer, paged=True)


def run_hf_trainer_eight_bit(memplan, work, model_dir):
    """The Trainer of a full fine-tune with 8-bit AdamW (optim="adamw_bnb_8bit"): the Trainer
    builds bitsandbytes' AdamW with optim_bits=8 (its paged variant runs in run_hf_trainer)."""
    from transformers import Trainer
    plan = eight_bit_plan("adamw8bit")
    path = export(memplan, plan, "hf-trainer", work, "full_adamw8bit")
    p = plan["plan"]
    script, recorded = load_hf_trainer(path, "exported_hf_8bit",
                                       **hf_cpu_arguments(os.path.join(work, "hf-8bit-output")))
    check("hf-trainer adamw8bit: optim as exported", recorded.get("optim") == "adamw_bnb_8bit",
          str(recorded))
    model = load_model(model_dir, getattr(script, "MODEL_LOAD_KWARGS", {}))
    watch = Watch(model, [])
    ids = tokens(OPTIMIZER_STEPS * p["accumulation_steps"] * p["micro_batch"])
    trainer = Trainer(model=model, args=script.args, train_dataset=LmSamples(ids))
    trainer.train()
    check("hf-trainer adamw8bit: every forward sees the micro-batch, the 28032 parameters train",
          set(watch.batches) == {p["micro_batch"]}
          and len(watch.batches) == OPTIMIZER_STEPS * p["accumulation_steps"]
          and sum(elements(q) for q in model.parameters() if q.requires_grad) == FULL_ELEMENTS,
          str(watch.batches))
    check_eight_bit("hf-trainer adamw8bit", eight_bit_facts(trainer.optimizer), "AdamW", False)


# What a CPU run changes of the exported pl.Trainer(...): the accelerator, a few steps, no logs.
LIGHTNING_CPU = {"accelerator": "cpu", "max_steps": OPTIMIZER_STEPS, "logger": False,
                 "enable_checkpointing": False, "enable_progress_bar": False,
                 "enable_model_summary": False}


def load_lightning(path, name, **cpu):
    """Imports the exported Lightning script with its pl.Trainer(...) built for this CPU (`cpu`
    replaces those keywords); returns the script and the keywords the export wrote."""
    import lightning.pytorch as pl
    written = {}
    real = pl.Trainer

    def cpu_trainer(**kwargs):
        written.update(kwargs)
        return real(**{**kwargs, **cpu})

    pl.Trainer = cpu_trainer
    try:
        script = load(path, name)
    finally:
        pl.Trainer = real
    return script, written


def lightning_module(script, model):
    """The LightningModule the exported Lightning script's comment asks for: the model through
    apply_fine_tuning, configure_optimizers returning make_optimizer(self.parameters()). The one
    module of every Lightning run here, in this process and in the torchrun drivers. It records
    what wraps it while it trains (`wrappers`; Lightning unwraps it at teardown) and each
    optimizer it made (`made_optimizers`)."""
    import lightning.pytorch as pl

    class ExportedModule(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = script.apply_fine_tuning(model)
            # from_pretrained returns the model in eval mode, and Lightning >= 2.2 keeps the
            # modes it is given.
            self.model.train()
            self.wrappers = set()
            self.made_optimizers = []

        def training_step(self, batch, index):
            self.wrappers.add(type(self.trainer.strategy.model).__name__)
            ids, targets = batch
            return lm_loss(self.model(ids), targets)

        def configure_optimizers(self):
            self.made_optimizers.append(script.make_optimizer(self.parameters()))
            return self.made_optimizers[-1]

    return ExportedModule()


def lightning_loader(script, samples):
    """make_train_loader's DataLoader (its batch size, the micro-batch) over `samples` token
    rows, without worker processes."""
    ids = tokens(samples)
    loader = script.make_train_loader(TensorDataset(ids, ids))
    return torch.utils.data.DataLoader(loader.dataset, batch_size=loader.batch_size)


def run_lightning(memplan, work, model_dir):
    plan = plan_json(2, 3, "nf4", "paged-adamw8bit")
    path = export(memplan, plan, "lightning", work, "qlora")
    p = plan["plan"]
    script, kwargs = load_lightning(path, "exported_lightning", **LIGHTNING_CPU, devices=1)
    check("lightning: accumulate_grad_batches, precision, clipping are the plan's",
          (kwargs["accumulate_grad_batches"], kwargs["precision"], kwargs["gradient_clip_val"])
          == (p["accumulation_steps"], "bf16-mixed", 1.0), str(kwargs))
    model = load_model(model_dir, script.MODEL_LOAD_KWARGS)
    watch = Watch(model, p["recompute_modules"])
    from torch.utils.checkpoint import checkpoint as real_checkpoint
    spy = watch.checkpoint_spy(real_checkpoint)
    # The planned modules, checkpointed as the comment asks (Lightning has no argument for it).
    for name in p["recompute_modules"]:
        module = model.get_submodule(name)
        forward = module.forward
        module.forward = lambda *a, _f=forward, **k: spy(_f, *a, use_reentrant=False, **k)
    module = lightning_module(script, model)
    script.trainer.fit(module, lightning_loader(
        script, OPTIMIZER_STEPS * p["accumulation_steps"] * p["micro_batch"]))
    check("lightning: every forward sees MICRO_BATCH samples",
          watch.batches and set(watch.batches) == {p["micro_batch"]}, str(watch.batches))
    check("lightning: one optimizer step per accumulate_grad_batches batches",
          script.trainer.global_step == OPTIMIZER_STEPS
          and len(watch.batches) == OPTIMIZER_STEPS * p["accumulation_steps"],
          f"{script.trainer.global_step} steps, {len(watch.batches)} micro-batches")
    check("lightning: checkpointed modules are the plan's",
          watch.checkpointed == set(p["recompute_modules"]), str(sorted(watch.checkpointed)))
    check("lightning: only the planned blocks recompute (2 entries per micro-batch)",
          watch.recomputed_blocks() == p["recompute_modules"], str(watch.entries))
    check_lora_and_base("lightning", module.model, "nf4")
    check_optimizer("lightning", module.made_optimizers[0], paged=True)


def run_lightning_eight_bit(memplan, work, model_dir):
    """Lightning's Trainer on a full fine-tune with 8-bit AdamW: configure_optimizers returns the
    script's make_optimizer (bitsandbytes.optim.AdamW8bit). A full fine-tune's script has no
    apply_fine_tuning: the module takes the model as loaded."""
    plan = eight_bit_plan("adamw8bit")
    path = export(memplan, plan, "lightning", work, "full_adamw8bit")
    p = plan["plan"]
    script, kwargs = load_lightning(path, "exported_lightning_8bit", **LIGHTNING_CPU, devices=1)
    model = load_model(model_dir, getattr(script, "MODEL_LOAD_KWARGS", {}))
    watch = Watch(model, [])
    if not hasattr(script, "apply_fine_tuning"):
        script.apply_fine_tuning = lambda m: m
    module = lightning_module(script, model)
    script.trainer.fit(module, lightning_loader(
        script, OPTIMIZER_STEPS * p["accumulation_steps"] * p["micro_batch"]))
    check("lightning adamw8bit: every forward sees the micro-batch, one step per "
          "accumulate_grad_batches, the 28032 parameters train",
          set(watch.batches) == {p["micro_batch"]} and script.trainer.global_step == OPTIMIZER_STEPS
          and len(watch.batches) == OPTIMIZER_STEPS * p["accumulation_steps"]
          and sum(elements(q) for q in model.parameters() if q.requires_grad) == FULL_ELEMENTS,
          f"{script.trainer.global_step} steps, {watch.batches}")
    check_eight_bit("lightning adamw8bit", eight_bit_facts(module.made_optimizers[0]),
                    "AdamW8bit", False)


TORCHRUN_DRIVER = r'''
import json, os, sys, warnings
warnings.filterwarnings("ignore")
import torch
from torch.utils.data import TensorDataset
sys.path.insert(0, os.environ["MEMPLAN_TOOLS_DIR"])
import run_exported_plans as r
script = r.load(sys.argv[1], "exported_torchrun")
plan = json.load(open(sys.argv[2]))["plan"]
model = r.load_model(sys.argv[3], getattr(script, "MODEL_LOAD_KWARGS", {}))
watch = r.Watch(model, plan.get("recompute_modules", []))
script.checkpoint = watch.checkpoint_spy(script.checkpoint)
selective = r.SelectiveWatch(script)
offload = r.OffloadWatch()
real_loader = script.DataLoader
script.DataLoader = lambda *a, **k: real_loader(*a, **{**k, "num_workers": 0, "pin_memory": False})
made = []
make_optimizer = script.make_optimizer
def spy_optimizer(params):
    optimizer = make_optimizer(params)
    optimizer.register_step_post_hook(lambda *a: made.append(1))
    made.append(optimizer)
    return optimizer
script.make_optimizer = spy_optimizer
scalers = []
def recorded(cls):
    """cls, recording every instance the script makes (its GradScaler)."""
    class Recorded(cls):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            scalers.append(self)
    Recorded.__name__ = cls.__name__
    return Recorded
torch.amp.GradScaler = recorded(torch.amp.GradScaler)
if hasattr(script, "ShardedGradScaler"):
    script.ShardedGradScaler = recorded(script.ShardedGradScaler)
precision = r.PrecisionWatch(model)
wrapped = []
shard = script.shard_model
script.shard_model = lambda m, d: wrapped.append(shard(m, d)) or wrapped[-1]
world = int(os.environ["WORLD_SIZE"])
ids = r.tokens(r.OPTIMIZER_STEPS * script.ACCUMULATION_STEPS * script.MICRO_BATCH * world)
fine_tuned = []
apply = script.apply_fine_tuning
script.apply_fine_tuning = lambda m: fine_tuned.append(apply(m)) or fine_tuned[-1]
# train() destroys the process group at its end: read what needs it first.
destroy = script.dist.destroy_process_group
script.dist.destroy_process_group = lambda: None
script.train(model, TensorDataset(ids, ids), r.lm_loss,
             lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0))
from peft.tuners.lora import LoraLayer
from torch.distributed.tensor import DTensor
optimizer = made[0]
# FSDP2 keeps each parameter as a DTensor sharded over the mesh's "shard" dimension: this rank
# holds its slice (to_local()) of the full tensor.
shards = [p for p in wrapped[0].parameters() if isinstance(p, DTensor)]
mesh = shards[0].device_mesh if shards else None
state = [str(s["state1"].dtype) for s in optimizer.state.values() if "state1" in s]
out = {"rank": int(os.environ["RANK"]), "world": world, "batches": watch.batches,
       "steps": sum(1 for x in made if x == 1), "checkpointed": sorted(watch.checkpointed),
       "with_context": sorted(watch.with_context),
       "wrapper": type(wrapped[0]).__name__,
       "trainable": sum(p.numel() for p in fine_tuned[0].parameters() if p.requires_grad),
       "lora_ranks": sorted({m.r["default"] for m in fine_tuned[0].modules() if isinstance(m, LoraLayer)}),
       "optimizer": type(optimizer).__name__, "state": sorted(set(state)),
       "parameters": len(list(wrapped[0].parameters())), "dtensors": len(shards),
       "local_elements": sum(p.to_local().numel() for p in shards),
       "full_elements": sum(p.numel() for p in shards),
       "mesh": list(mesh.shape) if mesh else [],
       "mesh_dims": list(mesh.mesh_dim_names or []) if mesh else [],
       "placements": sorted({str(pl) for p in shards for pl in p.placements}),
       **precision.facts(), **selective.facts(), **offload.facts(),
       "loss_scaler": r.scaler_facts(scalers[0]) if scalers else None}
destroy()
json.dump(out, open(sys.argv[4] + f".{out['rank']}", "w"))
'''


def failure(stderr):
    """The error a failed launch ended on: the last line naming an exception (a torchrun launch
    prints each rank's traceback, then its own summary), or the end of stderr."""
    errors = [line for line in stderr.splitlines()
              if re.search(r"\b\w+(Error|Exception)\b: ", line) and "ChildFailedError" not in line]
    return errors[-1].strip()[:600] if errors else stderr.strip()[-600:]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_lightning_pure(memplan, work, model_dir):
    """A pure bf16 plan's Lightning Trainer: precision="bf16-true", which Lightning runs on the
    CPU too (HalfPrecision: the module converted to bfloat16, no autocast, no scaler)."""
    plan = plan_json(2, 3, None, "adamw")
    plan["plan"]["amp_mode"] = "pure"
    path = export(memplan, plan, "lightning", work, "lora_bf16_pure")
    p = plan["plan"]
    script, written = load_lightning(path, "exported_lightning_pure", **LIGHTNING_CPU, devices=1)
    model = load_model(model_dir, {})
    watch = Watch(model, [])
    regime = PrecisionWatch(model)
    module = lightning_module(script, model)
    script.trainer.fit(module, lightning_loader(
        script, OPTIMIZER_STEPS * p["accumulation_steps"] * p["micro_batch"]))
    check('lightning bf16 pure: precision="bf16-true" as exported; every forward sees the '
          "micro-batch, one step per accumulate_grad_batches",
          written["precision"] == "bf16-true" and set(watch.batches) == {p["micro_batch"]}
          and script.trainer.global_step == OPTIMIZER_STEPS
          and len(watch.batches) == OPTIMIZER_STEPS * p["accumulation_steps"],
          f"{written['precision']} {watch.batches} {script.trainer.global_step} steps")
    facts = {**regime.facts(), "loss_scaler": None}
    check_precision("lightning bf16 pure", facts, "bf16", "pure")
    optimizer = module.made_optimizers[0]
    dtypes = sorted({str(q.dtype) for group in optimizer.param_groups for q in group["params"]})
    check("lightning bf16 pure: the optimizer steps bfloat16 parameters (no fp32 masters)",
          dtypes == ["torch.bfloat16"], str(dtypes))


# A node plan of GPT-2: the Conv1D of block 0's attention (an ONNX MatMul) recomputed. By hand
# (docs/config_export.md's table): the block it is in, transformer.h.0, runs under checkpoint with
# a policy recomputing MatMul's ATen ops; GPT-2's Conv1D runs torch.addmm, so addmm is among
# the recomputed ops, and every op recomputed is one of MatMul's.
SELECTIVE_NODE = "/transformer/h.0/attn/c_attn/MatMul"
MATMUL_ATEN_OPS = {"aten.mm", "aten.bmm", "aten.addmm"}


def node_plan(plan, offload=True):
    """`plan` made a node plan recomputing SELECTIVE_NODE, with activation offload or not."""
    p = plan["plan"]
    del p["recompute_modules"]
    p.update(recompute_unit="node", recompute=[SELECTIVE_NODE],
             recompute_op_types={SELECTIVE_NODE: "MatMul"})
    if offload:
        p["offload"] = {"mode": "activations"}
    return plan


def run_selective_gradients(memplan, work, model_dir):
    """The exported selective policy gives the gradients of no checkpointing: GPT-2 in training
    mode (dropout on: on the CPU empty_like, bernoulli_, div_, so the policy's saved outputs are
    mutated in place), one fp32 forward and backward with enable_recompute and one without,
    from the same weights and seed."""
    plan = node_plan(plan_json(2, 1, None, "adamw", precision="fp32"), offload=False)
    del plan["plan"]["amp_mode"]  # fp32: no precision regime
    script = load(export(memplan, plan, "pytorch", work, "node_fp32"), "exported_node_fp32")
    ids = tokens(2)
    grads = []
    for recompute in (True, False):
        model = load_model(model_dir, {})
        model.train()
        if recompute:
            script.enable_recompute(model)
        torch.manual_seed(3)
        lm_loss(model(ids), ids).backward()
        grads.append({n: q.grad for n, q in model.named_parameters()})
    worst = max((grads[0][n] - grads[1][n]).abs().max().item() for n in grads[1])
    check("pytorch node plan: the selective policy's gradients equal those without checkpointing "
          "(dropout active)", worst == 0.0, f"largest difference {worst}")




def run_torchrun(memplan, work, model_dir, strategy, precision="bf16", amp="autocast",
                 selective_offload=False):
    """The torchrun script of a `strategy` plan on gloo ranks. `amp` the plan's regime (autocast
    or pure); `selective_offload` a node plan (SELECTIVE_NODE) with --offload activations."""
    # FSDP2 shards parameters as DTensors, which bitsandbytes' optimizers cannot step (the
    # export refuses that plan, checked here): the FSDP plan uses torch's AdamW.
    optimizer = "adamw8bit" if strategy == "ddp" else "adamw"
    # Hybrid shard: 2 "nodes" of 2 ranks each, a 2 x 2 mesh (replicate, shard), 4 processes.
    ranks, nodes = (4, 2) if strategy == "hybrid-shard" else (2, None)
    variant = (("" if precision == "bf16" else " " + precision)
               + ("" if amp == "autocast" else " " + amp)
               + (" selective+offload" if selective_offload else ""))
    if strategy != "ddp" and not variant:
        refused = plan_json(2, 3, None, "adamw8bit", parallel=strategy, gpus=ranks, nodes=nodes)
        try:
            export(memplan, refused, "pytorch", work, "refused_" + strategy)
            check(f"torchrun {strategy}: a bitsandbytes optimizer is refused", False)
        except RuntimeError as error:
            check(f"torchrun {strategy}: a bitsandbytes optimizer is refused in one line",
                  "FSDP2 script cannot run --optimizer adamw8bit" in str(error)
                  and "\n" not in str(error).strip(), str(error))
    plan = plan_json(2, 3, None, optimizer, parallel=strategy, gpus=ranks, nodes=nodes,
                     precision=precision)
    plan["plan"]["amp_mode"] = amp
    if selective_offload:
        node_plan(plan)
    name = f"lora_{strategy}" + variant.replace(" ", "_").replace("+", "_")
    path = export(memplan, plan, "pytorch", work, name)
    p = plan["plan"]
    plan_path = os.path.join(work, name + ".json")
    strategy_label = strategy + variant
    driver = os.path.join(work, "torchrun_driver.py")
    with open(driver, "w") as f:
        f.write(TORCHRUN_DRIVER)
    out = os.path.join(work, "torchrun_" + name)
    env = {**os.environ, "MEMPLAN_TOOLS_DIR": os.path.dirname(os.path.abspath(__file__))}
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
         "--master-port", str(free_port()), driver, path, plan_path, model_dir, out],
        capture_output=True, text=True, timeout=600, env=env)
    if result.returncode != 0:
        check(f"torchrun {strategy_label}: {ranks} gloo ranks ran", False,
              failure(result.stderr))
        return
    results = [json.load(open(f"{out}.{r}")) for r in range(ranks)]
    check(f"torchrun {strategy_label}: {ranks} gloo ranks ran", len(results) == ranks)
    checkpointed = ["transformer.h.0"]  # the planned module, or the block of SELECTIVE_NODE
    for r in results:
        label = f"torchrun {strategy_label} rank {r['rank']}"
        check(f"{label}: every forward sees MICRO_BATCH samples, one step per "
              "ACCUMULATION_STEPS", set(r["batches"]) == {p["micro_batch"]}
              and r["steps"] == OPTIMIZER_STEPS
              and len(r["batches"]) == OPTIMIZER_STEPS * p["accumulation_steps"], str(r))
        expected_wrapper = "DistributedDataParallel" if strategy == "ddp" else "FSDP"
        check(f"{label}: wrapped as planned ({expected_wrapper})",
              r["wrapper"].startswith(expected_wrapper), r["wrapper"])
        check(f"{label}: checkpointed modules are the plan's",
              r["checkpointed"] == checkpointed, str(r["checkpointed"]))
        if strategy == "ddp":
            check(f"{label}: trainable parameters = {EXPECTED_TRAINABLE}",
                  r["trainable"] == EXPECTED_TRAINABLE, str(r["trainable"]))
        if strategy != "ddp":
            check_sharded(label, r, ranks // (nodes or 1), nodes)
        check_precision(label, r, precision, amp)
        if selective_offload:
            check_selective_offload(label, r, checkpointed[0])
        else:
            check(f"{label}: no activation offload (save_on_cpu packed nothing)",
                  r["offload_packed"] == 0 and not r["recomputed_ops"], str(r))
        expected = "AdamW8bit" if optimizer == "adamw8bit" else "AdamW"
        check(f"{label}: LoRA rank {RANK}, {expected}", r["lora_ranks"] == [RANK]
              and r["optimizer"] == expected, str(r))
    if strategy != "ddp":
        # The shards add up: each replica group (one per node) holds every element once.
        held = sum(r["local_elements"] for r in results)
        full = results[0]["full_elements"]
        check(f"torchrun {strategy_label}: the ranks' shards add up to the model "
              f"{nodes or 1} time(s)",
              held == full * (nodes or 1), f"{held} held, {full} per model")


def check_sharded(label, r, shard_ranks, nodes):
    """Every parameter a DTensor sharded (Shard(0), "S(0)") over the mesh's shard dimension of
    shard_ranks ranks: this rank holds its rows of each, not the whole."""
    mesh = [nodes, shard_ranks] if nodes else [shard_ranks]
    dims = ["replicate", "shard"] if nodes else ["shard"]
    placements = ["R", "S(0)"] if nodes else ["S(0)"]  # str(Replicate()), str(Shard(0))
    check(f"{label}: every parameter sharded on a {mesh} mesh {dims}, a part of each held here",
          r["dtensors"] == r["parameters"] > 0 and r["mesh"] == mesh
          and r["mesh_dims"] == dims and r["placements"] == placements
          and 0 < r["local_elements"] < r["full_elements"],
          f"{r['dtensors']}/{r['parameters']} DTensors, {r['local_elements']} of "
          f"{r['full_elements']} elements, mesh {r['mesh']} {r['mesh_dims']} {r['placements']}")


def check_precision(label, r, precision, amp):
    """The regime at mlp.c_fc (PrecisionWatch): autocast computes in half from fp32 weights,
    with a GradScaler for fp16 only; pure has half weights, no autocast and no scaler."""
    torch_dtype = {"bf16": "torch.bfloat16", "fp16": "torch.float16"}[precision]
    if amp == "pure":
        check(f"{label}: pure {precision}: {torch_dtype} weights, no autocast, computes in "
              f"{torch_dtype}", (r["fc_weight_dtypes"], r["autocast"], r["fc_dtypes"])
              == ([torch_dtype], [False], [torch_dtype]), str(r))
    else:
        check(f"{label}: forward under {precision} autocast (mlp.c_fc computes in {torch_dtype} "
              "from float32 weights)", (r["fc_weight_dtypes"], r["autocast"], r["fc_dtypes"])
              == (["torch.float32"], [True], [torch_dtype]), str(r))
    if precision == "fp16" and amp != "pure":
        check_loss_scaler(label, r["loss_scaler"], r["steps"])
    else:
        check(f"{label}: no loss scaler ({precision} {amp})", r["loss_scaler"] is None,
              str(r["loss_scaler"]))


def check_selective_offload(label, r, block):
    """The node plan ran under the selective policy in `block` only, recomputing MatMul's ATen
    ops (addmm, GPT-2's Conv1D, among them) and saving the rest; forward's saved tensors
    outside the checkpoint went to host memory through save_on_cpu(pin_memory=True)."""
    recomputed = r["recomputed_ops"]
    ops = sorted(recomputed.get(block, []))
    check(f"{label}: selective policy in {block} only: recomputes {ops} (MatMul's ATen ops, "
          "aten.addmm among them), saves the other ops",
          list(recomputed) == [block] and "aten.addmm" in recomputed[block]
          and set(recomputed[block]) <= MATMUL_ATEN_OPS and r["saved_ops"].get(block)
          and not set(r["saved_ops"][block]) & set(recomputed[block])
          and r["with_context"] == [block], str(r))
    check(f"{label}: save_on_cpu(pin_memory=True) packed {r['offload_packed']} saved tensors and "
          f"unpacked {r['offload_unpacked']} in backward",
          r["offload_packed"] > 0 and r["offload_unpacked"] > 0
          and r["offload_pin_memory"] == [True], str(r))


LIGHTNING_DRIVER = r'''
"""One rank of the exported Lightning Trainer of a multi-GPU plan under torchrun (Lightning reads
torchrun's environment and starts no processes of its own); only the accelerator becomes the
CPU. The module and the loader are run_exported_plans' (lightning_module, lightning_loader)."""
import json, os, sys, warnings
warnings.filterwarnings("ignore")
import torch
sys.path.insert(0, os.environ["MEMPLAN_TOOLS_DIR"])
import run_exported_plans as r
script, written = r.load_lightning(sys.argv[1], "exported_lightning_ranks", **r.LIGHTNING_CPU)
model = r.load_model(sys.argv[2], {})
watch = r.Watch(model, [])
precision = r.PrecisionWatch(model)
module = r.lightning_module(script, model)
trainer = script.trainer
trainer.fit(module, r.lightning_loader(
    script, r.OPTIMIZER_STEPS * written["accumulate_grad_batches"] * script.MICRO_BATCH
    * trainer.world_size))
out = {"rank": trainer.global_rank, "world": trainer.world_size,
       "strategy": type(trainer.strategy).__name__,
       "sharding": str(getattr(trainer.strategy, "sharding_strategy", "")),
       "wrapped": ",".join(sorted(module.wrappers)), "devices": written["devices"],
       "batches": watch.batches, "steps": trainer.global_step,
       "trainable": sum(p.numel() for p in module.parameters() if p.requires_grad),
       **precision.facts()}
json.dump(out, open(sys.argv[3] + f".{out['rank']}", "w"))
'''


def run_ddp_driver(label, source, path, model_dir, work, cwd=None):
    """Runs the driver `source` on the exported `path` under torchrun, 2 gloo ranks on the CPU
    (in `cwd`); returns each rank's JSON result, or None (a failed check) when the ranks did not
    run."""
    name = label.replace(" ", "_").replace("-", "_")
    driver = os.path.join(work, name + "_driver.py")
    with open(driver, "w") as f:
        f.write(source)
    out = os.path.join(work, name)
    env = {**os.environ, "MEMPLAN_TOOLS_DIR": os.path.dirname(os.path.abspath(__file__)),
           "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", str(free_port()), driver, path, model_dir, out],
        capture_output=True, text=True, timeout=600, env=env, cwd=cwd)
    if result.returncode != 0:
        check(f"{label}: 2 gloo ranks ran", False, failure(result.stderr))
        return None
    return [json.load(open(f"{out}.{rank}")) for rank in range(2)]


def run_lightning_ddp(memplan, work, model_dir):
    """The Lightning Trainer of a 2-GPU DDP plan under torchrun (2 gloo ranks)."""
    plan = plan_json(2, 3, None, "adamw", parallel="ddp", gpus=2)
    path = export(memplan, plan, "lightning", work, "lora_ddp")
    p = plan["plan"]
    ranks = run_ddp_driver("lightning ddp", LIGHTNING_DRIVER, path, model_dir, work)
    for rank, r in enumerate(ranks or []):
        label = f"lightning ddp rank {rank}"
        check(f"{label}: devices=2, world 2, DDPStrategy, DistributedDataParallel",
              (r["devices"], r["world"], r["strategy"], r["wrapped"])
              == (2, 2, "DDPStrategy", "DistributedDataParallel"), str(r))
        check(f"{label}: every forward sees the micro-batch, one step per accumulation, the "
              "LoRA parameters train",
              set(r["batches"]) == {p["micro_batch"]} and r["steps"] == OPTIMIZER_STEPS
              and len(r["batches"]) == OPTIMIZER_STEPS * p["accumulation_steps"]
              and r["trainable"] == EXPECTED_TRAINABLE, str(r))


HF_RANKS_DRIVER = r'''
"""One rank of `torchrun --nproc_per_node 2 train.py` for the exported TrainingArguments of a DDP
or FSDP plan: the Trainer reads the world size from torchrun (the export writes no DDP switch;
FSDP is its fsdp= and fsdp_config= arguments)."""
import json, os, sys, warnings
warnings.filterwarnings("ignore")
import torch
sys.path.insert(0, os.environ["MEMPLAN_TOOLS_DIR"])
import run_exported_plans as r
from transformers import Trainer, TrainerCallback
script, written = r.load_hf_trainer(sys.argv[1], "exported_hf_ranks", **r.hf_cpu_arguments(
    sys.argv[3] + ".out", ddp_backend="gloo"))
args = script.args
from transformers.integrations import is_deepspeed_zero3_enabled
if is_deepspeed_zero3_enabled():
    # ZeRO-3: from_pretrained builds the model under deepspeed.zero.Init, which sizes the config
    # for deepspeed.comm's world. On a GPU the TrainingArguments' PartialState starts
    # deepspeed.comm (accelerate/state.py: dist.init_distributed, under `if not cpu`); with
    # use_cpu nothing does, and zero.Init counts 1 rank (train_batch_size 12 != 2 * 3 * 1). The
    # one line the CPU run adds:
    import deepspeed
    deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)
model = r.load_model(sys.argv[2], {})
watch = r.Watch(model, [])
model = script.apply_fine_tuning(model)
steps = []
class Count(TrainerCallback):
    def on_step_end(self, a, state, control, **kw):
        steps.append(state.global_step)
world = int(os.environ["WORLD_SIZE"])
ids = r.tokens(r.OPTIMIZER_STEPS * args.gradient_accumulation_steps
               * args.per_device_train_batch_size * world)
trainer = Trainer(model=model, args=args, train_dataset=r.LmSamples(ids), callbacks=[Count()])
trainer.train()
out = {"rank": int(os.environ["RANK"]), "world": args.world_size,
       "parallel_mode": str(args.parallel_mode).split(".")[-1],
       "wrapped": type(trainer.model_wrapped).__name__, "batches": watch.batches,
       # transformers 5 keeps fsdp= as a switch and the sharding in fsdp_config.
       "fsdp": bool(args.fsdp),
       "reshard_after_forward": (args.fsdp_config or {}).get("reshard_after_forward"),
       "distributed_type": str(trainer.accelerator.distributed_type).split(".")[-1],
       "fsdp_enabled": bool(trainer.is_fsdp_enabled),
       "deepspeed": r.zero_facts(trainer.model_wrapped)
       if hasattr(trainer.model_wrapped, "zero_optimization_stage") else None,
       "steps": len(steps), "recomputed": watch.recomputed_blocks(),
       "trainable": sum(r.elements(p) for p in model.parameters() if p.requires_grad)}
json.dump(out, open(sys.argv[3] + f".{out['rank']}", "w"))
'''


def run_hf_trainer_ddp(memplan, work, model_dir):
    """The Trainer of a 2-GPU DDP plan under torchrun (2 gloo ranks): the export's launch line."""
    every_block = [f"transformer.h.{i}" for i in range(LAYERS)]
    plan = plan_json(2, 3, None, "adamw", parallel="ddp", gpus=2, recompute_modules=every_block)
    path = export(memplan, plan, "hf-trainer", work, "lora_ddp")
    p = plan["plan"]
    check("hf-trainer ddp: the export names the launch, torchrun --nproc_per_node 2",
          "torchrun --nproc_per_node 2" in open(path).read())
    ranks = run_ddp_driver("hf-trainer ddp", HF_RANKS_DRIVER, path, model_dir, work)
    for rank, r in enumerate(ranks or []):
        label = f"hf-trainer ddp rank {rank}"
        check(f"{label}: world 2, DistributedDataParallel", (r["world"], r["parallel_mode"],
              r["wrapped"]) == (2, "DISTRIBUTED", "DistributedDataParallel"), str(r))
        check(f"{label}: every forward sees the micro-batch, one step per accumulation, every "
              "block checkpointed, the LoRA parameters train",
              set(r["batches"]) == {p["micro_batch"]} and r["steps"] == OPTIMIZER_STEPS
              and len(r["batches"]) == OPTIMIZER_STEPS * p["accumulation_steps"]
              and r["recomputed"] == every_block and r["trainable"] == EXPECTED_TRAINABLE, str(r))


def run_hf_trainer_fsdp(memplan, work, model_dir):
    """The Trainer of a 2-GPU FSDP plan under its launch line (torchrun, 2 gloo ranks). On the
    CPU the Trainer's Accelerator ignores the FSDP plugin: accelerate's state.py switches to FSDP
    only from a GPU-like distributed type (MULTI_GPU, MULTI_XPU, ...), and a CPU world
    (use_cpu) is MULTI_CPU, so the ranks train as DDP. Asserted, so the check fails, and the
    cell gets a run, once a release allows FSDP on the CPU."""
    every_block = [f"transformer.h.{i}" for i in range(LAYERS)]
    plan = plan_json(2, 3, None, "adamw", parallel="fsdp", gpus=2, recompute_modules=every_block)
    path = export(memplan, plan, "hf-trainer", work, "lora_fsdp")
    check("hf-trainer fsdp: the export names the launch, torchrun --nproc_per_node 2",
          "torchrun --nproc_per_node 2" in open(path).read())
    for rank, r in enumerate(run_ddp_driver("hf-trainer fsdp", HF_RANKS_DRIVER, path,
                                            model_dir, work) or []):
        check(f"hf-trainer fsdp rank {rank}: TrainingArguments read fsdp full_shard (FSDP2: "
              "reshard_after_forward); "
              "on the CPU the Trainer runs DDP, FSDP off (not runnable here: accelerate's "
              "state.py enables FSDP only from a GPU-like distributed type)",
              (r["fsdp"], r["reshard_after_forward"], r["world"], r["distributed_type"],
               r["fsdp_enabled"], r["wrapped"])
              == (True, True, 2, "MULTI_CPU", False, "DistributedDataParallel"), str(r))


def run_hf_trainer_zero(memplan, work, model_dir, strategy="zero2"):
    """The Trainer of a 2-GPU ZeRO plan: TrainingArguments(deepspeed="ds_config.json"), the file
    `memplan export --to deepspeed` writes for the same plan, in the training folder, under
    torchrun (2 gloo ranks): accelerate hands the model to deepspeed.initialize, which runs on
    DeepSpeed's CPU accelerator."""
    every_block = [f"transformer.h.{i}" for i in range(LAYERS)]
    plan = plan_json(2, 3, None, "adamw", parallel=strategy, gpus=2,
                     recompute_modules=every_block)
    run_dir = os.path.join(work, "hf_" + strategy)
    os.makedirs(run_dir, exist_ok=True)
    path = export(memplan, plan, "hf-trainer", run_dir, "lora")
    os.replace(export(memplan, plan, "deepspeed", run_dir, "lora"),
               os.path.join(run_dir, "ds_config.json"))
    p = plan["plan"]
    stage = int(strategy[-1])
    label = f"hf-trainer {strategy}"
    check(f'{label}: the export names deepspeed="ds_config.json" and its launch',
          'deepspeed="ds_config.json"' in open(path).read())
    for rank, r in enumerate(run_ddp_driver(label, HF_RANKS_DRIVER, path, model_dir, run_dir,
                                            cwd=run_dir) or []):
        where = f"{label} rank {rank}"
        ds = r["deepspeed"] or {}
        check(f"{where}: the Trainer trains a DeepSpeedEngine of ZeRO stage {stage} from "
              "ds_config.json: micro-batch 2, accumulation 3, batch 12 over 2 ranks, bf16",
              (r["distributed_type"], r["wrapped"], ds.get("stage"), ds.get("micro"),
               ds.get("accumulation"), ds.get("train_batch"), ds.get("bf16"))
              == ("DEEPSPEED", "DeepSpeedEngine", stage, 2, 3, 12, True), str(r))
        check_zero_engine(where, ds, stage)
        check(f"{where}: every forward sees the micro-batch, one step per accumulation, every "
              "block checkpointed, the LoRA parameters train",
              set(r["batches"]) == {p["micro_batch"]} and r["steps"] == OPTIMIZER_STEPS
              and len(r["batches"]) == OPTIMIZER_STEPS * p["accumulation_steps"]
              and r["recomputed"] == every_block and r["trainable"] == EXPECTED_TRAINABLE, str(r))


def run_lightning_cpu_limits(memplan, work):
    """Lightning refuses its FSDP and DeepSpeed strategies off CUDA: FSDPStrategy in the
    Trainer's constructor (accelerator_connector.py, _check_strategy_and_fallback: "requires a
    GPU accelerator"), DeepSpeedStrategy when it sets up (strategies/deepspeed.py,
    setup_environment: "only supported on CUDA GPUs"). The exported Trainers of an FSDP and a
    ZeRO-2 plan are built as written but for accelerator="cpu", and the refusal asserted: the
    check fails, and the cell gets a run, once a release allows either on the CPU."""
    fsdp = plan_json(2, 3, None, "adamw", parallel="fsdp", gpus=2)
    try:
        load_lightning(export(memplan, fsdp, "lightning", work, "lora_fsdp"),
                       "exported_lightning_fsdp", **LIGHTNING_CPU)
        check("lightning fsdp: Lightning refuses FSDPStrategy on the CPU", False, "built")
    except ValueError as error:
        check("lightning fsdp: FSDPStrategy as exported; Lightning refuses it on the CPU "
              "(not runnable here)", "requires a GPU accelerator" in str(error), str(error))
    zero = plan_json(2, 3, None, "adamw", parallel="zero2", gpus=2)
    script, written = load_lightning(export(memplan, zero, "lightning", work, "lora_zero2"),
                                     "exported_lightning_zero2", **LIGHTNING_CPU)
    try:
        script.trainer.strategy.setup_environment()
        check("lightning zero2: Lightning refuses DeepSpeed on the CPU", False, "set up")
    except RuntimeError as error:
        check('lightning zero2: strategy="deepspeed_stage_2" as exported; Lightning refuses '
              "DeepSpeed on the CPU (not runnable here)",
              written["strategy"] == "deepspeed_stage_2"
              and "only supported on CUDA GPUs" in str(error), str(error))


class DataParallelWorld:
    """The mpu DeepSpeedConfig asks for the data-parallel world size: the plan's GPUs, so the
    exported train_batch_size is checked against micro x accumulation x GPUs as DeepSpeed does."""

    def __init__(self, world):
        self.world = world

    def get_data_parallel_world_size(self):
        return self.world


def call_in(text, name, namespace):
    """The `name(...)` call written in `text`, evaluated with the real class: what a script
    pasting it would build."""
    start = text.index(name + "(")
    depth = 0
    for end in range(start + len(name), len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0:
            return eval(text[start:end + 1], namespace)  # noqa: S307 (memplan's own output)
    raise ValueError(f"unbalanced {name}(")


def run_deepspeed(memplan, work):
    """Each ZeRO stage's QLoRA config and the offloads' go through DeepSpeed's own
    DeepSpeedConfig (what deepspeed.initialize parses) with the plan's 2 data-parallel ranks,
    over a one-rank gloo group (DeepSpeedConfig asks for the rank); run_deepspeed_engine runs
    the engine itself on LoRA plans."""
    import deepspeed.comm
    from deepspeed.runtime.config import DeepSpeedConfig
    if not deepspeed.comm.is_initialized():
        os.environ.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1",
                           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())})
        deepspeed.comm.init_distributed("gloo", auto_mpi_discovery=False, verbose=False)
    cases = [("zero1", None), ("zero2", None), ("zero3", None), ("zero2", "optimizer"),
             ("zero3", "optimizer+params")]
    for strategy, offload in cases:
        plan = plan_json(2, 3, "nf4", "adamw", parallel=strategy, gpus=2)
        if offload:
            plan["plan"]["offload"] = {"mode": offload}
        name = f"qlora_{strategy}" + (f"_offload_{offload.replace('+', '_')}" if offload else "")
        path = export(memplan, plan, "deepspeed", work, name)
        config = json.load(open(path))
        p = plan["plan"]
        parsed = DeepSpeedConfig(config, mpu=DataParallelWorld(p["gpus"]))
        zero = parsed.zero_config
        stage = int(strategy[-1])
        label = f"deepspeed {strategy}" + (f" offload {offload}" if offload else "")
        got = (parsed.train_batch_size, parsed.train_micro_batch_size_per_gpu,
               parsed.gradient_accumulation_steps, zero.stage, parsed.bfloat16_config.enabled)
        check(f"{label}: DeepSpeedConfig (2 ranks) parses; batch 2 x 3 x 2 = 12, ZeRO stage "
              f"{stage}, bf16", got == (12, 2, 3, stage, True), str(got))
        if offload:
            optimizer_device = str(getattr(zero.offload_optimizer, "device", None))
            param_device = str(getattr(zero.offload_param, "device", None))
            check(f"{label}: optimizer state (and parameters) offloaded to the CPU",
                  optimizer_device.endswith("cpu")
                  and param_device.endswith("cpu") == (offload == "optimizer+params"),
                  f"optimizer {optimizer_device}, parameters {param_device}")
    notes = " ".join(config.get("_not_expressed", []))
    # The LoraConfig and BitsAndBytesConfig the note names, built by peft and transformers.
    from peft import LoraConfig
    from transformers import BitsAndBytesConfig
    namespace = {"LoraConfig": LoraConfig, "BitsAndBytesConfig": BitsAndBytesConfig,
                 "torch": torch}
    lora = call_in(notes, "LoraConfig", namespace)
    check("deepspeed: the note's LoraConfig builds with r=4, alpha=4 on c_attn",
          (lora.r, lora.lora_alpha, sorted(lora.target_modules)) == (RANK, RANK, ["c_attn"]),
          str(lora))
    bnb = call_in(notes, "BitsAndBytesConfig", namespace)
    check("deepspeed: the note's BitsAndBytesConfig builds as a 4-bit nf4 base (QLoRA)",
          bnb.load_in_4bit and bnb.bnb_4bit_quant_type == "nf4"
          and bnb.bnb_4bit_compute_dtype == torch.bfloat16,
          f"{bnb.load_in_4bit} {bnb.bnb_4bit_quant_type} {bnb.bnb_4bit_compute_dtype}")
    deepspeed.comm.destroy_process_group()


DEEPSPEED_DRIVER = r'''
"""One rank of `deepspeed.initialize(config=EXPORTED.json)` under torchrun: DeepSpeed's CPU
accelerator (picked where no GPU is found; gloo where oneCCL is absent) runs the engine with
the exported JSON as written; the LoRA adapters are the LoraConfig its _not_expressed names."""
import json, os, sys, warnings
warnings.filterwarnings("ignore")
import torch
sys.path.insert(0, os.environ["MEMPLAN_TOOLS_DIR"])
import run_exported_plans as r
import deepspeed
from peft import LoraConfig, get_peft_model
config = json.load(open(sys.argv[1]))
notes = " ".join(config.get("_not_expressed", []))
model = r.load_model(sys.argv[2], {})
watch = r.Watch(model, [])
precision = r.PrecisionWatch(model)
if "LoraConfig(" in notes:
    model = get_peft_model(model, r.call_in(notes, "LoraConfig", {"LoraConfig": LoraConfig}))
model.train()
trainable = [p for p in model.parameters() if p.requires_grad]
client = None
if "optimizer" not in config:
    # No config type for the plan's optimizer (bitsandbytes'): _not_expressed names the object
    # to pass, deepspeed.initialize(..., optimizer=bitsandbytes.optim.X(...)), and its constants.
    import re, bitsandbytes
    call = re.search(r"bitsandbytes\.optim\.\w+", notes).group(0)
    constants = {k: float(v) for k, v in re.findall(r"\b([A-Z][A-Z_]+) = ([0-9.e+-]+)", notes)}
    client = r.call_in(notes, call, {"bitsandbytes": bitsandbytes, "model": model, **constants})
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=trainable,
                                               optimizer=client, config=config)
micro, k = engine.train_micro_batch_size_per_gpu(), engine.gradient_accumulation_steps()
world = engine.world_size
ids = r.tokens(r.OPTIMIZER_STEPS * k * micro * world)
rank = engine.global_rank
for index in range(r.OPTIMIZER_STEPS * k):
    start = (index * world + rank) * micro  # this rank's micro-batch of the global batch
    batch = ids[start:start + micro]
    loss = r.lm_loss(engine(batch), batch)
    engine.backward(loss)
    engine.step()  # DeepSpeed steps the optimizer at each accumulation boundary only
# The fp32 master partition this rank holds (ZeRO 1/2: single_partition_of_fp32_groups; 3:
# fp32_partitioned_groups_flat), and for ZeRO-3 the parameter shards (ds_tensor of ds_numel).
zero = engine.optimizer
masters = (getattr(zero, "single_partition_of_fp32_groups", None)
           or getattr(zero, "fp32_partitioned_groups_flat", None) or [])
params = list(engine.module.parameters())
out = {"rank": rank, "world": world, "micro": micro, "accumulation": k,
       "train_batch": engine.train_batch_size(), "stage": engine.zero_optimization_stage(),
       "bf16": engine.bfloat16_enabled(), "steps": engine.global_steps,
       "batches": watch.batches, "optimizer": type(zero).__name__,
       "master_dtypes": sorted({str(m.dtype) for m in masters}),
       "master_elements": sum(m.numel() for m in masters),
       "trainable": sum(p.ds_numel if hasattr(p, "ds_numel") else p.numel() for p in trainable),
       "shard_elements": sum(p.ds_tensor.numel() for p in params if hasattr(p, "ds_tensor")),
       "full_elements": sum(p.ds_numel if hasattr(p, "ds_numel") else p.numel() for p in params),
       "eight_bit": r.eight_bit_facts(zero), **precision.facts()}
out.update(r.zero_offload_facts(engine))
json.dump(out, open(sys.argv[3] + f".{rank}", "w"))
'''


EIGHT_BIT = {"adamw8bit": ("AdamW8bit", False), "paged-adamw8bit": ("PagedAdamW8bit", True)}


def eight_bit_plan(optimizer, parallel=None):
    """A full fine-tune plan with a bitsandbytes optimizer (no LoRA: the adapters' tensors are
    all below bitsandbytes' 4096 elements, so only a full model shows 8-bit state)."""
    plan = plan_json(2, 3, None, optimizer, parallel=parallel, gpus=2 if parallel else None)
    del plan["plan"]["lora"]
    return plan


def run_deepspeed_engine(memplan, work, model_dir, strategy, offload=None, optimizer="adamw"):
    """DeepSpeed's engine runs on the CPU (deepspeed >= 0.15: its CPU accelerator, gloo): the
    exported JSON of a 2-GPU LoRA plan through deepspeed.initialize on 2 torchrun ranks;
    `offload` "optimizer": ZeRO-Offload (DeepSpeedCPUAdam, a JIT build the first time);
    "optimizer+params" (ZeRO-3): ZeRO-Infinity's parameter offload to the host besides. An
    8-bit `optimizer`: a full fine-tune whose bitsandbytes optimizer the script builds and
    passes as _not_expressed says; ZeRO steps it over each rank's flat fp32 partition."""
    eight_bit = optimizer in EIGHT_BIT
    plan = (eight_bit_plan(optimizer, strategy) if eight_bit
            else plan_json(2, 3, None, optimizer, parallel=strategy, gpus=2))
    if offload:
        plan["plan"]["offload"] = {"mode": offload}
    name = (f"full_{optimizer}_" if eight_bit else "lora_") + strategy + (
        f"_offload_{offload.replace('+', '_')}" if offload else "")
    path = export(memplan, plan, "deepspeed", work, name)
    p = plan["plan"]
    stage = int(strategy[-1])
    trainable = FULL_ELEMENTS if eight_bit else EXPECTED_TRAINABLE
    label = f"deepspeed {strategy} engine" + (f" offload {offload}" if offload else "") + (
        f" {optimizer}" if eight_bit else "")
    ranks = run_ddp_driver(label, DEEPSPEED_DRIVER, path, model_dir, work) or []
    for r in ranks:
        where = f"{label} rank {r['rank']}"
        check(f"{where}: deepspeed.initialize took the file: micro-batch 2, accumulation 3, "
              f"batch 12 over 2 ranks, ZeRO stage {stage}, bf16",
              (r["micro"], r["accumulation"], r["train_batch"], r["world"], r["stage"], r["bf16"])
              == (p["micro_batch"], p["accumulation_steps"], 12, 2, stage, True), str(r))
        check(f"{where}: every forward sees the micro-batch, one optimizer step per accumulation",
              set(r["batches"]) == {p["micro_batch"]} and r["steps"] == OPTIMIZER_STEPS
              and len(r["batches"]) == OPTIMIZER_STEPS * p["accumulation_steps"], str(r))
        # DeepSpeed's bf16: the module itself in bfloat16, no autocast, fp32 masters in the
        # optimizer (the plan's master-weights regime).
        check(f"{where}: master weights: bfloat16 module, no autocast, fp32 masters",
              (r["fc_weight_dtypes"], r["autocast"], r["fc_dtypes"], r["master_dtypes"])
              == (["torch.bfloat16"], [False], ["torch.bfloat16"], ["torch.float32"]), str(r))
        expected = "DeepSpeedZeroOptimizer_Stage3" if stage == 3 else "DeepSpeedZeroOptimizer"
        check(f"{where}: {expected}; this rank holds a part of the {trainable} trainable "
              "parameters' fp32 masters", r["optimizer"] == expected
              and r["trainable"] == trainable and 0 < r["master_elements"] < trainable, str(r))
        if eight_bit:
            check_eight_bit(where, r["eight_bit"], *EIGHT_BIT[optimizer])
        else:
            check_optimizer_offload(where, r, offload)
        if stage == 3:
            check(f"{where}: every parameter partitioned, a part of each held here",
                  0 < r["shard_elements"] < r["full_elements"], str(r))
            check_parameter_offload(where, r, offload)
    if len(ranks) == 2:
        # Partitions are padded to an alignment: together they hold at least every element.
        masters = sum(r["master_elements"] for r in ranks)
        check(f"{label}: the ranks' fp32 master partitions cover the {trainable} "
              "trainable parameters once (up to alignment padding)",
              trainable <= masters < 2 * trainable, str(masters))


def run_accelerate(memplan, work):
    from accelerate.commands.config.config_args import load_config_from_file
    plan = plan_json(2, 3, "nf4", "adamw", parallel="zero2", gpus=2)
    path = export(memplan, plan, "accelerate", work, "qlora_zero2")
    config = load_config_from_file(path)
    check("accelerate: load_config_from_file parses; DeepSpeed ZeRO-2, 2 processes, bf16",
          (str(config.distributed_type), config.num_processes, str(config.mixed_precision),
           config.deepspeed_config.get("zero_stage"))
          in [("DistributedType.DEEPSPEED", 2, "bf16", 2), ("DEEPSPEED", 2, "bf16", 2)],
          str((config.distributed_type, config.num_processes, config.mixed_precision,
               config.deepspeed_config)))
    text = open(path).read()
    check("accelerate: the file names the LoRA and nf4 base the script must build",
          f"LoraConfig(r={RANK}, lora_alpha={RANK}" in text and "nf4" in text)


ACCELERATE_DRIVER = r'''
"""The training script `accelerate launch --config_file EXPORTED.yaml` runs (one process, or each
rank the launcher starts): every line it takes from the exported file's comments
(Accelerator(gradient_accumulation_steps=k), the DataLoader's batch_size, the optimizer lines,
the LoraConfig, the clipping) is read from that file."""
import json, os, re, sys, warnings
warnings.filterwarnings("ignore")
import torch
from torch.utils.data import DataLoader, TensorDataset
sys.path.insert(0, os.environ["MEMPLAN_TOOLS_DIR"])
import run_exported_plans as r
from accelerate import Accelerator
from peft import LoraConfig, get_peft_model
text = open(sys.argv[1]).read()
notes = "\n".join(line[1:] for line in text.splitlines() if line.startswith("#"))
k = int(re.search(r"Accelerator\(gradient_accumulation_steps=(\d+)\)", notes).group(1))
micro = int(re.search(r"DataLoader\(dataset, batch_size=(\d+)\)", notes).group(1))
clip = float(re.search(r"accelerator.clip_grad_norm_\(model.parameters\(\), ([0-9.]+)\)",
                       notes).group(1))
# On the CPU accelerate finds no backend for a DeepSpeed launch (its state.py knows GPU-like
# devices' backends; DeepSpeed then sees 2 ranks and accelerate 1): the script names gloo, the
# one line a CPU run adds.
from accelerate.utils import InitProcessGroupKwargs
handlers = ([InitProcessGroupKwargs(backend="gloo")]
            if os.environ.get("MEMPLAN_ACCELERATE_GLOO") else [])
accelerator = Accelerator(gradient_accumulation_steps=k, kwargs_handlers=handlers)
model = r.load_model(sys.argv[2], {})
watch = r.Watch(model, [])
if "LoraConfig(" in notes:
    model = get_peft_model(model, r.call_in(notes, "LoraConfig", {"LoraConfig": LoraConfig}))
block = notes.split("The optimizer the plan simulated, for the training script:")[1]
lines = []
for line in block.splitlines()[1:]:
    if not line.startswith("   "):
        break
    lines.append(line[3:])
namespace = {"torch": torch, "model": model}
exec("\n".join(lines), namespace)
optimizer = namespace["optimizer"]
# Each process reads its share: micro-batches of `micro` samples, k per step, on every rank.
ids = r.tokens(r.OPTIMIZER_STEPS * k * micro * accelerator.num_processes)
loader = DataLoader(TensorDataset(ids, ids), batch_size=micro)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
steps, autocast = 0, set()
for inputs, targets in loader:
    with accelerator.accumulate(model):
        with accelerator.autocast():
            autocast.add(str(torch.get_autocast_dtype("cpu")) if torch.is_autocast_enabled("cpu")
                         else "off")
            loss = r.lm_loss(model(inputs), targets)
        accelerator.backward(loss)
        if accelerator.sync_gradients:
            accelerator.clip_grad_norm_(model.parameters(), clip)
            steps += 1
        optimizer.step()
        optimizer.zero_grad()
inner = getattr(optimizer, "optimizer", optimizer)
json.dump({"mixed_precision": str(accelerator.mixed_precision),
           "distributed_type": str(accelerator.distributed_type).split(".")[-1],
           "processes": accelerator.num_processes, "rank": accelerator.process_index,
           "wrapped": type(model).__name__, "accumulation": k,
           "batches": watch.batches, "steps": steps, "autocast": sorted(autocast),
           "optimizer": type(inner).__name__, "eight_bit": r.eight_bit_facts(optimizer),
           "engine": r.zero_facts(model) if hasattr(model, "zero_optimization_stage") else None,
           "offload": (r.zero_offload_facts(model) if hasattr(model, "zero_optimization_stage")
                       else None),
           "trainable": sum(r.elements(p) for p in model.parameters() if p.requires_grad)},
          open(sys.argv[3] + f".{accelerator.process_index}", "w"))
'''


def run_accelerate_launch(memplan, work, model_dir, parallel=None, optimizer="adamw",
                          offload=None):
    """`accelerate launch --config_file EXPORTED.yaml` of a LoRA plan, on the CPU: the launcher
    reads the exported file, the script takes the lines the file's comments give. One GPU: one
    process. A 2-GPU DDP plan (distributed_type MULTI_GPU, num_processes 2): the launcher starts
    2 processes through torchrun as the file says; ACCELERATE_USE_CPU=true makes the
    Accelerator's data parallelism the CPU's (MULTI_CPU over gloo: state.py's
    _prepare_backend), the one change from a GPU run. An 8-bit `optimizer`: a full fine-tune
    whose bitsandbytes optimizer is the file's optimizer lines. An `offload` of a ZeRO plan
    ("optimizer" under ZeRO-2, "optimizer+params" under ZeRO-3): the file's
    offload_optimizer_device / offload_param_device cpu; accelerate hands the script's AdamW to
    DeepSpeed as DeepSpeedCPUAdam (utils/deepspeed.py, map_pytorch_optim_to_deepspeed) and the
    engine runs the offloads as the DeepSpeed engine runs above."""
    eight_bit = optimizer in EIGHT_BIT
    plan = (eight_bit_plan(optimizer, parallel) if eight_bit else
            plan_json(2, 3, None, optimizer, parallel=parallel, gpus=2 if parallel else None))
    if offload:
        plan["plan"]["offload"] = {"mode": offload}
    label = "accelerate launch" + (f" {parallel}" if parallel else "") + (
        f" {optimizer}" if eight_bit else "") + (f" offload {offload}" if offload else "")
    path = export(memplan, plan, "accelerate", work,
                  (f"full_{optimizer}_launch" if eight_bit else "lora_launch")
                  + (f"_{parallel}" if parallel else "")
                  + (f"_offload_{offload.replace('+', '_')}" if offload else ""))
    driver = os.path.join(work, "accelerate_driver.py")
    with open(driver, "w") as f:
        f.write(ACCELERATE_DRIVER)
    out = os.path.join(work, label.replace(" ", "_") + ".json")
    env = {**os.environ, "MEMPLAN_TOOLS_DIR": os.path.dirname(os.path.abspath(__file__)),
           "CUDA_VISIBLE_DEVICES": ""}
    command = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", path]
    if parallel:
        if parallel.startswith("zero"):
            env["MEMPLAN_ACCELERATE_GLOO"] = "1"
        else:
            env["ACCELERATE_USE_CPU"] = "true"
        command += ["--main_process_port", str(free_port())]
    result = subprocess.run(command + [driver, path, model_dir, out],
                            capture_output=True, text=True, timeout=600, env=env)
    if parallel == "fsdp":
        # The launcher hands the file's FSDP settings to the script (ACCELERATE_USE_FSDP and
        # FSDP_*, sync_module_states true by default); accelerate's FullyShardedDataParallelPlugin
        # refuses that on the CPU (utils/dataclasses.py), and even without it a CPU world is
        # MULTI_CPU, which state.py never turns into FSDP.
        check(f"{label}: the launcher read FSDP from the file; accelerate refuses FSDP on the CPU "
              "(not runnable here)", result.returncode != 0
              and "`sync_module_states=True` is not supported on cpu" in result.stderr,
              failure(result.stderr))
        return
    if result.returncode != 0:
        check(f"{label}: the exported config launched", False, failure(result.stderr))
        return
    ranks = 2 if parallel else 1
    p = plan["plan"]
    for rank in range(ranks):
        r = json.load(open(f"{out}.{rank}"))
        where = label + (f" rank {rank}" if parallel else "")
        if parallel == "ddp":
            check(f"{where}: the launcher started 2 processes (num_processes 2 in the file); "
                  "data parallel over them (MULTI_CPU, the CPU's MULTI_GPU), "
                  "DistributedDataParallel, mixed precision bf16",
                  (r["processes"], r["distributed_type"], r["wrapped"], r["mixed_precision"])
                  == (2, "MULTI_CPU", "DistributedDataParallel", "bf16"), str(r))
        elif (parallel or "").startswith("zero"):
            stage = int(parallel[-1])
            check(f"{where}: the launcher started 2 processes; Accelerator.prepare made a "
                  f"DeepSpeedEngine of ZeRO stage {stage} from the file: micro-batch 2, "
                  "accumulation 3, batch 12 over 2 ranks, bf16",
                  (r["processes"], r["distributed_type"], r["wrapped"],
                   *[(r["engine"] or {}).get(key) for key in
                     ("stage", "micro", "accumulation", "train_batch", "bf16")])
                  == (2, "DEEPSPEED", "DeepSpeedEngine", stage, 2, 3, 12, True), str(r))
            check_zero_engine(where, r["engine"] or {}, stage)
            if not eight_bit:
                check_optimizer_offload(where, r["offload"], offload)
                if stage == 3:
                    check_parameter_offload(where, r["offload"], offload)
        else:
            check(f"{where}: mixed precision bf16, no distribution, 1 process, from the file",
                  (r["mixed_precision"], r["distributed_type"], r["processes"])
                  == ("bf16", "NO", 1), str(r))
        if not (parallel or "").startswith("zero"):  # DeepSpeed casts the module instead
            check(f"{where}: forward under bf16 autocast", r["autocast"] == ["torch.bfloat16"],
                  str(r["autocast"]))
        check(f"{where}: every forward sees the micro-batch, one step per accumulation",
              set(r["batches"]) == {p["micro_batch"]}
              and r["accumulation"] == p["accumulation_steps"] and r["steps"] == OPTIMIZER_STEPS
              and len(r["batches"]) == OPTIMIZER_STEPS * p["accumulation_steps"], str(r))
        if eight_bit:
            check(f"{where}: the {FULL_ELEMENTS} parameters of the model train",
                  r["trainable"] == FULL_ELEMENTS, str(r))
            check_eight_bit(where, r["eight_bit"], *EIGHT_BIT[optimizer])
            continue
        expected = {"zero1": "DeepSpeedZeroOptimizer", "zero2": "DeepSpeedZeroOptimizer",
                    "zero3": "DeepSpeedZeroOptimizer_Stage3"}.get(parallel, "AdamW")
        check(f"{where}: {expected} over the {EXPECTED_TRAINABLE} LoRA parameters",
              r["optimizer"] == expected and r["trainable"] == EXPECTED_TRAINABLE, str(r))


def run_fp16_cpu_limits(memplan, work, model_dir):
    """The HF Trainer, Accelerate and Lightning do not run fp16 autocast on the CPU although torch
    can: accelerate's Accelerator makes no GradScaler and no autocast for fp16 on the CPU
    (accelerator.py: fp16 AMP only when the device is not the CPU; the Trainer runs through it),
    and Lightning replaces "16-mixed" by "bf16-mixed" on the CPU (accelerator_connector.py). Their
    fp16 cells are then the configuration, checked here as exported, and the framework's CPU
    behaviour is asserted so that this check fails, and the cell gets a run, once one allows it."""
    from accelerate import Accelerator
    from accelerate.commands.config.config_args import load_config_from_file
    from transformers import Trainer
    plan = plan_json(2, 3, None, "adamw", precision="fp16")
    script, recorded = load_hf_trainer(
        export(memplan, plan, "hf-trainer", work, "lora_fp16"), "exported_hf_fp16",
        use_cpu=True, output_dir=os.path.join(work, "hf-fp16"), report_to=[],
        save_strategy="no")
    trainer = Trainer(model=script.apply_fine_tuning(load_model(model_dir, {})), args=script.args)
    accelerator = trainer.accelerator
    check("hf-trainer fp16: TrainingArguments(fp16=True) as exported; on the CPU the Trainer's "
          "Accelerator keeps fp16 without autocast or GradScaler (not runnable here)",
          recorded.get("fp16") is True and not recorded.get("bf16")
          and (accelerator.mixed_precision, accelerator.native_amp, accelerator.scaler)
          == ("fp16", False, None),
          f"fp16={recorded.get('fp16')} {accelerator.mixed_precision} "
          f"native_amp={accelerator.native_amp} scaler={accelerator.scaler}")

    config = load_config_from_file(export(memplan, plan, "accelerate", work, "lora_fp16"))
    cpu = Accelerator(mixed_precision=config.mixed_precision, cpu=True)
    check("accelerate fp16: the exported mixed_precision is fp16; Accelerator on the CPU makes "
          "no autocast and no GradScaler for it (not runnable here)",
          (str(config.mixed_precision), cpu.native_amp, cpu.scaler) == ("fp16", False, None),
          f"{config.mixed_precision} native_amp={cpu.native_amp} scaler={cpu.scaler}")

    lightning_script, made = load_lightning(
        export(memplan, plan, "lightning", work, "lora_fp16"), "exported_lightning_fp16",
        **LIGHTNING_CPU, devices=1)
    check('lightning fp16: precision="16-mixed" as exported; Lightning runs "bf16-mixed" '
          "instead on the CPU (not runnable here)",
          made.get("precision") == "16-mixed"
          and lightning_script.trainer.precision == "bf16-mixed",
          f"{made.get('precision')} -> {lightning_script.trainer.precision}")


def versions():
    out = {}
    for name in ["torch", "transformers", "peft", "accelerate", "lightning", "deepspeed",
                 "bitsandbytes"]:
        with contextlib.suppress(Exception):
            out[name] = importlib.import_module(name).__version__
    return out


def main():
    memplan = os.path.abspath(sys.argv[1])
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="memplan_exports_")
    os.makedirs(work, exist_ok=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    model_dir = tiny_gpt2_dir(work)
    runs = [("pytorch", lambda: run_pytorch(memplan, work, model_dir)),
            ("pytorch adamw8bit",
             lambda: run_pytorch_eight_bit(memplan, work, model_dir, "adamw8bit")),
            ("pytorch paged-adamw8bit",
             lambda: run_pytorch_eight_bit(memplan, work, model_dir, "paged-adamw8bit")),
            ("pytorch fp16", lambda: run_pytorch_regime(memplan, work, model_dir, "fp16")),
            ("pytorch bf16 pure",
             lambda: run_pytorch_regime(memplan, work, model_dir, "bf16", "pure")),
            ("pytorch offload activations",
             lambda: run_pytorch_regime(memplan, work, model_dir, "bf16", offload=True)),
            ("pytorch selective gradients",
             lambda: run_selective_gradients(memplan, work, model_dir)),
            ("hf-trainer", lambda: run_hf_trainer(memplan, work, model_dir)),
            ("hf-trainer adamw8bit", lambda: run_hf_trainer_eight_bit(memplan, work, model_dir)),
            ("hf-trainer ddp", lambda: run_hf_trainer_ddp(memplan, work, model_dir)),
            ("hf-trainer fsdp", lambda: run_hf_trainer_fsdp(memplan, work, model_dir)),
            ("hf-trainer zero1", lambda: run_hf_trainer_zero(memplan, work, model_dir, "zero1")),
            ("hf-trainer zero2", lambda: run_hf_trainer_zero(memplan, work, model_dir)),
            ("hf-trainer zero3", lambda: run_hf_trainer_zero(memplan, work, model_dir, "zero3")),
            ("lightning", lambda: run_lightning(memplan, work, model_dir)),
            ("lightning adamw8bit", lambda: run_lightning_eight_bit(memplan, work, model_dir)),
            ("lightning ddp", lambda: run_lightning_ddp(memplan, work, model_dir)),
            ("lightning bf16 pure", lambda: run_lightning_pure(memplan, work, model_dir)),
            ("lightning cpu limits", lambda: run_lightning_cpu_limits(memplan, work)),
            ("torchrun ddp", lambda: run_torchrun(memplan, work, model_dir, "ddp")),
            ("torchrun fsdp", lambda: run_torchrun(memplan, work, model_dir, "fsdp")),
            ("torchrun ddp fp16", lambda: run_torchrun(memplan, work, model_dir, "ddp", "fp16")),
            ("torchrun fsdp fp16",
             lambda: run_torchrun(memplan, work, model_dir, "fsdp", "fp16")),
            ("torchrun ddp bf16 pure",
             lambda: run_torchrun(memplan, work, model_dir, "ddp", amp="pure")),
            ("torchrun fsdp bf16 pure",
             lambda: run_torchrun(memplan, work, model_dir, "fsdp", amp="pure")),
            ("torchrun ddp selective+offload",
             lambda: run_torchrun(memplan, work, model_dir, "ddp", selective_offload=True)),
            ("torchrun fsdp selective+offload",
             lambda: run_torchrun(memplan, work, model_dir, "fsdp", selective_offload=True)),
            ("torchrun hybrid-shard",
             lambda: run_torchrun(memplan, work, model_dir, "hybrid-shard")),
            ("deepspeed", lambda: run_deepspeed(memplan, work)),
            ("deepspeed zero1 engine",
             lambda: run_deepspeed_engine(memplan, work, model_dir, "zero1")),
            ("deepspeed zero2 engine",
             lambda: run_deepspeed_engine(memplan, work, model_dir, "zero2")),
            ("deepspeed zero3 engine",
             lambda: run_deepspeed_engine(memplan, work, model_dir, "zero3")),
            ("deepspeed zero2 engine offload optimizer",
             lambda: run_deepspeed_engine(memplan, work, model_dir, "zero2", "optimizer")),
            ("deepspeed zero3 engine offload optimizer+params",
             lambda: run_deepspeed_engine(memplan, work, model_dir, "zero3",
                                          "optimizer+params")),
            ("deepspeed zero2 engine adamw8bit",
             lambda: run_deepspeed_engine(memplan, work, model_dir, "zero2",
                                          optimizer="adamw8bit")),
            ("deepspeed zero2 engine paged-adamw8bit",
             lambda: run_deepspeed_engine(memplan, work, model_dir, "zero2",
                                          optimizer="paged-adamw8bit")),
            ("accelerate", lambda: run_accelerate(memplan, work)),
            ("accelerate launch", lambda: run_accelerate_launch(memplan, work, model_dir)),
            ("accelerate launch ddp",
             lambda: run_accelerate_launch(memplan, work, model_dir, "ddp")),
            ("accelerate launch fsdp",
             lambda: run_accelerate_launch(memplan, work, model_dir, "fsdp")),
            ("accelerate launch zero1",
             lambda: run_accelerate_launch(memplan, work, model_dir, "zero1")),
            ("accelerate launch zero2",
             lambda: run_accelerate_launch(memplan, work, model_dir, "zero2")),
            ("accelerate launch zero3",
             lambda: run_accelerate_launch(memplan, work, model_dir, "zero3")),
            ("accelerate launch zero2 offload optimizer",
             lambda: run_accelerate_launch(memplan, work, model_dir, "zero2",
                                           offload="optimizer")),
            ("accelerate launch zero3 offload optimizer+params",
             lambda: run_accelerate_launch(memplan, work, model_dir, "zero3",
                                           offload="optimizer+params")),
            ("accelerate launch adamw8bit",
             lambda: run_accelerate_launch(memplan, work, model_dir, None, "adamw8bit")),
            ("accelerate launch paged-adamw8bit",
             lambda: run_accelerate_launch(memplan, work, model_dir, None, "paged-adamw8bit")),
            ("accelerate launch zero2 adamw8bit",
             lambda: run_accelerate_launch(memplan, work, model_dir, "zero2", "adamw8bit")),
            ("accelerate launch zero2 paged-adamw8bit",
             lambda: run_accelerate_launch(memplan, work, model_dir, "zero2",
                                           "paged-adamw8bit")),
            ("fp16 cpu limits", lambda: run_fp16_cpu_limits(memplan, work, model_dir))]
    only = os.environ.get("ONLY")
    for name, run in runs:
        if only and name not in only.split(","):
            continue
        try:
            run()
        except Exception as error:  # a framework error is a failed check, reported as such
            check(f"{name}: ran", False, f"{type(error).__name__}: {str(error)[:400]}")
    print("versions: " + json.dumps(versions()))
    print(f"{sum(RESULTS)} of {len(RESULTS)} checks held")
    return 0 if RESULTS and all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
