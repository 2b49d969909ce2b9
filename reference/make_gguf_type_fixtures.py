#!/usr/bin/env python3
"""Writes the fixtures of every GGUF tensor type headscope reads into
tests/fixtures/gguf:

- `blocks.gguf`: for each type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0,
  Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS) a 4 × 256 tensor
  named after the type, of random blocks (random bytes with their float16
  scale fields set to finite values of either sign, so that no value is
  NaN or infinite), and `TYPE.dequantized`, gguf-py's
  `gguf.quants.dequantize` of it in float32 (what transformers' GGUF loader
  calls): tests/gguf.rs dequantizes the same bytes through headscope and
  asserts bit equality.
- `mixed.gguf`: a tiny random llama written as llama.cpp's quantizer writes
  a Q4_K_M file of a small model: Q4_K matrices with Q6_K for some, and
  Q5_0 / Q8_0 (Q4_K's and Q6_K's fallbacks) for `ffn_down`, whose rows (the
  feed-forward width, 288) are not a multiple of 256; one layer in IQ4_XS
  and IQ4_NL, one in the Q2_K/Q3_K/Q5_K/Q5_1 of the smaller K mixes, the
  embedding table in IQ4_XS. Block bytes are random with sane scales, as in
  make_gguf_fixtures.py. `mixed.weights.json` holds, for each tensor
  transformers' GGUF loading reads, its shape and the SHA-256 of its
  float32 bytes in transformers' state dict (the rotary rows of q and k
  back in Hugging Face's order); `mixed.json`, `mixed.npz` and
  `mixed.tokens.json` its analysis of tests/fixtures/gguf/text.txt, as
  make_gguf_fixtures.py writes for llama.gguf.

    python reference/make_gguf_type_fixtures.py [blocks] [mixed]

`blocks` needs only gguf (made with gguf 0.19.0) and numpy; `mixed` also
torch, transformers and tokenizers (the Python environment of
scripts/python-env.sh, with `pip install gguf==0.19.0` added).
"""
import hashlib
import json
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFWriter
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "fixtures", "gguf")
ROWS, COLUMNS = 4, 256

# Per block type: [(offset of an f16 scale in the block, its magnitude)].
# The other bytes (quants, packed sub-scales) stay random.
SCALES = {
    Q.Q8_0: [(0, 1e-3)], Q.Q4_0: [(0, 1e-2)], Q.Q4_1: [(0, 1e-2), (2, 5e-2)],
    Q.Q5_0: [(0, 1e-2)], Q.Q5_1: [(0, 1e-2), (2, 5e-2)],
    Q.Q2_K: [(80, 1e-2), (82, 1e-3)], Q.Q3_K: [(108, 1e-3)],
    Q.Q4_K: [(0, 2e-4), (2, 1e-4)], Q.Q5_K: [(0, 1e-4), (2, 1e-4)], Q.Q6_K: [(208, 2e-5)],
    Q.IQ4_NL: [(0, 1e-3)], Q.IQ4_XS: [(0, 1e-4)],
}
FLOATS = {Q.F32: np.float32, Q.F16: np.float16}


def random_blocks(rng, qtype, rows, columns, signed=True):
    """Random bytes of rows × columns values in `qtype`, scales set to
    `magnitude × [0.5, 1.5)`, of random sign when `signed`."""
    block, size = GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(rows * columns // block, size), dtype=np.uint8)
    for offset, magnitude in SCALES[qtype]:
        scale = rng.uniform(0.5, 1.5, size=blocks.shape[0]) * magnitude
        if signed:
            scale *= rng.choice([-1.0, 1.0], size=blocks.shape[0])
        blocks[:, offset:offset + 2] = scale.astype(np.float16).view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, -1)


def stored(rng, qtype, rows, columns, scale=1.0):
    """A rows × columns tensor in `qtype`: the array and the raw dtype to
    hand GGUFWriter (None for plain floats)."""
    if qtype in FLOATS:
        return (rng.normal(0, scale, (rows, columns))).astype(FLOATS[qtype]), None
    if qtype == Q.BF16:
        values = rng.normal(0, scale, (rows, columns)).astype(np.float32)
        return (values.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8).reshape(rows, -1), qtype
    return random_blocks(rng, qtype, rows, columns), qtype


def add(writer, name, array, qtype):
    if qtype is None:
        writer.add_tensor(name, array)
    else:
        writer.add_tensor(name, array, raw_dtype=qtype)


def make_blocks():
    rng = np.random.default_rng(34)
    path = os.path.join(OUT, "blocks.gguf")
    w = GGUFWriter(path, "blocks")
    w.add_name("random blocks of every type headscope reads")
    types = [Q.F32, Q.F16, Q.BF16, *SCALES]
    for qtype in types:
        array, raw = stored(rng, qtype, ROWS, COLUMNS)
        add(w, qtype.name, array, raw)
        values = dequantize(array, qtype)
        values = np.asarray(values, dtype=np.float32).reshape(ROWS, COLUMNS)
        assert np.isfinite(values).all(), qtype.name
        w.add_tensor(f"{qtype.name}.dequantized", values)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {os.path.getsize(path)} bytes, {len(types)} types")


