#!/usr/bin/env python3
"""Fails when a file in analyzer/ includes a header of a later pipeline stage.

analyzer/'s folders are the stages of one pipeline, listed below from the bottom up (leaf
utilities first). A file may include its own stage or an earlier one; an include that points up
the list is a cycle waiting to happen, so it is reported as `file:line: stage -> later stage`.
Feature folders (recompute, precision, parallel, offload) sit at the stage they feed. The order
is drawn in docs/architecture.md; change both together.

Usage: tools/check_stage_includes.py [REPO_ROOT]
"""
import pathlib
import re
import sys

# Bottom-up. Folders on one line share a rank (neither may include the other's files: a
# cross include between same-rank folders is reported too, as it would order them).
STAGES = [
    ["text"],          # number and size formatting, markup escaping, JSON field helpers
    ["vocabulary"],    # the plan's enums and their names
    ["program"],       # TrainingProgram, its per-buffer facts and the one walk over it
    ["recompute"],     # chains, schedules and module units the recompute planners cut
    ["precision"],     # autocast placement, AMP regimes, model-state bytes
    ["parallel", "offload"],  # data/tensor-parallel and offload options the derivation reads
    ["derivation"],    # graph + options -> program
    ["simulation"],    # allocator models and the simulator over a program
    ["cost"],          # roofline, GPU specs, interconnect, collective and transfer times
    ["planning"],      # the searches: micro-batch, joint precision x recompute, strategy
    ["baseline"],      # plan flags, pinned plans, CI baselines and their formats
    ["alternatives"],  # what would fit when nothing does
    ["report"],        # the analysis report and its text/JSON/markdown/HTML writers
    ["config_export"],  # framework configs written from a plan
    ["pipeline"],      # one analysis from a request: prepare the model, plan, report, alternatives
]
RANK = {folder: rank for rank, line in enumerate(STAGES) for folder in line}
INCLUDE = re.compile(r'^\s*#\s*include\s+"analyzer/([^/"]+)/')


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    analyzer = root / "analyzer"
    errors = []
    for path in sorted(analyzer.rglob("*")):
        if path.suffix not in (".h", ".cc") or not path.is_file():
            continue
        parts = path.relative_to(analyzer).parts
        if len(parts) < 2:
            errors.append(f"{path.relative_to(root)}: not in a stage folder of analyzer/")
            continue
        stage = parts[0]
        if stage not in RANK:
            errors.append(f"{path.relative_to(root)}: folder '{stage}' is not a listed stage "
                          "(tools/check_stage_includes.py)")
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match or match.group(1) == stage:
                continue
            target = match.group(1)
            if target not in RANK or RANK[target] >= RANK[stage]:
                errors.append(f"{path.relative_to(root)}:{number}: {stage} includes later stage "
                              f"{target} ({line.strip()})")
    for error in errors:
        print(error)
    if errors:
        print(f"check_stage_includes: {len(errors)} upward include(s) in analyzer/")
        return 1
    print("check_stage_includes: every analyzer/ include points to an earlier stage")
    return 0


if __name__ == "__main__":
    sys.exit(main())
