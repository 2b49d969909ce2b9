#!/usr/bin/env python3
"""Converts a Llama-architecture GGUF file into a Hugging Face model folder
(config.json, model.safetensors in float32, tokenizer.json and, when the file
has a chat template, tokenizer_config.json) exactly as transformers' GGUF
loader reads it (`from_pretrained(dir, gguf_file=NAME)`, transformers 5):

- every tensor dequantized by gguf-py's `dequantize` (what transformers'
  `load_gguf_checkpoint` calls), then the query and key projections' rows
  put back in Hugging Face's order: llama.cpp's converter interleaves each
  head's two rotary halves, and transformers undoes it
  (`LlamaTensorProcessor._reverse_permute_weights`);
- the GGUF tensor names mapped to LlamaForCausalLM's; no `lm_head.weight`
  when the file has no `output.weight` (tied embeddings);
- config.json with the fields transformers' config mapping gives;
- tokenizer.json as transformers builds it from the metadata: for a
  byte-level BPE vocabulary (`tokenizer.ggml.model` gpt2) GPT-2's layout,
  with every token the file marks as control added as a special token and
  no special token added around the text (`byte_level_tokenizer`,
  `add_gguf_special_tokens`). Pre-tokenizer names for which transformers
  swaps in another split regex (`set_split_regex`: llama-bpe, qwen2, ...)
  are refused, as are sentencepiece vocabularies.

    convert_gguf_llama.py MODEL.gguf OUT_DIR

Needs the `gguf`, `numpy`, `safetensors` and `tokenizers` packages, no
torch. `reference/check_smollm2.py` checks the result against transformers.
"""
import json
import os
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize
from safetensors.numpy import save_file
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

# GGUF tensor name (after `blk.N.`) -> LlamaForCausalLM's (after `model.layers.N.`).
LAYER_TENSORS = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
MODEL_TENSORS = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}

# Pre-tokenizer names for which transformers keeps GPT-2's ByteLevel regex
# (it swaps in its own split regex for llama-bpe, qwen2 and others, which
# this converter does not follow: it refuses them).
GPT2_REGEX_PRE_TOKENIZERS = (None, "default", "gpt-2", "smollm")

CONTROL, USER_DEFINED = 3, 4


def fields_of(reader):
    out = {}
    for key, field in reader.fields.items():
        try:
            out[key] = field.contents()
        except Exception:  # a field gguf-py cannot read as a value is not one we use
            pass
    return out


def hf_name(gguf_name):
    if gguf_name in MODEL_TENSORS:
        return MODEL_TENSORS[gguf_name]
    parts = gguf_name.split(".", 2)
    if parts[0] == "blk" and len(parts) == 3 and parts[2] in LAYER_TENSORS:
        return f"model.layers.{parts[1]}.{LAYER_TENSORS[parts[2]]}"
    raise SystemExit(f"convert_gguf_llama: no LlamaForCausalLM tensor for {gguf_name}")


def unpermute(weights, heads):
    """llama.cpp stores each head's rows as (pair, half); Hugging Face as (half, pair)."""
    pair = weights.shape[0] // heads // 2
    return weights.reshape(heads, pair, 2, *weights.shape[1:]).swapaxes(2, 1).reshape(weights.shape)


def tensors(reader, heads, kv_heads):
    out = {}
    for tensor in reader.tensors:
        weights = dequantize(tensor.data, tensor.tensor_type)
        if ".attn_q." in tensor.name:
            weights = unpermute(weights, heads)
        elif ".attn_k." in tensor.name:
            weights = unpermute(weights, kv_heads)
        out[hf_name(tensor.name)] = np.ascontiguousarray(weights, dtype=np.float32)
    return out


