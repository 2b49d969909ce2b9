"""`headscope.ablate` (ANALYSIS.md §9) is `headscope ablate --json`: the
same JSON for the same flags, its effects those of the transformers
reference in tests/fixtures/ablation.json, and bad heads refused."""

from __future__ import annotations

from pathlib import Path

import pytest

import headscope
from conftest import REPO, fixture_text, read_json, run_headscope


def reference_case(name: str) -> dict:
    cases = read_json(REPO / "tests" / "fixtures" / "ablation.json")["cases"]
    return next(case for case in cases if case["name"] == name)


def test_ablate_returns_the_cli_json_and_equals_the_reference(smollm2: Path, tmp_path: Path) -> None:
    case = reference_case("smollm2")
    heads = [tuple(pair) for pair in case["heads"]]
    effect = headscope.ablate(str(smollm2), fixture_text(case["text"]), heads=heads, one_sentence_per_line=True)
    run_headscope(
        "ablate", "--model", smollm2, "--one-sentence-per-line", "--heads", "17.3,17.4,18.6",
        "--json", tmp_path / "cli.json", REPO / "tests" / "fixtures" / case["text"],
    )
    assert effect == read_json(tmp_path / "cli.json")
    assert effect["input_ids"] == case["input_ids"]
    assert effect["heads"] == case["heads"]
    assert abs(effect["delta_loss"] - case["delta_loss"]) <= 1e-4
    assert abs(effect["output_change"] - case["output_change"]) <= 1e-4


def test_importance_grid_of_an_encoder(minilm: Path) -> None:
    text = fixture_text("harbour.txt")
    grid = headscope.ablate(str(minilm), text, importance=True, mode="mean", one_sentence_per_line=True)
    changes = grid["head_importance_output_change"]
    assert len(changes) == 6 and all(len(row) == 12 for row in changes)
    assert grid["head_importance_delta_loss"] is None  # an encoder has no next-token loss
    # Each cell is that head ablated alone.
    one = headscope.ablate(str(minilm), text, heads="2.5", mode="mean", one_sentence_per_line=True)
    assert one["output_change"] == changes[2][5]
    assert abs(one["output_change"] - reference_case("minilm-mean")["output_change"]) <= 1e-4


def test_bad_heads_fail_clearly(minilm: Path) -> None:
    with pytest.raises(RuntimeError, match="head 9.0 is not in the model"):
        headscope.ablate(str(minilm), "A text. Another.", heads=[(9, 0)])
    with pytest.raises(RuntimeError, match="mode"):
        headscope.ablate(str(minilm), "A text.", heads="1.1", mode="half")
