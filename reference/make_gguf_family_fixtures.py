#!/usr/bin/env python3
"""Writes a tiny random GGUF file of each architecture headscope opens
besides llama and qwen2 (make_gguf_fixtures.py's) into
tests/fixtures/gguf, as llama.cpp's converter and quantizer write them,
and the reference of each: `gemma3`, `qwen3`, `gemma2`, `gemma`, `phi3`,
`olmo2`, `gptneox`, and `llama31` (a Llama 3.1-shaped llama with
`rope_freqs`).

Each starts from a random Hugging Face model of the family (hidden 256,
feed-forward 128, 2 layers); its tensors are written as llama.cpp's `convert_hf_to_gguf.py`
writes them (Gemma's norm weights plus one; GPT-NeoX's `query_key_value`
as all queries, keys, then values; Llama's q/k rows interleaved; Phi-3's
fused `qkv_proj` and `gate_up_proj` as `attn_qkv` and `ffn_up`), in a
Q4_K_M-like mix (Q4_K matrices with Q6_K for `attn_v`, Q5_0 for one
`attn_k`, Q8_0 for `ffn_down`, whose rows of 128 are not whole 256-value
super-blocks, Q6_K embeddings and output; the K-quant blocks random bytes
with sane scales, as in make_gguf_fixtures.py), norms and biases F32, and
the metadata as the converter writes it (sliding windows, Gemma 3's local
rope base and pattern, soft-caps, key lengths, rope dimension counts,
linear rope scaling for Gemma 3's global layers, YaRN for qwen3's). The Hugging Face model's
weights are then set to what the file holds (the blocks dequantized by
gguf-py, the converter's rearrangements undone, Gemma's norms minus one in
float32, as transformers' GGUF loader does), so the folder and the file
are the same model, and the reference is transformers on the folder
(eager, float32): for the architectures transformers' GGUF loader loads
(gemma2, gemma3, phi3; for qwen3 it ignores `attention.key_length`
and keeps Qwen3Config's head size 128) the script checks its weights equal the
folder's. `llama31`'s folder has `rope_scaling` llama3 and the file the
`rope_freqs` llama.cpp's converter computes from it.

Writes NAME.gguf, NAME.json and NAME.npz (make_decoder_fixtures.py's
`reference` on tests/fixtures/gguf/text.txt with the tokenizer transformers
builds from the file) and NAME.tokens.json (its ids of a few tricky
strings).

    ~/.cache/headscope/pyenv/bin/python reference/make_gguf_family_fixtures.py [NAME...]

Made with torch 2.15, transformers 5.25 and gguf 0.19.0.
"""
import json
import math
import os
import sys
import tempfile

import numpy as np
import torch
import transformers
from gguf import GGMLQuantizationType as Q
from gguf import GGUFWriter, RopeScalingType, TokenType
from gguf.quants import dequantize, quantize
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer

sys.path.insert(0, os.path.dirname(__file__))
from make_decoder_fixtures import reference, write_fixture
from make_gguf_fixtures import TRICKY, corpus, sentencepiece_fields
from make_gguf_type_fixtures import random_blocks

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "fixtures", "gguf")
TEXT = os.path.join(OUT, "text.txt")
HIDDEN, FFN, HEADS, KV_HEADS, HEAD_DIM, LAYERS = 256, 128, 4, 2, 64, 2
K_QUANTS = (Q.Q4_K, Q.Q5_K, Q.Q6_K)


def byte_level(pre):
    """A byte-level BPE vocabulary with `pre` as its `tokenizer.ggml.pre`."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer)
    model = json.loads(tok.to_str())["model"]
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    merges = [" ".join(m) if isinstance(m, list) else m for m in model["merges"]]
    controls = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    types = [TokenType.NORMAL] * len(tokens) + [TokenType.CONTROL] * len(controls)
    tokens += controls

    def fields(w):
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(len(tokens) - 3)
        w.add_eos_token_id(len(tokens) - 3)
        w.add_add_bos_token(False)

    fields.vocab = len(tokens)
    return fields


def gemma_fields():
    """Gemma's layout: <pad> <eos> <bos> <unk> <mask>, turn markers, the
    byte tokens, the trained pieces (spelled with ▁, no prefix space) and a
    token of two spaces stored as spaces; scores that do not follow the
    order (transformers and headscope rebuild the merges in file order)."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=False)
    tok.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=700, show_progress=False))
    pieces = [t for t, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])]
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types = [TokenType.CONTROL, TokenType.CONTROL, TokenType.CONTROL, TokenType.UNKNOWN,
             TokenType.USER_DEFINED, TokenType.USER_DEFINED, TokenType.USER_DEFINED]
    types += [TokenType.BYTE] * 256
    tokens += [p for p in pieces if p not in tokens and p != "▁▁"] + ["  "]
    types += [TokenType.NORMAL] * (len(tokens) - len(types))
    rng = np.random.default_rng(3)
    scores = [0.0] * 263 + list(rng.uniform(-1000, 0, len(tokens) - 263))

    def fields(w):
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_bos_token_id(2)
        w.add_eos_token_id(1)
        w.add_unk_token_id(3)
        w.add_pad_token_id(0)
        w.add_add_bos_token(True)
        w.add_add_eos_token(False)

    fields.vocab = len(tokens)
    return fields


