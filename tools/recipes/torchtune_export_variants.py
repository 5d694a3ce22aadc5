#!/usr/bin/env python3
"""Writes the torchtune configs docs/measurements.md ("torchtune export validated") checks:
variants of tests/fixtures/plans/gpt_bf16_plan.json in the plan schema `memplan analyze --json`
writes, exported with `memplan export --to torchtune`, and four configs `memplan analyze --export
torchtune` writes from real plans. Standard library only; then validate them with torchtune:

    python3 tools/recipes/torchtune_export_variants.py build/tools/memplan OUT
    /work/memplan-venv/bin/python tools/recipes/validate_torchtune_config.py OUT/*.yaml
"""

import copy
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
LLAMA_ATTN = ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
              "model.layers.0.self_attn.v_proj", "model.layers.0.self_attn.o_proj"]
FSDP = {"parallel": "fsdp", "engine_options": {"auto_wrap_policy": "transformer"}}

# name -> keys set in the fixture's plan object (the fixture in torchtune's pure regime).
VARIANTS = {
    "full_bf16": {},
    "lora_qv_up": {"lora": {"rank": 16, "alpha": 32, "target_modules": [
        LLAMA_ATTN[0], LLAMA_ATTN[2], "model.layers.0.mlp.up_proj"]},
        "trainable_parameter_count": 16384},
    "qlora_paged": {"lora": {"rank": 8, "alpha": 16, "target_modules": LLAMA_ATTN},
                    "base_dtype": "nf4", "optimizer": "paged-adamw8bit",
                    "trainable_parameter_count": 16384},
    "qlora_fsdp": {"lora": {"rank": 8, "alpha": 16, "target_modules": LLAMA_ATTN},
                   "base_dtype": "nf4", "optimizer": "adamw", "gpus": 4,
                   "trainable_parameter_count": 16384, **FSDP},
    "fsdp_offload": {"gpus": 8, "optimizer": "adamw", "optimizer_impl": "fused",
                     "offload": {"mode": "optimizer+params"}, **FSDP},
    "lora_fsdp": {"gpus": 8, "lora": {"rank": 8, "target_modules": [
        LLAMA_ATTN[0], LLAMA_ATTN[2], "lm_head"]}, "trainable_parameter_count": 16384, **FSDP},
    "fp32_sgd_offload_compile_chunked_inbwd": {
        "precision": "fp32", "amp_mode": None, "optimizer": "momentum", "accumulation_steps": 1,
        "offload": {"mode": "activations"}, "compile": True, "loss_chunks": 8,
        "optimizer_in_backward": True},
}

GPT = os.path.join(FIXTURES, "gpt_opset17.onnx")
HEAD = os.path.join(FIXTURES, "lm_head.onnx")
ANALYZED = {
    "analyze_qlora": [GPT, "--dim", "seq=16", "--batch", "2", "--lora", "4", "--lora-targets",
                      r"attn\.(qkv|proj)\.weight", "--base-dtype", "nf4", "--recompute", "all",
                      "--recompute-unit", "module"],
    "analyze_fsdp": [GPT, "--dim", "seq=16", "--gpus", "8", "--optimizer", "adamw"],
    "analyze_chunked": [HEAD, "--batch", "2", "--loss-chunks", "8", "--recompute", "all"],
    "analyze_inbwd": [HEAD, "--batch", "2", "--optimizer-in-backward", "--optimizer", "adamw"],
}


def main(memplan, out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(FIXTURES, "plans", "gpt_bf16_plan.json")) as f:
        base = json.load(f)
    base["plan"]["amp_mode"] = "pure"
    for name, keys in VARIANTS.items():
        plan = copy.deepcopy(base)
        for key, value in keys.items():
            if value is None:
                plan["plan"].pop(key, None)
            else:
                plan["plan"][key] = value
        path = os.path.join(out, name + ".json")
        with open(path, "w") as f:
            json.dump(plan, f)
        subprocess.run([memplan, "export", path, "--to", "torchtune", "--out",
                        os.path.join(out, name + ".yaml")], check=True)
    for name, args in ANALYZED.items():
        subprocess.run([memplan, "analyze", *args, "--gpu", "24G", "--precision", "bf16",
                        "--export", "torchtune", "--export-out",
                        os.path.join(out, name + ".yaml")], check=True, stdout=subprocess.DEVNULL)
    print(f"{len(VARIANTS) + len(ANALYZED)} configs in {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
