#!/usr/bin/env python3
"""Recomputes the figures of the parity fixtures after ANALYSIS.md changes
a figure's definition, from the tensors the fixtures already store, so that
models and tensors stay as they were made:

    .venv-ref/bin/python reference/refigure.py [--bge BGE_DIR]

- tests/fixtures/families/NAME.json, from NAME.npz and the input rebuilt
  from NAME.txt and NAME/tokenizer.json, for every encoder and decoder
  family (checks that the rebuilt ids are the stored ones);
- tests/fixtures/harbour.minilm.json: copied from ../shared/fixtures (the
  contract's own reference), with its .npz;
- with --bge, harbour.bge.json and observatory.bge.json, whose similarity
  is not stored: recomputed by running transformers on bge-small-en-v1.5.
"""
import argparse, json, os, shutil, sys
import numpy as np
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(__file__))
from ref_analysis import analyse, build_input, max_tokens, reference
from torch_ref import special_ids

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
FAMILIES = os.path.join(FIXTURES, "families")
ENCODERS = ["bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra", "albert", "modernbert"]
DECODERS = ["gpt2", "llama", "qwen2", "mistral"]


def sentences(text_file):
    return [s.strip() for s in open(text_file, encoding="utf-8") if s.strip()]


def stored(npz):
    z = np.load(npz)
    return z["input_ids"], z["attentions"], z["heads"], z["similarity"]


def write(path, figures, old):
    # Input facts the figures do not change are kept as they were.
    for key in ("input_ids", "sentences_analysed", "sentences_left_out"):
        if key in old:
            figures[key] = old[key]
    json.dump(figures, open(path, "w"), indent=1)


def encoder(name):
    from transformers import AutoConfig
    folder = os.path.join(FAMILIES, name)
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    padding = json.loads(tok.to_str()).get("padding")
    tok.no_padding(); tok.no_truncation()
    config = AutoConfig.from_pretrained(folder)
    pad = padding["pad_id"] if padding else config.pad_token_id
    (start, _), (sep, _) = special_ids(tok)
    ids, sent, special = build_input(tok, sentences(os.path.join(FAMILIES, f"{name}.txt")), start, sep, pad,
                                     max_tokens(config))
    stored_ids, att, heads, sims = stored(os.path.join(FAMILIES, f"{name}.npz"))
    assert ids.tolist() == stored_ids.tolist(), f"{name}: the rebuilt input differs from the stored one"
    return analyse(ids, sent, special, att, heads, sims, sep)


def decoder(name):
    from transformers import AutoConfig
    from make_decoder_fixtures import decoder_input, max_positions
    folder = os.path.join(FAMILIES, name)
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tok.no_padding(); tok.no_truncation()
    config = AutoConfig.from_pretrained(folder)
    ids, sent, special, separators, _ = decoder_input(tok, sentences(os.path.join(FAMILIES, f"{name}.txt")),
                                                      max_positions(config))
    stored_ids, att, heads, sims = stored(os.path.join(FAMILIES, f"{name}.npz"))
    assert ids.tolist() == stored_ids.tolist(), f"{name}: the rebuilt input differs from the stored one"
    return analyse(ids, sent, special, att, heads, sims, None, separators=separators, causal=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bge", help="bge-small-en-v1.5 folder (scripts/fetch-bge-model.sh)")
    a = ap.parse_args()
    for name in ENCODERS + DECODERS:
        path = os.path.join(FAMILIES, f"{name}.json")
        figures = (encoder if name in ENCODERS else decoder)(name)
        write(path, figures, json.load(open(path)))
        print(f"{name}: {sum(h['selection_edge'] for l in figures['layers'] for h in l['heads'])} heads on the tie edge")
    shared = os.path.join(REPO, "..", "shared", "fixtures")
    for file in ("harbour.minilm.json", "harbour.minilm.npz"):
        shutil.copyfile(os.path.join(shared, file), os.path.join(FIXTURES, file))
    if a.bge:
        for text in ("harbour", "observatory"):
            path = os.path.join(FIXTURES, f"{text}.bge.json")
            figures, _ = reference(a.bge, os.path.join(FIXTURES, f"{text}.txt"))
            old = json.load(open(path))
            assert figures["input_ids"] == old["input_ids"], f"{text}: input ids differ"
            write(path, figures, old)
            print(f"{text}.bge: edge tokens per layer {[l['segmentation_edge_tokens'] for l in figures['layers']]}")


if __name__ == "__main__":
    main()
