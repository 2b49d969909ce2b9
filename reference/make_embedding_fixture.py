#!/usr/bin/env python3
"""Makes the EmbeddingGemma-shaped parity fixture in tests/fixtures/families/.

EmbeddingGemma is a `gemma3_text` whose config sets
`use_bidirectional_attention: true`: every query sees every key, and a
sliding-window layer's query the keys less than `config.sliding_window`
away on either side (transformers' `_bidirectional_window_overlay`), where
Gemma3TextConfig has turned the written `sliding_window` W into W // 2 + 1:
the keys at most W // 2 away. Its tokenizer
adds `<bos>` before the text and `<eos>` after it. ANALYSIS.md §8's row:
the text encoded once by the tokenizer with its own special tokens, the
separators each sentence's last content token, and the figures an
encoder's (separator attention over every key, segmentation defined).

This script takes the tokenizer of tests/fixtures/families/gemma3_text/,
gives it EmbeddingGemma's post-processor (`<bos> $A <eos>`), builds a
tiny random `Gemma3TextModel` (2 layers, the first with a sliding window
of 4, smaller than the text) with transformers from a config (no hub), and
runs the reference with eager attention in float32:

    tests/fixtures/families/embeddinggemma/      config.json, model.safetensors, tokenizer.json
    tests/fixtures/families/embeddinggemma.txt   the text, one sentence per line (written by hand)
    tests/fixtures/families/embeddinggemma.json  the figures of ANALYSIS.md
    tests/fixtures/families/embeddinggemma.npz   input_ids, attentions, heads, similarity

The weights are written with the `model.` prefix (as a checkpoint saved
from a task model); the test strips it to make the sentence-transformers
layout (EmbeddingGemma's own files: `embed_tokens.weight`, `layers.0…`).

    ~/.cache/headscope/pyenv/bin/python reference/make_embedding_fixture.py
"""
import json, os, sys
import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, processors

sys.path.insert(0, os.path.dirname(__file__))
from make_family_fixtures import OUT
from make_decoder_fixtures import randomise, run, write_fixture
from ref_analysis import analyse

NAME = "embeddinggemma"


def tokenizer():
    tok = Tokenizer.from_file(os.path.join(OUT, "gemma3_text", "tokenizer.json"))
    bos, eos = tok.token_to_id("<bos>"), tok.token_to_id("<eos>")
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>", pair="<bos> $A <eos> $B <eos>",
        special_tokens=[("<bos>", bos), ("<eos>", eos)])
    return tok


def model(tok):
    rope = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}
    config = transformers.Gemma3TextConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=16, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, num_hidden_layers=2, intermediate_size=32, max_position_embeddings=128,
        pad_token_id=0, eos_token_id=1, bos_token_id=2, query_pre_attn_scalar=8, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"], rope_parameters=rope,
        use_bidirectional_attention=True, attn_implementation="eager", dtype="float32")
    return transformers.Gemma3TextModel(config)


def embedding_input(tok, sentences):
    """(ids, sentence ids with -1 for none, special flags, separators):
    the sentences joined by one space, encoded once with `<bos>` and
    `<eos>`; a token in the sentence of its first non-space character; the
    separators each sentence's last content token (the text fits whole)."""
    text = " ".join(sentences)
    spans, at = [], 0
    for s in sentences:
        spans.append((at, at + len(s)))
        at += len(s) + 1
    enc = tok.encode(text)
    special_ids = {i for i, t in tok.get_added_tokens_decoder().items() if t.special}
    special = np.array([bool(m) or i in special_ids for i, m in zip(enc.ids, enc.special_tokens_mask)])

    def sentence_of(start, end):
        p = start
        while p < len(text) and text[p].isspace():
            p += 1
        return next((k for k, (a, b) in enumerate(spans) if a <= p < b), -1)

    sent = np.array([-1 if special[i] else sentence_of(*enc.offsets[i]) for i in range(len(enc.ids))])
    content = [i for i in range(len(enc.ids)) if not special[i]]
    separators = [i for a, i in enumerate(content) if a + 1 == len(content) or sent[content[a + 1]] != sent[i]]
    return np.array(enc.ids), sent, special, separators


def main():
    folder = os.path.join(OUT, NAME)
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(31)
    tok = tokenizer()
    net = model(tok)
    randomise(net, 31)
    net.eval()
    net.save_pretrained(folder)
    path = os.path.join(folder, "model.safetensors")
    tensors = {("model." + k if not k.startswith("model.") else k): v for k, v in load_file(path).items()}
    save_file(tensors, path, metadata={"format": "pt"})
    tok.save(os.path.join(folder, "tokenizer.json"))
    loaded = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32)
    loaded.eval()
    assert loaded.config.use_bidirectional_attention
    text = os.path.join(OUT, f"{NAME}.txt")
    sentences = [s.strip() for s in open(text, encoding="utf-8") if s.strip()]
    ids, sent, special, separators = embedding_input(tok, sentences)
    assert len(ids) > 2 * loaded.config.sliding_window, "the window must be smaller than the text"
    assert tok.id_to_token(int(ids[0])) == "<bos>" and tok.id_to_token(int(ids[-1])) == "<eos>"
    heads, att, sims = run(loaded, torch.from_numpy(ids).unsqueeze(0))
    # The sliding layer's mask as transformers builds it: |i − j| < W // 2 + 1.
    written = json.load(open(os.path.join(folder, "config.json")))["sliding_window"]
    assert loaded.config.sliding_window == written // 2 + 1 == 3
    T = len(ids)
    i, j = np.indices((T, T))
    assert (att[0][:, np.abs(i - j) > written // 2] == 0).all()
    assert (att[0][:, np.abs(i - j) <= written // 2] > 0).all()
    assert (att[1] > 0).all(), "the global layer sees every key"
    figures = analyse(ids, sent, special, att, heads, sims, None, separators=separators, causal=False)
    figures["input_ids"] = ids.tolist()
    figures["sentences_analysed"] = len(sentences)
    figures["sentences_left_out"] = 0
    write_fixture(os.path.join(OUT, NAME), figures, (ids, att, heads, sims))


if __name__ == "__main__":
    main()
