"""What the Python package's tests share: the headscope binary the Rust
build made, the test models (fetched by the project's scripts), the
fixture texts, and the figure comparison of ANALYSIS.md §7."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(
    os.environ.get("HEADSCOPE_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "headscope"
)
sys.path.insert(0, str(REPO / "reference"))


def headscope_bin() -> Path:
    """The binary under test: $HEADSCOPE_BIN, else the debug build."""
    path = Path(os.environ.get("HEADSCOPE_BIN", REPO / "target" / "debug" / "headscope"))
    if not path.is_file():
        pytest.fail(f"no headscope binary at {path}: build it (cargo build) or set HEADSCOPE_BIN")
    return path


def run_headscope(*args: Any) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(headscope_bin()), *map(str, args)], capture_output=True, text=True
    )
    assert result.returncode == 0, f"headscope {' '.join(map(str, args))}: {result.stderr}"
    return result


def model_folder(name: str, script: str) -> Path:
    folder = CACHE / "models" / name
    if not (folder / "config.json").is_file():
        subprocess.run(["bash", str(REPO / "scripts" / script)], check=True)
    return folder


@pytest.fixture(scope="session")
def minilm() -> Path:
    return model_folder("all-MiniLM-L6-v2", "fetch-test-model.sh")


@pytest.fixture(scope="session")
def smollm2() -> Path:
    return model_folder("SmolLM2-135M-Instruct", "fetch-smollm2-model.sh")


def fixture_text(name: str) -> str:
    return (REPO / "tests" / "fixtures" / name).read_text(encoding="utf-8")


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


FIGURE_TOLERANCE = 1e-3
PAIR_FIGURES = (
    "mean_distance",
    "same_sentence_fraction",
    "repetition_fraction",
    "focus_token_id",
    "focus_token",
    "focus_share",
    "local_fraction",
    "category",
)


def edges(npz: Path, header: dict[str, Any]) -> tuple[list[list[bool]], list[int]]:
    """Where a rule's knife edge lies (ANALYSIS.md §7), computed by the
    independent reference (reference/ref_analysis.py) from the tensors in
    `npz`: per layer, the heads whose S has a candidate within float noise
    of the tie band's edges, and the tokens whose separator margin is."""
    import ref_analysis

    arrays = np.load(npz)
    ids = arrays["input_ids"]
    tokens = header["tokens"]
    special = np.zeros(len(ids), dtype=bool)
    special[tokens["special_positions"]] = True
    sentence = np.array([-1 if s is None else s for s in tokens["sentence_ids"]])
    attentions = arrays["attentions"].astype(np.float64)
    reference = ref_analysis.analyse(
        ids,
        sentence,
        special,
        attentions,
        arrays["heads"],
        arrays["similarity"],
        tokens["separator_id"] if tokens["separator_id"] is not None else -1,
        separators=tokens["separator_positions"],
        causal=header["causal"],
    )
    return (
        [[h["selection_edge"] for h in layer["heads"]] for layer in reference["layers"]],
        [layer["segmentation_edge_tokens"] for layer in reference["layers"]],
    )


def _without_weighted(figures: Any) -> Any:
    """The figures without their value-weighted twins (``_vw`` keys)."""
    if isinstance(figures, dict):
        return {k: _without_weighted(v) for k, v in figures.items() if not k.endswith("_vw")}
    if isinstance(figures, list):
        return [_without_weighted(v) for v in figures]
    return figures


def close(ours: Any, theirs: Any, tolerance: float, where: str) -> None:
    if isinstance(theirs, dict):
        for key in theirs:
            close(ours[key], theirs[key], tolerance, f"{where}.{key}")
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            close(a, b, tolerance, f"{where}[{i}]")
    elif isinstance(theirs, float) and isinstance(ours, (int, float)):
        assert abs(ours - theirs) <= tolerance, f"{where}: {ours} != {theirs}"
    else:
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


def assert_figures_close(
    ours: dict[str, Any],
    theirs: dict[str, Any],
    selection_edge: list[list[bool]],
    segmentation_edge: list[int],
    weighted: bool = True,
) -> None:
    """As tests/common/parity.rs: every figure within 1e-3, categories and
    focus tokens equal, except exactly what lies on a rule's edge. Without
    ``weighted`` (ours came without value norms) the value-weighted twins
    (``_vw``) are not compared: ours are null."""
    if not weighted:
        ours, theirs = _without_weighted(ours), _without_weighted(theirs)
    for key, value in theirs.items():
        if key != "layers":
            close(ours[key], value, FIGURE_TOLERANCE, key)
    content = theirs["content_tokens"]
    for l, (mine, layer) in enumerate(zip(ours["layers"], theirs["layers"])):
        heads = len(layer["heads"])
        edge_heads = [h for h in range(heads) if selection_edge[l][h]]
        for h, (a, b) in enumerate(zip(mine["heads"], layer["heads"])):
            for key, value in b.items():
                if h in edge_heads and key in PAIR_FIGURES:
                    continue
                close(a[key], value, FIGURE_TOLERANCE, f"L{l} H{h} {key}")
        for key, value in layer.items():
            if key == "heads":
                continue
            allowance = FIGURE_TOLERANCE
            if key in ("mean_distance", "same_sentence_fraction") and value is not None:
                allowance += sum(
                    abs((mine["heads"][h][key] or 0) - (layer["heads"][h][key] or 0)) for h in edge_heads
                ) / heads
            if key == "focus_uniqueness":
                allowance += len(edge_heads) / heads
            if key in ("segmentation_accuracy", "segmentation_undecided"):
                allowance += segmentation_edge[l] / max(content, 1)
            if key == "distance_histogram":
                if not edge_heads:
                    close(mine[key], value, FIGURE_TOLERANCE, f"L{l} {key}")
                continue
            close(mine[key], value, allowance, f"L{l} {key}")
    for l, row in enumerate(theirs["layer_correlation"]):
        close(ours["layer_correlation"][l], row, FIGURE_TOLERANCE, f"layer_correlation[{l}]")


def assert_tensors_close(ours: Path, theirs: Path, tolerance: float = 1e-4) -> None:
    """input ids equal; each tensor within `tolerance` of its largest magnitude."""
    a, b = np.load(ours), np.load(theirs)
    assert list(a["input_ids"]) == list(b["input_ids"])
    # The value norms where both have them (a capture may come without).
    both = [n for n in ("value_norms",) if n in a.files and n in b.files]
    for name in ("attentions", "heads", "similarity", *both):
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        assert x.shape == y.shape, name
        relative = np.abs(x - y).max() / max(np.abs(y).max(), 1e-30)
        assert relative <= tolerance, f"{name}: {relative:.2e}"
