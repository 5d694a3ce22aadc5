#!/usr/bin/env python3
"""Every export target x every plan feature: the feature reaches what the framework reads, or the
export refuses it in one line. Nothing is dropped silently (issue 43).

For each feature a plan of a tiny GPT-2 (module names transformer.h.N, attn.c_attn) is written
with that feature alone on top of a base plan (micro-batch 2, bf16, AdamW, clipping), and exported
to each target with `memplan export`. Each output is read with the framework's own code:

  pytorch / torchrun   the script imported: its constants, LORA_CONFIG (peft's LoraConfig),
                       QUANTIZATION_CONFIG (transformers' BitsAndBytesConfig), make_optimizer()
                       called and stepped once (the optimizer class and its state dtype), the
                       code's syntax tree for autocast / save_on_cpu / the wrapper
  hf-trainer           the script run with TrainingArguments recorded and then built by the real
                       class; the optimizer class from Trainer.get_optimizer_cls_and_kwargs(args);
                       a ZeRO plan's deepspeed= file written beside it, which TrainingArguments
                       loads through DeepSpeed
  accelerate           accelerate's load_config_from_file
  lightning            the script run with lightning.pytorch.Trainer's keywords recorded
                       (strategy objects are the real FSDPStrategy / DeepSpeedStrategy)
  deepspeed            deepspeed.runtime.config.DeepSpeedConfig with the plan's data-parallel
                       world size (an mpu object), over a one-rank gloo group
  torchtune            OmegaConf, each _component_ resolved with torchtune's own resolver

A cell is `parsed` (the framework read the value from the config), `script` (the config file
cannot hold it: it names the line the training script must have, e.g. Accelerator's
gradient_accumulation_steps), `refused` (exit 2, one line `memplan: ...` naming the flag) or
DROPPED (exported without it: a failure). A refusal that only asks for the target's own regime
(--amp-mode, --optimizer-impl, FSDP's --engine-options auto_wrap_policy) is followed once, as
`memplan analyze --export TARGET` plans in that regime, and the cell says so.

usage: export_matrix_check.py MEMPLAN_BINARY WORK_DIR [--markdown FILE]
Exit 0 when no cell is DROPPED and every refusal is one line; 1 otherwise.
"""

import ast
import contextlib
import copy
import importlib
import importlib.util
import io
import json
import os
import re
import socket
import subprocess
import sys
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

LAYERS = 2
RANK = 4
TARGETS = ["pytorch", "torchrun", "hf-trainer", "accelerate", "lightning", "deepspeed",
           "torchtune"]
LORA = {"rank": RANK, "alpha": RANK, "dropout": 0.0,
        "target_modules": [f"transformer.h.{i}.attn.c_attn" for i in range(LAYERS)],
        "peft_target_modules": ["c_attn"]}
NODE = "/transformer/h.0/attn/c_attn/MatMul"


def base_plan():
    return {"micro_batch": 2, "accumulation_steps": 1, "precision": "bf16", "amp_mode": "autocast",
            "optimizer": "adamw", "zero_grad": "none", "clip_gradients": True, "recompute": []}


def ddp(plan, strategy="ddp", gpus=2, nodes=None):
    plan["parallel"] = strategy
    plan["gpus"] = gpus
    if nodes:
        plan["nodes"] = nodes
    return plan


