#!/usr/bin/env python3
"""Scale benchmark (issue 14): times memplan on generated graphs far larger than any zoo model.

  * chain: NODES nodes, alternating MatMul (a 16x16 weight each) and Relu, on [batch, 16];
    `memplan analyze --gpu 24G` must take under 3 s CPU.
  * initializers: INITS unused 1-element initializers beside one Relu;
    `memplan inspect` (the import) must take under 1 s CPU.

Prints one line per job with the best-of-3 wall and CPU seconds and the machine.
Usage: tools/bench/bench_scale.py [build-dir] [--nodes 50000] [--inits 100000]
Needs python3-onnx. Use a Release build for figures you report (docs/measurements.md).
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import TensorProto, helper


def chain_model(nodes):
    layers = nodes // 2
    inits, graph_nodes = [], []
    previous = "x"
    for i in range(layers):
        weight = f"w{i}"
        inits.append(helper.make_tensor(weight, TensorProto.FLOAT, [16, 16], [0.0] * 256))
        graph_nodes.append(helper.make_node("MatMul", [previous, weight], [f"m{i}"], name=f"mm{i}"))
        graph_nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"relu{i}"))
        previous = f"r{i}"
    graph = helper.make_graph(
        graph_nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, ["batch", 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def initializer_model(count):
    inits = [helper.make_tensor(f"unused{i}", TensorProto.FLOAT, [1], [0.0]) for i in range(count)]
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "initializers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def best_of(command, runs=3):
    best_wall = best_cpu = None
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if result.returncode != 0:
            sys.exit(f"bench_scale: {' '.join(command)} exited {result.returncode}: {result.stderr}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best_wall = wall if best_wall is None else min(best_wall, wall)
        best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
    return best_wall, best_cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build", nargs="?", default="build")
    parser.add_argument("--nodes", type=int, default=50000)
    parser.add_argument("--inits", type=int, default=100000)
    args = parser.parse_args()
    memplan = os.path.join(args.build, "tools", "memplan")
    if not os.access(memplan, os.X_OK):
        sys.exit(f"bench_scale: {memplan} is missing (build the memplan target)")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"machine: {os.cpu_count()} cores, {cpu}, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        chain = os.path.join(folder, "chain.onnx")
        onnx.save(chain_model(args.nodes), chain)
        inits = os.path.join(folder, "initializers.onnx")
        onnx.save(initializer_model(args.inits), inits)
        jobs = [
            (f"analyze, {args.nodes}-node chain (target < 3 s CPU)",
             [memplan, "analyze", chain, "--gpu", "24G"]),
            (f"inspect, {args.inits} unused initializers (target < 1 s CPU)",
             [memplan, "inspect", inits]),
        ]
        for label, command in jobs:
            wall, cpu_s = best_of(command)
            print(f"{wall:8.3f} s wall  {cpu_s:8.3f} s cpu  {label}")


if __name__ == "__main__":
    main()
