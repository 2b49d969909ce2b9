"""capture_transformer_lens against TransformerLens itself: a
HookedTransformer (random weights, the test model's tokenizer; no hub here)
captured from hook_z and hook_pattern, saved and analysed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

import headscope
from conftest import fixture_text, run_headscope


def test_capture_transformer_lens_reads_hook_z_and_hook_pattern(smollm2: Path, tmp_path: Path) -> None:
    # Not skipped where the package is missing: CI installs it (scripts/python-env.sh).
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    torch.manual_seed(0)
    config = HookedTransformerConfig(
        n_layers=2, d_model=64, n_ctx=256, d_head=16, n_heads=4, d_mlp=128,
        d_vocab=len(tokenizer), act_fn="gelu", normalization_type="LN",
        positional_embedding_type="rotary", model_name="toy-lens",
    )
    model = HookedTransformer(config)
    model.set_tokenizer(tokenizer, default_padding_side="right")
    text = fixture_text("smollm2.txt")
    capture = headscope.capture_transformer_lens(model, text, one_sentence_per_line=True)
    assert capture.causal and capture.header["model"] == {"name": "toy-lens", "type": "transformer_lens"}
    ids = torch.tensor([capture.tokens["ids"]])
    _, cache = model.run_with_cache(ids)
    for layer in range(2):
        z = cache[f"blocks.{layer}.attn.hook_z"][0].permute(1, 0, 2).numpy()
        np.testing.assert_array_equal(capture.head_outputs[layer], z)
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"][0].numpy()
        np.testing.assert_array_equal(capture.attentions[layer], pattern)
        # O is P·V, head by head.
        v = cache[f"blocks.{layer}.attn.hook_v"][0].permute(1, 0, 2).numpy()
        np.testing.assert_allclose(capture.head_outputs[layer], pattern @ v, atol=1e-5)
    # The same tokens as headscope builds for the model itself.
    run_headscope(
        "analyze", "--model", smollm2, "--one-sentence-per-line", "--json", tmp_path / "model.json",
        Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "smollm2.txt",
    )
    import json

    assert json.loads((tmp_path / "model.json").read_text())["input_ids"] == capture.tokens["ids"]
    figures = capture.figures()
    assert len(figures["layers"]) == 2
    assert all(layer["segmentation_accuracy"] is None for layer in figures["layers"])
    assert all(layer["separator_attention"] is not None for layer in figures["layers"])