# Each feature: (row name, function making the plan from the base, expected facts).
def feature_plans():
    def accumulation(p):
        p["accumulation_steps"] = 3
        return p

    def module_recompute(p):
        p.update(recompute_unit="module", recompute_modules=["transformer.h.0"],
                 checkpointable_modules=LAYERS, recompute=[NODE])
        return p

    def selective(p):
        p.update(recompute_unit="node", recompute=[NODE], recompute_op_types={NODE: "MatMul"})
        return p

    def precision(name, amp):
        def make(p):
            p.update(precision=name, amp_mode=amp)
            return p
        return make

    def fused_loss(p):
        p["fused_loss"] = True
        return p

    def lora(p):
        p["lora"] = copy.deepcopy(LORA)
        return p

    def qlora(p):
        p["lora"] = copy.deepcopy(LORA)
        p["base_dtype"] = "nf4"
        return p

    def optimizer(name):
        def make(p):
            p["optimizer"] = name
            return p
        return make

    def offload(mode):
        def make(p):
            p["offload"] = {"mode": mode}
            if mode == "activations":  # torchtune's recipes offload only with checkpointing
                module_recompute(p)
            return p
        return make

    def tp(p):
        ddp(p)
        p["tensor_parallel"] = {"degree": 2, "column_parallel": ["transformer.h.0.mlp.c_fc"],
                                "row_parallel": ["transformer.h.0.mlp.c_proj"]}
        return p

    return [
        ("accumulation (k=3)", accumulation, {"accumulation": 3}),
        ("recompute by module (transformer.h.0)", module_recompute,
         {"recompute": ["transformer.h.0"]}),
        ("selective recompute (node plan)", selective, {"selective": "transformer.h.0"}),
        ("bf16 autocast", precision("bf16", "autocast"), {"precision": "bf16"}),
        ("fp16 autocast", precision("fp16", "autocast"), {"precision": "fp16"}),
        ("bf16 pure", precision("bf16", "pure"), {"precision": "bf16"}),
        ("fused loss", fused_loss, {"fused_loss": True}),
        ("LoRA (r=4 on c_attn)", lora, {"lora": (RANK, RANK, "c_attn")}),
        ("QLoRA (nf4 base)", qlora, {"lora": (RANK, RANK, "c_attn"), "base": "nf4"}),
        ("8-bit AdamW", optimizer("adamw8bit"), {"optimizer": ("AdamW8bit", False)}),
        ("paged 8-bit AdamW", optimizer("paged-adamw8bit"),
         {"optimizer": ("PagedAdamW8bit", True)}),
        ("offload optimizer", offload("optimizer"), {"offload": "optimizer"}),
        ("offload optimizer+params", offload("optimizer+params"), {"offload": "params"}),
        ("offload activations", offload("activations"), {"offload": "activations"}),
        ("DDP (2 GPUs)", lambda p: ddp(p), {"strategy": ("ddp", 2)}),
        ("FSDP (2 GPUs)", lambda p: ddp(p, "fsdp"), {"strategy": ("fsdp", 2)}),
        ("ZeRO-1", lambda p: ddp(p, "zero1"), {"strategy": ("zero1", 2)}),
        ("ZeRO-2", lambda p: ddp(p, "zero2"), {"strategy": ("zero2", 2)}),
        ("ZeRO-3", lambda p: ddp(p, "zero3"), {"strategy": ("zero3", 2)}),
        ("hybrid shard (2 nodes x 2)", lambda p: ddp(p, "hybrid-shard", 4, 2),
         {"strategy": ("hybrid-shard", 4)}),
        ("tensor parallel (tp=2)", tp, {"tp": 2}),
    ]


def document(plan):
    return {"schema": "memplan/1", "model": {"path": "tiny-gpt2", "name": "tiny-gpt2"},
            "plan": plan}


# --- exporting, with the regime a refusal asks for ------------------------------------------

REGIME_ADVICE = [
    (re.compile(r"re-plan with --amp-mode ([a-z-]+)"), lambda p, v: p.update(amp_mode=v)),
    (re.compile(r"re-plan with --optimizer-impl ([a-z-]+)"),
     lambda p, v: p.update(optimizer_impl=v)),
    (re.compile(r"re-plan with --engine-options auto_wrap_policy=([a-z]+)"),
     lambda p, v: p.update(engine_options={"auto_wrap_policy": v})),
]


