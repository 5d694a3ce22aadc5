#!/usr/bin/env python3
"""PyTorch CUDA memory snapshot (pickle) -> memplan's compact JSON (`memplan replay` reads it).

A training script writes the snapshot with two lines (README.md, "Why did it OOM?"):

    torch.cuda.memory._record_memory_history(max_entries=100000)
    ...  # on torch.cuda.OutOfMemoryError, or after the step of interest:
    torch.cuda.memory._dump_snapshot("snapshot.pickle")

The pickle is the dict torch.cuda.memory._snapshot() returns (schema in torch/cuda/memory.py
and torch/cuda/_memory_viz.py): `segments` (the segments at the time of the snapshot, each with
its blocks) and `device_traces` (per device, the allocator's actions: alloc, free_requested,
free_completed, segment_alloc, segment_free, segment_map/unmap, oom, snapshot). This converter
keeps one device's trace and segments, the sizes, addresses, streams and the innermost frames
of each event, and writes them as JSON (gzip when the output ends in .gz):

    {"schema": "memplan-snapshot/1", "device": 0,
     "frames": [["file.py", 12, "forward"], ...],            # interned frames
     "segments": [{"address": A, "total_size": S, "stream": T, "segment_type": "large",
                   "blocks": [{"address": A, "size": S, "requested_size": R,
                               "state": "active_allocated", "frames": [0, 3]}]}],
     "events": [["alloc", ADDR, SIZE, STREAM, [frame ids]], ...,
                ["oom", 0, SIZE, STREAM, [frame ids], DEVICE_FREE]]}   # device_free when recorded

Why a converter and not a C++ pickle reader: the pickle's opcodes (protocol 2-5, memoised
tuples, long integers) are a language of their own, and the snapshot's values are plain dicts,
lists, strings and integers; Python's own unpickler reads every protocol torch writes. It is run
here with a find_class that refuses every global, so a hostile pickle cannot run code (only the
builtin containers and scalars load). The converter needs the Python standard library only,
not torch.

    tools/snapshot_to_json.py snapshot.pickle snapshot.json.gz [--device N] [--frames K]
"""
import argparse
import gzip
import io
import json
import pickle
import sys

ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "oom", "snapshot")


class PlainUnpickler(pickle.Unpickler):
    """Loads dicts, lists, tuples, strings and numbers only: no global is ever resolved."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"the snapshot names {module}.{name}: not a plain snapshot")


def fail(message):
    print(f"snapshot_to_json: {message}", file=sys.stderr)
    sys.exit(2)


class Frames:
    """Interns (filename, line, name) triples: a step's frames repeat across its events."""

    def __init__(self, keep):
        self.keep = keep
        self.table = []
        self.index = {}

    def ids(self, frames):
        out = []
        for frame in (frames or [])[:self.keep]:
            key = (str(frame.get("filename", "")), int(frame.get("line", 0)),
                   str(frame.get("name", "")))
            if key not in self.index:
                self.index[key] = len(self.table)
                self.table.append(list(key))
            out.append(self.index[key])
        return out


def convert(snapshot, device, frames):
    if not isinstance(snapshot, dict) or "segments" not in snapshot:
        fail("not a torch.cuda.memory._snapshot() dict (no 'segments')")
    traces = snapshot.get("device_traces", [])
    if device is None:  # the device with the most events, else the first with a segment
        counts = [len(t) for t in traces]
        device = counts.index(max(counts)) if counts and max(counts) > 0 else 0
        if not counts or max(counts) == 0:
            devices = [s.get("device", 0) for s in snapshot["segments"]]
            device = devices[0] if devices else 0
    segments = []
    for segment in snapshot["segments"]:
        if segment.get("device", 0) != device:
            continue
        blocks = [{"address": int(b["address"]), "size": int(b["size"]),
                   "requested_size": int(b.get("requested_size", b["size"])),
                   "state": str(b.get("state", "inactive")),
                   "frames": frames.ids(b.get("frames"))} for b in segment.get("blocks", [])]
        segments.append({"address": int(segment["address"]),
                         "total_size": int(segment["total_size"]),
                         "stream": int(segment.get("stream", 0)),
                         "segment_type": str(segment.get("segment_type", "large")),
                         "blocks": blocks})
    events = []
    for entry in traces[device] if device < len(traces) else []:
        action = entry.get("action")
        if action not in ACTIONS:
            continue  # annotate and later additions carry no memory
        row = [action, int(entry.get("addr", 0)), int(entry.get("size", 0)),
               int(entry.get("stream", 0)), frames.ids(entry.get("frames"))]
        if action == "oom" and "device_free" in entry:
            row.append(int(entry["device_free"]))  # what CUDA still had free: the capacity
        events.append(row)
    return {"schema": "memplan-snapshot/1", "device": device, "frames": frames.table,
            "segments": segments, "events": events}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", help="the pickle torch.cuda.memory._dump_snapshot wrote")
    parser.add_argument("out", help="the JSON to write (.gz: gzip-compressed)")
    parser.add_argument("--device", type=int, default=None, help="default: the busiest device")
    parser.add_argument("--frames", type=int, default=6,
                        help="innermost frames kept per event (default 6)")
    args = parser.parse_args()
    try:
        with open(args.snapshot, "rb") as f:
            data = f.read()
        snapshot = PlainUnpickler(io.BytesIO(data)).load()
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError,
            IndexError, AttributeError) as error:
        fail(f"{args.snapshot}: {type(error).__name__}: {error}")
    try:
        document = convert(snapshot, args.device, Frames(args.frames))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        fail(f"{args.snapshot}: unexpected snapshot layout ({type(error).__name__}: {error})")
    text = json.dumps(document, separators=(",", ":"))
    opener = gzip.open if args.out.endswith(".gz") else open
    with opener(args.out, "wt") as out:
        out.write(text)
    print(f"{args.out}: device {document['device']}, {len(document['segments'])} segments, "
          f"{len(document['events'])} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
