"""The Python package against the Rust engine and the command line:
captures of transformers models analyse to what `headscope analyze
--model` gives, `headscope.analyze` returns the CLI's JSON, models
headscope cannot run open and show their figures, and bad files fail
clearly."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import headscope
from conftest import (
    REPO,
    assert_figures_close,
    assert_tensors_close,
    edges,
    fixture_text,
    headscope_bin,
    read_json,
    run_headscope,
)

torch.manual_seed(0)


def capture_against_model(model_dir: Path, capture: headscope.Capture, text_file: str, tmp: Path) -> None:
    """`analyze --capture` of the saved capture equals `analyze --model` on
    the same text: tensors within 1e-4, figures per ANALYSIS.md §7 (the
    value-weighted ones where the capture has value norms)."""
    path = capture.save(tmp / "capture.safetensors")
    run_headscope("analyze", "--capture", path, "--json", tmp / "capture.json", "--npz", tmp / "capture.npz")
    run_headscope(
        "analyze", "--model", model_dir, "--one-sentence-per-line",
        "--json", tmp / "model.json", "--npz", tmp / "model.npz",
        REPO / "tests" / "fixtures" / text_file,
    )
    assert_tensors_close(tmp / "capture.npz", tmp / "model.npz")
    selection_edge, segmentation_edge = edges(tmp / "capture.npz", capture.header)
    weighted = capture.header["value_norms"]
    assert weighted == ("value_norms" in np.load(tmp / "capture.npz").files)
    assert_figures_close(
        read_json(tmp / "capture.json"),
        read_json(tmp / "model.json"),
        selection_edge,
        segmentation_edge,
        weighted,
    )


def test_capture_of_minilm_through_transformers_equals_the_model_run(minilm: Path, tmp_path: Path) -> None:
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(minilm)
    tokenizer = AutoTokenizer.from_pretrained(minilm)
    capture = headscope.capture(model, tokenizer, fixture_text("harbour.txt"), one_sentence_per_line=True)
    assert not capture.causal
    assert capture.header["model"] == {"name": "all-MiniLM-L6-v2", "type": "bert"}
    assert (capture.header["layers"], capture.header["heads"], capture.header["head_dim"]) == (6, 12, 32)
    # BERT's value projection read: the value norms of ANALYSIS.md §9.
    assert capture.header["value_norms"] and capture.value_norms[0].shape == (12, 65)
    capture_against_model(minilm, capture, "harbour.txt", tmp_path)
    reloaded = headscope.Capture.load(tmp_path / "capture.safetensors")
    np.testing.assert_array_equal(reloaded.value_norms[5], capture.value_norms[5])


def test_capture_of_smollm2_through_transformers_equals_the_model_run(smollm2: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    capture = headscope.capture(model, tokenizer, fixture_text("smollm2.txt"), one_sentence_per_line=True)
    assert capture.causal
    assert capture.header["model"]["type"] == "llama"
    assert (capture.header["layers"], capture.header["heads"]) == (30, 9)
    assert capture.header["value_norms"]  # v_proj of 3 key/value heads for 9 query heads
    capture_against_model(smollm2, capture, "smollm2.txt", tmp_path)
    figures = read_json(tmp_path / "capture.json")
    assert all(layer["segmentation_accuracy"] is None for layer in figures["layers"])


def test_capture_of_an_embedding_gemma_is_bidirectional(tmp_path: Path) -> None:
    """EmbeddingGemma (``use_bidirectional_attention``) through transformers:
    a decoder's input (``<bos> … <eos>``, separators at sentence ends), not
    causal, its segmentation figures defined, equal to ``analyze --model``."""
    from transformers import AutoModel, AutoTokenizer

    folder = REPO / "tests" / "fixtures" / "families" / "embeddinggemma"
    model = AutoModel.from_pretrained(folder, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    capture = headscope.capture(
        model, tokenizer, fixture_text("families/embeddinggemma.txt"), one_sentence_per_line=True
    )
    assert not capture.causal
    assert capture.header["tokens"]["separator_id"] is None
    assert capture.header["tokens"]["texts"][0] == "<bos>"
    assert capture.header["tokens"]["texts"][-1] == "<eos>"
    capture_against_model(folder, capture, "families/embeddinggemma.txt", tmp_path)
    figures = read_json(tmp_path / "capture.json")
    assert all(layer["segmentation_accuracy"] is not None for layer in figures["layers"])


# The families whose values come out of a fused q/k/v projection: the
# attention's module name, and its fused and output projections.
FUSED_FAMILIES = {
    "gpt2": ("attn", "c_attn", "c_proj"),
    "gpt_neox": ("attention", "query_key_value", "dense"),
    "modernbert": ("attn", "Wqkv", "Wo"),
    "phi3": ("self_attn", "qkv_proj", "o_proj"),
}


def fused_value_weight(
    family: str, fused: torch.nn.Module, heads: int, kv_heads: int, dim: int
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """W_v (hidden × H_kv·d, x·W form) and b_v (or None), cut by hand out of
    the fused weight as each family's attention splits its output."""
    # GPT-2's Conv1D keeps W as in × out (x·W); a Linear as out × in.
    weight = fused.weight.detach().double()
    weight = weight if family == "gpt2" else weight.T
    queries, values = heads * dim, kv_heads * dim
    if family == "gpt_neox":  # head by head: [q_h | k_h | v_h], d each
        columns = [3 * dim * h + 2 * dim + i for h in range(heads) for i in range(dim)]
    else:  # [q (H·d) | k (H_kv·d) | v (H_kv·d)]
        columns = list(range(queries + values, queries + 2 * values))
    bias = None if fused.bias is None else fused.bias.detach().double()[columns]
    return weight[:, columns], bias


