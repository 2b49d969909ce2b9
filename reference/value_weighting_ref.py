#!/usr/bin/env python3
"""The reference for value-weighted attention (ANALYSIS.md §9), written to
tests/fixtures/value_weighting.json:

    ~/.cache/headscope/pyenv/bin/python reference/value_weighting_ref.py

For each case, a model and the input of an existing fixture (its text, one
sentence per line, rebuilt into ids, sentence ids, special positions and
separators as refigure.py rebuilds it, and checked against the fixture's
`input_ids`): transformers (eager attention, float32) with a forward hook
on each attention layer's value projection (BERT's `attention.self.value`,
Llama's `v_proj`, the third part of GPT-2's `c_attn`) reads v; W_O^h is the
output projection's rows h*d..(h+1)*d in x·W form (no bias); with
grouped-query attention query head h reads key/value head h // (H / H_kv).
`value_norms` (L × H × T) = ‖v_j W_O^h‖₂, N = P · value_norms (per key j),
N' = N with each row divided by its sum, and the `_vw` figures are
ref_analysis.analyse's P-figures of §4, §5 and §9 computed on N' instead of
P. Checks: P equals the fixture's .npz `attentions` (1e-4), each head's
output caught at the output projection equals P·v of its key/value head,
and analyse on P gives the plain figures the fixture JSON stores (1e-6).
"""
import json, os, re, sys
import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import AutoConfig
from transformers.pytorch_utils import Conv1D

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ablation_ref import FIXTURES, MODELS, REPO, load  # noqa: E402
from make_decoder_fixtures import decoder_input, max_positions, run as decoder_run  # noqa: E402
from ref_analysis import analyse, build_input, max_tokens  # noqa: E402
from refigure import sentences  # noqa: E402
from torch_ref import OUTPUT_PROJECTION, run as encoder_run, special_ids  # noqa: E402

# (name, model folder, fixture with the input ids, its text)
CASES = [
    ("minilm", f"{MODELS}/all-MiniLM-L6-v2", "harbour.minilm.json", "harbour.txt"),
    ("smollm2", f"{MODELS}/SmolLM2-135M-Instruct", "smollm2.json", "smollm2.txt"),
    ("llama", f"{FIXTURES}/families/llama", "families/llama.json", "families/llama.txt"),
    ("gpt2", f"{FIXTURES}/families/gpt2", "families/gpt2.json", "families/gpt2.txt"),
    ("bert", f"{FIXTURES}/families/bert", "families/bert.json", "families/bert.txt"),
]
VALUE = re.compile(r"(attention\.self\.value|self_attn\.v_proj|\.attn\.c_attn)$")
LAYER_FIGURES = ["separator_attention", "segmentation_accuracy", "segmentation_undecided", "segmentation_share",
                 "sink_attention"]
HEAD_FIGURES = ["separator_attention", "sink_attention", "previous_token_score", "duplicate_token_score",
                "induction_score", "self_score", "role"]


def document(folder, text, causal):
    """(ids, sentence ids, special flags, separator id, separator positions)
    as refigure.py rebuilds the fixture's input (ANALYSIS.md §1, §8)."""
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    padding = json.loads(tok.to_str()).get("padding")
    tok.no_padding(); tok.no_truncation()
    config = AutoConfig.from_pretrained(folder)
    if causal:
        ids, sent, special, separators, _ = decoder_input(tok, sentences(text), max_positions(config))
        return ids, sent, special, None, separators
    pad = padding["pad_id"] if padding else config.pad_token_id
    (start, _), (sep, _) = special_ids(tok)
    ids, sent, special = build_input(tok, sentences(text), start, sep, pad, max_tokens(config))
    return ids, sent, special, sep, None


