#!/usr/bin/env python3
"""What SDPA saves in a Hugging Face model, by torch and by memplan (issue 43, item 3).

For each tiny config in tests/fixtures/hf_configs named on the command line (attention dropout
set to 0, see NO_DROPOUT; `llama-mha` is Llama with no grouped-query heads): the model built on
the CPU with attn_implementation="eager" and with "sdpa" (same weights), one training forward
under torch.autograd.graph.saved_tensors_hooks counting every saved tensor once per storage,
parameters and buffers excluded; then `memplan analyze CONFIG --attention eager|sdpa --json`
at the same batch and sequence (fp32) and its `saved_activation_bytes`. Prints one markdown row per
model: both saved totals and the eager - sdpa difference by each. Needs torch and transformers:

    MEMPLAN_PYTHON=../memplan-venv/bin/python ../memplan-venv/bin/python \
        tools/hf_sdpa_saved_bytes.py build/tools/memplan llama bert gpt2
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
import transformers

BATCH, SEQ = 2, 128
CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                       "hf_configs")


# Attention dropout off: PyTorch's CPU kernel choice (sdp_utils_cpp.cpp) runs the math kernel for
# dropout in training, where CUDA's flash and memory-efficient kernels take it; without dropout
# the CPU flash kernel runs and saves what the CUDA kernels save (q, k, v, out, logsumexp).
NO_DROPOUT = ("attention_dropout", "attention_probs_dropout_prob", "attn_pdrop")


def config_folder(family, tmp):
    """The fixture's config with attention dropout 0; `NAME-mha` also with as many key/value heads
    as query heads (memplan plans fp32 grouped-query SDPA with CUDA's math kernel, which the
    memory-efficient kernel's lack of GQA forces; CPU's flash kernel takes GQA)."""
    name, _, variant = family.partition("-")
    with open(os.path.join(CONFIGS, name, "config.json")) as f:
        config = json.load(f)
    for key in NO_DROPOUT:
        if key in config:
            config[key] = 0.0
    if variant == "mha":
        config["num_key_value_heads"] = config["num_attention_heads"]
    folder = os.path.join(tmp, family)
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    return folder


def torch_saved_bytes(folder, attention):
    torch.manual_seed(0)
    config = transformers.AutoConfig.from_pretrained(folder)
    config._attn_implementation = attention
    arch = config.architectures[0]
    model = getattr(transformers, arch)._from_config(config, attn_implementation=attention)
    model.train()
    excluded = {p.untyped_storage().data_ptr() for p in model.parameters()}
    excluded |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQ))
    seen = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in excluded and storage.data_ptr() != 0:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logits = model(input_ids=ids, use_cache=False).logits if "use_cache" in \
            model.forward.__code__.co_varnames else model(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 ids.reshape(-1))
    loss.backward()
    return sum(seen.values())


def memplan_saved_bytes(memplan, folder, attention):
    out = subprocess.run([memplan, "analyze", folder, "--gpu", "80GB", "--json", "--micro-batch",
                          str(BATCH), "--dim", "seq=%d" % SEQ, "--precision", "fp32", "--loss",
                          "cross_entropy", "--attention", attention],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip() or "memplan exited %d" % out.returncode)
    return json.loads(out.stdout)["saved_activation_bytes"]


def main():
    memplan, families = sys.argv[1], sys.argv[2:]
    print("| model (batch %d, seq %d, fp32) | torch eager | torch sdpa | torch eager - sdpa "
          "| memplan eager | memplan sdpa | memplan eager - sdpa |" % (BATCH, SEQ))
    print("|---|---:|---:|---:|---:|---:|---:|")
    tmp = tempfile.mkdtemp()
    for family in families:
        folder = config_folder(family, tmp)
        te, ts = torch_saved_bytes(folder, "eager"), torch_saved_bytes(folder, "sdpa")
        me, ms = (memplan_saved_bytes(memplan, folder, "eager"),
                  memplan_saved_bytes(memplan, folder, "sdpa"))
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            family, f"{te:,}", f"{ts:,}", f"{te - ts:,}", f"{me:,}", f"{ms:,}", f"{me - ms:,}"))


if __name__ == "__main__":
    main()