def phi3_fields():
    """Llama 2's layout (make_gguf_fixtures.py's) with a padding token:
    without one transformers' Phi3Config pads with id 32000, outside this
    vocabulary."""
    base = sentencepiece_fields()

    def fields(w):
        base(w)
        w.add_pad_token_id(2)

    fields.vocab = base.vocab
    return fields


# name: (GGUF architecture, transformers config class, config fields,
# tokenizer, whether transformers' GGUF loader loads the architecture)
def families():
    common = dict(hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                  num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=512,
                  tie_word_embeddings=True)
    gemma = dict(common, head_dim=HEAD_DIM, rms_norm_eps=1e-6, bos_token_id=2, eos_token_id=1, pad_token_id=0)
    return {
        "gemma3": ("gemma3", transformers.Gemma3TextConfig, dict(
            gemma, query_pre_attn_scalar=HEAD_DIM, sliding_window=6,
            layer_types=["sliding_attention", "full_attention"],
            rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                             "sliding_attention": {"rope_type": "default", "rope_theta": 5000.0}},
            final_logit_softcapping=None, attn_logit_softcapping=None), gemma_fields, True),
        # YaRN as Qwen3's model card sets it for long inputs (factor 4),
        # over an original context short enough that the ramp moves.
        "qwen3": ("qwen3", transformers.Qwen3Config, dict(
            common, head_dim=HEAD_DIM, rms_norm_eps=1e-6, tie_word_embeddings=False,
            rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0,
                             "original_max_position_embeddings": 128}),
            # transformers' loader does not read qwen3's key_length (it
            # keeps Qwen3Config's head_dim 128): the folder is the reference.
            lambda: byte_level("qwen2"), False),
        "gemma2": ("gemma2", transformers.Gemma2Config, dict(
            gemma, query_pre_attn_scalar=HEAD_DIM, sliding_window=6, attn_logit_softcapping=5.0,
            final_logit_softcapping=3.0, rope_theta=10000.0), gemma_fields, True),
        "gemma": ("gemma", transformers.GemmaConfig, dict(gemma, rope_theta=10000.0), gemma_fields, False),
        "phi3": ("phi3", transformers.Phi3Config, dict(
            common, rms_norm_eps=1e-5, rope_theta=10000.0, partial_rotary_factor=0.75, bos_token_id=1,
            eos_token_id=2, pad_token_id=2, tie_word_embeddings=False), phi3_fields, True),
        "olmo2": ("olmo2", transformers.Olmo2Config, dict(
            common, rms_norm_eps=1e-6, rope_theta=500000.0, pad_token_id=None), lambda: byte_level("dbrx"), False),
        "gptneox": ("gptneox", transformers.GPTNeoXConfig, dict(
            hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
            max_position_embeddings=512, rotary_pct=0.25, rotary_emb_base=10000, layer_norm_eps=1e-5,
            use_parallel_residual=True, tie_word_embeddings=False, hidden_act="gelu"),
            lambda: byte_level("gpt-2"), False),
        "llama31": ("llama", transformers.LlamaConfig, dict(
            common, head_dim=HEAD_DIM, rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False,
            rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 128}),
            lambda: byte_level("llama-bpe"), False),
    }


# Hugging Face name (after `layers.N.`) → llama.cpp's (after `blk.N.`).
LLAMA_NAMES = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
    "self_attn.qkv_proj": "attn_qkv", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down", "mlp.gate_up_proj": "ffn_up",
}
SANDWICH_NAMES = dict(LLAMA_NAMES, post_attention_layernorm="post_attention_norm",
                      pre_feedforward_layernorm="ffn_norm", post_feedforward_layernorm="post_ffw_norm")
NEOX_NAMES = {
    "input_layernorm": "attn_norm", "attention.query_key_value": "attn_qkv", "attention.dense": "attn_output",
    "post_attention_layernorm": "ffn_norm", "mlp.dense_h_to_4h": "ffn_up", "mlp.dense_4h_to_h": "ffn_down",
}