def export(memplan, plan, target, path):
    """(exit code, stdout, stderr, regime notes) of `memplan export`, following regime advice."""
    to = "pytorch" if target == "torchrun" else target
    notes = []
    for _ in range(4):
        with open(path + ".plan.json", "w") as f:
            json.dump(document(plan), f)
        run = subprocess.run([memplan, "export", path + ".plan.json", "--to", to, "--lr", "0.001",
                              "--weight-decay", "0.01"], capture_output=True, text=True)
        if run.returncode != 2:
            return run.returncode, run.stdout, run.stderr, notes
        for pattern, apply in REGIME_ADVICE:
            match = pattern.search(run.stderr)
            if match:
                apply(plan, match.group(1))
                notes.append(match.group(0).replace("re-plan with ", ""))
                break
        else:
            return run.returncode, run.stdout, run.stderr, notes
    return run.returncode, run.stdout, run.stderr, notes


def load_module(path, name, patches=()):
    """Imports the exported script with (module, attribute, replacement) patches in place."""
    saved = []
    for module, attribute, value in patches:
        saved.append((module, attribute, getattr(module, attribute)))
        setattr(module, attribute, value)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        script = importlib.util.module_from_spec(spec)
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(script)
        return script
    finally:
        for module, attribute, value in saved:
            setattr(module, attribute, value)


def comments(text):
    return "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))


def code_names(text):
    """Attribute and call names used by the code (comments and strings excluded)."""
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Name):
            names.add(node.id)
    return names


def optimizer_facts(make_optimizer):
    """The class make_optimizer builds and the dtype of its first state after one step of a
    4096-element parameter (bitsandbytes keeps 8-bit state from 4096 elements)."""
    parameter = torch.nn.Parameter(torch.randn(4096))
    optimizer = make_optimizer([parameter])
    parameter.grad = torch.randn(4096)
    optimizer.step()
    state = optimizer.state[parameter]
    dtype = state["state1"].dtype if "state1" in state else state.get("exp_avg",
                                                                        torch.empty(0)).dtype
    return {"class": type(optimizer).__name__, "paged": bool(getattr(optimizer, "is_paged", False)),
            "state": str(dtype).replace("torch.", "")}


def lora_facts(config):
    targets = config.target_modules
    targets = sorted(targets) if not isinstance(targets, str) else [targets]
    return (config.r, config.lora_alpha, ",".join(targets))


def base_facts(config):
    if getattr(config, "load_in_4bit", False):
        return config.bnb_4bit_quant_type
    return "int8" if getattr(config, "load_in_8bit", False) else None


# --- what each target's output holds, read by the framework ---------------------------------

def read_python_script(text, path, name):
    script = load_module(path, name)
    names = code_names(text)
    facts = {"micro_batch": script.MICRO_BATCH, "accumulation": script.ACCUMULATION_STEPS}
    # Mixed precision is code: torch.autocast(dtype=...), MixedPrecisionPolicy(param_dtype=...)
    # or model.to(dtype); fp32 has none of the half dtypes.
    facts["precision"] = ("bf16" if "bfloat16" in names else "fp16" if "float16" in names
                          else "fp32")
    if getattr(script, "CHECKPOINTED_MODULES", None):
        facts["recompute"] = list(script.CHECKPOINTED_MODULES)
    ops = getattr(script, "RECOMPUTED_ATEN_OPS", None)
    if ops:
        facts["selective"] = ",".join(sorted(ops))
    if hasattr(script, "LORA_CONFIG"):
        facts["lora"] = lora_facts(script.LORA_CONFIG)
    if hasattr(script, "QUANTIZATION_CONFIG"):
        facts["base"] = base_facts(script.QUANTIZATION_CONFIG)
    optimizer = optimizer_facts(script.make_optimizer)
    facts["optimizer"] = (optimizer["class"], optimizer["paged"])
    facts["optimizer_state"] = optimizer["state"]
    if "save_on_cpu" in names:
        facts["offload"] = "activations"
    if "DistributedDataParallel" in names:
        facts["strategy"] = ("ddp", script.GPUS)
    elif "fully_shard" in names:
        hybrid = '"replicate"' in text and "mesh_dim_names" in text
        facts["strategy"] = ("hybrid-shard" if hybrid else "fsdp", script.GPUS)
    return facts, "parsed", comments(text)


