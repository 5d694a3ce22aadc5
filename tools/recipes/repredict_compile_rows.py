#!/usr/bin/env python3
"""Re-predicts the eager side of the torch.compile rows (docs/compile_rows.jsonl, issue 40 item 6,
measured by tools/recipes/measure_compile.py) with the current memplan, without torch: each row's
stored block (tests/fixtures/recipe_rows/MODEL.onnx.xz, weights stripped) is planned in fp32
without recompute, attention as written (eager), and the bytes memplan saves for backward per
node (`saved_activations_by_node`, which leaves out the block's input and the loss, as the
measurement leaves out the input) are compared with torch's eager saved bytes
(`torch_eager_saved_bytes`: saved_tensors_hooks, once per storage, parameters and the input
excluded). The compiled column (`torch_compiled_saved_bytes`, what AOTAutograd's min-cut
partitioner keeps) is printed beside it: memplan has no --compile plan yet, so it is not
predicted. Rows whose block has no stored graph are listed and skipped.

    tools/recipes/repredict_compile_rows.py --memplan BIN [--rows FILE] [--graphs DIR] [--check]

--check: exit 1 when a row's eager figure is more than 2% off, or no row was checked.
"""
import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile

TOLERANCE_PCT = 2.0
FLAGS = ["--gpu", "24G", "--batch", "2", "--precision", "fp32", "--recompute", "none",
         "--attention", "eager", "--json"]


def saved_by_node(report):
    """The saved_activations_by_node object, wherever the report nests it."""
    stack = [report]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "saved_activations_by_node" in node:
                return node["saved_activations_by_node"]
            stack.extend(node.values())
    raise KeyError("saved_activations_by_node")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.join(here, "..", "..")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memplan", required=True)
    parser.add_argument("--rows", default=os.path.join(root, "docs", "compile_rows.jsonl"))
    parser.add_argument("--graphs", default=os.path.join(root, "tests", "fixtures", "recipe_rows"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    failures, checked = [], 0
    with tempfile.TemporaryDirectory() as unpacked, open(args.rows) as rows:
        for line in rows:
            if not line.strip():
                continue
            row = json.loads(line)
            name = f"{row['model']} ({row['config']})"
            stored = os.path.join(args.graphs, row["model"] + ".onnx.xz")
            if not os.path.exists(stored):
                print(f"{name}: no stored graph, skipped")
                continue
            graph = os.path.join(unpacked, row["model"] + ".onnx")
            if not os.path.exists(graph):
                with lzma.open(stored) as src, open(graph, "wb") as out:
                    out.write(src.read())
            run = subprocess.run([args.memplan, "analyze", graph] + FLAGS, capture_output=True,
                                 text=True)
            if run.returncode != 0:
                failures.append(name)
                print(f"{name}: memplan exit {run.returncode}: {run.stderr.strip()[:200]}")
                continue
            predicted = sum(saved_by_node(json.loads(run.stdout)).values())
            measured = row["torch_eager_saved_bytes"]
            error = 100.0 * (predicted - measured) / measured
            checked += 1
            print(f"{name}: eager saved memplan {predicted} torch {measured} bytes, {error:+.2f}%;"
                  f" compiled torch {row['torch_compiled_saved_bytes']} (not planned: no --compile)")
            if abs(error) > TOLERANCE_PCT:
                failures.append(name)
    if args.check and checked == 0:
        print("no row was checked")
        return 1
    if failures:
        print("outside tolerance: " + ", ".join(failures))
        return 1 if args.check else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
