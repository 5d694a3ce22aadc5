#!/usr/bin/env python3
"""Run `memplan verify` on every family of export_rows.py at a small size: the plan executed on
memplan's CPU runtime, its measured memory against the prediction.

    /work/memplan-venv/bin/python tools/modern_exporters/verify_families.py --memplan BIN
        [--only S] [--micro-batch 2] [--keep DIR]

The checked-in rows' graphs have the fixed batch they were measured at, and `verify` draws its
synthetic data per sample along a symbolic batch axis; so each family is exported here again
(TorchScript, opset 17, training mode; the dynamo exporter at opset 18 where TorchScript fails)
with its inputs' first axis named `batch`, weights kept
(the runtime initialises its own, but the file is what a user would verify). Prints one line per
family: PASS, FAIL (verify's verdict, exit 1) or ERROR (memplan refused the model, exit 2, with
its one-line reason), and a count. Nothing here runs in CI (it needs torch); the findings are in
docs/measurements.md.
"""
import argparse
import inspect
import os
import subprocess
import sys
import tempfile
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_rows  # noqa: E402  (the families and their inputs)


def export_dynamic_batch(model, inputs, path, output_names=None):
    """TorchScript at opset 17; where that exporter fails (transformers 5's decoder LMs:
    aten::diff), the dynamo exporter at opset 18 with the same symbolic batch. Returns the
    exporter used."""
    names = [f"input_{i}" for i in range(len(inputs))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(model, tuple(inputs), path, dynamo=False, opset_version=17,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, input_names=names,
                              output_names=output_names,
                              dynamic_axes={n: {0: "batch"} for n in names})
            return "torchscript"
        except Exception:  # noqa: BLE001 - the dynamo exporter is the fallback
            batch = torch.export.Dim("batch", min=1, max=1 << 16)
            specs = tuple({0: batch} for _ in names)
            # forward(*inputs) (export_rows.Logits) takes one spec for the varargs tuple; a
            # model called directly (timm's forward(x)) one spec per parameter.
            varargs = any(p.kind == inspect.Parameter.VAR_POSITIONAL
                          for p in inspect.signature(model.forward).parameters.values())
            torch.onnx.export(model, tuple(inputs), path, dynamo=True, opset_version=18,
                              external_data=False, optimize=True, input_names=names,
                              output_names=output_names,
                              dynamic_shapes=(specs,) if varargs else specs)
            return "dynamo"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memplan", required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--micro-batch", default="2")
    parser.add_argument("--keep", default="", help="keep the exports in this folder")
    args = parser.parse_args()
    results = {"PASS": 0, "FAIL": 0, "ERROR": 0, "EXPORT": 0}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or tmp
        os.makedirs(folder, exist_ok=True)
        for name, (build, inputs) in export_rows.FAMILIES.items():
            if not any(part in name for part in args.only.split(",")):
                continue
            path = os.path.join(folder, f"{name}.onnx")
            try:
                torch.manual_seed(0)
                model = build()
                model.train()
                exporter = export_dynamic_batch(
                    model, inputs, path, list(getattr(build, "outputs", None) or []) or None)
            except Exception as error:  # noqa: BLE001 - an exporter failure is a finding
                results["EXPORT"] += 1
                print(f"{name:24s} EXPORT {type(error).__name__}: {str(error).splitlines()[0][:150]}")
                continue
            flags = ["--gpu", "80G", "--precision", "fp32", "--micro-batch", args.micro_batch]
            if getattr(build, "attention", None):
                flags += ["--attention", build.attention]
            # Several trained heads: every output with its loss, as the rows are planned.
            if getattr(build, "outputs", None):
                flags += ["--loss-output", ",".join(build.outputs), "--loss", ",".join(build.losses)]
            run = subprocess.run([args.memplan, "verify", path] + flags, capture_output=True,
                                 text=True)
            verdict = {0: "PASS", 1: "FAIL"}.get(run.returncode, "ERROR")
            results[verdict] += 1
            last = ((run.stderr if run.returncode > 1 else run.stdout).strip().splitlines()
                    or ["?"])[-1]
            print(f"{name:24s} {verdict:6s} {exporter:11s} {last[:160]}", flush=True)
    print(", ".join(f"{k} {v}" for k, v in results.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
