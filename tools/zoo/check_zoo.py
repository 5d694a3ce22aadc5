#!/usr/bin/python3
"""Independent check of the models memplan-zoo writes (run with Debian's /usr/bin/python3).

For every <model>.onnx in the zoo directory:
  * onnx.checker with full_check (strict shape inference) on the ModelProto (the weight data file
    is deliberately absent, so the model is loaded with load_external_data=False);
  * the trainable parameter count, computed from initializer metadata alone, equals the published
    count; BatchNorm running statistics (inputs 3 and 4 of BatchNormalization, named
    "*.running_mean" / "*.running_var") are buffers and are not counted;
  * external data: every initializer is EXTERNAL in "<model>.onnx.data" with an offset and a
    length equal to its byte size, and no two tensors overlap;
  * structure at small sizes: the symbolic dims are bound (batch=2, seq=8) and ONNX shape
    inference with data propagation must infer a concrete shape for every float tensor and the
    expected output shapes. This proves the Shape->Gather->Concat Reshape targets, the causal
    mask Slice and the head split are consistent, without a runtime.
  * with --torch, also compares the counts with torchvision's own models (resnet18, resnet50,
    vit_b_16), an implementation independent of both this script and memplan-zoo, and for the
    ResNets compares node names, op types and initializers with a training-mode torch.onnx
    export (opset 17) of the torchvision model.

Usage: check_zoo.py [ZOO_DIR] [--torch]      (ZOO_DIR defaults to build/zoo)
"""

import argparse
import contextlib
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

# Sum of p.numel() over model.parameters(): tied weights once, buffers excluded.
PUBLISHED = {
    # (784*1024 + 1024) + (1024*1024 + 1024) + (1024*10 + 10)
    "mlp": 1_863_690,
    # https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet18.html
    "resnet18": 11_689_512,
    # https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet50.html
    "resnet50": 25_557_032,
    # bert-base-uncased BertModel (Devlin et al. 2018, "110M"): 23,837,184 embeddings
    # + 12 x 7,087,872 + 590,592 pooler
    "bert_base": 109_482_240,
    # GPT-2 small (Radford et al. 2019, "117M"; HF num_parameters() = 124,439,808)
    "gpt2_small": 124_439_808,
    # GPT-2 XL ("1542M"): 82,049,600 embeddings + 48 x 30,740,800 + 3,200 ln_f
    "gpt2_xl": 1_557_611_200,
    # https://pytorch.org/vision/stable/models/generated/torchvision.models.vit_b_16.html
    "vit_b16": 86_567_656,
    # Meta-Llama-3-8B (LlamaForCausalLM): 2 x 128256*4096 (embed_tokens, untied lm_head)
    # + 32 x 218,112,000 + 4096 final norm
    "llama3_8b": 8_030_261_248,
    # Mistral-7B-v0.1: 2 x 32000*4096 + 32 x 218,112,000 + 4096
    "mistral_7b": 7_241_732_096,
}

# Concrete output shapes for batch=2, seq=8.
SMALL_BINDINGS = {"batch": 2, "seq": 8}
EXPECTED_OUTPUTS = {
    "mlp": [[2, 10]],
    "resnet18": [[2, 1000]],
    "resnet50": [[2, 1000]],
    "bert_base": [[2, 8, 768], [2, 768]],
    "gpt2_small": [[2, 8, 50257]],
    "gpt2_xl": [[2, 8, 50257]],
    "vit_b16": [[2, 1000]],
    "llama3_8b": [[2, 8, 128256]],
    "mistral_7b": [[2, 8, 32000]],
}

FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}
ITEM_SIZE = {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.DOUBLE: 8,
             TensorProto.BFLOAT16: 2, TensorProto.BOOL: 1, TensorProto.INT64: 8}


