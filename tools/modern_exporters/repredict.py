#!/usr/bin/env python3
"""Re-predict the modern-exporter rows (tools/modern_exporters/export_rows.py) with the current
memplan, without torch: `memplan analyze --json` on each row's stored graph, its saved bytes
against torch's measured ones.

    tools/modern_exporters/repredict.py --memplan build/tools/memplan
        [--dir tests/fixtures/modern_exporters] [--only S] [--check [--open FAMILY.EXPORTER,...]]
        [--markdown]

--check makes it a test: exit 1 when a row memplan analyses is off torch's saved bytes by more
than 2%, or when memplan fails on a row's graph, except the rows --open names (known gaps, each
with its reason in docs/measurements.md). --markdown prints the table docs/measurements.md keeps.
"""
import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 0.02  # saved bytes within 2% of torch's
# The rows' plan: fp32 (as torch measured), Adam, no recompute, the exports' fixed batch.
DEFAULT_FLAGS = "--gpu 80G --precision fp32 --recompute none"


def unpack(directory, name, into):
    path = os.path.join(directory, name)
    if not name.endswith(".xz"):
        return path
    target = os.path.join(into, name[:-3])
    with lzma.open(path) as source, open(target, "wb") as out:
        out.write(source.read())
    return target


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memplan", required=True)
    parser.add_argument("--dir", default=os.path.join(HERE, "..", "..", "tests", "fixtures",
                                                      "modern_exporters"))
    parser.add_argument("--only", default="")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--open", default="")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    open_rows = {item for item in args.open.split(",") if item}
    failures, within, analysed = [], 0, 0
    with open(os.path.join(args.dir, "rows.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    if args.markdown:
        print("| family | exporter | torch saved (B) | memplan saved (B) | error | note |")
        print("|---|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            if args.only not in row["family"]:
                continue
            key = f"{row['family']}.{row['exporter']}"
            if "graph" not in row:
                note = (f"export failed: {row['export_error'][:120]}" if "export_error" in row
                        else "graph not kept")
                if args.markdown:
                    print(f"| {row['family']} | {row['exporter']} | {row['torch_saved_bytes']} "
                          f"| — | — | {note} |")
                continue
            graph = unpack(args.dir, row["graph"], tmp)
            flags = row.get("flags", DEFAULT_FLAGS).split()
            # The attention kernel torch ran (export_rows.py records "eager" for transformers'
            # models); memplan's default plans the fused kernel a GPU would run.
            if "attention" in row:
                flags += ["--attention", row["attention"]]
            run = subprocess.run([args.memplan, "analyze", graph, "--json"] + flags,
                                 capture_output=True, text=True)
            if run.returncode != 0:
                message = (run.stderr.strip().splitlines() or ["?"])[-1][:160]
                print(f"{key:40s} memplan failed: {message}", file=sys.stderr)
                if args.markdown:
                    print(f"| {row['family']} | {row['exporter']} | {row['torch_saved_bytes']} "
                          f"| — | — | memplan: {message} |")
                if key not in open_rows:
                    failures.append(key)
                continue
            analysed += 1
            predicted = json.loads(run.stdout)["saved_activation_bytes"]
            torch_bytes = row["torch_saved_bytes"]
            error = (predicted - torch_bytes) / torch_bytes
            ok = abs(error) <= TOLERANCE
            within += ok
            if args.markdown:
                print(f"| {row['family']} | {row['exporter']} | {torch_bytes} | {predicted} "
                      f"| {100 * error:+.1f}% | {'' if ok else 'open'} |")
            else:
                print(f"{key:40s} torch {torch_bytes:10d}  memplan {predicted:10d}  "
                      f"{100 * error:+6.1f}%{'' if ok else '  (outside 2%)'}")
            if not ok and key not in open_rows:
                failures.append(key)
    print(f"{within} of {analysed} analysed rows within 2% of torch's saved bytes",
          file=sys.stderr)
    if args.check and failures:
        print("outside tolerance or failing: " + ", ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
