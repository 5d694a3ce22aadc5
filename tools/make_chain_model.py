#!/usr/bin/python3
"""Writes a chain of NODES nodes (default 10^6) to an ONNX file: x[batch, 16] -> Mul by a shared
16-element weight -> Relu -> Mul -> Relu ... The model a memory cap is tried on (issue 45: a
10^6-node graph under `ulimit -v` must end in one "memplan: out of memory: ..." line, exit 2, not a
signal or an internal error; docs/measurements.md has the command). Not checked in: 10^6 nodes
are ~40 MB.

Usage: /usr/bin/python3 tools/make_chain_model.py OUT.onnx [--nodes N]   (Debian's python3-onnx)
"""
import argparse

from onnx import TensorProto, helper, save


def chain_model(nodes):
    weight = helper.make_tensor("w", TensorProto.FLOAT, [16], [0.5] * 16)
    graph_nodes = []
    previous = "x"
    for i in range(nodes):
        op, inputs = ("Mul", [previous, "w"]) if i % 2 == 0 else ("Relu", [previous])
        graph_nodes.append(helper.make_node(op, inputs, [f"v{i}"], name=f"n{i}"))
        previous = f"v{i}"
    graph = helper.make_graph(
        graph_nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, ["batch", 16])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--nodes", type=int, default=1_000_000)
    args = parser.parse_args()
    save(chain_model(args.nodes), args.out)


if __name__ == "__main__":
    main()