# TrainingArguments errors about this machine, not the export: half precision on a CPU-only host.
HARDWARE_ERROR = re.compile(r"bf16/gpu|requires (a )?(GPU|CUDA)|CUDA is not available|no (GPU|CUDA)")


def read_hf_trainer(text, path, work, memplan, plan):
    import transformers
    import transformers.training_args
    from transformers import Trainer
    recorded = {}
    built = {}

    def arguments(**kwargs):
        recorded.update(kwargs)
        try:
            built["args"] = real(**{**kwargs, "use_cpu": True, "output_dir": work,
                                    "report_to": []})
        except Exception as error:  # judged by the caller: this machine's, or the export's
            built["error"] = f"{type(error).__name__}: {str(error)[:200]}"
        return built.get("args")

    real = transformers.TrainingArguments
    if "deepspeed" in text:
        # Trainer's deepspeed= names the file `memplan export --to deepspeed` writes: write it,
        # so TrainingArguments loads it through DeepSpeed as a run would.
        code, out, _, _ = export(memplan, copy.deepcopy(plan), "deepspeed", path + ".ds")
        if code == 0:
            with open(os.path.join(work, "ds_config.json"), "w") as f:
                f.write(out)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        script = load_module(path, "hf_" + os.path.basename(path).replace("-", "_").split(".")[0],
                             # transformers' lazy module resolves a name from its submodule
                             [(transformers.training_args, "TrainingArguments", arguments),
                              (transformers, "TrainingArguments", arguments)])
    finally:
        os.chdir(cwd)
    facts = {"micro_batch": recorded["per_device_train_batch_size"],
             "accumulation": recorded["gradient_accumulation_steps"],
             "precision": "bf16" if recorded.get("bf16") else
             "fp16" if recorded.get("fp16") else "fp32"}
    if recorded.get("gradient_checkpointing"):
        facts["recompute"] = "every layer"
        facts["selective"] = "every layer"
    if recorded.get("use_liger_kernel"):
        # use_liger_kernel alone applies apply_liger_kernel_to_<model>'s defaults (the fused linear
        # cross entropy among them); liger_kernel_config names the kernels it patches.
        kernels = recorded.get("liger_kernel_config") or {}
        if kernels.get("fused_linear_cross_entropy", True):
            facts["fused_loss"] = True
    if hasattr(script, "LORA_CONFIG"):
        facts["lora"] = lora_facts(script.LORA_CONFIG)
    if hasattr(script, "QUANTIZATION_CONFIG"):
        facts["base"] = base_facts(script.QUANTIZATION_CONFIG)
    args = built.get("args")
    if args is not None:
        cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(args)
        name = cls.__name__
        bits = kwargs.get("optim_bits")
        if name == "AdamW" and bits == 8:
            name = "PagedAdamW8bit" if kwargs.get("is_paged") else "AdamW8bit"
        facts["optimizer"] = (name, bool(kwargs.get("is_paged", False)))
    if recorded.get("deepspeed"):
        # The DeepSpeed config deepspeed= names, read as the deepspeed cell reads its own.
        with open(os.path.join(work, recorded["deepspeed"])) as f:
            facts["strategy"] = read_deepspeed(f.read(), plan)[0]["strategy"]
    fsdp = recorded.get("fsdp")
    if fsdp:
        facts["strategy"] = ("hybrid-shard" if "hybrid_shard" in fsdp else "fsdp",
                             plan.get("gpus"))
    error = built.get("error", "")
    if args is None and not HARDWARE_ERROR.search(error):
        raise RuntimeError("TrainingArguments rejects the export: " + error)
    how = "parsed" if args is not None else "keywords (TrainingArguments: this CPU has no GPU)"
    return facts, how, comments(text)