def numel(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def running_stat_names(graph):
    """Initializers used as BatchNormalization running mean/var (inputs 3 and 4)."""
    names = set()
    for node in graph.node:
        if node.op_type == "BatchNormalization":
            names.update(node.input[3:5])
    return names


def trainable_count(model):
    buffers = running_stat_names(model.graph)
    for name in buffers:
        if not (name.endswith(".running_mean") or name.endswith(".running_var")):
            raise AssertionError(f"running statistic {name} does not follow the naming convention")
    return sum(numel(t.dims) for t in model.graph.initializer
               if t.data_type in FLOAT_TYPES and t.name not in buffers)


def check_external_data(name, model):
    ranges = []
    for t in model.graph.initializer:
        entries = {e.key: e.value for e in t.external_data}
        assert t.data_location == TensorProto.EXTERNAL, f"{t.name} is not external"
        assert entries.get("location") == f"{name}.onnx.data", f"{t.name}: {entries}"
        offset, length = int(entries["offset"]), int(entries["length"])
        assert length == numel(t.dims) * ITEM_SIZE[t.data_type], f"{t.name} length {length}"
        ranges.append((offset, offset + length, t.name))
    ranges.sort()
    for (_, end, a), (begin, _, b) in zip(ranges, ranges[1:]):
        assert end <= begin, f"{a} overlaps {b}"


def _int_values(graph, shapes):
    """Evaluates the integer shape sub-graphs (Constant, Shape, Gather, Unsqueeze, Concat, Sub,
    Range) with concrete shapes: a tiny interpreter independent of ONNX's data propagation."""
    values = {}
    for node in graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        op = node.op_type
        if op == "Constant":
            values[node.output[0]] = numpy_helper.to_array(attrs["value"])
            continue
        if op == "Shape":
            shape = shapes.get(node.input[0])
            if shape is not None:
                values[node.output[0]] = np.array(shape, dtype=np.int64)
            continue
        ins = [values.get(i) for i in node.input]
        if any(x is None for x in ins):
            continue
        if op == "Gather":
            values[node.output[0]] = np.take(ins[0], ins[1], axis=attrs.get("axis", 0))
        elif op == "Unsqueeze":
            values[node.output[0]] = np.expand_dims(ins[0], tuple(int(a) for a in ins[1]))
        elif op == "Concat":
            values[node.output[0]] = np.concatenate(ins, axis=attrs["axis"])
        elif op == "Sub":
            values[node.output[0]] = ins[0] - ins[1]
        elif op == "Range":
            values[node.output[0]] = np.arange(ins[0], ins[1], ins[2], dtype=np.int64)
    return values


def _missing_shape(node, shapes, values):
    """The output shape of a Range or Slice that onnx 1.12 cannot infer from computed bounds."""
    if node.op_type == "Range" and node.output[0] in values:
        return list(values[node.output[0]].shape)
    if node.op_type == "Slice" and all(i in values for i in node.input[1:]) \
            and shapes.get(node.input[0]) is not None:
        dims = list(shapes[node.input[0]])
        starts, ends, axes, steps = (values[i] for i in node.input[1:5])
        for begin, end, axis, step in zip(starts, ends, axes, steps):
            dims[axis] = len(range(*slice(int(begin), int(end), int(step)).indices(dims[axis])))
        return dims
    return None


def check_small_shapes(name, model):
    small = onnx.ModelProto()
    small.CopyFrom(model)
    for value in list(small.graph.input) + list(small.graph.output):
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param"):
                dim.dim_value = SMALL_BINDINGS[dim.dim_param]
    types = {t.name: t.data_type for t in small.graph.initializer}
    # onnx 1.12 infers Range and Slice only from constant bounds, not from bounds computed by
    # Shape sub-graphs; the check computes those shapes itself and feeds them back, until every
    # tensor is known.
    while True:
        inferred = shape_inference.infer_shapes(small, check_type=True, strict_mode=True,
                                                data_prop=True)
        infos = list(inferred.graph.input) + list(inferred.graph.value_info) + \
            list(inferred.graph.output)
        shapes = {t.name: list(t.dims) for t in small.graph.initializer}
        for info in infos:
            tensor_type = info.type.tensor_type
            types[info.name] = tensor_type.elem_type
            dims = tensor_type.shape.dim
            if tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
                shapes[info.name] = [d.dim_value for d in dims]
        values = _int_values(small.graph, shapes)
        added = False
        for node in small.graph.node:
            if node.op_type in ("Range", "Slice") and node.output[0] not in shapes:
                dims = _missing_shape(node, shapes, values)
                if dims is not None:
                    elem_type = TensorProto.INT64 if node.op_type == "Range" \
                        else types[node.input[0]]
                    small.graph.value_info.append(
                        helper.make_tensor_value_info(node.output[0], elem_type, dims))
                    added = True
        if not added:
            break

    unresolved = [out for node in small.graph.node for out in node.output
                  if types.get(out) in FLOAT_TYPES and out not in shapes]
    unresolved += [out for node in small.graph.node for out in node.output if out not in types]
    assert not unresolved, f"shapes not inferred: {unresolved[:5]} ({len(unresolved)} in all)"
    outputs = [shapes.get(o.name) for o in small.graph.output]
    assert outputs == EXPECTED_OUTPUTS[name], f"outputs {outputs}"


def check_without_data_file(name, model):
    """onnx.checker with full_check, although the weight data file is absent.

    onnx 1.12's checker stat()s every external data location (relative to the working directory
    for a ModelProto) and fails when the file is missing; it never reads it. So the check runs in
    an empty directory holding an empty "<model>.onnx.data": everything else is checked as usual.
    """
    with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch) \
            if hasattr(contextlib, "chdir") else _chdir(scratch):
        open(f"{name}.onnx.data", "wb").close()
        onnx.checker.check_model(model, full_check=True)