def tiny_fused_model(family: str) -> tuple[torch.nn.Module, Path]:
    """A random model of the family, built by transformers from its
    fixture's config made 2 layers of hidden 64 (4 heads of 16; Phi-3's
    2 key/value heads kept), its biases made random (transformers starts
    them at 0, and b_v must count); and the fixture's tokenizer."""
    from transformers import AutoConfig, AutoModel

    folder = REPO / "tests" / "fixtures" / "families" / family
    fields = read_json(folder / "config.json")
    if family == "gpt2":
        fields.update(n_embd=64, n_layer=2, n_head=4)
    else:
        fields.update(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96)
    if family == "modernbert":
        fields["attention_bias"] = True
    torch.manual_seed(1)
    model = AutoModel.from_config(AutoConfig.for_model(**fields), dtype=torch.float32)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("bias"):
                parameter.normal_(0.0, 0.1)
    return model, folder / "tokenizer.json"


@pytest.mark.parametrize("family", sorted(FUSED_FAMILIES))
def test_a_fused_qkv_capture_has_the_value_norms_of_its_weights(family: str) -> None:
    """Where v comes out of a fused projection (ANALYSIS.md §9), the
    capture's value norms equal ‖v_j W_O^h‖ computed here from the model's
    weights: W_v cut by hand out of the fused weight, v = x·W_v + b_v from
    the input the attention was given; and its `_vw` figures are defined
    wherever their plain twins are."""
    model, tokenizer = tiny_fused_model(family)
    attention_name, fused_name, output_name = FUSED_FAMILIES[family]
    attentions = [m for n, m in model.named_modules() if n.endswith("." + attention_name)]
    assert len(attentions) == 2
    inputs: list[torch.Tensor] = []
    hooks = [
        a.register_forward_pre_hook(
            lambda _m, args, kwargs: inputs.append((args[0] if args else kwargs["hidden_states"])[0]),
            with_kwargs=True,
        )
        for a in attentions
    ]
    try:
        capture = headscope.capture(
            model, tokenizer, fixture_text(f"families/{family}.txt"), one_sentence_per_line=True
        )
    finally:
        for hook in hooks:
            hook.remove()
    assert capture.header["value_norms"] and len(capture.value_norms) == 2
    heads, dim = capture.header["heads"], capture.header["head_dim"]
    kv_heads = getattr(model.config, "num_key_value_heads", None) or heads
    assert (heads, dim, kv_heads) == (4, 16, 2 if family == "phi3" else 4)
    for layer, (attention, x) in enumerate(zip(attentions, inputs)):
        w_v, b_v = fused_value_weight(family, getattr(attention, fused_name), heads, kv_heads, dim)
        v = x.double() @ w_v + (0 if b_v is None else b_v)
        v = v.reshape(v.shape[0], kv_heads, dim)  # T × H_kv × d
        w_o = getattr(attention, output_name).weight.detach().double()
        w_o = w_o if family == "gpt2" else w_o.T  # x·W: H·d × hidden
        expected = np.stack([
            (v[:, h // (heads // kv_heads)] @ w_o[h * dim : (h + 1) * dim]).norm(dim=-1).numpy()
            for h in range(heads)
        ])
        np.testing.assert_allclose(capture.value_norms[layer], expected, rtol=1e-5, err_msg=f"layer {layer}")
    figures = capture.figures()
    for layer in figures["layers"]:
        for figure in (layer, *layer["heads"]):
            weighted = [k for k in figure if k.endswith("_vw")]
            assert weighted
            for key in weighted:
                assert (figure[key] is None) == (figure[key[: -len("_vw")]] is None), key
        assert all(head["sink_attention_vw"] is not None for head in layer["heads"])


@pytest.mark.parametrize("family", sorted(FUSED_FAMILIES))
def test_a_fused_qkv_capture_equals_the_model_run_value_weighting_included(family: str, tmp_path: Path) -> None:
    """The families' fixtures through transformers: the value norms read
    from the fused projection equal those `analyze --model` computes, and
    so do the `_vw` figures."""
    from transformers import AutoModel

    folder = REPO / "tests" / "fixtures" / "families" / family
    model = AutoModel.from_pretrained(folder, dtype=torch.float32)
    text_file = f"families/{family}.txt"
    capture = headscope.capture(model, folder / "tokenizer.json", fixture_text(text_file), one_sentence_per_line=True)
    assert capture.header["value_norms"]
    capture_against_model(folder, capture, text_file, tmp_path)
    assert "value_norms" in np.load(tmp_path / "model.npz").files  # so compared


def test_analyze_returns_exactly_the_cli_json_and_numpy_arrays(minilm: Path, tmp_path: Path) -> None:
    text_file = REPO / "tests" / "fixtures" / "harbour.txt"
    settings = {"one_sentence_per_line": True, "q": 0.02, "window": 3}
    run = headscope.analyze(str(minilm), text_file.read_text(encoding="utf-8"), **settings)
    run_headscope(
        "analyze", "--model", minilm, "--one-sentence-per-line", "--q", "0.02", "--window", "3",
        "--json", tmp_path / "cli.json", "--npz", tmp_path / "cli.npz", text_file,
    )
    assert run.figures == read_json(tmp_path / "cli.json")
    layers, heads, tokens, dim = run.shape
    assert run.attentions.shape == (layers, heads, tokens, tokens)
    assert run.head_outputs.shape == (layers, heads, tokens, dim)
    assert run.similarity.shape == (layers, heads, tokens, tokens)
    cli = np.load(tmp_path / "cli.npz")
    # The same engine, the same process of computation: bit for bit.
    assert np.array_equal(run.attentions, cli["attentions"])
    assert np.array_equal(run.head_outputs, cli["heads"])
    assert np.array_equal(run.similarity, cli["similarity"])
    assert np.array_equal(run.value_norms, cli["value_norms"])
    assert run.value_norms.shape == (layers, heads, tokens) and (run.value_norms > 0).all()
    np.testing.assert_allclose(run.attentions.sum(axis=-1), 1.0, atol=1e-5)
    assert run.tokens["ids"] == list(cli["input_ids"])
    with pytest.raises(TypeError, match="unknown setting"):
        headscope.analyze(str(minilm), "A text.", temperature=2)
    with pytest.raises(ValueError, match="q"):
        headscope.analyze(str(minilm), "A text.", q=2.0)
    with pytest.raises(RuntimeError, match="does not exist"):
        headscope.analyze("/no/such/model", "A text.")


class ToyAttention(torch.nn.Module):
    """A bidirectional attention whose heads end in `proj_out`."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj_out = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch, tokens, width = x.shape
        q, k, v = self.qkv(x).reshape(batch, tokens, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
        o = (p @ v).transpose(1, 2).reshape(batch, tokens, width)
        return x + self.proj_out(o), p


class ToyModel(torch.nn.Module):
    """Not a transformers model, not a family headscope runs: two layers
    of attention with a tanh between, returning `.attentions`."""

    def __init__(self, vocabulary: int, width: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocabulary, width)
        self.layers = torch.nn.ModuleList(ToyAttention(width, heads) for _ in range(2))

    def forward(self, input_ids, attention_mask=None, output_attentions=False):
        x, patterns = self.embed(input_ids), []
        for layer in self.layers:
            x, p = layer(x)
            x = torch.tanh(x)
            patterns.append(p)
        return type("Output", (), {"last_hidden_state": x, "attentions": tuple(patterns) if output_attentions else None})


def test_a_custom_model_headscope_cannot_run_captures_and_shows_its_figures(minilm: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(minilm)
    model = ToyModel(tokenizer.vocab_size)
    text = fixture_text("harbour.txt")
    capture = headscope.capture(
        model, tokenizer, text, one_sentence_per_line=True,
        causal=False, output_projections="proj_out", model_type="toy",
    )
    assert capture.header["model"] == {"name": "ToyModel", "type": "toy"}
    assert len(capture.head_outputs) == 2 and capture.head_outputs[0].shape[0] == 4
    # O is P·V: check against the module's own values.
    with torch.no_grad():
        x = model.embed(torch.tensor([capture.tokens["ids"]]))
        q, k, v = model.layers[0].qkv(x).reshape(1, x.shape[1], 3, 4, -1).permute(2, 0, 3, 1, 4)
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(8), dim=-1)
    np.testing.assert_allclose(capture.head_outputs[0], (p @ v)[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(capture.attentions[0], p[0].numpy(), atol=1e-6)
    figures = capture.figures()
    assert figures["tokens"] == len(capture.tokens["ids"])
    assert all(h["category"] in ("repetition", "focus", "local", "mixed") for h in figures["layers"][1]["heads"])
    assert figures["layers"][0]["separator_attention"] is not None
    path = capture.save(tmp_path / "toy.safetensors")
    table = run_headscope("analyze", "--capture", path).stdout
    assert "ToyModel (capture)" in table
    # The same figures through the command line, and again after a reload.
    run_headscope("analyze", "--capture", path, "--json", tmp_path / "toy.json")
    assert read_json(tmp_path / "toy.json") == figures
    assert headscope.Capture.load(path).figures() == figures


def test_a_capture_without_attention_has_null_attention_figures(minilm: Path) -> None:
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(minilm)
    tokenizer = AutoTokenizer.from_pretrained(minilm)
    text = fixture_text("harbour.txt")
    full = headscope.capture(model, tokenizer, text, one_sentence_per_line=True)
    bare = headscope.capture(model, tokenizer, text, one_sentence_per_line=True, attentions=False)
    assert bare.attentions is None and not bare.header["attentions"]
    # Without P the model may take another attention kernel (SDPA): O agrees to float noise.
    for a, b in zip(bare.head_outputs, full.head_outputs):
        np.testing.assert_allclose(a, b, atol=1e-5 * np.abs(b).max())
    for layer in bare.figures()["layers"]:
        for key in ("separator_attention", "sink_attention", "segmentation_accuracy", "segmentation_share"):
            assert layer[key] is None
        assert all(h["attention_stats"] is None and h["separator_attention"] is None for h in layer["heads"])
    # The same O without its P: every figure of S unchanged.
    o_only = headscope.Capture(dict(full.header), full.head_outputs)
    figures, with_p = o_only.figures(), full.figures()
    for layer, layer_p in zip(figures["layers"], with_p["layers"]):
        assert layer["separator_attention"] is None and layer_p["separator_attention"] is not None
        for key in ("mean_distance", "same_sentence_fraction", "focus_uniqueness", "distance_histogram"):
            assert layer[key] == layer_p[key]
        for head, head_p in zip(layer["heads"], layer_p["heads"]):
            assert head["attention_stats"] is None
            for key in ("category", "focus_token", "mean_distance", "local_fraction"):
                assert head[key] == head_p[key]


def test_a_damaged_capture_fails_clearly(minilm: Path, tmp_path: Path) -> None:
    run = headscope.analyze(str(minilm), "The cat sat. It slept.")
    path = tmp_path / "cut.safetensors"
    run.save(str(path))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    result = subprocess.run(
        [str(headscope_bin()), "analyze", "--capture", str(path)], capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "is not a safetensors file" in result.stderr and "cut.safetensors" in result.stderr
    from headscope import _native

    with pytest.raises(ValueError, match="is not a safetensors file"):
        _native.analyze_capture(str(path), [])
    # A newer version is named as such.
    run.save(str(tmp_path / "ok.safetensors"))
    newer = headscope.Capture.load(tmp_path / "ok.safetensors")
    newer.header["version"] = 2
    with pytest.raises(ValueError, match="version 2"):
        newer.figures()


def test_show_opens_the_viewer_on_a_capture(minilm: Path, tmp_path: Path) -> None:
    """The viewer process opens a window on an analysis under Xvfb (apt:
    xvfb, xdotool; scripts/test-deps.sh installs them)."""
    import os
    import shutil
    import time

    assert shutil.which("Xvfb") and shutil.which("xdotool"), "install xvfb and xdotool (scripts/test-deps.sh)"
    display = f":{60 + os.getpid() % 30}"
    xvfb = subprocess.Popen(
        ["Xvfb", display, "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    saved = {k: os.environ.get(k) for k in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_CACHE_HOME")}
    os.environ["DISPLAY"] = display
    os.environ.pop("WAYLAND_DISPLAY", None)
    os.environ["XDG_CACHE_HOME"] = str(tmp_path)  # the app's autosave, not the user's
    try:
        time.sleep(0.5)
        run = headscope.analyze(str(minilm), "The cat sat. It slept.")
        process = headscope.show(run)
        try:
            deadline, window = time.time() + 120, ""
            while not window and time.time() < deadline:
                assert process.poll() is None, "the viewer exited"
                window = subprocess.run(
                    ["xdotool", "search", "--name", "^headscope"], capture_output=True, text=True
                ).stdout.strip()
                time.sleep(0.5)
            assert window, "no headscope window appeared"
        finally:
            process.terminate()
            process.wait()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        xvfb.terminate()
        xvfb.wait()