def read_accelerate(text, path):
    from accelerate.commands.config.config_args import load_config_from_file
    config = load_config_from_file(path)
    kind = str(config.distributed_type).split(".")[-1]
    facts = {"precision": {"no": "fp32"}.get(str(config.mixed_precision).split(".")[-1].lower(),
                                            str(config.mixed_precision).split(".")[-1].lower())}
    ds = config.deepspeed_config or {}
    fsdp = config.fsdp_config or {}
    if kind == "DEEPSPEED":
        facts["strategy"] = (f"zero{ds.get('zero_stage')}", config.num_processes)
    elif kind == "FSDP":
        hybrid = "HYBRID" in str(fsdp.get("fsdp_sharding_strategy", ""))
        facts["strategy"] = ("hybrid-shard" if hybrid else "fsdp", config.num_processes)
    elif kind == "MULTI_GPU":
        facts["strategy"] = ("ddp", config.num_processes)
    if ds.get("offload_param_device") == "cpu" or fsdp.get("fsdp_offload_params"):
        facts["offload"] = "params"
    elif ds.get("offload_optimizer_device") == "cpu":
        facts["offload"] = "optimizer"
    return facts, "parsed", comments(text)


def read_lightning(text, path, name):
    import lightning.pytorch as pl
    recorded = {}
    script = load_module(path, name, [(pl, "Trainer", lambda **k: recorded.update(k))])
    precision = str(recorded.get("precision", "32-true"))
    facts = {"micro_batch": script.MICRO_BATCH,
             "accumulation": recorded.get("accumulate_grad_batches", 1),
             "precision": "bf16" if precision.startswith("bf16") else
             "fp16" if precision.startswith("16") else "fp32"}
    if hasattr(script, "LORA_CONFIG"):
        facts["lora"] = lora_facts(script.LORA_CONFIG)
    if hasattr(script, "QUANTIZATION_CONFIG"):
        facts["base"] = base_facts(script.QUANTIZATION_CONFIG)
    optimizer = optimizer_facts(script.make_optimizer)
    facts["optimizer"] = (optimizer["class"], optimizer["paged"])
    strategy = recorded.get("strategy")
    devices = recorded.get("devices")
    if isinstance(strategy, str):
        stage = re.match(r"deepspeed_stage_(\d)", strategy)
        facts["strategy"] = (f"zero{stage.group(1)}" if stage else strategy, devices)
    elif strategy is not None:
        kind = type(strategy).__name__
        if kind == "FSDPStrategy":
            hybrid = "HYBRID" in str(getattr(strategy, "sharding_strategy", ""))
            facts["strategy"] = ("hybrid-shard" if hybrid else "fsdp", devices)
        elif kind == "DeepSpeedStrategy":
            facts["strategy"] = (f"zero{strategy.config['zero_optimization']['stage']}", devices)
        elif kind == "DDPStrategy":
            facts["strategy"] = ("ddp", devices)
    if isinstance(devices, int) and recorded.get("num_nodes", 1) > 1 and "strategy" in facts:
        facts["strategy"] = (facts["strategy"][0], devices * recorded["num_nodes"])
    return facts, "parsed", comments(text)


class Mpu:
    """The data-parallel world size DeepSpeedConfig divides the global batch by."""

    def __init__(self, world):
        self.world = world

    def get_data_parallel_world_size(self):
        return self.world


def one_rank_group():
    """A one-rank gloo group through deepspeed.comm: DeepSpeedConfig asks it for the rank (and
    falls back to a world of 1, ignoring the mpu, where it cannot)."""
    import deepspeed.comm
    if not deepspeed.comm.is_initialized():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1",
                           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
        with contextlib.redirect_stdout(io.StringIO()):
            deepspeed.comm.init_distributed("gloo", auto_mpi_discovery=False, verbose=False)


