#!/usr/bin/python3
"""Builds the HF Trainer and Lightning argument sets memplan exported with the frameworks' real
classes: TrainingArguments(**exported) and Trainer(**exported) (issue 16).

usage: framework_signatures_check.py EXPORT_DIR
EXPORT_DIR holds *.hf-trainer (Python), *.hf-trainer-json (JSON) and *.lightning (Python) files
written by `memplan export`. The keyword arguments are those of the file's TrainingArguments(...) / pl.Trainer(...) call, recorded
while the file runs (its imports and argument values, e.g. FSDPStrategy(...), are the real ones), or
the JSON object; then

  * bound to the class's real signature: an unknown keyword fails (TypeError);
  * passed to the constructor: a TypeError fails; a ValueError or Lightning
    MisconfigurationException that is about this machine's hardware (the exported bf16/fp16 or
    GPU accelerator on a CPU-only machine) is printed and accepted, any other error fails.

Exit 0 pass, 1 fail, 77 when neither `transformers` nor `lightning` (2.x: the export imports
lightning.pytorch) imports (Debian 12 packages neither); a package that is absent is skipped with a
line saying so.
"""

import glob
import inspect
import json
import os
import runpy
import sys
import tempfile

# Words of an error about the machine rather than about the arguments.
HARDWARE_WORDS = ("gpu", "cuda", "bf16", "fp16", "mps", "accelerator", "device", "npu", "xpu")


def recorded_keywords(path, owner, name):
    """Runs the exported Python file at path with owner.<name>.__init__ (the framework's class)
    replaced by a recorder, and returns the keyword arguments of its one call. Everything else in
    the file (imports, FSDPStrategy(...) and other argument values) runs for real. The class's
    __init__ is patched, not the module attribute: transformers 5's lazy module hands `from
    transformers import TrainingArguments` the class itself, whatever the attribute says."""
    cls = getattr(owner, name)
    real_init = cls.__init__
    calls = []

    def recorder(self, *args, **kwargs):
        assert not args, f"{path}: {name}() takes positional arguments"
        calls.append(kwargs)

    cls.__init__ = recorder
    try:
        runpy.run_path(path, run_name="exported")
    finally:
        cls.__init__ = real_init
    assert len(calls) == 1, f"{path}: {len(calls)} calls to {name}(...)"
    return calls[0]


def about_hardware(error):
    text = str(error).lower()
    return any(word in text for word in HARDWARE_WORDS)


def build(cls, init, kwargs, where, hardware_errors):
    """Binds kwargs to init's signature, then constructs cls(**kwargs)."""
    assert kwargs, f"{where}: no arguments read"
    signature = inspect.signature(init)
    try:
        signature.bind_partial(**kwargs)
    except TypeError as error:
        raise AssertionError(f"{where}: {cls.__name__} rejects the arguments: {error}")
    try:
        cls(**kwargs)
    except TypeError as error:
        raise AssertionError(f"{where}: {cls.__name__}(**exported) raised TypeError: {error}")
    except hardware_errors as error:
        if not about_hardware(error):
            raise AssertionError(f"{where}: {cls.__name__}(**exported): {error}")
        print(f"  {where}: signature ok; construction stops at this machine's hardware: {error}")
        return
    print(f"  {where}: {cls.__name__}(**exported) built")


def check_transformers(directory):
    try:
        import transformers
        from transformers import TrainingArguments
    except ImportError as error:
        print(f"SKIP transformers: {error}")
        return 0
    print(f"transformers {transformers.__version__}")
    count = 0
    with tempfile.TemporaryDirectory() as scratch:
        # The Python export's TrainingArguments(...) keywords, then the JSON export's.
        for suffix in ("hf-trainer", "hf-trainer-json"):
            for path in sorted(glob.glob(os.path.join(directory, "*." + suffix))):
                if suffix == "hf-trainer":
                    kwargs = recorded_keywords(path, transformers, "TrainingArguments")
                else:
                    kwargs = json.load(open(path))
                kwargs["output_dir"] = scratch  # keep the test's files in the scratch directory
                build(TrainingArguments, TrainingArguments.__init__, kwargs, path, (ValueError,))
                count += 1
    assert count, f"no HF Trainer exports in {directory}"
    return count


def check_lightning(directory):
    # The export imports lightning.pytorch (Lightning 2.x, whose precision names such as
    # "bf16-mixed" it writes); a machine with only the pre-2.0 pytorch_lightning skips.
    try:
        import lightning.pytorch as pl
        from lightning.pytorch.utilities.exceptions import MisconfigurationException
    except ImportError as error:
        print(f"SKIP lightning: {error}")
        return 0
    print(f"lightning {pl.__version__}")
    count = 0
    for path in sorted(glob.glob(os.path.join(directory, "*.lightning"))):
        kwargs = recorded_keywords(path, pl, "Trainer")
        build(pl.Trainer, pl.Trainer.__init__, kwargs, path,
              (ValueError, RuntimeError, MisconfigurationException))
        count += 1
    assert count, f"no Lightning exports in {directory}"
    return count


def main(directory):
    checked = check_transformers(directory) + check_lightning(directory)
    if not checked:
        print("SKIP: neither transformers nor lightning imports here")
        return 77
    print(f"PASS: {checked} exported argument sets built by the real classes")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1]))
    except AssertionError as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        sys.exit(1)
