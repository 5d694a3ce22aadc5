#!/usr/bin/env python3
"""The fit decision for bitsandbytes' paged optimizer (analyzer/program/paged_optimizer_state.h):
the paged state (cudaMallocManaged, outside the caching allocator) is left out of the peak, so a
GPU that holds the paged plan's peak but not the same plan with the state on the device fits
the paged plan only.

loss_wide_head.onnx at batch 1: W [512, 4096] = 2097152 and W1 [512, 512] = 262144 elements,
both >= 1e5, uint8 state1/state2: 2 x (2097152 + 262144) = 4718592 bytes paged. The absmax (fp32,
one per 2048 elements) stay on the device in both plans.

    paged_fit_check.py MEMPLAN GRAPH
"""
import json
import subprocess
import sys

PAGED_BYTES = 2 * (2097152 + 262144)  # 4718592
MIB = 1 << 20


def analyze(memplan, graph, optimizer, gpu):
    out = subprocess.run([memplan, "analyze", graph, "--batch", "1", "--micro-batch", "1",
                          "--allocator", "exact", "--headroom", "0", "--recompute", "none",
                          "--precision", "fp32",
                          "--cuda-context", "1G", "--gpu", gpu, "--optimizer", optimizer,
                          "--json"], capture_output=True, text=True, check=False)
    if not out.stdout.startswith("{"):
        sys.exit(f"memplan failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def main():
    memplan, graph = sys.argv[1], sys.argv[2]
    device = analyze(memplan, graph, "adamw8bit", "80G")
    paged = analyze(memplan, graph, "paged-adamw8bit", "80G")
    failures = []
    difference = device["peak_bytes"] - paged["peak_bytes"]
    if difference != PAGED_BYTES:
        failures.append(f"peak difference {difference}, expected {PAGED_BYTES}")
    # A GPU of what the budget loses (context, reserve: 80 GiB less the 80G run's budget) + the
    # paged plan's peak, rounded up to whole MiB (+1 MiB): the state on the device (4.5 MiB more)
    # does not fit, the paged plan does, and of its state only the room left (budget - peak,
    # < 2 MiB) stays resident.
    overhead = 80 * 1024 * MIB - paged["budget_bytes"]
    gpu_mib = (overhead + paged["peak_bytes"] + MIB - 1) // MIB + 1
    gpu = f"{gpu_mib}M"
    tight_device = analyze(memplan, graph, "adamw8bit", gpu)
    tight_paged = analyze(memplan, graph, "paged-adamw8bit", gpu)
    if tight_device["fits"]:
        failures.append(f"adamw8bit fits on {gpu}")
    if not tight_paged["fits"]:
        failures.append(f"paged-adamw8bit does not fit on {gpu}")
    state = tight_paged["plan"]["paged_optimizer_state"]
    room = tight_paged["budget_bytes"] - tight_paged["peak_bytes"]
    if state["resident_bytes"] != room or state["evicted_bytes"] != PAGED_BYTES - room:
        failures.append(f"residency {state}, room {room}")
    if state["host_traffic_bytes_per_step"] != 2 * state["evicted_bytes"]:
        failures.append(f"traffic {state}")
    for failure in failures:
        print(failure)
    print("ok" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
