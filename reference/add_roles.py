#!/usr/bin/env python3
"""Adds the head roles of ANALYSIS.md §9 (previous_token_score,
duplicate_token_score, induction_score, self_score, role) to the figures
files of the real models' parity fixtures, from the transformers attentions
their .npz already stores, and changes nothing else in them:

    .venv-ref/bin/python reference/add_roles.py

- tests/fixtures/harbour.minilm.json (all-MiniLM-L6-v2), harbour.bge.json
  (bge-small-en-v1.5), from the .npz of the same name; the special
  positions are the start, separator and padding tokens (ANALYSIS.md §1);
- tests/fixtures/smollm2.json (SmolLM2-135M-Instruct); the special
  positions are the tokenizer's special tokens (§8), of which the fixture's
  input holds none.

Each head's fields are written after its `category`; every other key and
value is written back as it was read (the same text: Python writes a float
as the shortest text that reads back to it, as it did when the file was
made). `ref_analysis.analyse` computes the same fields for a fixture made
anew.
"""
import json, os, sys
import numpy as np
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(__file__))
from ref_analysis import head_roles

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")


def encoder_special(ids, tokenizer_file):
    """[CLS], [SEP] and [PAD] positions of a BERT input."""
    tok = Tokenizer.from_file(tokenizer_file)
    never_content = {tok.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]")} - {None}
    return np.array([i in never_content for i in ids])


def decoder_special(ids, tokenizer_file):
    tok = Tokenizer.from_file(tokenizer_file)
    specials = {i for i, t in tok.get_added_tokens_decoder().items() if t.special}
    return np.array([i in specials for i in ids])


def add_roles(name, special_of, tokenizer_file):
    path = os.path.join(FIXTURES, f"{name}.json")
    figures = json.load(open(path))
    ids = np.array(figures["input_ids"])
    stored = np.load(os.path.join(FIXTURES, f"{name}.npz"))
    assert stored["input_ids"].tolist() == ids.tolist(), f"{name}: ids differ from the .npz"
    att = stored["attentions"]
    special = special_of(ids, tokenizer_file)
    roles = {}
    for l, layer in enumerate(figures["layers"]):
        heads = []
        for h, head in enumerate(layer["heads"]):
            scores = head_roles(ids, special, att[l, h], head["sink_attention"], head["separator_attention"])
            out = {}
            for key, value in head.items():
                if key in scores:
                    continue  # written anew below
                out[key] = value
                if key == "category":
                    out.update(scores)
            heads.append(out)
            roles[scores["role"]] = roles.get(scores["role"], 0) + 1
        layer["heads"] = heads
    json.dump(figures, open(path, "w"), indent=1)
    print(f"{name}: roles {roles}")


def main():
    models = os.path.expanduser(os.environ.get("HEADSCOPE_CACHE", "~/.cache/headscope")) + "/models"
    bert_tokenizer = os.path.join(FIXTURES, "bert-uncased-tokenizer.json")
    add_roles("harbour.minilm", encoder_special, bert_tokenizer)
    add_roles("harbour.bge", encoder_special, os.path.join(models, "bge-small-en-v1.5", "tokenizer.json"))
    add_roles("smollm2", decoder_special, os.path.join(models, "SmolLM2-135M-Instruct", "tokenizer.json"))


if __name__ == "__main__":
    main()
