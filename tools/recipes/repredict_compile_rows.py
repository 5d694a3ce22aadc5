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
import sys

from stored_rows import analyze_json, parse_args, rows_with_graphs

TOLERANCE_PCT = 2.0
FLAGS = ["--gpu", "24G", "--batch", "2", "--precision", "fp32", "--recompute", "none",
         "--attention", "eager"]


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
    args = parse_args(__doc__, "compile_rows.jsonl")
    failures, checked = [], 0
    for row, graph in rows_with_graphs(args):
        name = f"{row['model']} ({row['config']})"
        if graph is None:
            print(f"{name}: no stored graph, skipped")
            continue
        report, error_text = analyze_json(args.memplan, graph, FLAGS)
        if report is None:
            failures.append(name)
            print(f"{name}: {error_text}")
            continue
        predicted = sum(saved_by_node(report).values())
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
