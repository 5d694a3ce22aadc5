#!/usr/bin/env python3
"""Validates torchtune recipe configs written by `memplan export --to torchtune` with torchtune's
own machinery (issue 40, item 11), on the CPU, and runs one training step of a tiny model built
from the config.

usage: validate_torchtune_config.py CONFIG.yaml...   (with the venv of tools/setup_torch_env.sh)

For each file:
  1. OmegaConf.load; the mandatory values (`???`) must be exactly the ones the export leaves to the
     user (the model builder, tokenizer, checkpoint, data set, and lr unless --lr was given);
  2. those are filled as a user would (the model with torchtune's llama3_2 component builder at a
     tiny size; the export's lora_alpha is kept), then torchtune.config.validate binds every
     `_component_`'s arguments to its signature, as `tune validate` does;
  3. every key the recipe reads as `cfg.<key>` (required, no default) is present, and the recipe's
     own refusals hold (fp16, optimizer_in_bwd with accumulation or clipping, activation offloading
     without checkpointing);
  4. the non-model parts are instantiated with torchtune.config.instantiate: the model (tiny), the
     loss (the recipe's set_num_output_chunks for CEWithChunkedOutputLoss), the optimizer over the
     model's trainable parameters (bitsandbytes' only bound: they need CUDA), the lr scheduler, the
     metric logger; then one forward, loss, backward and optimizer step in the config's dtype.

Prints one PASS/FAIL line per file; exit 0 when all pass, 1 otherwise.
"""

import os
import re
import sys
import tempfile
import tokenize

import torch
from omegaconf import OmegaConf
from torchtune import config as tt_config
from torchtune import training

RECIPES = os.path.join(os.path.dirname(os.path.dirname(training.__file__)), "..", "recipes")
# What the export leaves to the user (torchtune_export.cc); optimizer.momentum for SGD+momentum.
USER_KEYS = {
    "model._component_", "tokenizer._component_", "tokenizer.path", "tokenizer.max_seq_len",
    "checkpointer.checkpoint_dir", "checkpointer.checkpoint_files", "checkpointer.model_type",
    "dataset._component_", "optimizer.lr", "optimizer.momentum",
}
TINY = dict(vocab_size=128, num_layers=2, num_heads=4, num_kv_heads=2, embed_dim=32,
            max_seq_len=16, intermediate_dim=64)
# NF4 (QLoRA's quantize_base) quantizes in blocks of 64 with scalers in blocks of 256: every
# quantized weight needs a multiple of 16384 elements.
TINY_NF4 = dict(TINY, num_kv_heads=4, embed_dim=128, intermediate_dim=256)


def recipe_of(text):
    match = re.search(r"^# Run: tune run (?:--\S+ \S+ )*(\w+) --config", text, re.M)
    assert match, "no `# Run: tune run RECIPE --config` line"
    return match.group(1)


def required_keys(recipe):
    """Top-level keys the recipe's code reads as cfg.<key> (attribute access: no default);
    comments and strings are skipped (tokenize)."""
    with open(os.path.join(RECIPES, recipe + ".py")) as f:
        tokens = [t for t in tokenize.generate_tokens(f.readline)
                  if t.type in (tokenize.NAME, tokenize.OP)]
    keys = set()
    for a, b, c, d in zip(tokens, tokens[1:], tokens[2:], tokens[3:] + tokens[:1]):
        if a.string == "cfg" and b.string == "." and c.type == tokenize.NAME and d.string != "(":
            keys.add(c.string)
    return keys


