#!/usr/bin/env python3
"""One-off check of a long decoder input against transformers (not a test:
its reference would be hundreds of MB). Builds a small random Qwen2 with
4,096 positions and θ = 10⁶ (hidden 128, 2 query heads of 64, 2 layers), a
text of ~4,000 tokens (reference/texts three times, one sentence per line),
runs the reference of make_decoder_fixtures.py and `headscope analyze
--one-sentence-per-line --npz`, and prints the largest difference of
attentions, head outputs and similarity relative to each tensor's largest
magnitude (ANALYSIS.md §7 asks for 1e-4).

    .venv-ref/bin/python reference/check_long_decoder.py [HEADSCOPE_BINARY]
"""
import os, subprocess, sys, tempfile
import numpy as np
import torch
import transformers

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "reference"))
import make_decoder_fixtures as fixtures


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "target", "debug", "headscope")
    work = tempfile.mkdtemp(prefix="headscope-long-")
    folder = os.path.join(work, "qwen2")
    tok = fixtures.byte_level_bpe(["<|endoftext|>"], qwen_style=True)
    config = transformers.Qwen2Config(**fixtures.shape(
        tok, hidden_size=128, num_attention_heads=2, num_key_value_heads=2, intermediate_size=128,
        max_position_embeddings=4096, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}))
    torch.manual_seed(3)
    model = transformers.Qwen2Model(config)
    fixtures.randomise(model, 3)
    model.eval()
    model.save_pretrained(folder)
    tok.save(os.path.join(folder, "tokenizer.json"))
    texts = os.path.join(REPO, "reference", "texts")
    lines = []
    for name in sorted(os.listdir(texts)):
        lines += [line.strip() for line in open(os.path.join(texts, name), encoding="utf-8") if line.strip()]
    text = os.path.join(work, "long.txt")
    open(text, "w", encoding="utf-8").write("\n".join(lines * 3) + "\n")
    _, (ids, att, heads, sims) = fixtures.reference(folder, text)
    ours = os.path.join(work, "ours.npz")
    subprocess.run([binary, "analyze", "--model", folder, "--one-sentence-per-line", "--npz", ours, text],
                   check=True, stdout=subprocess.DEVNULL)
    z = np.load(ours)
    assert (z["input_ids"] == ids).all(), "input ids differ"
    print(f"{len(ids)} tokens")
    for key, reference in (("attentions", att), ("heads", heads), ("similarity", sims)):
        print(f"{key}: {np.abs(z[key] - reference).max() / np.abs(reference).max():.2e}")


if __name__ == "__main__":
    main()
