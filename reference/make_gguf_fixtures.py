#!/usr/bin/env python3
"""Writes two tiny GGUF files with random weights and the reference of
transformers' own GGUF loading of each (`from_pretrained(dir,
gguf_file=NAME)`, eager, float32) into tests/fixtures/gguf:

- `llama.gguf`: architecture llama, a SentencePiece-style vocabulary
  (`tokenizer.ggml.model` llama: byte tokens, scores and no merges, so the
  merges are recovered from the scores; BOS added; a user-defined token),
  its tensors in Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, Q4_1, F16, BF16 and F32
  (the K-quant blocks are random bytes with sane scales: gguf-py cannot
  quantize to them; make_gguf_type_fixtures.py's mixed.gguf holds the
  other types headscope reads);
- `qwen2.gguf`: architecture qwen2, a byte-level BPE vocabulary
  (`tokenizer.ggml.model` gpt2) with Qwen2's split regex
  (`tokenizer.ggml.pre` qwen2) and control tokens, q/k/v biases.

For each, NAME.json and NAME.npz hold the decoder input of ANALYSIS.md §8
for tests/fixtures/gguf/text.txt (one sentence per line), the attentions,
head outputs and similarity, and the figures (make_decoder_fixtures.py's
`reference`), and NAME.tokens.json the ids transformers' tokenizer gives a
few tricky strings.

    .venv-ref/bin/python reference/make_gguf_fixtures.py

Needs torch, transformers, gguf, tokenizers and numpy (/work/.venv-ref).
"""
import json
import os
import sys
import tempfile

import numpy as np
import torch
from gguf import GGMLQuantizationType as Q
from gguf import GGUFWriter, TokenType
from gguf.quants import quantize
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, os.path.dirname(__file__))
from make_decoder_fixtures import reference, write_fixture

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "fixtures", "gguf")
TEXT = os.path.join(OUT, "text.txt")
HIDDEN, FFN, HEADS, KV_HEADS, LAYERS = 256, 512, 4, 2, 2
HEAD_DIM = HIDDEN // HEADS
TRICKY = ["The baker opened her shop.", "  Two  spaces,\ttabs\nand a newline.\n\n",
          "naïve café, 1234567 digits! Ünïcödé — “quotes” … 日本語 🙂", " leading space and trailing   ",
          "<|user|> asks <s> and </s> and <unk>", "<|im_start|>user\nHi<|im_end|>\n"]

# Per tensor kind, per layer: the types the llama file stores them in.
LLAMA_TYPES = {
    "attn_q": (Q.Q4_K, Q.Q8_0), "attn_k": (Q.Q5_K, Q.Q4_0), "attn_v": (Q.Q6_K, Q.Q4_1),
    "attn_output": (Q.Q8_0, Q.F16), "ffn_gate": (Q.Q4_0, Q.BF16), "ffn_up": (Q.Q4_1, Q.Q4_K),
    "ffn_down": (Q.F16, Q.Q6_K),
}
QWEN2_TYPES = {kind: (Q.Q8_0, Q.Q4_0) for kind in LLAMA_TYPES}
SHAPES = {"attn_q": (HEADS * HEAD_DIM, HIDDEN), "attn_k": (KV_HEADS * HEAD_DIM, HIDDEN),
          "attn_v": (KV_HEADS * HEAD_DIM, HIDDEN), "attn_output": (HIDDEN, HEADS * HEAD_DIM),
          "ffn_gate": (FFN, HIDDEN), "ffn_up": (FFN, HIDDEN), "ffn_down": (HIDDEN, FFN)}
# K-quant block layouts: (bytes per block, [(offset of an f16 scale, its value)]).
K_BLOCKS = {Q.Q4_K: (144, [(0, 2e-4), (2, 1e-4)]), Q.Q5_K: (176, [(0, 1e-4), (2, 1e-4)]),
            Q.Q6_K: (210, [(208, 2e-5)])}


def corpus():
    texts = os.path.join(REPO, "reference", "texts")
    lines = []
    for path in [os.path.join(texts, f) for f in sorted(os.listdir(texts))] + [TEXT]:
        lines += [line.strip() for line in open(path, encoding="utf-8") if line.strip()]
    return lines


