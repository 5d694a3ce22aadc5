#!/usr/bin/env python3
"""Runs the `run:` steps of the GitHub workflow docs/ci_checks.md shows, as written, on a
baseline whose model grew (the ci_check fixture's "added" scenario), and checks what a pull
request would see. The install and build steps are skipped: `build/tools/memplan` is the binary
ctest built (the test links it there).

usage: ci_workflow_steps_test.py MEMPLAN_BINARY DOCS/ci_checks.md SCENARIO_DIR WORK_DIR
SCENARIO_DIR holds model.onnx and memplan.baseline.json. Exit 0 when every check holds.
"""
import json
import os
import re
import shutil
import subprocess
import sys

SKIPPED = {"Install dependencies", "Build memplan"}


def workflow_steps(markdown):
    """(name, run) of every step with a `run:` in the ```yaml block after '## GitHub Actions'."""
    section = markdown.split("## GitHub Actions", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    steps, name, lines, i = [], None, block.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*- name: (.*)$", line)
        if m:
            name = m.group(1).strip()
        m = re.match(r"^(\s*)run: (.*)$", line)
        if m:
            indent, value = len(m.group(1)), m.group(2).strip()
            if value == "|":
                body = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or
                                          len(lines[i]) - len(lines[i].lstrip()) > indent):
                    body.append(lines[i][indent + 2:])
                    i += 1
                steps.append((name, "\n".join(body) + "\n"))
                continue
            steps.append((name, value.split("  #")[0]))
        i += 1
    return steps


def main():
    binary, doc, scenario, work = sys.argv[1:5]
    steps = [(n, r) for n, r in workflow_steps(open(doc, encoding="utf-8").read())
             if n not in SKIPPED]
    failures = []

    def expect(ok, what):
        if not ok:
            failures.append(what)

    expect([n for n, _ in steps] == ["Check predicted memory against the baseline",
                                     "Write the reports"], f"steps {[n for n, _ in steps]}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "build", "tools"))
    for f in ("model.onnx", "memplan.baseline.json"):
        shutil.copy(os.path.join(scenario, f), work)
    os.symlink(os.path.abspath(binary), os.path.join(work, "build", "tools", "memplan"))
    summary = os.path.join(work, "summary.md")
    env = {**os.environ, "GITHUB_STEP_SUMMARY": summary}

    def run(script):
        return subprocess.run(["sh", "-c", script], cwd=work, env=env, capture_output=True,
                              text=True)

    check = run(steps[0][1])
    expect(check.returncode == 1, f"check step exit {check.returncode}, expected 1")
    expect(re.search(r"^::error file=model\.onnx,title=memplan memory regression in ",
                     check.stdout, re.M), f"no ::error on model.onnx in: {check.stdout}")
    reports = run(steps[1][1])
    expect(reports.returncode == 0, f"report step exit {reports.returncode}: {reports.stderr}")
    md = open(os.path.join(work, "memplan-check.md")).read()
    expect(md.startswith("## memplan memory check\n") and ":x: regression" in md, md)
    expect("<failure" in open(os.path.join(work, "memplan-check.xml")).read(), "junit")
    report = json.load(open(os.path.join(work, "memplan-check.json")))
    expect(report["exit_code"] == 1 and report["configurations"][0]["status"] == "regression",
           str(report))
    expect(open(summary).read() == md, "the step summary is not the markdown")

    # An error (exit 2): every report is still written, and says so.
    os.remove(os.path.join(work, "memplan.baseline.json"))
    os.remove(summary)
    reports = run(steps[1][1])
    expect(reports.returncode == 0, f"report step after an error exit {reports.returncode}")
    md = open(os.path.join(work, "memplan-check.md")).read()
    expect("**Could not run**" in md, md)
    expect(json.load(open(os.path.join(work, "memplan-check.json")))["exit_code"] == 2, "json")
    expect("<error" in open(os.path.join(work, "memplan-check.xml")).read(), "junit error")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
