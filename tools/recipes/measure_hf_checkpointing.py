#!/usr/bin/env python3
"""HF gradient checkpointing with use_reentrant True and False, as HF Trainer runs it (issue 40,
item 10), measured on the CPU with torch 2.x.

Builds a tiny Llama (LlamaForCausalLM from a LlamaConfig, no download, eager attention, fp32),
enables model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": R})
as Trainer does for gradient_checkpointing=True, and for R in (none, False, True) measures one
micro-batch's forward + backward (labels given: HF's own loss):

  saved_bytes      what autograd keeps at the end of forward (saved_tensors_hooks, per storage,
                   parameters excluded);
  forward_peak     live-bytes peak of the forward, above the bytes live before it;
  step_peak        live-bytes peak of forward + backward, above the bytes live before it
                   (parameters live before; gradients allocated inside count);

with torch.profiler's CPU memory events (tools/recipes/live_bytes.py). With --graphs DIR it also
writes the same model (same config, same shapes; HF's forward without the loss, which memplan's
--loss cross_entropy adds) as DIR/tiny_llama.onnx.xz, weights stripped
(tools/gpu/compare_with_torch.py's strip_weights). Prints one JSON row per configuration, the
lines of docs/recipe_rows.jsonl: `flags` are memplan's for the same step (SGD without momentum:
no optimizer state, as the measured step has no optimizer), which
tools/recipes/repredict_recipe_rows.py re-predicts.

usage: measure_hf_checkpointing.py [--batch 2] [--seq 64] [--graphs DIR]
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live_bytes import live_bytes_peak, saved_bytes  # noqa: E402

CONFIG = dict(vocab_size=256, hidden_size=64, intermediate_size=176, num_hidden_layers=4,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
              tie_word_embeddings=False, attention_dropout=0.0)


def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(**CONFIG)
    config._attn_implementation = "eager"
    return LlamaForCausalLM(config)


def measure_lm_step(model, ids):
    """One step of causal-LM `model` on `ids` (HF's loss from labels) after a warm-up step that
    creates lazily built state (rotary caches): the bytes autograd saved, the forward's and the
    whole step's live-bytes peaks above the bytes live before."""
    out = {}

    def forward():
        return model(input_ids=ids, labels=ids).loss

    def step():
        n, loss = saved_bytes(forward, live=list(model.parameters()) + [ids])
        out["saved"] = n
        loss.backward()

    forward().backward()
    model.zero_grad(set_to_none=True)
    forward_peak, _ = live_bytes_peak(lambda: out.setdefault("f", forward()))
    del out["f"]
    step_peak, _ = live_bytes_peak(step)
    return out["saved"], forward_peak, step_peak


def measure(reentrant, batch, seq):
    model = tiny_llama()
    model.train()
    if reentrant is not None:
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": reentrant})
        if reentrant:
            # Trainer/PEFT do this for reentrant checkpointing so the first block's input
            # requires grad (here the embedding is trained, so it already does).
            model.enable_input_require_grads()
    ids = torch.randint(0, CONFIG["vocab_size"], (batch, seq))
    saved, forward_peak, step_peak = measure_lm_step(model, ids)
    config = {None: "none", False: "non-reentrant", True: "reentrant"}[reentrant]
    flags = (f"--dim batch={batch} --dim seq={seq} --micro-batch {batch} --precision fp32 "
             "--gpu 80G --headroom 0 --allocator exact --optimizer sgd --loss cross_entropy "
             "--attention eager")
    flags += (" --recompute none" if reentrant is None
              else " --recompute all --recompute-unit module")
    if reentrant:
        flags += " --recompute-reentrant"
    return {"model": "tiny_llama", "recipe": "hf-trainer", "feature": "gradient_checkpointing",
            "config": config, "use_reentrant": reentrant, "batch": batch, "seq": seq,
            "dtype": "float32", "torch": torch.__version__, "flags": flags,
            "torch_saved_bytes": saved, "torch_forward_peak_bytes": forward_peak,
            "torch_step_peak_bytes": step_peak}


def export_onnx(directory, batch, seq, make_model=tiny_llama, name="tiny_llama"):
    """Writes make_model()'s HF forward (logits, no loss) to DIR/NAME.onnx.xz, weights stripped;
    returns the path."""
    # HF's packed-sequence check (torch.diff of position_ids) has no ONNX symbolic; with one
    # sequence per row it returns None, which the traced graph then takes as given.
    import transformers.masking_utils as masking_utils
    masking_utils.find_packed_sequence_indices = lambda position_ids: None
    model = make_model()
    model.train()
    ids = torch.randint(0, model.config.vocab_size, (batch, seq))

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids, use_cache=False).logits

    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name + ".full.onnx")
    torch.onnx.export(Logits(model), (ids,), path, input_names=["input_ids"],
                      output_names=["logits"], opset_version=17, dynamo=False,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                    "logits": {0: "batch", 1: "seq"}})
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
    import lzma
    from compare_with_torch import strip_weights
    stripped = os.path.join(directory, name + ".onnx")
    strip_weights(path, stripped)
    os.remove(path)
    with open(stripped, "rb") as f, lzma.open(stripped + ".xz", "wb") as out:
        out.write(f.read())
    os.remove(stripped)
    return stripped + ".xz"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--graphs", default="")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for reentrant in (None, False, True):
        print(json.dumps(measure(reentrant, args.batch, args.seq)))
    if args.graphs:
        print("wrote", export_onnx(args.graphs, args.batch, args.seq), file=sys.stderr)


if __name__ == "__main__":
    main()