def config(meta, tied):
    arch = meta["general.architecture"]
    if arch != "llama":
        raise SystemExit(f"convert_gguf_llama: architecture {arch!r}, expected llama")
    get = lambda key: meta[f"{arch}.{key}"]
    heads = int(get("attention.head_count"))
    hidden = int(get("embedding_length"))
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": int(get("feed_forward_length")),
        "num_hidden_layers": int(get("block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(meta.get(f"{arch}.attention.head_count_kv", heads)),
        "head_dim": int(meta.get(f"{arch}.rope.dimension_count", hidden // heads)),
        "max_position_embeddings": int(get("context_length")),
        # the file's float32, as transformers reads it (1e-5 is 9.9999997e-06)
        "rms_norm_eps": float(get("attention.layer_norm_rms_epsilon")),
        "rope_parameters": {"rope_type": "default", "rope_theta": float(meta.get(f"{arch}.rope.freq_base", 10000.0))},
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": tied,
        "vocab_size": int(meta.get(f"{arch}.vocab_size", len(meta["tokenizer.ggml.tokens"]))),
        "torch_dtype": "float32",
    }
    for key, name in (("bos_token_id", "bos"), ("eos_token_id", "eos"), ("pad_token_id", "padding"),
                      ("unk_token_id", "unknown")):
        value = meta.get(f"tokenizer.ggml.{name}_token_id")
        if value is not None:
            cfg[key] = int(value)
    return cfg


def bytes_to_unicode():
    """GPT-2's printable spelling of the 256 bytes."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def tokenizer(meta):
    kind = meta["tokenizer.ggml.model"]
    if kind != "gpt2":
        raise SystemExit(f"convert_gguf_llama: tokenizer {kind!r}; only byte-level BPE (gpt2) is converted")
    spelling = bytes_to_unicode()
    alphabet = set(spelling.values())
    tokens = meta["tokenizer.ggml.tokens"]
    vocab = {}
    for index, token in enumerate(tokens):
        spelled = token if set(token) <= alphabet else "".join(spelling[b] for b in token.encode("utf-8"))
        vocab[spelled] = index
    merges = [tuple(m.split(" ")) for m in meta["tokenizer.ggml.merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, dropout=None, continuing_subword_prefix="",
                               end_of_word_suffix="", fuse_unk=False))
    pre = meta.get("tokenizer.ggml.pre")
    if pre not in GPT2_REGEX_PRE_TOKENIZERS:
        raise SystemExit(f"convert_gguf_llama: pre-tokenizer {pre!r} is not converted")
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if meta.get("tokenizer.ggml.add_bos_token") or meta.get("tokenizer.ggml.add_eos_token"):
        raise SystemExit("convert_gguf_llama: a tokenizer that adds BOS or EOS is not converted")
    tok.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B:1", special_tokens=[])
    types = meta.get("tokenizer.ggml.token_type") or []
    control = [AddedToken(t, normalized=False, special=True)
               for t, kind in zip(tokens, types) if kind == CONTROL and set(t) <= alphabet]
    tok.add_special_tokens(control)
    user = [AddedToken(t, normalized=False, special=False)
            for t, kind in zip(tokens, types) if kind == USER_DEFINED and t in vocab]
    tok.add_tokens(user)
    return tok


def tokenizer_config(meta):
    tokens = meta["tokenizer.ggml.tokens"]
    cfg = {"add_bos_token": bool(meta.get("tokenizer.ggml.add_bos_token", False)),
           "add_eos_token": bool(meta.get("tokenizer.ggml.add_eos_token", False))}
    for name, key in (("bos_token", "bos"), ("eos_token", "eos"), ("unk_token", "unknown"),
                      ("pad_token", "padding")):
        value = meta.get(f"tokenizer.ggml.{key}_token_id")
        if value is not None:
            cfg[name] = tokens[int(value)]
    if "tokenizer.chat_template" in meta:
        cfg["chat_template"] = meta["tokenizer.chat_template"]
    return cfg


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: convert_gguf_llama.py MODEL.gguf OUT_DIR")
    reader = GGUFReader(sys.argv[1])
    out = sys.argv[2]
    meta = fields_of(reader)
    tied = all(t.name != "output.weight" for t in reader.tensors)
    cfg = config(meta, tied)
    weights = tensors(reader, cfg["num_attention_heads"], cfg["num_key_value_heads"])
    save_file(weights, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
    tokenizer(meta).save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(meta), f, indent=2, ensure_ascii=False)


if __name__ == "__main__":
    main()