def encoded(rng, data, qtype):
    """`data` (float32) stored as `qtype`: the raw array and dtype for GGUFWriter."""
    if qtype == Q.F32:
        return data.astype(np.float32), None
    if qtype == Q.F16:
        return data.astype(np.float16), None
    if qtype in K_BLOCKS:
        size, scales = K_BLOCKS[qtype]
        blocks = rng.integers(0, 256, size=(data.size // 256, size), dtype=np.uint8)
        for offset, value in scales:
            jitter = rng.uniform(0.5, 1.5, size=blocks.shape[0]).astype(np.float16) * np.float16(value)
            blocks[:, offset:offset + 2] = jitter.view(np.uint8).reshape(-1, 2)
        return blocks.reshape(data.shape[0], -1), qtype
    return quantize(data, qtype), qtype


def write_gguf(path, arch, tokenizer_fields, types, biases, seed):
    rng = np.random.default_rng(seed)
    w = GGUFWriter(path, arch)
    w.add_name(f"tiny {arch}")
    w.add_block_count(LAYERS)
    w.add_context_length(256)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(1e-5 if arch == "llama" else 1e-6)
    w.add_rope_freq_base(10000.0 if arch == "llama" else 1000000.0)
    if arch == "llama":
        w.add_rope_dimension_count(HEAD_DIM)
    tokenizer_fields(w)
    vocab = tokenizer_fields.vocab

    def tensor(name, data, qtype):
        raw, dtype = encoded(rng, data, qtype)
        if dtype is None:
            w.add_tensor(name, raw)
        else:
            w.add_tensor(name, raw, raw_dtype=dtype)

    tensor("token_embd.weight", rng.normal(0, 0.5, (vocab, HIDDEN)).astype(np.float32), Q.Q8_0)
    for layer in range(LAYERS):
        for norm in ("attn_norm", "ffn_norm"):
            tensor(f"blk.{layer}.{norm}.weight", rng.normal(1, 0.1, HIDDEN).astype(np.float32), Q.F32)
        for kind, shape in SHAPES.items():
            tensor(f"blk.{layer}.{kind}.weight", rng.normal(0, 0.06, shape).astype(np.float32), types[kind][layer])
            if biases and kind in ("attn_q", "attn_k", "attn_v"):
                tensor(f"blk.{layer}.{kind}.bias", rng.normal(0, 0.1, shape[0]).astype(np.float32), Q.F32)
    tensor("output_norm.weight", rng.normal(1, 0.1, HIDDEN).astype(np.float32), Q.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def sentencepiece_fields():
    """Llama 2's layout: <unk>, <s>, </s>, the 256 byte tokens, the trained pieces; scores -id."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=700, show_progress=False))
    pieces = [t for t, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])]
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["<|user|>"]
    tokens += [p for p in pieces if p not in tokens]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.BYTE] * 256
    types += [TokenType.USER_DEFINED] + [TokenType.NORMAL] * (len(tokens) - len(types) - 1)
    scores = [0.0] * 259 + [-float(i) for i in range(len(tokens) - 259)]

    def fields(w):
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_unk_token_id(0)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_add_bos_token(True)
        w.add_add_eos_token(False)

    fields.vocab = len(tokens)
    return fields


def byte_level_fields():
    """GPT-2's layout with Qwen2's regex and chat control tokens at the end."""
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
        w.add_tokenizer_pre("qwen2")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_eos_token_id(len(tokens) - 3)
        w.add_pad_token_id(len(tokens) - 3)
        w.add_add_bos_token(False)

    fields.vocab = len(tokens)
    return fields


def make(name, arch, fields, types, biases, seed):
    path = os.path.join(OUT, f"{name}.gguf")
    write_gguf(path, arch, fields, types, biases, seed)
    model = AutoModelForCausalLM.from_pretrained(OUT, gguf_file=f"{name}.gguf", attn_implementation="eager",
                                                 dtype=torch.float32)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(OUT, gguf_file=f"{name}.gguf")
    with open(os.path.join(OUT, f"{name}.tokens.json"), "w", encoding="utf-8") as out:
        json.dump([{"text": t, "ids": tokenizer(t).input_ids} for t in TRICKY], out, indent=1, ensure_ascii=False)
    with tempfile.TemporaryDirectory() as folder:
        tokenizer.backend_tokenizer.save(os.path.join(folder, "tokenizer.json"))
        write_fixture(os.path.join(OUT, name), *reference(folder, TEXT, model))


def main():
    os.makedirs(OUT, exist_ok=True)
    make("llama", "llama", sentencepiece_fields(), LLAMA_TYPES, False, 5)
    make("qwen2", "qwen2", byte_level_fields(), QWEN2_TYPES, True, 6)


if __name__ == "__main__":
    main()
