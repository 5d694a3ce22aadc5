#!/usr/bin/env python3
"""Runs clang-tidy (the checks in .clang-tidy) over the project's C++ sources; exit 1 on a warning.

    tools/run_clang_tidy.py BUILD_DIR [--jobs N] [--baseline FILE [--update-baseline]] [FILE ...]

BUILD_DIR is a configured and built Ninja folder (tools/test.sh's build-asan): its
compile_commands.json gives each source's flags and `ninja -t deps` the headers each one read.

clang-tidy parses a file as slowly as the compiler does (about 5 s each, 400 files), so results are
cached the way ccache caches objects: the key of a source is the hash of its compile command, its
text and the text of every repository header it includes (from Ninja's dependency log), plus the
.clang-tidy file and clang-tidy's version. A source whose key is unchanged reuses its stored
result; only what a change touches is re-checked. The cache lives in $MEMPLAN_TIDY_CACHE
(default ~/.cache/memplan-clang-tidy).

A cold cache would cost a CI run a quarter of an hour, so parsing stops starting new sources after
$MEMPLAN_TIDY_SECONDS (default 600; 0 = no limit): the sources left are named as unchecked (they
do not fail the run) and the next run, whose cache holds what this one checked, goes on from there.

--baseline FILE is a ratchet for what was there before the check: each line `path | check |
message` (no line number, so edits elsewhere in the file do not move it) is a known warning that
does not fail the run; a warning not in it fails, and so does a line no warning matches any more
(delete it: the list only shrinks). --update-baseline rewrites FILE with what was found.

Checked: analyzer/, graph/, runtime/, profiler/ and tools/ (not tests/: Catch2's test cases are
long by design, and not CUDA sources, which clang-tidy cannot parse without the GPU toolchain).
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time

CHECKED_FOLDERS = ("analyzer/", "graph/", "runtime/", "profiler/", "tools/")
WARNING = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?:warning|error): .*$")


def tidy_binary():
    for name in ("clang-tidy-14", "clang-tidy"):
        try:
            out = subprocess.run([name, "--version"], capture_output=True, text=True, check=True)
            return name, out.stdout
        except (OSError, subprocess.CalledProcessError):
            continue
    sys.exit("run_clang_tidy: clang-tidy is not installed (tools/setup.sh installs clang-tidy-14)")


def header_deps(build_dir, root):
    """Maps each object file to the repository files it was compiled from (ninja -t deps)."""
    out = subprocess.run(["ninja", "-C", str(build_dir), "-t", "deps"], capture_output=True,
                         text=True, check=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if line and not line[0].isspace():
            current = line.split(":")[0].strip()
            deps[current] = []
        elif current and line.strip():
            path = pathlib.Path(line.strip())
            if not path.is_absolute():
                path = (build_dir / path).resolve()
            if str(path).startswith(str(root) + "/"):
                deps[current].append(path)
    return deps


def object_of(entry):
    if "output" in entry:
        return entry["output"]
    args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    return args[args.index("-o") + 1] if "-o" in args else ""


def cache_key(entry, source, headers, root, config_text, version):
    digest = hashlib.sha256()
    command = entry.get("command") or " ".join(entry.get("arguments", []))
    for part in (version, config_text, command.replace(str(root), "<root>"),
                 str(source.relative_to(root))):
        digest.update(part.encode())
        digest.update(b"\0")
    for path in sorted(set([source] + headers)):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<missing>")
    return digest.hexdigest()


def run_tidy(binary, build_dir, source, root):
    proc = subprocess.run([binary, "-p", str(build_dir), "--quiet", str(source)],
                          capture_output=True, text=True)
    warnings = []
    for line in proc.stdout.splitlines():
        match = WARNING.match(line)
        if not match:
            continue
        path = pathlib.Path(match["path"]).resolve()
        if not str(path).startswith(str(root) + "/"):
            continue
        warnings.append(str(path.relative_to(root)) + line[len(match["path"]):])
    if proc.returncode != 0 and not warnings:
        # clang-tidy failed without a warning of ours: a compile error; report its first lines.
        warnings.append(f"{source.relative_to(root)}: clang-tidy failed: "
                        + " | ".join(proc.stderr.strip().splitlines()[:3]))
    return warnings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir", type=pathlib.Path)
    parser.add_argument("files", nargs="*", help="only these sources (default: all checked)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--baseline", type=pathlib.Path, help="known warnings that may only go")
    parser.add_argument("--update-baseline", action="store_true")
    args = parser.parse_args()

    root = pathlib.Path(__file__).resolve().parent.parent
    build_dir = args.build_dir.resolve()
    config_text = (root / ".clang-tidy").read_text()
    binary, version = tidy_binary()
    cache = pathlib.Path(os.environ.get("MEMPLAN_TIDY_CACHE",
                                        pathlib.Path.home() / ".cache" / "memplan-clang-tidy"))
    cache.mkdir(parents=True, exist_ok=True)

    entries = json.loads((build_dir / "compile_commands.json").read_text())
    deps = header_deps(build_dir, root)
    wanted = {(root / f).resolve() for f in args.files}
    jobs = []
    for entry in entries:
        source = pathlib.Path(entry["directory"], entry["file"]).resolve()
        relative = str(source.relative_to(root)) if str(source).startswith(str(root)) else ""
        if not relative.startswith(CHECKED_FOLDERS) or source.suffix != ".cc":
            continue
        if wanted and source not in wanted:
            continue
        headers = deps.get(object_of(entry), [])
        jobs.append((source, cache_key(entry, source, headers, root, config_text, version)))

    budget = float(os.environ.get("MEMPLAN_TIDY_SECONDS", "600"))
    deadline = time.monotonic() + budget if budget > 0 else None

    def check(job):
        source, key = job
        stored = cache / key
        if stored.exists():
            return json.loads(stored.read_text()), "cached"
        if deadline is not None and time.monotonic() > deadline:
            return [], "unchecked"
        warnings = run_tidy(binary, build_dir, source, root)
        stored.write_text(json.dumps(warnings))
        return warnings, "checked"

    found, counts, unchecked = set(), {"cached": 0, "checked": 0, "unchecked": 0}, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for job, (warnings, how) in zip(jobs, pool.map(check, jobs)):
            found.update(warnings)
            counts[how] += 1
            if how == "unchecked":
                unchecked.append(str(job[0].relative_to(root)))
    failed = report(found, args, complete=not unchecked)
    if unchecked:
        print(f"run_clang_tidy: {len(unchecked)} sources not checked within "
              f"MEMPLAN_TIDY_SECONDS={budget:g} (the next run checks them): "
              + " ".join(unchecked[:5]) + (" ..." if len(unchecked) > 5 else ""), file=sys.stderr)
    print(f"run_clang_tidy: {len(jobs)} sources: {counts['checked']} checked now, "
          f"{counts['cached']} from the cache, {counts['unchecked']} left; {len(found)} warnings",
          file=sys.stderr)
    return 1 if failed else 0


def baseline_key(warning):
    """`path | check | message` of a warning line `path:line:col: warning: message [check]`."""
    match = re.match(r"^([^:]+):\d+:\d+: (?:warning|error): (.*?)(?: \[([^\]]+)\])?$", warning)
    if not match:
        return warning
    return f"{match[1]} | {match[3] or ''} | {match[2]}"


def report(found, args, complete):
    """Prints the warnings that fail the run; returns whether there are any."""
    keys = {baseline_key(w): w for w in found}
    if args.baseline and args.update_baseline:
        args.baseline.write_text("".join(k + "\n" for k in sorted(keys)))
        print(f"run_clang_tidy: wrote {len(keys)} known warnings to {args.baseline}",
              file=sys.stderr)
        return False
    known = set()
    if args.baseline:
        known = {line.strip() for line in args.baseline.read_text().splitlines()
                 if line.strip() and not line.startswith("#")}
    new = sorted(w for k, w in keys.items() if k not in known)
    for warning in new:
        print(warning)
    gone = sorted(known - keys.keys()) if complete and not args.files else []
    for key in gone:
        print(f"{args.baseline}: fixed, delete this line: {key}")
    return bool(new or gone)


if __name__ == "__main__":
    sys.exit(main())
