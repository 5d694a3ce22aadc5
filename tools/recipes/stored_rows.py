"""What the re-prediction scripts of tools/recipes share: their command line, the rows of a jsonl
file with each row's stored graph (tests/fixtures/recipe_rows/MODEL.onnx.xz, weights stripped)
unpacked into a temporary folder, and one `memplan analyze --json` run."""
import argparse
import json
import lzma
import os
import subprocess
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def parse_args(doc, rows_file, switches=()):
    """--memplan BIN [--rows FILE] [--graphs DIR] [--check] and the script's own `switches`
    ((name, help) pairs, each a store_true option); rows default to docs/ROWS_FILE."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--memplan", required=True)
    parser.add_argument("--rows", default=os.path.join(ROOT, "docs", rows_file))
    parser.add_argument("--graphs", default=os.path.join(ROOT, "tests", "fixtures", "recipe_rows"))
    parser.add_argument("--check", action="store_true")
    for name, help_text in switches:
        parser.add_argument(name, action="store_true", help=help_text)
    return parser.parse_args()


def rows_with_graphs(args):
    """Yields (row, path of its unpacked graph, or None where no graph is stored)."""
    with tempfile.TemporaryDirectory() as unpacked, open(args.rows) as rows:
        for line in rows:
            if not line.strip():
                continue
            row = json.loads(line)
            stored = os.path.join(args.graphs, row["model"] + ".onnx.xz")
            if not os.path.exists(stored):
                yield row, None
                continue
            graph = os.path.join(unpacked, row["model"] + ".onnx")
            if not os.path.exists(graph):
                with lzma.open(stored) as src, open(graph, "wb") as out:
                    out.write(src.read())
            yield row, graph


def analyze_json(memplan, graph, flags):
    """memplan analyze GRAPH --json FLAGS: (the report, None) or (None, 'memplan exit N: ...')."""
    run = subprocess.run([memplan, "analyze", graph, "--json"] + flags, capture_output=True,
                         text=True)
    if run.returncode != 0:
        return None, f"memplan exit {run.returncode}: {run.stderr.strip()[:200]}"
    return json.loads(run.stdout), None