def fill_user_values(cfg, lora):
    # llama3_2 ties the output to the embedding and refuses apply_lora_to_output; llama3's
    # builder (the same decoder, untied) takes it.
    untied = lora and cfg.model.get("apply_lora_to_output", False)
    cfg.model._component_ = ("torchtune.models.llama3.lora_llama3" if untied
                             else "torchtune.models.llama3_2.lora_llama3_2" if lora
                             else "torchtune.models.llama3_2.llama3_2")
    for k, v in (TINY_NF4 if cfg.model.get("quantize_base") else TINY).items():
        cfg.model[k] = v
    if lora:
        # The component builder requires lora_alpha: the export writes plan.lora.alpha.
        assert "lora_alpha" in cfg.model, "lora_alpha is not written"
        cfg.model.lora_rank = min(cfg.model.lora_rank, 8)  # the tiny model's dims
    cfg.tokenizer._component_ = "torchtune.models.llama3.llama3_tokenizer"
    cfg.tokenizer.path = "/nonexistent/tokenizer.model"
    cfg.tokenizer.max_seq_len = TINY["max_seq_len"]
    cfg.checkpointer.checkpoint_dir = "/nonexistent"
    cfg.checkpointer.checkpoint_files = ["model.safetensors"]
    cfg.checkpointer.model_type = "LLAMA3_2"
    cfg.dataset._component_ = "torchtune.datasets.alpaca_cleaned_dataset"
    if OmegaConf.is_missing(cfg.optimizer, "lr"):
        cfg.optimizer.lr = 1e-4
    if "momentum" in cfg.optimizer.keys() and OmegaConf.is_missing(cfg.optimizer, "momentum"):
        cfg.optimizer.momentum = 0.9


def check_recipe_rules(cfg):
    dtype = training.get_dtype(cfg.dtype, device=torch.device("cpu"))
    assert dtype != torch.float16, "fp16: the recipes refuse it"
    if cfg.optimizer_in_bwd:
        assert cfg.gradient_accumulation_steps == 1, "optimizer_in_bwd with accumulation"
        assert cfg.clip_grad_norm is None, "optimizer_in_bwd with clip_grad_norm"
    if cfg.enable_activation_offloading:
        assert cfg.enable_activation_checkpointing, "offloading needs activation checkpointing"
    return dtype


def one_step(cfg, dtype, tmp):
    with training.set_default_dtype(dtype):
        model = tt_config.instantiate(cfg.model)
    if "lora" in cfg.model._component_:
        from torchtune.modules.peft import get_adapter_params, set_trainable_params
        set_trainable_params(model, get_adapter_params(model))
    if cfg.enable_activation_checkpointing:
        from torchtune.modules import TransformerSelfAttentionLayer
        training.set_activation_checkpointing(model, auto_wrap_policy={TransformerSelfAttentionLayer})
    loss_fn = tt_config.instantiate(cfg.loss)
    if loss_fn.__class__.__name__ == "CEWithChunkedOutputLoss":
        model.set_num_output_chunks(loss_fn.num_output_chunks)
    params = [p for p in model.parameters() if p.requires_grad]
    if cfg.optimizer._component_.startswith("bitsandbytes."):
        optimizer = torch.optim.AdamW(params, lr=1e-4)  # bitsandbytes needs CUDA: bound only
    else:
        optimizer = tt_config.instantiate(cfg.optimizer, params)
    tt_config.instantiate(cfg.lr_scheduler, optimizer, num_training_steps=10)
    cfg.metric_logger.log_dir = tmp
    tt_config.instantiate(cfg.metric_logger).close()
    tokens = torch.randint(0, TINY["vocab_size"], (cfg.batch_size, TINY["max_seq_len"]))
    logits = model(tokens)
    labels = tokens.roll(-1, 1)
    if not isinstance(logits, list):
        logits, labels = logits.reshape(-1, logits.size(-1)), labels.reshape(-1)
    loss = loss_fn(logits, labels)
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss.detach().float()), "the loss is not finite"


def validate(path):
    text = open(path).read()
    recipe = recipe_of(text)
    cfg = OmegaConf.load(path)
    missing = set(OmegaConf.missing_keys(cfg))
    assert missing <= USER_KEYS, f"unexpected ??? keys: {sorted(missing - USER_KEYS)}"
    assert "model._component_" in missing, "the model builder should be the user's"
    lora = recipe.startswith("lora_")
    assert lora == ("lora_rank" in cfg.model), "LoRA keys and the recipe disagree"
    fill_user_values(cfg, lora)
    tt_config.validate(cfg)  # what `tune validate` runs: every component's arguments bind
    absent = sorted(k for k in required_keys(recipe) if k not in cfg)
    assert not absent, f"{recipe} reads cfg.{absent} without a default"
    dtype = check_recipe_rules(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        one_step(cfg, dtype, tmp)
    return recipe


def main(paths):
    failed = 0
    for path in paths:
        try:
            recipe = validate(path)
            print(f"PASS {path} ({recipe})")
        except Exception as error:  # noqa: BLE001 - one line per file, then the exit code
            failed += 1
            print(f"FAIL {path}: {type(error).__name__}: {error}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