def gguf_name(arch, name):
    """llama.cpp's name of a Hugging Face tensor, or None for one it skips."""
    base = name.removeprefix("model.").removeprefix("gpt_neox.")
    globals_ = {"embed_tokens.weight": "token_embd.weight", "embed_in.weight": "token_embd.weight",
                "norm.weight": "output_norm.weight", "final_layer_norm.weight": "output_norm.weight",
                "final_layer_norm.bias": "output_norm.bias", "lm_head.weight": "output.weight",
                "embed_out.weight": "output.weight"}
    if base in globals_:
        return globals_[base]
    if not base.startswith("layers."):
        return None
    _, layer, rest = base.split(".", 2)
    stem, suffix = rest.rsplit(".", 1)
    table = {"gemma2": SANDWICH_NAMES, "gemma3": SANDWICH_NAMES, "olmo2": SANDWICH_NAMES,
             "gptneox": NEOX_NAMES}.get(arch, LLAMA_NAMES)
    return f"blk.{layer}.{table[stem]}.{suffix}"


def qtype_of(name, layer_rows, columns):
    """A Q4_K_M-like choice: Q6_K for attn_v, the embeddings and the
    output, Q4_K elsewhere; Q8_0 where rows are not whole super-blocks
    (ffn_down), layer 1's attn_k in Q5_0; 1-D tensors F32."""
    if layer_rows is None:
        return Q.F32
    if columns % 256:
        return Q.Q8_0
    if name == "token_embd.weight":
        return Q.Q6_K
    if name == "blk.1.attn_k.weight":
        return Q.Q5_0
    if name == "blk.1.ffn_down.weight":
        return Q.Q8_0
    if ".attn_v." in name or ".ffn_down." in name or name == "output.weight":
        return Q.Q6_K
    return Q.Q4_K


def stored(rng, data, qtype):
    """(raw array for GGUFWriter, its dtype or None, the values it holds)."""
    if qtype == Q.F32:
        data = data.astype(np.float32)
        return data, None, data
    if qtype in K_QUANTS:
        raw = random_blocks(rng, qtype, data.shape[0], data.shape[1], signed=True)
    else:
        raw = quantize(data.astype(np.float32), qtype)
    values = np.asarray(dequantize(raw, qtype), dtype=np.float32).reshape(data.shape)
    return raw, qtype, values


def llama_permute(w, heads):
    """llama.cpp's `LlamaModel.permute` of q/k rows."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama_unpermute(w, heads):
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def neox_to_gguf(w, heads):
    """GPT-NeoX's per-head q/k/v rows → all q, all k, all v (llama.cpp)."""
    parts = w.reshape(heads, 3, -1, *w.shape[1:])
    return np.concatenate([parts[:, i].reshape(-1, *w.shape[1:]) for i in range(3)], axis=0)


def neox_from_gguf(w, heads):
    parts = w.reshape(3, heads, -1, *w.shape[1:])
    return np.stack([parts[i] for i in range(3)], axis=1).reshape(w.shape)