# The mixed file: Q4_K_M's rule, per layer, as llama.cpp's quantizer
# applies it to a small model (`use_more_bits` layers get Q6_K for attn_v
# and ffn_down; a type whose 256-wide super-blocks do not fit the rows
# falls back: Q4_K → Q5_0, Q6_K → Q8_0, Q5_K → Q5_1), then one IQ4 layer
# and one of the smaller K mixes.
HIDDEN, FFN, HEADS, KV_HEADS, LAYERS = 256, 288, 4, 2, 3
HEAD_DIM = HIDDEN // HEADS
MIXED_TYPES = {
    "attn_q": (Q.Q4_K, Q.IQ4_XS, Q.Q3_K), "attn_k": (Q.Q4_K, Q.IQ4_NL, Q.Q2_K),
    "attn_v": (Q.Q6_K, Q.IQ4_XS, Q.Q5_K), "attn_output": (Q.Q4_K, Q.IQ4_NL, Q.Q3_K),
    "ffn_gate": (Q.Q4_K, Q.IQ4_XS, Q.Q2_K), "ffn_up": (Q.Q4_K, Q.IQ4_NL, Q.Q3_K),
    "ffn_down": (Q.Q8_0, Q.Q5_0, Q.Q5_1),
}
SHAPES = {"attn_q": (HEADS * HEAD_DIM, HIDDEN), "attn_k": (KV_HEADS * HEAD_DIM, HIDDEN),
          "attn_v": (KV_HEADS * HEAD_DIM, HIDDEN), "attn_output": (HIDDEN, HEADS * HEAD_DIM),
          "ffn_gate": (FFN, HIDDEN), "ffn_up": (FFN, HIDDEN), "ffn_down": (HIDDEN, FFN)}
# Scales of the mixed file's blocks: weights of a few hundredths, as in a
# trained small model, so that the activations stay in range.
MIXED_SCALES = {
    Q.Q8_0: [(0, 5e-4)], Q.Q5_0: [(0, 4e-3)], Q.Q5_1: [(0, 4e-3), (2, 6e-2)],
    Q.Q2_K: [(80, 2e-3), (82, 2e-3)], Q.Q3_K: [(108, 2e-4)],
    Q.Q4_K: [(0, 2e-4), (2, 1e-4)], Q.Q5_K: [(0, 1e-4), (2, 1e-4)], Q.Q6_K: [(208, 2e-5)],
    Q.IQ4_NL: [(0, 5e-4)], Q.IQ4_XS: [(0, 2e-5)],
}


def make_mixed():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    sys.path.insert(0, os.path.dirname(__file__))
    from make_gguf_fixtures import TRICKY, sentencepiece_fields
    from make_decoder_fixtures import reference, write_fixture
    import tempfile

    SCALES.clear()
    SCALES.update(MIXED_SCALES)
    rng = np.random.default_rng(7)
    name = "mixed"
    path = os.path.join(OUT, f"{name}.gguf")
    fields = sentencepiece_fields()
    w = GGUFWriter(path, "llama")
    w.add_name("tiny llama, Q4_K_M-like mix")
    w.add_block_count(LAYERS)
    w.add_context_length(256)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(HEAD_DIM)
    fields(w)

    def norm(tensor_name):
        w.add_tensor(tensor_name, rng.normal(1, 0.1, HIDDEN).astype(np.float32))

    # The embedding table in IQ4_XS, rows gathered from the blocks.
    add(w, "token_embd.weight", *stored(rng, Q.IQ4_XS, fields.vocab, HIDDEN))
    for layer in range(LAYERS):
        norm(f"blk.{layer}.attn_norm.weight")
        norm(f"blk.{layer}.ffn_norm.weight")
        for kind, (rows, columns) in SHAPES.items():
            add(w, f"blk.{layer}.{kind}.weight", *stored(rng, MIXED_TYPES[kind][layer], rows, columns))
    norm("output_norm.weight")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    model = AutoModelForCausalLM.from_pretrained(OUT, gguf_file=f"{name}.gguf", attn_implementation="eager",
                                                 dtype=torch.float32)
    model.eval()
    weights = {}
    for key, tensor in model.state_dict().items():
        if key == "lm_head.weight":
            continue  # tied: the embedding table again
        values = tensor.detach().to(torch.float32).contiguous().numpy()
        weights[key] = {"shape": list(values.shape),
                        "sha256": hashlib.sha256(values.astype("<f4").tobytes()).hexdigest()}
    with open(os.path.join(OUT, f"{name}.weights.json"), "w") as out:
        json.dump(weights, out, indent=1, sort_keys=True)
    tokenizer = AutoTokenizer.from_pretrained(OUT, gguf_file=f"{name}.gguf")
    with open(os.path.join(OUT, f"{name}.tokens.json"), "w", encoding="utf-8") as out:
        json.dump([{"text": t, "ids": tokenizer(t).input_ids} for t in TRICKY], out, indent=1, ensure_ascii=False)
    with tempfile.TemporaryDirectory() as folder:
        tokenizer.backend_tokenizer.save(os.path.join(folder, "tokenizer.json"))
        write_fixture(os.path.join(OUT, name), *reference(folder, os.path.join(OUT, "text.txt"), model))
    print(f"{path}: {os.path.getsize(path)} bytes, {len(weights)} tensors")


def main():
    os.makedirs(OUT, exist_ok=True)
    which = sys.argv[1:] or ["blocks", "mixed"]
    if "blocks" in which:
        make_blocks()
    if "mixed" in which:
        make_mixed()


if __name__ == "__main__":
    main()
