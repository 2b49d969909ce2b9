"""capture_transformer_lens against TransformerLens itself: SmolLM2 booted
as a TransformerLens 4 TransformerBridge (raw Hugging Face weights, no hub:
the local folder), captured from hook_z and hook_pattern (and the value
norms from hook_v and W_O); the capture analyses to what `headscope
analyze --model` gives on the same text, value-weighted figures included."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

import headscope
from conftest import fixture_text
from test_capture import capture_against_model


def test_capture_transformer_lens_equals_the_model_run(smollm2: Path, tmp_path: Path) -> None:
    # Never skipped: CI installs TransformerLens (python/requirements-test.txt).
    from transformer_lens.model_bridge import TransformerBridge
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    bridge = TransformerBridge.boot_transformers(str(smollm2), tokenizer=tokenizer, device="cpu")
    text = fixture_text("smollm2.txt")
    # TransformerLens's own tokenizer adds a BOS: the first token differs.
    with_bos = headscope.capture_transformer_lens(bridge, text, one_sentence_per_line=True)
    assert with_bos.tokens["ids"][0] == tokenizer.bos_token_id
    capture = headscope.capture_transformer_lens(bridge, text, one_sentence_per_line=True, tokenizer=tokenizer)
    assert capture.tokens["ids"] == with_bos.tokens["ids"][1:]
    assert capture.causal
    assert capture.header["value_norms"]  # hook_v of 3 key/value heads, W_O of 9
    assert capture.header["model"] == {"name": "SmolLM2-135M-Instruct", "type": "transformer_lens"}
    _, cache = bridge.run_with_cache(torch.tensor([capture.tokens["ids"]]))
    for layer in (0, 29):
        z = cache[f"blocks.{layer}.attn.hook_z"][0].permute(1, 0, 2).numpy()
        np.testing.assert_array_equal(capture.head_outputs[layer], z)
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"][0].numpy()
        np.testing.assert_array_equal(capture.attentions[layer], pattern)
    capture_against_model(smollm2, capture, "smollm2.txt", tmp_path)