def read_deepspeed(text, plan):
    from deepspeed.runtime.config import DeepSpeedConfig
    one_rank_group()
    config = json.loads(text)
    tp = plan.get("tensor_parallel", {}).get("degree", 1)
    world = plan.get("gpus", 1) // tp
    parsed = DeepSpeedConfig(copy.deepcopy(config), mpu=Mpu(world))
    facts = {"micro_batch": parsed.train_micro_batch_size_per_gpu,
             "accumulation": parsed.gradient_accumulation_steps,
             "precision": "bf16" if parsed.bfloat16_config.enabled else
             "fp16" if parsed.float16_config.enabled else "fp32"}
    zero = parsed.zero_config
    if "parallel" in plan or zero.stage:
        facts["strategy"] = (f"zero{zero.stage}" if zero.stage else "ddp", world * tp)
    if zero.offload_param is not None and str(zero.offload_param.device).endswith("cpu"):
        facts["offload"] = "params"
    elif zero.offload_optimizer is not None and str(zero.offload_optimizer.device).endswith("cpu"):
        facts["offload"] = "optimizer"
    autotp = getattr(parsed.tensor_parallel_config, "autotp_size", 0)
    if autotp and autotp > 1:
        facts["tp"] = autotp
    optimizer = config.get("optimizer", {}).get("type")
    if optimizer:
        facts["optimizer"] = (optimizer, False)
    notes = " ".join(config.get("_not_expressed", [])) + " " + config.get("_comment", "")
    return facts, "parsed", notes


def read_torchtune(text):
    from omegaconf import OmegaConf
    from torchtune.config._utils import _get_component_from_path
    config = OmegaConf.create(text)
    model = config.get("model", {})
    facts = {"micro_batch": config.batch_size, "accumulation": config.gradient_accumulation_steps,
             "precision": config.dtype}
    if config.get("enable_activation_checkpointing"):
        facts["recompute"] = "every layer"
        facts["selective"] = "every layer"
    if "lora_rank" in model:
        modules = list(model.get("lora_attn_modules", []))
        facts["lora"] = (model.lora_rank, model.lora_alpha,
                         "c_attn" if {"q_proj", "k_proj", "v_proj"} <= set(modules) else
                         ",".join(modules))
    if model.get("quantize_base"):
        facts["base"] = "nf4"
    cls = _get_component_from_path(config.optimizer._component_)
    facts["optimizer"] = (cls.__name__, "Paged" in cls.__name__)
    if config.get("fsdp_cpu_offload"):
        facts["offload"] = "params"
    if config.get("enable_activation_offloading"):
        facts["offload"] = "activations"
    run = re.search(r"tune run (--nproc_per_node (\d+) )?(\S+)", text)
    if run and run.group(2):
        facts["strategy"] = ("fsdp", int(run.group(2)))
    return facts, "parsed", comments(text)


# --- a cell ---------------------------------------------------------------------------------

# What a config file's comment must say for a feature the file cannot hold, the training script
# must build (accelerate's YAML, DeepSpeed's _not_expressed).
SCRIPT_NEEDLES = {
    "micro_batch": lambda v: [f"batch_size={v}"],
    "accumulation": lambda v: [f"gradient_accumulation_steps={v}"],
    "recompute": lambda v: ["transformer.h.0"],
    "selective": lambda v: ["transformer.h.0"],
    "lora": lambda v: [f"LoraConfig(r={v[0]}, lora_alpha={v[1]}", v[2]],
    "base": lambda v: [v],
    "optimizer": lambda v: [v[0]],
    "offload": lambda v: ["save_on_cpu"] if v == "activations" else [],
    # A launcher's business (Trainer reads torchrun's world size): the launch line.
    "strategy": lambda v: [f"--nproc_per_node {v[1]}"] if v[0] == "ddp" else [],
}