def tensors(model, causal, ids):
    """P and N' (L,H,T,T), the head outputs (L,H,T,d), S and the value
    norms ‖v_j W_O^h‖ (L,H,T), from the run the fixture was made with."""
    values = []
    hooks = [m.register_forward_hook(lambda mod, inp, out: values.append(out[0].double()))
             for name, m in model.named_modules() if VALUE.search(name)]
    projections = [m for name, m in model.named_modules() if OUTPUT_PROJECTION.search(name)]
    heads, att, sims = (decoder_run if causal else encoder_run)(model, torch.from_numpy(ids).unsqueeze(0))
    for h in hooks:
        h.remove()
    heads, att, sims = (torch.as_tensor(np.asarray(x)) for x in (heads, att, sims))
    L, H, T, d = heads.shape
    assert len(values) == len(projections) == L, (len(values), len(projections), L)
    norms = torch.zeros(L, H, T, dtype=torch.float64)
    for l, (v, proj) in enumerate(zip(values, projections)):
        if isinstance(proj, Conv1D):
            v = v[:, 2 * v.shape[-1] // 3:]  # GPT-2's c_attn: query, key, value
        v = v.view(T, -1, d).transpose(0, 1)  # H_kv, T, d
        w = (proj.weight if isinstance(proj, Conv1D) else proj.weight.T).detach().double()  # x·W: in × out
        for h in range(H):
            vh = v[h // (H // v.shape[0])]
            o = att[l, h].double() @ vh
            assert (o - heads[l, h]).abs().max() <= 1e-4 * heads[l, h].abs().max(), f"layer {l} head {h}: P·v ≠ O"
            norms[l, h] = (vh @ w[h * d:(h + 1) * d]).norm(dim=-1)
    n = att.double() * norms[:, :, None, :]
    return att.numpy(), (n / n.sum(dim=-1, keepdim=True)).numpy(), heads.numpy(), sims.numpy(), norms.numpy()


def check(plain, fixture, name):
    """analyse on P gives the figures the fixture stores."""
    def same(a, b, where):
        ok = a == b if a is None or b is None or isinstance(a, str) else abs(a - b) <= 1e-6
        assert ok, f"{name} {where}: {a} vs the fixture's {b}"
    for l, (ours, theirs) in enumerate(zip(plain["layers"], fixture["layers"], strict=True)):
        for key in LAYER_FIGURES:
            same(ours[key], theirs[key], f"layer {l} {key}")
        for h, (a, b) in enumerate(zip(ours["heads"], theirs["heads"], strict=True)):
            for key in HEAD_FIGURES:
                if key in b:  # the families' fixtures predate the roles
                    same(a[key], b[key], f"layer {l} head {h} {key}")


def dumps(x, indent=0):
    """JSON with a list or object of scalars on one line, anything holding one spread over lines."""
    items = x.values() if isinstance(x, dict) else x if isinstance(x, list) else None
    if items is None or not any(isinstance(v, (list, dict)) for v in items):
        return json.dumps(x, allow_nan=False)
    pad = " " * (indent + 1)
    if isinstance(x, dict):
        body = [f"{pad}{json.dumps(k)}: {dumps(v, indent + 1)}" for k, v in x.items()]
        return "{\n" + ",\n".join(body) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(pad + dumps(v, indent + 1) for v in x) + "\n" + " " * indent + "]"


def main():
    cases = []
    for name, folder, fixture_file, text in CASES:
        model, causal = load(folder)
        fixture = json.load(open(os.path.join(FIXTURES, fixture_file)))
        ids, sent, special, sep, separators = document(folder, os.path.join(FIXTURES, text), causal)
        assert ids.tolist() == fixture["input_ids"], f"{name}: the rebuilt input differs from the fixture's"
        att, vw, heads, sims, norms = tensors(model, causal, ids)
        stored = np.load(os.path.join(FIXTURES, fixture_file.replace(".json", ".npz")))["attentions"]
        assert np.abs(att - stored).max() < 1e-4, f"{name}: P differs from the fixture's by {np.abs(att - stored).max()}"
        figures = lambda p: analyse(ids, sent, special, p, heads, sims, sep, separators=separators, causal=causal)
        plain, weighted = figures(att), figures(vw)
        check(plain, fixture, name)
        # segmentation_edge_tokens_vw: the knife edge of §7 on N', for checks.
        layers = [{**{f"{k}_vw": layer[k] for k in LAYER_FIGURES + ["segmentation_edge_tokens"]},
                   "heads": [{f"{k}_vw": head[k] for k in HEAD_FIGURES} for head in layer["heads"]]}
                  for layer in weighted["layers"]]
        cases.append({"name": name, "model": os.path.relpath(folder, REPO) if folder.startswith(REPO) else
                      f"~/.cache/headscope/models/{os.path.basename(folder)}", "fixture": fixture_file,
                      "text": text, "input_ids": ids.tolist(), "value_norms": norms.tolist(), "layers": layers,
                      "sink_attention": [[h["sink_attention"] for h in layer["heads"]] for layer in plain["layers"]]})
        sink, sink_vw = np.array(cases[-1]["sink_attention"]), np.array([[h["sink_attention_vw"] for h in layer["heads"]]
                                                                         for layer in layers])
        print(f"{name}: sink_attention {sink.mean():.3f} → {sink_vw.mean():.3f} value-weighted", file=sys.stderr)
    out = os.path.join(FIXTURES, "value_weighting.json")
    with open(out, "w") as f:
        f.write(dumps({"cases": cases}) + "\n")
    print("wrote", out, file=sys.stderr)


if __name__ == "__main__":
    main()
