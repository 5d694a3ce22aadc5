#!/usr/bin/env python3
"""Re-predicts the loss and optimizer recipe rows torch measured on the CPU.

tools/recipes/measure_loss_recipes.py ran each recipe's real code with torch 2.x on the CPU and
recorded the live-bytes peak of one training step (torch.profiler memory events) beside the
weight-free graph it exported and the memplan flags that describe the recipe. This script runs
`memplan analyze MODEL.onnx --json` with those flags and compares exact_peak_bytes (the
no-fragmentation live-bytes peak, what the CPU allocator's events add up to):

    tools/recipes/repredict_loss_rows.py --memplan build/tools/memplan \
        --rows tests/fixtures/recipe_rows/loss_rows.jsonl [--check] [--open CONFIG,...]

--check exits 1 when a row is off by more than 2%, except the configs --open names (known gaps,
printed as such). Needs only the standard library.
"""
import argparse
import json
import os
import subprocess
import sys

TOLERANCE_PCT = 2.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memplan", required=True)
    parser.add_argument("--rows", required=True, help="loss_rows.jsonl (graphs beside it)")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--open", default="", help="configs --check lets pass")
    args = parser.parse_args()
    open_configs = {c for c in args.open.split(",") if c}
    folder = os.path.dirname(os.path.abspath(args.rows))
    failures = []
    with open(args.rows) as rows:
        for line in rows:
            if not line.strip():
                continue
            row = json.loads(line)
            graph = os.path.join(folder, row["model"] + ".onnx")
            out = subprocess.run([args.memplan, "analyze", graph, *row["flags"], "--json"],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{row['config']}: memplan exit {out.returncode}: {out.stderr.strip()}")
                failures.append(row["config"])
                continue
            report = json.loads(out.stdout)
            predicted = report["exact_peak_bytes"]
            measured = row["torch_peak_bytes"]
            error = 100.0 * (predicted - measured) / measured
            within = abs(error) <= TOLERANCE_PCT
            state = "ok" if within else ("open" if row["config"] in open_configs else "FAIL")
            print(f"{row['config']:34s} torch {measured:>10d}  memplan {predicted:>10d}"
                  f"  {error:+6.2f}%  {state}")
            if state == "FAIL":
                failures.append(row["config"])
    if failures:
        print(f"outside {TOLERANCE_PCT}%: " + ", ".join(failures))
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
