#!/usr/bin/env python3
"""The reference for ablation (ANALYSIS.md §9), written to
tests/fixtures/ablation.json:

    ~/.cache/headscope/pyenv/bin/python reference/ablation_ref.py

For each case, a model, the input ids of an existing fixture (what
`headscope analyze --one-sentence-per-line` gives for its text), a set of
heads and a mode: transformers (eager attention, float32) with a forward
pre-hook on each attention layer's output projection that replaces the
ablated heads' slice of its input (zero, or the slice's mean over the
positions), against the same input without hooks: `loss` and
`ablated_loss` per position (the next token's cross-entropy, nats; causal
decoders only), `delta_loss`, `token_change` (1 − cos of each token's last
hidden state, after the final norm: a base model's `last_hidden_state`, a
causal LM's `hidden_states[-1]`) and
`output_change`, their mean. Cases with `importance` ablate each head
alone: `head_importance_delta_loss` and `head_importance_output_change`,
L rows of H.
"""
import json, os, sys
import torch
from transformers import AutoModel, AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ref import OUTPUT_PROJECTION, DECODERS  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
MODELS = os.path.expanduser(os.environ.get("HEADSCOPE_CACHE", "~/.cache/headscope")) + "/models"

# (name, model folder, fixture with the input ids, text, heads, mode, importance)
CASES = [
    ("minilm", f"{MODELS}/all-MiniLM-L6-v2", "harbour.minilm.json", "harbour.txt", [[1, 3], [4, 0]], "zero", False),
    ("minilm-mean", f"{MODELS}/all-MiniLM-L6-v2", "harbour.minilm.json", "harbour.txt", [[2, 5]], "mean", False),
    ("smollm2", f"{MODELS}/SmolLM2-135M-Instruct", "smollm2.json", "smollm2.txt", [[17, 3], [17, 4], [18, 6]],
     "zero", False),
    ("smollm2-mean", f"{MODELS}/SmolLM2-135M-Instruct", "smollm2.json", "smollm2.txt", [[0, 2], [5, 7]], "mean",
     False),
    ("llama", f"{FIXTURES}/families/llama", "families/llama.json", "families/llama.txt", None, "zero", True),
    ("gpt2", f"{FIXTURES}/families/gpt2", "families/gpt2.json", "families/gpt2.txt", None, "mean", True),
    ("bert", f"{FIXTURES}/families/bert", "families/bert.json", "families/bert.txt", None, "zero", True),
    # Encoders on the pre-norm stack: their last hidden states are through the final norm.
    ("modernbert", f"{FIXTURES}/families/modernbert", "families/modernbert.json", "families/modernbert.txt", None,
     "mean", True),
    ("embeddinggemma", f"{FIXTURES}/families/embeddinggemma", "families/embeddinggemma.json",
     "families/embeddinggemma.txt", [[1, 2]], "zero", False),
]


def load(folder):
    config = json.load(open(os.path.join(folder, "config.json")))
    causal = config["model_type"] in DECODERS and not config.get("use_bidirectional_attention")
    cls = AutoModelForCausalLM if causal else AutoModel
    model = cls.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32)
    model.eval()
    return model, causal


def outcome(model, causal, ids, heads, mode):
    """The last hidden states (T × hidden) and, for a decoder, the loss per
    position, with `heads` ([layer, head], layer counting each application
    of a shared layer) ablated."""
    H = model.config.num_attention_heads
    calls = [0]
    by_layer = {}
    for layer, head in heads:
        by_layer.setdefault(layer, []).append(head)

    def hook(module, inputs):
        layer = calls[0]
        calls[0] += 1
        if layer not in by_layer:
            return None
        x = inputs[0].clone()  # 1 × T × (H·d)
        d = x.shape[-1] // H
        for head in by_layer[layer]:
            part = x[..., head * d:(head + 1) * d]
            if mode == "zero":
                part.zero_()
            else:
                part.copy_(part.mean(dim=1, keepdim=True).expand_as(part))
        return (x,) + tuple(inputs[1:])

    hooks = [m.register_forward_pre_hook(hook) for name, m in model.named_modules() if OUTPUT_PROJECTION.search(name)]
    assert hooks, "no output projection"
    ids_t = torch.tensor([ids])
    extra = {"use_cache": False} if causal else {}
    if not causal and "token_type_ids" in model.forward.__code__.co_varnames:
        extra["token_type_ids"] = torch.zeros_like(ids_t)
    with torch.inference_mode():
        out = model(input_ids=ids_t, attention_mask=torch.ones_like(ids_t), output_hidden_states=True, **extra)
    for h in hooks:
        h.remove()
    # A base model's last_hidden_state is through its final norm (ModernBERT's
    # hidden_states[-1] is not); a causal LM's hidden_states[-1] is.
    last = out.hidden_states[-1] if causal else out.last_hidden_state
    hidden = last[0].double()
    losses = None
    if causal:
        logp = torch.log_softmax(out.logits[0].double(), dim=-1)
        losses = [-logp[i, ids[i + 1]].item() for i in range(len(ids) - 1)]
    return hidden, losses


def effect(base, ablated):
    (h0, l0), (h1, l1) = base, ablated
    change = (1 - torch.nn.functional.cosine_similarity(h0, h1, dim=-1)).tolist()
    result = {"token_change": change, "output_change": sum(change) / len(change)}
    if l0 is not None:
        result.update(loss=l0, ablated_loss=l1, delta_loss=sum(l1) / len(l1) - sum(l0) / len(l0))
    return result


def main():
    cases = []
    loaded = {}
    for name, folder, ids_fixture, text, heads, mode, importance in CASES:
        if folder not in loaded:
            loaded[folder] = load(folder)
        model, causal = loaded[folder]
        ids = json.load(open(os.path.join(FIXTURES, ids_fixture)))["input_ids"]
        base = outcome(model, causal, ids, [], mode)
        case = {"name": name, "model": os.path.relpath(folder, REPO) if folder.startswith(REPO) else
                os.path.basename(folder), "text": text, "input_ids": ids, "mode": mode}
        if importance:
            L, H = model.config.num_hidden_layers, model.config.num_attention_heads
            grid = [[effect(base, outcome(model, causal, ids, [[l, h]], mode)) for h in range(H)] for l in range(L)]
            case["head_importance_output_change"] = [[e["output_change"] for e in row] for row in grid]
            if causal:
                case["head_importance_delta_loss"] = [[e["delta_loss"] for e in row] for row in grid]
        else:
            case["heads"] = heads
            case.update(effect(base, outcome(model, causal, ids, heads, mode)))
        cases.append(case)
        print(name, {k: v for k, v in case.items() if k in ("delta_loss", "output_change")}, file=sys.stderr)
    out = os.path.join(FIXTURES, "ablation.json")
    json.dump({"cases": cases}, open(out, "w"), indent=1)
    print("wrote", out, file=sys.stderr)


if __name__ == "__main__":
    main()
