#!/usr/bin/env python3
"""The reference for a decoder that generates (greedy continuation, the
logit lens), written to tests/fixtures/generation.json:

    .venv-ref/bin/python reference/make_generation_fixture.py [--smollm2 DIR]

- `greedy`: for SmolLM2-135M-Instruct (DIR, default
  $HEADSCOPE_CACHE/models/SmolLM2-135M-Instruct, as
  scripts/fetch-smollm2-model.sh makes it) and each decoder family fixture
  in tests/fixtures/families/, a prompt, its ids (the tokenizer's own
  special tokens, no chat template) and transformers'
  `generate(do_sample=False)` continuation: `generated_ids`, stopping at the
  model's end-of-sequence token or after `max_new_tokens`, and per step the
  gap between the best and second-best logit (`top_logit_gaps`). One SmolLM2 entry
  has `chat: true`: the prompt is a user message put through the
  tokenizer's chat template with the generation prompt.
- `logit_lens`: SmolLM2 on the ids of tests/fixtures/smollm2.json. For each
  layer l the residual stream after layer l goes through the final norm and
  the LM head (transformers' `hidden_states[l + 1]`, which for the last
  layer already holds the final norm, so there the model's own logits are
  used): per position the 5 likeliest next tokens (`top_ids`) and their
  probabilities (`top_probs`, softmax in float32), and at each position but
  the last the rank of the true next token (`next_token_ranks`, 1 = the
  likeliest; equal logits by ascending id), as `headscope analyze
  --logit-lens` writes them.
"""
import argparse, json, os, sys
import torch
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAMILIES = os.path.join(REPO, "tests", "fixtures", "families")
OUT = os.path.join(REPO, "tests", "fixtures", "generation.json")
DECODERS = ["gpt2", "llama", "qwen2", "mistral", "gpt_neox", "gemma", "gemma2", "gemma3_text", "qwen3", "phi3",
            "olmo2"]


def load(folder):
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32)
    model.eval()
    return model


def greedy(model, ids, max_new_tokens):
    """The continuation's ids, and at each step the gap between the best and
    the second-best logit (a check may allow a different pick where it is
    within float noise: ANALYSIS.md §7)."""
    with torch.inference_mode():
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             do_sample=False, max_new_tokens=max_new_tokens, output_logits=True,
                             return_dict_in_generate=True,
                             pad_token_id=model.config.eos_token_id if model.config.pad_token_id is None
                             else model.config.pad_token_id)
    gaps = [float(g[0] - g[1]) for g in (torch.topk(step[0], 2).values for step in out.logits)]
    return out.sequences[0, len(ids):].tolist(), gaps


def entry(model_name, prompt, chat, ids, n, model):
    generated, gaps = greedy(model, ids, n)
    return {"model": model_name, "prompt": prompt, "chat": chat, "prompt_ids": ids, "max_new_tokens": n,
            "generated_ids": generated, "top_logit_gaps": gaps}


def chat_ids(folder, message):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    ids = tok.apply_chat_template([{"role": "user", "content": message}], add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)


def logit_lens(model, ids, k=5):
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True, use_cache=False)
        layers = []
        L = model.config.num_hidden_layers
        norm, head = model.model.norm, model.lm_head
        # hidden_states[L] already has the final norm: check it, then use the logits.
        assert torch.allclose(head(out.hidden_states[L][0]), out.logits[0], atol=1e-4)
        for l in range(L):
            logits = out.logits[0] if l == L - 1 else head(norm(out.hidden_states[l + 1][0]))
            probs = torch.softmax(logits.float(), dim=-1)
            top = torch.topk(probs, k, dim=-1)
            nxt = torch.tensor(ids[1:])
            own = logits[:-1].gather(1, nxt[:, None])
            below = torch.arange(logits.shape[1])[None, :] < nxt[:, None]
            ahead = (logits[:-1] > own) | ((logits[:-1] == own) & below)
            ranks = (ahead.sum(dim=1) + 1).tolist()
            layers.append({"top_ids": top.indices.tolist(), "top_probs": top.values.tolist(),
                           "next_token_ranks": ranks})
    return layers


def main():
    cache = os.environ.get("HEADSCOPE_CACHE", os.path.expanduser("~/.cache/headscope"))
    parser = argparse.ArgumentParser()
    parser.add_argument("--smollm2", default=os.path.join(cache, "models", "SmolLM2-135M-Instruct"))
    args = parser.parse_args()
    torch.manual_seed(0)
    entries = []
    smol = load(args.smollm2)
    smol_tok = Tokenizer.from_file(os.path.join(args.smollm2, "tokenizer.json"))
    for prompt, n in [("The capital of France is", 12), ("Once upon a time, in a small village by the sea,", 24)]:
        ids = smol_tok.encode(prompt).ids
        entries.append(entry("SmolLM2-135M-Instruct", prompt, False, ids, n, smol))
    message = "What is the capital of France?"
    ids = chat_ids(args.smollm2, message)
    entries.append(entry("SmolLM2-135M-Instruct", message, True, ids, 20, smol))
    for name in DECODERS:
        folder = os.path.join(FAMILIES, name)
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        prompt = open(os.path.join(FAMILIES, f"{name}.txt"), encoding="utf-8").readline().strip()
        ids = tok.encode(prompt).ids
        entries.append(entry(f"families/{name}", prompt, False, ids, 10, load(folder)))
    fixture_ids = json.load(open(os.path.join(REPO, "tests", "fixtures", "smollm2.json")))["input_ids"]
    lens = {"model": "SmolLM2-135M-Instruct", "input_ids": fixture_ids, "layers": logit_lens(smol, fixture_ids)}
    with open(OUT, "w") as f:
        json.dump({"greedy": entries, "logit_lens": lens}, f)
    for e in entries:
        text = smol_tok.decode(e["generated_ids"]) if e["model"].startswith("SmolLM2") else e["generated_ids"]
        print(f"{e['model']}: {e['prompt']!r} -> {text!r}")
    print(f"{OUT}: {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
