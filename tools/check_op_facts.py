#!/usr/bin/env python3
"""Fails when code outside graph/ decides by an op's name instead of asking the op registry.

An op's behaviour is one fact in one place: its OpSchema in graph/ops (what backward saves, whether
it is a view, converts a dtype, normalises over an axis, holds a literal...). A comparison such as
`node.op_type == "Cast"` in analyzer/, runtime/, profiler/ or tools/memplan/ states that fact a
second time, where the next op with the same behaviour will not be found; add a field to OpSchema
and read it with OpRegistry::FindOrUnknown instead. Reported as `file:line: the line`.

graph/ is exempt: the importer, the fusions and the registry itself match ONNX by name. Tests are
exempt: they build graphs by name. A CPU or CUDA kernel registers under its op's name (a string
in a Register call, not a comparison).

Usage: tools/check_op_facts.py [REPO_ROOT]
"""
import pathlib
import re
import sys

FOLDERS = ["analyzer", "runtime", "profiler", "tools/memplan"]
# op_type == "X", op_type() != "X", "X" == node.op_type
COMPARISON = re.compile(
    r'op_type(\(\))?\s*[!=]=\s*"|"[A-Za-z]+"\s*[!=]=\s*[\w.>-]*op_type\b')


def violations(root):
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cc", ".h", ".cu", ".cuh") or path.name.endswith("_test.cc"):
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if COMPARISON.search(line):
                    yield f"{path.relative_to(root)}:{number}: {line.strip()}"


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    found = list(violations(root))
    for v in found:
        print(v)
    if found:
        print(f"check_op_facts: {len(found)} comparison(s) of an op's name outside graph/; "
              "state the fact in its OpSchema (graph/ops/op_schema.h) and read it there",
              file=sys.stderr)
        return 1
    print("check_op_facts: no op-name comparisons outside graph/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