def llama3_factors(config):
    """`rope_freqs` as llama.cpp's converter computes it from rope_scaling llama3."""
    scaling = config.rope_parameters
    base, dim = scaling["rope_theta"], config.head_dim
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factors = []
    for freq in freqs.tolist():
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            factors.append(1)
        elif wavelen > low_wavelen:
            factors.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def write_metadata(w, arch, config, name):
    w.add_name(f"tiny {name}")
    w.add_block_count(config.num_hidden_layers)
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    if arch == "gptneox":
        w.add_rope_dimension_count(int(0.25 * (HIDDEN // HEADS)))
        w.add_parallel_residual(config.use_parallel_residual)
        w.add_layer_norm_eps(config.layer_norm_eps)
        return
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    theta = config.rope_parameters
    if arch == "gemma3":
        w.add_rope_freq_base(theta["full_attention"]["rope_theta"])
        w.add_rope_freq_base_swa(theta["sliding_attention"]["rope_theta"])
        w.add_rope_scaling_type(RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(theta["full_attention"]["factor"])
        w.add_array(f"{arch}.attention.sliding_window_pattern",
                    [t == "sliding_attention" for t in config.layer_types])
    else:
        w.add_rope_freq_base(theta["rope_theta"])
    if theta.get("rope_type") == "yarn":
        # As llama.cpp's converter writes a yarn rope_scaling.
        w.add_rope_scaling_type(RopeScalingType.YARN)
        w.add_rope_scaling_factor(theta["factor"])
        w.add_rope_scaling_orig_ctx_len(theta["original_max_position_embeddings"])
    if arch.startswith("gemma") or arch in ("qwen3", "llama"):
        w.add_key_length(config.head_dim)
        w.add_value_length(config.head_dim)
    if arch == "llama":
        w.add_rope_dimension_count(config.head_dim)
    if arch in ("gemma2", "gemma3"):
        w.add_sliding_window(config.sliding_window)
    if arch == "gemma2":
        w.add_attn_logit_softcapping(config.attn_logit_softcapping)
        w.add_final_logit_softcapping(config.final_logit_softcapping)
    if arch == "phi3":
        w.add_rope_dimension_count(int(config.partial_rotary_factor * HIDDEN) // HEADS)


def randomise(model, gemma, rng):
    state = {}
    for name, tensor in model.state_dict().items():
        if tensor.dim() == 1:
            centre = 0.0 if ("norm" in name and gemma) or "bias" in name else 1.0
            values = rng.normal(centre, 0.1, tuple(tensor.shape))
        else:
            values = rng.normal(0, 0.5 if "embed" in name else 0.06, tuple(tensor.shape))
        state[name] = torch.from_numpy(values.astype(np.float32))
    model.load_state_dict(state)


def make(name):
    arch, config_class, fields, tokenizer_fields, transformers_loads = families()[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    tok = tokenizer_fields()
    config = config_class(vocab_size=tok.vocab, **fields)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                                          dtype=torch.float32)
    gemma = arch.startswith("gemma")
    randomise(model, gemma, rng)
    path = os.path.join(OUT, f"{name}.gguf")
    w = GGUFWriter(path, arch)
    write_metadata(w, arch, config, name)
    tok(w)
    state = {}
    for hf, tensor in model.state_dict().items():
        g = gguf_name(arch, hf)
        if g is None or (hf.endswith("lm_head.weight") and config.tie_word_embeddings):
            continue
        data = tensor.numpy().astype(np.float32)
        if gemma and g.endswith("norm.weight"):
            data = data + 1  # llama.cpp's norm_shift
        heads = config.num_attention_heads
        if arch == "llama" and (".attn_q." in g or ".attn_k." in g):
            data = llama_permute(data, heads if ".attn_q." in g else config.num_key_value_heads)
        if arch == "gptneox" and ".attn_qkv." in g:
            data = neox_to_gguf(data, heads)
        qtype = qtype_of(g, data.shape[0] if data.ndim == 2 else None, data.shape[-1])
        raw, dtype, values = stored(rng, data, qtype)
        if dtype is None:
            w.add_tensor(g, raw)
        else:
            w.add_tensor(g, raw, raw_dtype=dtype)
        # Back to Hugging Face's layout, as transformers' loader reads it.
        if gemma and g.endswith("norm.weight"):
            values = values - np.float32(1)
        if arch == "llama" and (".attn_q." in g or ".attn_k." in g):
            values = llama_unpermute(values, heads if ".attn_q." in g else config.num_key_value_heads)
        if arch == "gptneox" and ".attn_qkv." in g:
            values = neox_from_gguf(values, heads)
        state[hf] = torch.from_numpy(np.ascontiguousarray(values))
    if name == "llama31":
        w.add_tensor("rope_freqs.weight", llama3_factors(config))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    missing = model.load_state_dict(state, strict=False)
    assert not missing.unexpected_keys, missing
    assert set(missing.missing_keys) <= {"lm_head.weight", "embed_out.weight"} or not missing.missing_keys, missing
    model.eval()
    if transformers_loads:
        theirs = transformers.AutoModelForCausalLM.from_pretrained(OUT, gguf_file=f"{name}.gguf",
                                                                  dtype=torch.float32)
        ours = model.state_dict()
        for key, value in theirs.state_dict().items():
            assert torch.equal(value, ours[key]), f"{name}: {key} differs from transformers' GGUF load"
        print(f"{name}: transformers' GGUF load has the folder's weights")
    try:
        tokenizer = AutoTokenizer.from_pretrained(OUT, gguf_file=f"{name}.gguf")
    except ValueError:
        # AutoTokenizer reads the config first, which transformers cannot
        # for gemma, olmo2 and gptneox: the family's tokenizer class reads
        # the vocabulary alone, as AutoTokenizer would hand it over.
        tokenizer_class = transformers.GemmaTokenizer if gemma else transformers.PreTrainedTokenizerFast
        tokenizer = tokenizer_class.from_pretrained(OUT, gguf_file=f"{name}.gguf")
    with open(os.path.join(OUT, f"{name}.tokens.json"), "w", encoding="utf-8") as out:
        json.dump([{"text": t, "ids": tokenizer(t).input_ids} for t in TRICKY], out, indent=1, ensure_ascii=False)
    with tempfile.TemporaryDirectory() as folder:
        tokenizer.backend_tokenizer.save(os.path.join(folder, "tokenizer.json"))
        write_fixture(os.path.join(OUT, name), *reference(folder, TEXT, model))
    print(f"{name}: {os.path.getsize(path)} bytes")


def main():
    names = sys.argv[1:] or list(families())
    for name in names:
        make(name)


if __name__ == "__main__":
    main()