@contextlib.contextmanager
def _chdir(path):
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def torchvision_counts():
    import torchvision  # only with --torch; CI does not need torch
    models = {"resnet18": torchvision.models.resnet18(), "resnet50": torchvision.models.resnet50(),
              "vit_b16": torchvision.models.vit_b_16()}
    return {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}


def compare_with_torch_export(name, model, scratch):
    """For the CNNs, a real training-mode torch.onnx export of the torchvision model must have
    the same node names (module paths), op types and initializer names as the zoo's model."""
    import torch
    import torchvision
    reference = getattr(torchvision.models, name)()
    path = os.path.join(scratch, f"{name}.onnx")
    torch.onnx.export(reference, torch.randn(1, 3, 224, 224), path, opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["input"], dynamic_axes={"input": {0: "batch"}})
    exported = onnx.load(path, load_external_data=False)
    nodes = lambda m: sorted((n.name, n.op_type, len(n.output)) for n in m.graph.node)
    initializers = lambda m: sorted((t.name, tuple(t.dims)) for t in m.graph.initializer)
    assert nodes(model) == nodes(exported), "node names/op types differ from torch.onnx.export"
    assert initializers(model) == initializers(exported), "initializers differ from the export"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zoo_dir", nargs="?", default="build/zoo")
    parser.add_argument("--torch", action="store_true", help="compare with torchvision counts")
    args = parser.parse_args()

    reference = torchvision_counts() if args.torch else {}
    failures = 0
    for name, published in PUBLISHED.items():
        path = os.path.join(args.zoo_dir, f"{name}.onnx")
        try:
            model = onnx.load(path, load_external_data=False)
            check_without_data_file(name, model)
            count = trainable_count(model)
            assert count == published, f"{count} parameters, published {published}"
            if name in reference:
                assert count == reference[name], f"torchvision counts {reference[name]}"
            if args.torch and name.startswith("resnet"):
                with tempfile.TemporaryDirectory() as scratch:
                    compare_with_torch_export(name, model, scratch)
            check_external_data(name, model)
            check_small_shapes(name, model)
            print(f"ok   {name:11s} {count:>13,d} parameters, {len(model.graph.node)} nodes")
        except Exception as error:  # report every model, not just the first failure
            failures += 1
            print(f"FAIL {name}: {error}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
