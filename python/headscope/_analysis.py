"""``headscope.analyze``: the Rust engine on a model folder, from Python."""

from __future__ import annotations

import json
import os
from functools import cached_property
from typing import Any

import numpy as np

from . import _native
from ._settings import flags


class Analysis:
    """One run of headscope's engine on a text.

    ``figures`` is the dict ``headscope analyze --json`` writes (the
    value-weighted twins ``_vw`` included); ``attentions`` and
    ``similarity`` (L×H×T×T), ``head_outputs`` (L×H×T×d) and
    ``value_norms`` (L×H×T) are float32 numpy arrays, made when first read.
    """

    def __init__(self, run: Any) -> None:
        self._run = run

    @cached_property
    def figures(self) -> dict[str, Any]:
        """Every figure (ANALYSIS.md §3–§6), as ``analyze --json`` writes it."""
        return json.loads(self._run.figures_json())

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(layers L, heads H, tokens T, head dimension d)."""
        return tuple(self._run.shape())

    @cached_property
    def tokens(self) -> dict[str, Any]:
        """The input: ids, texts, character offsets, sentence ids,
        special and separator positions (the capture header's ``tokens``)."""
        return json.loads(self._run.header_json())["tokens"]

    @cached_property
    def attentions(self) -> np.ndarray:
        """Attention probabilities P, L×H×T×T (row = query)."""
        layers, heads, tokens, _ = self.shape
        return _array(self._run.attentions(), (layers, heads, tokens, tokens))

    @cached_property
    def head_outputs(self) -> np.ndarray:
        """Head output vectors O = P·V, L×H×T×d."""
        return _array(self._run.head_outputs(), self.shape)

    @cached_property
    def value_norms(self) -> np.ndarray:
        """Each head's ‖v_j W_O^h‖ per token (ANALYSIS.md §9), L×H×T: the
        size of what each key writes through the head."""
        layers, heads, tokens, _ = self.shape
        return _array(self._run.value_norms(), (layers, heads, tokens))

    @cached_property
    def similarity(self) -> np.ndarray:
        """Context similarity S = O·Oᵀ, L×H×T×T."""
        layers, heads, tokens, _ = self.shape
        return _array(self._run.similarity(), (layers, heads, tokens, tokens))

    def save(self, path: str) -> None:
        """Stores the run as a capture file (docs/CAPTURE.md), with P."""
        self._run.save_capture(str(path))

    def __repr__(self) -> str:
        layers, heads, tokens, dim = self.shape
        return f"<headscope.Analysis {layers} layers × {heads} heads, {tokens} tokens, d = {dim}>"


def _array(data: bytes, shape: tuple[int, ...]) -> np.ndarray:
    return np.frombuffer(data, dtype="<f4").reshape(shape)


def analyze(model: str, text: str, **settings: Any) -> Analysis:
    """Runs headscope's own engine on ``text`` with the model in folder
    ``model`` (config.json, model.safetensors, tokenizer.json) or a
    Hugging Face id.

    ``settings`` are ``headscope analyze``'s options: ``one_sentence_per_line``,
    ``plain``, ``q``, ``selection``, ``z``, ``k``, ``similarity``, ``window``,
    ``max_tokens``, ``capture_memory_mb``.

    >>> run = headscope.analyze("~/models/all-MiniLM-L6-v2", "The cat sat. It slept.")
    >>> run.figures["layers"][0]["mean_distance"], run.attentions.shape
    """
    return Analysis(_native.analyze(os.path.expanduser(str(model)), text, flags(settings)))


def ablate(
    model: str,
    text: str | None = None,
    heads: str | list[tuple[int, int]] | None = None,
    mode: str = "zero",
    importance: bool = False,
    probe: str | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """Does a head matter? Runs ``text`` with ``heads`` ablated (ANALYSIS.md
    §9) with headscope's own engine, as ``headscope ablate --json`` does,
    and returns its JSON as a dict: ``delta_loss`` (a causal decoder's mean
    change of the next-token loss, nats), ``output_change`` (mean 1 − cos of
    the last hidden states), and per position ``loss``, ``ablated_loss``,
    ``token_change``. With ``importance=True``, each head ablated alone:
    ``head_importance_delta_loss`` and ``head_importance_output_change``,
    lists of L rows of H.

    ``heads``: ``[(layer, head), ...]`` or ``"3.4,5.1"``, both from 0.
    ``mode``: ``"zero"`` or ``"mean"`` (the head's mean output over the
    positions). ``probe="induction"`` runs the induction probe instead of
    a text. ``settings`` are the input settings of ``analyze``
    (``one_sentence_per_line``, ``plain``, ``max_tokens``).

    >>> effect = headscope.ablate("~/models/SmolLM2-135M-Instruct", text, heads=[(17, 3)])
    >>> effect["delta_loss"], effect["output_change"]
    """
    args = flags(settings)
    if heads is not None:
        if not isinstance(heads, str):
            heads = ",".join(f"{layer}.{head}" for layer, head in heads)
        args += ["--heads", heads]
    if importance:
        args.append("--importance")
    if probe is not None:
        args += ["--probe", probe]
    args += ["--mode", mode]
    return json.loads(_native.ablate(os.path.expanduser(str(model)), text, args))