def cell(memplan, work, row, make, expect, target):
    plan = make(base_plan())
    if target == "torchrun" and "parallel" not in plan:
        ddp(plan)  # the torchrun script is the pytorch target of a data-parallel plan
    stem = os.path.join(work, re.sub(r"[^a-z0-9]+", "_", f"{row}_{target}".lower()))
    code, out, err, notes = export(memplan, plan, target, stem)
    regime = f" ({', '.join(notes)})" if notes else ""
    if code == 2:
        lines = err.strip().splitlines()
        ok = len(lines) == 1 and lines[0].startswith("memplan: ")
        return ("refused" if ok else "BAD REFUSAL"), lines[0] if lines else "(no message)", ok
    if code != 0:
        return "EXPORT FAILED", err.strip()[:200], False
    suffix = {"deepspeed": ".json", "accelerate": ".yaml", "torchtune": ".yaml"}.get(target, ".py")
    path = stem + suffix
    with open(path, "w") as f:
        f.write(out)
    script_text = ""
    name = "m_" + os.path.basename(stem)
    try:
        if target in ("pytorch", "torchrun"):
            facts, how, script_text = read_python_script(out, path, name)
        elif target == "hf-trainer":
            facts, how, script_text = read_hf_trainer(out, path, work, memplan, plan)
        elif target == "accelerate":
            facts, how, script_text = read_accelerate(out, path)
        elif target == "lightning":
            facts, how, script_text = read_lightning(out, path, name)
        elif target == "deepspeed":
            facts, how, script_text = read_deepspeed(out, plan)
        else:
            facts, how, script_text = read_torchtune(out)
    except Exception as error:
        if os.environ.get("MATRIX_TRACEBACK"):
            import traceback
            traceback.print_exc()
        return "READ FAILED", f"{type(error).__name__}: {str(error)[:300]}", False
    wrong = []
    via_script = []
    coarser = []
    translated = []
    expected = dict(expect)
    expected.setdefault("micro_batch", 2)
    for key, value in expected.items():
        got = facts.get(key)
        if got == value or (key == "strategy" and got and got[0] == value[0]
                            and got[1] in (value[1], None)):
            continue
        if (key == "strategy" and target == "deepspeed" and value[0] == "fsdp"
                and got == ("zero3", value[1])):
            translated.append("FSDP full shard as ZeRO-3")
            continue
        if got == "every layer" and key in ("recompute", "selective"):
            coarser.append(key)
            continue
        needles = SCRIPT_NEEDLES.get(key, lambda v: [])(value)
        if needles and all(n in script_text for n in needles):
            via_script.append(key)
            continue
        wrong.append(f"{key}: expected {value}, got {got}")
    if wrong:
        return "DROPPED", "; ".join(wrong), False
    state = facts.get("optimizer_state")
    detail = ", ".join(f"{k}={facts[k]}" for k in expect if k in facts)
    if state and "optimizer" in expect:
        detail += f", state {state}"
    status = how
    # A launcher config's micro-batch is always the script's DataLoader (said in its header):
    # the cell names how the feature's own values travel.
    if any(key in expect for key in via_script):
        status = "script"
        detail = "named for the script: " + ", ".join(via_script) + (f"; {detail}" if detail
                                                                      else "")
    if translated:
        detail = ", ".join(translated) + "; " + detail
    if coarser:
        status = how + ", coarser"
        detail = "checkpoints every layer, the plan's modules in a comment"
    return status + regime, detail, True


def main():
    memplan = os.path.abspath(sys.argv[1])
    work = os.path.abspath(sys.argv[2])
    markdown = None
    if "--markdown" in sys.argv:
        markdown = sys.argv[sys.argv.index("--markdown") + 1]
    os.makedirs(work, exist_ok=True)
    only = os.environ.get("ONLY_TARGETS")
    targets = [t for t in TARGETS if not only or t in only.split(",")]
    failures = 0
    rows = []
    for row, make, expect in feature_plans():
        cells = []
        for target in targets:
            status, detail, ok = cell(memplan, work, row, make, expect, target)
            failures += not ok
            print(("ok    " if ok else "FAIL  ") + f"{row} | {target}: {status}: {detail}",
                  flush=True)
            cells.append(status)
        rows.append((row, cells))
    if markdown:
        with open(markdown, "w") as f:
            f.write("| feature | " + " | ".join(targets) + " |\n")
            f.write("|---" * (len(targets) + 1) + "|\n")
            for row, cells in rows:
                f.write(f"| {row} | " + " | ".join(cells) + " |\n")
    total = len(rows) * len(targets)
    print(f"{total - failures} of {total} cells carried or refused in one line")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
