#!/usr/bin/env python3
"""Each alternative `analyze` offers is the asked flags with one change, planned by the session's
own planning path: planning its recorded `arguments` directly must give the same peak and the same
fits decision. The oracle is memplan run on those flags as a user would run them, so a change the
alternatives' preparation of the model loses (a graph rewrite's facts, a shape check, a placement)
shows as a difference.

usage: alternatives_match_direct_test.py MEMPLAN MODEL[.xz] WORKDIR -- ANALYZE_FLAGS...
MODEL.onnx.xz is unpacked into WORKDIR first (tests/fixtures/gpu_rows keeps its exports packed).
"""
import json
import lzma
import os
import shlex
import subprocess
import sys


def analyze(memplan, model, args):
    run = subprocess.run([memplan, "analyze", model, *args, "--json"], capture_output=True,
                         text=True)
    if run.returncode not in (0, 1):
        sys.exit(f"analyze {' '.join(args)}: exit {run.returncode}: {run.stderr.strip()}")
    return json.loads(run.stdout)


def main():
    memplan, model, work = sys.argv[1:4]
    asked = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(work, exist_ok=True)
    if model.endswith(".xz"):
        plain = os.path.join(work, os.path.basename(model)[:-3])
        with lzma.open(model) as source, open(plain, "wb") as out:
            out.write(source.read())
        model = plain
    report = analyze(memplan, model, asked)
    alternatives = report.get("alternatives") or []
    planned = [a for a in alternatives if "peak_bytes" in a]
    if not planned:
        sys.exit("no planned alternative: the test's flags must leave nothing fitting")
    failures = []
    for alternative in planned:
        direct = analyze(memplan, model, shlex.split(alternative["arguments"]))
        got = (alternative["peak_bytes"], alternative["fits"])
        want = (direct["peak_bytes"], direct["fits"])
        line = f"{alternative['flags']}: alternative {got}, direct {want}"
        print(line)
        if got != want:
            failures.append(line)
    if failures:
        sys.exit("alternatives that differ from their own flags planned directly:\n" +
                 "\n".join(failures))


if __name__ == "__main__":
    main()
