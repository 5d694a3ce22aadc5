#!/usr/bin/env python3
"""Regenerates the tables of memplan's own figures in the docs from the tool (issue 43).

A figure the tool prints is never typed into a doc: each table sits between two markers

    <!-- doc_tables: NAME -->
    ...generated...
    <!-- /doc_tables -->

and TABLES below says how NAME is made: the zoo model, the flags every row shares, one row per
extra flag set, and the columns, each read from `memplan analyze ... --json`. `--write` rewrites
the blocks in place; `--check` exits 1 naming every block that differs from what the tool prints
now (tests/CMakeLists.txt runs it on README.md and docs/finetuning.md, so a change to the planner
that moves a documented figure fails CI until the docs are regenerated).

    python3 tools/doc_tables.py --memplan build/tools/memplan --zoo build/zoo --write \
        README.md docs/finetuning.md
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

KIB = 1024


def format_bytes(n):
    """analyzer/text/memory_size.cc FormatBytes: 1 decimal, the unit below 1024.0."""
    magnitude = abs(n)
    sign = "-" if n < 0 else ""
    if magnitude < KIB:
        return f"{sign}{magnitude:.0f} B"
    names = ["KiB", "MiB", "GiB", "TiB", "PiB"]
    unit = 0
    scaled = magnitude / 1024.0
    while unit + 1 < len(names) and scaled >= 1023.95:
        scaled /= 1024.0
        unit += 1
    return f"{sign}{scaled:.1f} {names[unit]}"


def psi_multiple(nbytes, psi):
    """' = 16 Psi' when the bytes are a whole multiple of the parameter count (within 1%)."""
    if psi <= 0 or nbytes <= 0:
        return ""
    ratio = nbytes / psi
    whole = round(ratio)
    return f" = {whole} Psi" if whole > 0 and abs(ratio - whole) <= 0.01 * whole else ""


def fits_cell(plan):
    if plan["fits"]:
        return "yes"
    return f"no (m = 1: {format_bytes(plan['peak_bytes'])})"


def offload(plan, key):
    return plan["plan"].get("offload", {}).get(key, 0)


# Columns: (header, function of the analyze JSON -> cell text).
COLUMNS = {
    "fits": ("fits", lambda j: "yes" if j["fits"] else "no"),
    "fits_or_peak": ("fits", fits_cell),
    "micro_batch": ("micro-batch", lambda j: str(j["plan"]["micro_batch"])),
    "largest": ("largest that fits", lambda j: str(j["plan"]["max_micro_batch"])),
    "peak": ("peak", lambda j: format_bytes(j["peak_bytes"])),
    "gpu_peak": ("GPU peak", lambda j: format_bytes(j["peak_bytes"])),
    "trained": ("trained parameters", lambda j: f"{j['plan']['trainable_parameter_count']:,}"),
    "host": ("host", lambda j: (format_bytes(offload(j, "host_bytes")) +
                                psi_multiple(offload(j, "host_bytes"),
                                             j["model"]["parameter_count"]))
             if offload(j, "host_bytes") else "0"),
    "link": ("over PCIe per step", lambda j: (format_bytes(offload(j, "transfer_bytes_per_step")) +
                                              psi_multiple(offload(j, "transfer_bytes_per_step"),
                                                           j["model"]["parameter_count"]))
             if offload(j, "transfer_bytes_per_step") else "0"),
    "samples": ("samples/s", lambda j: f"{j['samples_per_second']:.1f}"),
    "precision": ("precision", lambda j: j["plan"]["precision"]),
}

# Each table: the model (zoo file stem), the flags every row shares, its rows (label, extra
# flags) and columns; `intro` is a sentence above the table whose figures come from the first row.
TABLES = {
    "finetuning_gpt2_xl": {
        "model": "gpt2_xl",
        "flags": ["--gpu", "24GB", "--dim", "seq=1024"],
        "intro": lambda j: (f"`memplan analyze gpt2_xl.onnx --gpu 24GB --dim seq=1024` (zoo model, "
                            f"{j['model']['parameter_count']:,} parameters; budget "
                            f"{format_bytes(j['budget_bytes'])} after the CUDA context), peak of "
                            f"the chosen plan:"),
        "first_column": "extra flags",
        "rows": [
            ("(none: fp16 Adam)", []),
            ("`--optimizer adamw8bit`", ["--optimizer", "adamw8bit"]),
            ("`--lora 8` (c_attn, attn.c_proj)", ["--lora", "8"]),
            ("`--lora 8 --base-dtype nf4 --precision bf16`",
             ["--lora", "8", "--base-dtype", "nf4", "--precision", "bf16"]),
        ],
        "columns": ["fits", "micro_batch", "peak", "trained"],
    },
    "finetuning_offload": {
        "model": "gpt2_xl",
        "flags": ["--gpu", "RTX3090", "--dim", "seq=1024", "--precision", "bf16", "--amp-mode",
                  "master-weights"],
        "intro": lambda j: (f"GPT-2 XL (zoo `gpt2_xl`, Psi = {j['model']['parameter_count']:,}), "
                            f"seq 1024, bf16 with fp32 masters, Adam, on an RTX 3090 (budget "
                            f"{format_bytes(j['budget_bytes'])}); planner figures, not "
                            f"measurements:"),
        "first_column": "`--offload`",
        "rows": [
            ("`none`", ["--offload", "none"]),
            ("`optimizer`", ["--offload", "optimizer"]),
            ("`optimizer+params`", ["--offload", "optimizer+params"]),
            ("`activations`", ["--offload", "activations"]),
        ],
        "columns": ["fits_or_peak", "micro_batch", "gpu_peak", "host", "link", "samples"],
    },
    "readme_quickstart": {
        "model": "resnet18",
        "flags": ["--gpu", "24G"],
        "intro": lambda j: ("`memplan analyze build/zoo/resnet18.onnx --gpu 24G` and variants "
                            "(what tools/quickstart.sh runs first), as the tool prints them now:"),
        "first_column": "extra flags",
        "rows": [
            ("(none)", []),
            ("`--knee 0`", ["--knee", "0"]),
            ("`--global-batch 4096`", ["--global-batch", "4096"]),
        ],
        "columns": ["precision", "micro_batch", "largest", "peak", "samples"],
    },
}

BLOCK = re.compile(r"(<!-- doc_tables: (?P<name>[a-z0-9_]+) -->\n)(?P<body>.*?)(<!-- /doc_tables -->)",
                   re.S)


def analyze(memplan, zoo, model, flags):
    cmd = [memplan, "analyze", str(Path(zoo) / f"{model}.onnx"), *flags, "--no-alternatives",
           "--json"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    # Exit 1 is a plan that does not fit: still a complete JSON report.
    if run.returncode not in (0, 1):
        sys.exit(f"doc_tables: {' '.join(cmd)} exited {run.returncode}: {run.stderr.strip()}")
    return json.loads(run.stdout)


def render(name, memplan, zoo):
    spec = TABLES[name]
    results = [analyze(memplan, zoo, spec["model"], spec["flags"] + extra)
               for _, extra in spec["rows"]]
    headers = [spec["first_column"]] + [COLUMNS[c][0] for c in spec["columns"]]
    lines = [spec["intro"](results[0]), "", "| " + " | ".join(headers) + " |",
             "|" + "---|" * len(headers)]
    for (label, _), j in zip(spec["rows"], results):
        lines.append("| " + " | ".join([label] + [COLUMNS[c][1](j) for c in spec["columns"]]) +
                     " |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memplan", required=True)
    parser.add_argument("--zoo", required=True)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    stale = []
    for path in map(Path, args.files):
        text = path.read_text()
        blocks = list(BLOCK.finditer(text))
        for b in blocks:
            if b.group("name") not in TABLES:
                sys.exit(f"doc_tables: {path}: unknown table '{b.group('name')}'")
        def replace(b):
            body = render(b.group("name"), args.memplan, args.zoo)
            if body != b.group("body"):
                stale.append(f"{path}: {b.group('name')}")
            return b.group(1) + body + b.group(4)
        new = BLOCK.sub(replace, text)
        if args.write and new != text:
            path.write_text(new)
    if args.check and stale:
        print("doc_tables: stale (run tools/doc_tables.py --write): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
