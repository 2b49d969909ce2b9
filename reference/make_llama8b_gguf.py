#!/usr/bin/env python3
"""Writes a GGUF file of Meta's Llama 3 8B shape (32 layers, 32 query and 8
key/value heads, hidden 4096, feed-forward 14336, vocabulary 128,256) with
random weights in Q4_0 or Q8_0 blocks (norms in F32), or in llama.cpp's
Q4_K_M mix of a Llama 3.1 8B (Q4_K, with Q6_K for `attn_v` and `ffn_down`
in the layers llama.cpp's `use_more_bits` picks, for the embeddings and
the output) with Llama 3.1's `rope_freqs` (factor 8 over 8,192 positions),
for `headscope bench` on a quantized 8B model. The blocks are random bytes
with sane scales (no float weights are made, so it takes seconds and
little memory); the tokenizer is SmolLM2's, copied from its GGUF file, its
list padded to the embedding table's rows with reserved control tokens as
Llama 3's has (llama.cpp refuses a file whose list is shorter).

    .venv-ref/bin/python reference/make_llama8b_gguf.py SMOLLM2.gguf OUT.gguf [Q4_0|Q8_0|Q4_K_M]

Needs numpy and gguf.
"""
import math
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES

sys.path.insert(0, os.path.dirname(__file__))
from make_gguf_type_fixtures import random_blocks

LAYERS, HIDDEN, FFN, HEADS, KV_HEADS, VOCAB = 32, 4096, 14336, 32, 8, 128256
HEAD_DIM = HIDDEN // HEADS
# bytes per block of 32 values, and the scale of its f16 factor
BLOCKS = {"Q4_0": (Q.Q4_0, 18, 2e-3), "Q8_0": (Q.Q8_0, 34, 1e-4)}


def use_more_bits(layer):
    """llama.cpp's choice of the Q4_K_M layers whose attn_v and ffn_down get Q6_K."""
    return layer < LAYERS // 8 or layer >= 7 * LAYERS // 8 or (layer - LAYERS // 8) % 3 == 2


def llama31_factors():
    """`rope_freqs` as llama.cpp's converter computes it for Llama 3.1 (rope_scaling llama3)."""
    base, factor, low, high, old = 500000.0, 8.0, 1.0, 4.0, 8192
    factors = []
    for i in range(0, HEAD_DIM, 2):
        wavelen = 2 * math.pi * base ** (i / HEAD_DIM)
        if wavelen < old / high:
            factors.append(1.0)
        elif wavelen > old / low:
            factors.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def main():
    source, out = sys.argv[1], sys.argv[2]
    mix = sys.argv[3] if len(sys.argv) > 3 else "Q4_0"
    k_mix = mix == "Q4_K_M"
    qtype, block_bytes, scale = BLOCKS["Q4_0" if k_mix else mix]
    rng = np.random.default_rng(0)
    tok = GGUFReader(source)
    w = GGUFWriter(out, "llama")
    w.add_name("random llama-3-8b shape")
    w.add_block_count(LAYERS)
    w.add_context_length(8192)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    tokens = list(tok.fields["tokenizer.ggml.tokens"].contents())
    types = list(tok.fields["tokenizer.ggml.token_type"].contents())
    reserved = range(VOCAB - len(tokens))
    tokens += [f"<|reserved_special_token_{i}|>" for i in reserved]
    types += [3 for _ in reserved]  # CONTROL, as llama.cpp's converter writes them
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(tok.fields["tokenizer.ggml.merges"].contents())
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)

    def blocks(rows, cols):
        data = rng.integers(0, 256, size=(rows, cols // 32, block_bytes), dtype=np.uint8)
        factor = (rng.uniform(0.5, 1.5, size=(rows, cols // 32)) * scale).astype(np.float16)
        data[:, :, 0:2] = factor.view(np.uint8).reshape(rows, cols // 32, 2)
        return data.reshape(rows, -1)

    def type_of(name, layer):
        if not k_mix:
            return qtype
        more = name in ("token_embd", "output") or (name in ("attn_v", "ffn_down") and use_more_bits(layer))
        return Q.Q6_K if more else Q.Q4_K

    def data(kind, rows, cols):
        return blocks(rows, cols) if kind == qtype and not k_mix else random_blocks(rng, kind, rows, cols)

    shapes = {"attn_q": (HIDDEN, HIDDEN), "attn_k": (KV_HEADS * HEAD_DIM, HIDDEN),
              "attn_v": (KV_HEADS * HEAD_DIM, HIDDEN), "attn_output": (HIDDEN, HIDDEN),
              "ffn_gate": (FFN, HIDDEN), "ffn_up": (FFN, HIDDEN), "ffn_down": (HIDDEN, FFN)}
    # (name, (rows, cols) of blocks and their type, or None for a norm), in the file's order
    tensors = [("token_embd.weight", (VOCAB, HIDDEN, type_of("token_embd", 0)))]
    for layer in range(LAYERS):
        tensors += [(f"blk.{layer}.{norm}.weight", None) for norm in ("attn_norm", "ffn_norm")]
        tensors += [(f"blk.{layer}.{kind}.weight", (*shape, type_of(kind, layer))) for kind, shape in shapes.items()]
    tensors.append(("output_norm.weight", None))
    if k_mix:
        tensors.append(("output.weight", (VOCAB, HIDDEN, type_of("output", 0))))
        tensors.append(("rope_freqs.weight", "rope_freqs"))
    # Described first and written one at a time: the file never sits in memory.
    for name, shape in tensors:
        if shape is None:
            w.add_tensor_info(name, (HIDDEN,), np.dtype(np.float32), HIDDEN * 4)
        elif shape == "rope_freqs":
            w.add_tensor_info(name, (HEAD_DIM // 2,), np.dtype(np.float32), HEAD_DIM * 2)
        else:
            rows, cols, kind = shape
            values, size = GGML_QUANT_SIZES[kind]
            byte_shape = (rows, cols // values * size)
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), rows * byte_shape[1], raw_dtype=kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, shape in tensors:
        if shape is None:
            w.write_tensor_data(np.ones(HIDDEN, dtype=np.float32))
        elif shape == "rope_freqs":
            w.write_tensor_data(llama31_factors())
        else:
            w.write_tensor_data(data(shape[2], shape[0], shape[1]))
    w.close()


if __name__ == "__main__":
    main()
