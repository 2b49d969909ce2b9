#!/usr/bin/env python3
"""Checks scripts/convert_onnx_int8.py's output against onnxruntime on the
INT8 ONNX export it came from (the reference venv plus `pip install onnx
onnxruntime`):

1. every quantized Linear: onnxruntime's own input and output of the
   MatMulInteger + scale + bias chain, against that input, quantized as
   DynamicQuantizeLinear does (uint8 per tensor), times the converted weight
   transposed, plus the converted bias; and every dequantized embedding row
   onnxruntime gathers, against the converted table. These isolate the
   conversion: they agree to float rounding when it is right.
2. end to end: last_hidden_state of transformers' BertModel on the converted
   folder against onnxruntime on model.onnx. Close, not equal: onnxruntime
   also rounds every Linear's input to 8 bits, the float model does not.

    check_onnx_conversion.py MODEL_DIR model.onnx ["a sentence"]
"""
import json
import struct
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper
from tokenizers import Tokenizer
from transformers import BertModel


def safetensors_reader(path):
    raw = open(path, "rb").read()
    length = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + length])

    def tensor(name):
        start, end = header[name]["data_offsets"]
        data = raw[8 + length + start: 8 + length + end]
        return np.frombuffer(data, dtype="<f4").reshape(header[name]["shape"])
    return tensor


def dynamic_quantize(x):
    """DynamicQuantizeLinear then back to float: uint8, range always holding 0."""
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    scale = np.float32((hi - lo) / np.float32(255))
    zero = np.clip(np.round(-lo / scale), 0, 255)
    return ((np.clip(np.round(x / scale) + zero, 0, 255) - zero) * scale).astype(np.float32)


def check_tensors(graph_model, feeds, tensor):
    graph = graph_model.graph
    producer = {o: n for n in graph.node for o in n.output}
    consumers = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    linears = []
    for node in graph.node:
        if node.op_type == "MatMulInteger":
            x = producer[node.input[0]].input[0]
            cast = consumers[node.output[0]][0]
            add = consumers[consumers[cast.output[0]][0].output[0]][0]
            bias = next(i for i in add.input if i.endswith(".bias"))
            linears.append((x, add.output[0], bias[: -len(".bias")]))
    gathers = [n for n in graph.node if n.op_type == "DequantizeLinear"]
    wanted = sorted({x for x, _, _ in linears} | {y for _, y, _ in linears} | {n.output[0] for n in gathers})
    for name in wanted:
        graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    session = ort.InferenceSession(graph_model.SerializeToString(), providers=["CPUExecutionProvider"])
    values = dict(zip(wanted, session.run(wanted, feeds)))
    worst = 0.0
    for x, y, name in linears:
        ours = dynamic_quantize(values[x]).astype(np.float64) @ tensor(name + ".weight").T.astype(np.float64)
        ours += tensor(name + ".bias")
        worst = max(worst, float(np.abs(ours - values[y]).max() / np.abs(values[y]).max()))
    ids = feeds["input_ids"][0]
    rows = {"embeddings.word_embeddings.weight": ids, "embeddings.position_embeddings.weight": np.arange(len(ids)),
            "embeddings.token_type_embeddings.weight": np.zeros_like(ids)}
    embedding_worst = 0.0
    for node in gathers:
        table = node.input[1][: -len("_scale")]
        gathered = values[node.output[0]].reshape(len(ids), -1)
        embedding_worst = max(embedding_worst, float(np.abs(gathered - tensor(table)[rows[table]]).max()))
    print(f"{len(linears)} quantized Linears: largest difference relative to the output {worst:.2e}")
    print(f"{len(gathers)} embedding tables: largest difference {embedding_worst:.2e}")
    return worst <= 1e-5 and embedding_worst == 0.0


def main():
    folder, onnx_path = sys.argv[1:3]
    text = sys.argv[3] if len(sys.argv) > 3 else \
        "The harbour was quiet at dawn, and the fishing boats rocked gently against the pier."
    tokenizer = Tokenizer.from_file(f"{folder}/tokenizer.json")
    tokenizer.no_padding()
    tokenizer.no_truncation()
    ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    exact = check_tensors(onnx.load(onnx_path), feeds, safetensors_reader(f"{folder}/model.safetensors"))

    model = BertModel.from_pretrained(folder, attn_implementation="eager", add_pooling_layer=False).eval()
    with torch.no_grad():
        ours = model(torch.from_numpy(ids)).last_hidden_state[0].numpy()
    theirs = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(None, feeds)[0][0]
    cosine = (ours * theirs).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    print(f"last_hidden_state, {ids.shape[1]} tokens: largest |transformers - onnxruntime| "
          f"{np.abs(ours - theirs).max():.4f} (largest |value| {np.abs(theirs).max():.2f}), "
          f"mean {np.abs(ours - theirs).mean():.4f}; cosine per token min {cosine.min():.4f} mean {cosine.mean():.4f}")
    sys.exit(0 if exact else 1)


if __name__ == "__main__":
    main()
