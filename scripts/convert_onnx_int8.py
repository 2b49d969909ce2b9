#!/usr/bin/env python3
"""Converts a BERT encoder exported to ONNX with onnxruntime's dynamic INT8
quantization back into a float32 model.safetensors with the tensor names of
Hugging Face's BertModel.

What the export holds, and how each part comes back:
- the three embedding tables as uint8 with one scale and zero point each,
  read through DequantizeLinear: weight = (q - zero_point) * scale;
- every Linear weight as an int8 initializer `X_quantized` [in, out] with a
  per-column `X_scale` and `X_zero_point`, used by a MatMulInteger whose
  result is cast, multiplied by (input scale x X_scale) and added to the
  bias. The weights of a plain PyTorch export are anonymous (`onnx::MatMul_N`),
  so each one takes its name from the bias initializer of that Add
  (`encoder.layer.0.attention.self.query.bias` names
  `encoder.layer.0.attention.self.query.weight`), transposed to [out, in];
- biases and LayerNorm parameters as float32 initializers under their own
  names.
The pooler is not in the export (its output is last_hidden_state only).

    convert_onnx_int8.py model.onnx config.json model.safetensors

Needs the `onnx` and `numpy` packages. Fails, naming what is missing, when
the graph does not have this shape or a BertModel tensor is not found.
"""
import json
import re
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def consumers_of(graph):
    by_input = {}
    for node in graph.node:
        for name in node.input:
            by_input.setdefault(name, []).append(node)
    return by_input


def only_consumer(by_input, name, op_type):
    nodes = by_input.get(name, [])
    if len(nodes) != 1 or nodes[0].op_type != op_type:
        found = [n.op_type for n in nodes]
        raise SystemExit(f"convert: expected one {op_type} after {name}, found {found}")
    return nodes[0]


def dequantize(q, scale, zero_point):
    """(q - zero_point) * scale in float32; scale and zero point broadcast per column."""
    return ((q.astype(np.float32) - zero_point.astype(np.float32)) * scale.astype(np.float32)).astype(np.float32)


def linear_weights(graph, initializers):
    """Every MatMulInteger's weight, dequantized, transposed and named by its bias."""
    by_input = consumers_of(graph)
    products = {o: n for n in graph.node for o in n.output}
    weights = {}
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        quantized = node.input[1]
        if quantized not in initializers or not quantized.endswith("_quantized"):
            raise SystemExit(f"convert: MatMulInteger {node.name} has no quantized weight initializer")
        base = quantized[: -len("_quantized")]
        scale, zero_point = initializers[base + "_scale"], initializers[base + "_zero_point"]
        if node.input[3] != base + "_zero_point":
            raise SystemExit(f"convert: {node.name} uses zero point {node.input[3]}, not {base}_zero_point")
        cast = only_consumer(by_input, node.output[0], "Cast")
        mul = only_consumer(by_input, cast.output[0], "Mul")
        # the Mul's factor is (dynamic input scale) x (this weight's scale)
        factor = products.get([i for i in mul.input if i != cast.output[0]][0])
        if factor is None or factor.op_type != "Mul" or base + "_scale" not in factor.input:
            raise SystemExit(f"convert: {node.name}'s result is not scaled by {base}_scale")
        add = only_consumer(by_input, mul.output[0], "Add")
        biases = [i for i in add.input if i in initializers and i.endswith(".bias")]
        if len(biases) != 1:
            raise SystemExit(f"convert: the Add after {node.name} has no named bias")
        name = biases[0][: -len(".bias")] + ".weight"
        weight = dequantize(initializers[quantized], scale, zero_point)  # [in, out]
        weights[name] = np.ascontiguousarray(weight.T)  # Linear layout [out, in]
    return weights


def embedding_tables(graph, initializers):
    """The DequantizeLinear'd embedding tables, each under its own name."""
    tables = {}
    for node in graph.node:
        if node.op_type != "DequantizeLinear":
            continue
        scale_name = node.input[1]
        if not scale_name.endswith(".weight_scale"):
            raise SystemExit(f"convert: DequantizeLinear {node.name} scale {scale_name} names no weight")
        name = scale_name[: -len("_scale")]
        tables[name] = dequantize(
            initializers[name + "_quantized"], initializers[scale_name], initializers[node.input[2]]
        )
    return tables


def expected_names(config):
    names = ["embeddings." + e + "_embeddings.weight" for e in ("word", "position", "token_type")]
    names += ["embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"]
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        for linear in ("attention.self.query", "attention.self.key", "attention.self.value",
                       "attention.output.dense", "intermediate.dense", "output.dense"):
            names += [p + linear + ".weight", p + linear + ".bias"]
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            names += [p + norm + ".weight", p + norm + ".bias"]
    return names


def write_safetensors(path, tensors):
    """The safetensors format: u64 header length, JSON header, raw little-endian data."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for blob in blobs:
            out.write(blob)


def main():
    if len(sys.argv) != 4:
        raise SystemExit("usage: convert_onnx_int8.py model.onnx config.json model.safetensors")
    onnx_path, config_path, out_path = sys.argv[1:4]
    config = json.load(open(config_path))
    graph = onnx.load(onnx_path).graph
    initializers = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    tensors = {name: value for name, value in initializers.items()
               if value.dtype == np.float32 and re.search(r"\.(weight|bias)$", name)}
    tensors.update(embedding_tables(graph, initializers))
    tensors.update(linear_weights(graph, initializers))
    expected = expected_names(config)
    missing = [n for n in expected if n not in tensors]
    if missing:
        raise SystemExit(f"convert: {len(missing)} BertModel tensors not found, e.g. {missing[:3]}")
    tensors = {n: tensors[n] for n in expected}
    hidden = config["hidden_size"]
    for layer in range(config["num_hidden_layers"]):
        shape = tensors[f"encoder.layer.{layer}.intermediate.dense.weight"].shape
        if shape != (config["intermediate_size"], hidden):
            raise SystemExit(f"convert: layer {layer} intermediate weight has shape {shape}")
    write_safetensors(out_path, tensors)
    print(f"convert: wrote {len(tensors)} float32 tensors to {out_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
