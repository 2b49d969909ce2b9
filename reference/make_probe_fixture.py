#!/usr/bin/env python3
"""The head roles of ANALYSIS.md §9 on the induction probe, from
transformers' attentions, for `tests/smollm2.rs`:

    .venv-ref/bin/python reference/make_probe_fixture.py --model DIR --out FIXTURE.json [--check OURS.json]

The probe's ids (the tokenizer's leading special tokens, R = 50 seeded
random ids, R again) are drawn by `probe_ids.py` from the definitions of
the generator and the draw, independently of headscope's `src/probe.rs`;
with --check, the ids of `headscope analyze --probe induction --json
OURS.json` must be the same. The script runs the model with eager
attention in float32 on them and writes, per head,
`sink_attention`, `separator_attention` (the last token, the one
sentence's separator of a decoder; none for an encoder's probe, which has
no `[SEP]`) and the fields of `ref_analysis.head_roles`, as a figures file
that `tests/common/parity.rs` compares key by key (with `tokens`,
`content_tokens` and `input_ids`).
"""
import argparse, json, os, sys
import numpy as np
import torch
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(__file__))
from probe_ids import probe_ids
from ref_analysis import head_roles
from torch_ref import load, run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--check", help="headscope analyze --probe induction --json's output: the same ids")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    tok = Tokenizer.from_file(os.path.join(a.model, "tokenizer.json"))
    ids, lead = probe_ids(tok)
    if a.check:
        ours = json.load(open(a.check))["input_ids"]
        assert ours == ids, f"headscope's probe differs: {ours[:8]}… vs {ids[:8]}…"
        print("headscope's probe: the same ids")
    ids = np.array(ids)
    special = np.arange(len(ids)) < lead
    content = np.where(~special)[0]
    model = load(a.model)
    causal = bool(getattr(model.config, "is_decoder", False)) or model.config.model_type in (
        "llama", "mistral", "qwen2", "gpt2", "gemma", "gemma2", "qwen3", "phi3", "olmo2", "gpt_neox")
    _, att, _ = run(model, torch.from_numpy(ids).unsqueeze(0))
    att = att.numpy()
    separators = [int(content[-1])] if causal else []
    layers = []
    for l in range(att.shape[0]):
        heads = []
        for h in range(att.shape[1]):
            p = att[l, h]
            sink = float(p[content, 0].mean())
            # A causal query sees a separator only at or before itself.
            sep = float(np.mean([sum(p[i, s] for s in separators if s <= i or not causal) for i in content]))
            heads.append({"sink_attention": sink, "separator_attention": sep,
                          **head_roles(ids, special, p, sink, sep)})
        layers.append({"heads": heads})
    out = {"tokens": int(len(ids)), "content_tokens": int(len(content)), "input_ids": ids.tolist(), "layers": layers}
    json.dump(out, open(a.out, "w"), indent=1)
    roles = {}
    for layer in layers:
        for head in layer["heads"]:
            roles[head["role"]] = roles.get(head["role"], 0) + 1
    best = max((h["induction_score"], l, k) for l, layer in enumerate(layers) for k, h in enumerate(layer["heads"]))
    print(f"{len(ids)} tokens, roles {roles}, strongest induction head L{best[1]} H{best[2]}: {best[0]:.3f}")


if __name__ == "__main__":
    main()
