#!/usr/bin/env python3
"""Writes a copy of an ONNX model with every external-data initializer stored inline (raw_data).

    make_inline_model.py IN.onnx OUT.onnx

The zoo (memplan-zoo) writes its models with external data whose file is absent; this turns one
into the kind of file a plain torch.onnx.export of a model under 2 GB writes: one .onnx with its
weights inside. The weights are a fixed non-zero byte pattern (the analysis never reads them).
It works on the protobuf wire format directly, so it needs no onnx or protobuf Python package.
"""
import sys

MODEL_GRAPH, GRAPH_INITIALIZER = 7, 5
TENSOR_RAW_DATA, TENSOR_EXTERNAL_DATA, TENSOR_DATA_LOCATION = 9, 13, 14


def varint(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def encode_varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def fields(data):
    """Yields (number, wire_type, whole field bytes, payload bytes or varint value)."""
    i = 0
    while i < len(data):
        start = i
        tag, i = varint(data, i)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, i = varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        elif wire == 2:
            length, i = varint(data, i)
            value, i = data[i:i + length], i + length
        else:
            raise ValueError("unsupported wire type %d" % wire)
        yield number, wire, data[start:i], value


def delimited(number, payload):
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def external_length(tensor):
    for number, _, _, value in fields(tensor):
        if number == TENSOR_EXTERNAL_DATA:
            entry = dict((n, v) for n, _, _, v in fields(value))
            if entry.get(1) == b"length":
                return int(entry[2])
    return None


def inline_tensor(tensor, pattern):
    length = external_length(tensor)
    if length is None:
        return tensor, 0
    kept = b"".join(whole for number, _, whole, _ in fields(tensor)
                    if number not in (TENSOR_EXTERNAL_DATA, TENSOR_DATA_LOCATION))
    raw = (pattern * (length // len(pattern) + 1))[:length]
    return kept + delimited(TENSOR_RAW_DATA, raw), length


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    pattern = bytes(range(1, 256)) * 64
    inlined = 0
    with open(sys.argv[2], "wb") as out:
        for number, wire, whole, value in fields(data):
            if number != MODEL_GRAPH or wire != 2:
                out.write(whole)
                continue
            graph = bytearray()
            for g_number, g_wire, g_whole, g_value in fields(value):
                if g_number == GRAPH_INITIALIZER and g_wire == 2:
                    tensor, length = inline_tensor(g_value, pattern)
                    inlined += length
                    graph += delimited(GRAPH_INITIALIZER, tensor)
                else:
                    graph += g_whole
            out.write(delimited(MODEL_GRAPH, bytes(graph)))
    print("%s: %d weight bytes inline" % (sys.argv[2], inlined))


if __name__ == "__main__":
    main()
