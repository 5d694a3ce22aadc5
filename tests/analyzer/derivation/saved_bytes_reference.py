"""The bytes autograd keeps for backward, as the *_saved_reference.py scripts count them: every
tensor handed to a saved_tensors_hooks pack hook, once per storage, persistent tensors (parameters
and buffers, not activations) excluded.
"""
import torch


def saved_bytes(persistent, run):
    """(bytes, tensors) saved while `run()` runs, the storages of `persistent` excluded."""
    skip = {t.data_ptr() for t in persistent}
    seen = {}

    def pack(t):
        if t.data_ptr() not in skip:
            seen[t.data_ptr()] = max(seen.get(t.data_ptr(), 0), t.storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    return sum(seen.values()), len(seen)
