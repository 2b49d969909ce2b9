"""Captures: what a PyTorch model's heads output on a text, stored as a
headscope capture file (docs/CAPTURE.md) and analysed by the Rust engine.

``capture`` runs any transformers model (any device, any dtype): the input
is built by headscope's own Rust code from the model's tokenizer
(ANALYSIS.md §1 for encoders, §8 for decoders), so it is the input
``headscope analyze --model`` would build; a forward pre-hook on each
attention's output projection takes that projection's input — the heads'
outputs O = P·V side by side, before the projection, the residual and the
norm (ANALYSIS.md §2) — and ``output_attentions=True`` gives P. A hook on
each attention's value projection (BERT's ``value``, Llama's ``v_proj``,
…) reads v, or on its fused q/k/v projection (GPT-2's ``c_attn``,
GPT-NeoX's ``query_key_value``, …) the output v is cut from, and each
head's value norms ‖v_j W_O^h‖ (ANALYSIS.md §9's value weighting) come
from v and the output projection's weight.
``capture_transformer_lens`` reads the same from a TransformerLens run
(``hook_z``, ``hook_pattern``).
"""

from __future__ import annotations

import inspect
import json
import os
import tempfile
from typing import Any, Iterable, Sequence

import numpy as np

from . import _native
from ._settings import flags

#: Model types that are causal decoders, where the config does not say so.
DECODER_TYPES = frozenset(
    """gpt2 gpt_neo gpt_neox gptj llama mistral mixtral qwen2 qwen2_moe qwen3
    gemma gemma2 gemma3 gemma3_text phi phi3 olmo olmo2 opt bloom falcon
    starcoder2 stablelm cohere granite smollm3""".split()
)

#: Where each family keeps its attention output projection (name suffixes).
OUTPUT_PROJECTIONS = (
    "attention.output.dense",  # BERT, RoBERTa, ELECTRA, XLM-R, CamemBERT
    "attention.out_lin",  # DistilBERT
    "attention.dense",  # ALBERT
    "attn.Wo",  # ModernBERT
    "self_attn.o_proj",  # Llama, Mistral, Qwen2, Gemma, Phi-3, OLMo
    "attn.c_proj",  # GPT-2
    "attention.dense",  # GPT-NeoX, Pythia
    "self_attn.out_proj",  # OPT, BART-style
    "attn.out_proj",  # GPT-J, GPT-Neo
    "self_attention.dense",  # Falcon, BLOOM
)

#: The families whose positions start after the padding index (ANALYSIS.md §8).
_OFFSET_POSITIONS = {"roberta": 2, "xlm-roberta": 2, "camembert": 2}


class Capture:
    """One model run on one text: the input (``header``, docs/CAPTURE.md)
    and per layer every head's outputs O (H×T×d) and, when captured, its
    attention P (H×T×T), as float32 numpy arrays."""

    def __init__(
        self,
        header: dict[str, Any],
        head_outputs: Sequence[np.ndarray],
        attentions: Sequence[np.ndarray] | None = None,
        value_norms: Sequence[np.ndarray] | None = None,
    ) -> None:
        self.header = header
        self.head_outputs = [np.ascontiguousarray(o, dtype=np.float32) for o in head_outputs]
        self.attentions = (
            None
            if attentions is None
            else [np.ascontiguousarray(p, dtype=np.float32) for p in attentions]
        )
        # Per layer H×T, kept with P only (docs/CAPTURE.md).
        self.value_norms = (
            None
            if value_norms is None or self.attentions is None
            else [np.ascontiguousarray(n, dtype=np.float32) for n in value_norms]
        )
        header["value_norms"] = self.value_norms is not None
        header["layers"] = len(self.head_outputs)
        heads, _, dim = self.head_outputs[0].shape if self.head_outputs else (0, 0, 0)
        header["heads"], header["head_dim"] = heads, dim
        header["attentions"] = self.attentions is not None

    @property
    def tokens(self) -> dict[str, Any]:
        """ids, texts, character offsets, sentence ids, special and separator positions."""
        return self.header["tokens"]

    @property
    def causal(self) -> bool:
        return bool(self.header["causal"])

    def save(self, path: str | os.PathLike[str]) -> str:
        """Writes the capture file; returns its path."""
        from safetensors.numpy import save_file

        tensors = {f"layers.{l}.head_outputs": o for l, o in enumerate(self.head_outputs)}
        for l, p in enumerate(self.attentions or []):
            tensors[f"layers.{l}.attentions"] = p
        for l, n in enumerate(self.value_norms or []):
            tensors[f"layers.{l}.value_norms"] = n
        save_file(tensors, str(path), metadata={"headscope": json.dumps(self.header)})
        return str(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Capture":
        """Reads a capture file (checked by headscope when analysed)."""
        from safetensors import safe_open

        with safe_open(str(path), framework="numpy") as f:
            header = json.loads(f.metadata()["headscope"])
            layers = range(header["layers"])
            outputs = [f.get_tensor(f"layers.{l}.head_outputs") for l in layers]
            attentions = (
                [f.get_tensor(f"layers.{l}.attentions") for l in layers]
                if header["attentions"]
                else None
            )
            norms = (
                [f.get_tensor(f"layers.{l}.value_norms") for l in layers]
                if header.get("value_norms")
                else None
            )
        return cls(header, outputs, attentions, norms)

    def figures(self, **settings: Any) -> dict[str, Any]:
        """Every figure, as ``headscope analyze --capture FILE --json`` writes
        it; ``settings`` as for :func:`headscope.analyze` (the analysis ones)."""
        with tempfile.TemporaryDirectory() as folder:
            path = self.save(os.path.join(folder, "capture.safetensors"))
            return json.loads(_native.analyze_capture(path, flags(settings)))

    def __repr__(self) -> str:
        h = self.header
        what = "O and P" if h["attentions"] else "O only"
        return (
            f"<headscope.Capture of {h['model']['name']} ({h['model']['type']}): "
            f"{h['layers']} layers × {h['heads']} heads, {len(self.tokens['ids'])} tokens, {what}>"
        )

# Each attention's own value projection, by module name suffix: its
# output is v (T × H_kv·d).
VALUE_PROJECTIONS = (
    "attention.self.value",  # BERT, RoBERTa, ELECTRA, XLM-R, CamemBERT
    "attention.v_lin",  # DistilBERT
    "attention.value",  # ALBERT
    "self_attn.v_proj",  # Llama, Mistral, Qwen2, Gemma, OLMo
    "attn.v_proj",  # GPT-J
)

# Each attention's fused q/k/v projection, by module name suffix, and where
# its output keeps v: "concatenated", [q (H·d) | k (H_kv·d) | v (H_kv·d)];
# "per head", H blocks of [q_h | k_h | v_h] (as transformers splits them).
FUSED_VALUE_PROJECTIONS = {
    "attn.c_attn": "concatenated",  # GPT-2 (a Conv1D)
    "attention.query_key_value": "per head",  # GPT-NeoX, Pythia
    "attn.Wqkv": "concatenated",  # ModernBERT (viewed T × 3 × H × d)
    "self_attn.qkv_proj": "concatenated",  # Phi-3
}


def _producer() -> str:
    return f"headscope-python {_native.version()}"


def _input_header(
    tokenizer: Any,
    text: str,
    causal: bool,
    settings: dict[str, Any],
    pad_id: int | None,
    max_tokens: int | None,
    bidirectional: bool = False,
) -> dict[str, Any]:
    """The capture header of ``text`` as headscope builds the input."""
    if isinstance(tokenizer, (str, os.PathLike)):
        with open(tokenizer, encoding="utf-8") as f:
            tokenizer_json = f.read()
    elif hasattr(tokenizer, "backend_tokenizer"):
        tokenizer_json = tokenizer.backend_tokenizer.to_str()
    elif hasattr(tokenizer, "to_str"):
        tokenizer_json = tokenizer.to_str()
    else:
        raise TypeError(
            "tokenizer must be a transformers fast tokenizer, a tokenizers.Tokenizer "
            "or the path of a tokenizer.json"
        )
    return json.loads(
        _native.input_header(
            tokenizer_json, text, flags(settings), causal, pad_id, max_tokens, bidirectional
        )
    )


def _is_bidirectional_decoder(model: Any) -> bool:
    """A decoder family whose config makes its attention go both ways
    (EmbeddingGemma's ``use_bidirectional_attention``): a decoder's input,
    an encoder's attention and figures (ANALYSIS.md §8)."""
    config = getattr(model, "config", None)
    return bool(getattr(config, "use_bidirectional_attention", False))


def _is_causal(model: Any) -> bool:
    config = getattr(model, "config", None)
    if _is_bidirectional_decoder(model):
        return False
    if getattr(config, "is_decoder", False):
        return True
    if getattr(config, "model_type", None) in DECODER_TYPES:
        return True
    name = type(model).__name__
    return name.endswith(("ForCausalLM", "LMHeadModel"))


def _max_tokens(config: Any) -> int | None:
    for field in ("max_position_embeddings", "n_positions", "max_seq_len"):
        limit = getattr(config, field, None)
        if isinstance(limit, int) and limit > 0:
            return limit - _OFFSET_POSITIONS.get(getattr(config, "model_type", ""), 0)
    return None


def _projections(model: Any, names: str | Iterable[str] | None) -> list[tuple[str, Any]]:
    """The attention output projections, in the model's module order."""
    if isinstance(names, str):
        names = (names,)
    suffixes = tuple(names) if names is not None else OUTPUT_PROJECTIONS
    found = [
        (name, module)
        for name, module in model.named_modules()
        if _named(name, suffixes)
    ]
    if not found:
        raise ValueError(
            f"no attention output projection found in {type(model).__name__} "
            f"(looked for modules named *{', *'.join(suffixes)}); pass "
            "output_projections= with the name (or name suffix) of the linear "
            "layer each attention ends with"
        )
    return found


def capture(
    model: Any,
    tokenizer: Any,
    text: str,
    one_sentence_per_line: bool = False,
    *,
    plain: bool = False,
    attentions: bool = True,
    causal: bool | None = None,
    output_projections: str | Iterable[str] | None = None,
    max_tokens: int | None = None,
    name: str | None = None,
    model_type: str | None = None,
) -> Capture:
    """Runs a PyTorch model on ``text`` and captures every head's output O
    and attention P.

    ``model``: a transformers model (or any ``torch.nn.Module`` that takes
    ``input_ids`` and ``attention_mask``, returns ``.attentions`` when called
    with ``output_attentions=True`` and ends each attention with an output
    projection), on any device, in any dtype (the capture is float32).
    ``tokenizer``: its fast tokenizer, a ``tokenizers.Tokenizer`` or a
    ``tokenizer.json`` path. The input is built as ANALYSIS.md §1 (encoders,
    ``[CLS] s1 [SEP] s2 [SEP] …``) or §8 (decoders, ``causal``: the text as the
    tokenizer encodes it) builds it, cut at the last whole sentence within
    the model's positions or ``max_tokens``.

    ``attentions=False`` captures O alone (the figures made from P are then
    ``None``). ``output_projections``: the module name (suffix) of each
    attention's output projection, for a model whose family is not in
    :data:`OUTPUT_PROJECTIONS`. ``name`` and ``model_type`` describe the
    model in the file (default: its config's ``name_or_path`` and
    ``model_type``, else its class name).
    """
    import torch

    config = getattr(model, "config", None)
    bidirectional = causal is None and _is_bidirectional_decoder(model)
    causal = _is_causal(model) if causal is None else causal
    if max_tokens is None and config is not None:
        max_tokens = _max_tokens(config)
    # A bidirectional decoder's input is a decoder's; its header says not causal.
    header = _input_header(
        tokenizer,
        text,
        causal or bidirectional,
        {"one_sentence_per_line": one_sentence_per_line, "plain": plain},
        getattr(config, "pad_token_id", None),
        max_tokens,
        bidirectional,
    )
    ids = header["tokens"]["ids"]
    parameter = next(iter(model.parameters()))
    input_ids = torch.tensor([ids], dtype=torch.long, device=parameter.device)
    arguments: dict[str, Any] = {
        "input_ids": input_ids,
        "attention_mask": torch.ones_like(input_ids),
    }
    accepted = inspect.signature(model.forward).parameters
    # An encoder's segment ids are all 0 (ANALYSIS.md §1); a decoder gets
    # none: GPT-2 would add the embedding of token 0 to every position.
    if "token_type_ids" in accepted and not causal:
        arguments["token_type_ids"] = torch.zeros_like(input_ids)
    if attentions:
        arguments["output_attentions"] = True

    outputs: list[Any] = []
    values: list[Any] = []

    def keep_input(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        first = args[0] if args else next(iter(kwargs.values()))
        outputs.append(first.detach())

    def keep_value(_module: Any, _args: Any, output: Any) -> None:
        values.append(output.detach())

    projections = [module for _, module in _projections(model, output_projections)]
    value_projections = _value_projections(model)
    if len(value_projections) != len(projections):
        value_projections = []  # not one per attention: no value norms
    hooks = [module.register_forward_pre_hook(keep_input, with_kwargs=True) for module in projections]
    hooks += [module.register_forward_hook(keep_value) for module, _ in value_projections]
    restore = _eager_attention(model) if attentions else None
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            result = model(**arguments)
    finally:
        for hook in hooks:
            hook.remove()
        model.train(was_training)
        if restore is not None:
            restore()

    patterns = None
    if attentions:
        found = getattr(result, "attentions", None)
        if found is None and isinstance(result, (tuple, list)):
            found = result[-1]
        if not found or any(p is None for p in found):
            raise ValueError(
                f"{type(model).__name__} returned no attentions with output_attentions=True; "
                "use attentions=False to capture the head outputs alone"
            )
        patterns = [p[0].float().cpu().numpy() for p in found]
    heads = patterns[0].shape[0] if patterns else _heads(config)
    if patterns is not None and len(patterns) != len(outputs):
        raise ValueError(
            f"{len(outputs)} attention output projections ran but the model returned "
            f"{len(patterns)} attention layers; pass output_projections="
        )
    layers = [_split_heads(o[0], heads) for o in outputs]
    norms = None
    if patterns is not None and values and len(values) == len(outputs):
        layouts = [layout for _, layout in value_projections]
        norms = [
            _value_norms(v[0], p, heads, layout) for v, p, layout in zip(values, projections, layouts)
        ]
        if any(n is None for n in norms):
            norms = None  # a fused output not laid out as its family's: no value norms
    header["model"] = {
        "name": name or _model_name(model),
        "type": model_type or getattr(config, "model_type", None) or type(model).__name__,
    }
    header["producer"] = _producer()
    return Capture(header, layers, patterns, norms)


def _value_projections(model: Any) -> list[tuple[Any, str | None]]:
    """The modules whose output holds each attention's v, in the model's
    module order, each with where its output keeps v: None for a value
    projection of its own, else a layout of FUSED_VALUE_PROJECTIONS."""
    found: list[tuple[Any, str | None]] = []
    for name, module in model.named_modules():
        if _named(name, VALUE_PROJECTIONS):
            found.append((module, None))
            continue
        for suffix, layout in FUSED_VALUE_PROJECTIONS.items():
            if _named(name, (suffix,)) and _holds_plain_values(model, name, suffix, module):
                found.append((module, layout))
    return found


def _named(name: str, suffixes: Iterable[str]) -> bool:
    return any(name == s or name.endswith("." + s) for s in suffixes)


def _holds_plain_values(model: Any, name: str, suffix: str, module: Any) -> bool:
    """Whether a fused projection's output holds v as its attention reads
    it, in its family's layout. Not GPTBigCode's ``c_attn`` (a Linear, laid
    out head by head unless multi-query; GPT-2's is a Conv1D), nor another
    family's module of the same name that is no linear layer, nor DBRX's
    or MPT's ``Wqkv`` when its attention clamps the output (``clip_qkv``)."""
    if suffix == "attn.c_attn":
        return type(module).__name__ == "Conv1D"
    import torch

    attention = model.get_submodule(name.rpartition(".")[0])
    return isinstance(module, torch.nn.Linear) and not getattr(attention, "clip_qkv", None)


def _value_norms(
    output: Any, projection: Any, heads: int, layout: str | None = None
) -> np.ndarray | None:
    """‖v_j W_O^h‖ (H × T) from a layer's values (T × H_kv·d), or from the
    output of its fused projection laid out as ``layout``, and its output
    projection: query head h reads key/value head h // (H / H_kv), and W_O^h
    is the projection's rows h·d … (h+1)·d in x·W form (no bias). None
    where the fused output does not fit its layout."""
    weight = projection.weight.detach().float()
    # A Linear keeps W as out × in; GPT-2's Conv1D as in × out.
    rows = weight if type(projection).__name__ == "Conv1D" else weight.T
    dim = rows.shape[0] // heads
    value = output.float() if layout is None else _fused_values(output.float(), layout, heads, dim)
    if value is None:
        return None
    value = value.reshape(value.shape[0], -1, dim)  # T × H_kv × d
    return _head_value_norms(value, lambda h: rows[h * dim : (h + 1) * dim], heads)


def _fused_values(qkv: Any, layout: str, heads: int, dim: int) -> Any:
    """v (T × H_kv·d, or T × H × d) cut from a fused projection's output
    (T × width), or None where the width does not fit the layout. Head by
    head, v is each head's last d of 3·d; concatenated, the width is
    H·d + 2·H_kv·d, so v is the last (width − H·d) / 2 columns."""
    width = qkv.shape[-1]
    if layout == "per head":
        if width != 3 * heads * dim:
            return None
        return qkv.reshape(qkv.shape[0], heads, 3 * dim)[..., 2 * dim :]
    kv_heads, rest = divmod(width - heads * dim, 2 * dim)
    if rest or kv_heads <= 0 or heads % kv_heads:
        return None
    return qkv[..., width - kv_heads * dim :]


def _head_value_norms(value: Any, rows: Any, heads: int) -> np.ndarray:
    """‖v_j W_O^h‖ (H × T) from the values (T × H_kv × d) and each head's
    rows of the output projection (``rows(h)``: d × hidden)."""
    group = heads // value.shape[1]
    norms = [(value[:, h // group] @ rows(h)).norm(dim=-1) for h in range(heads)]
    return np.stack([n.cpu().numpy() for n in norms])


def _heads(config: Any) -> int:
    for field in ("num_attention_heads", "n_head", "num_heads"):
        heads = getattr(config, field, None)
        if isinstance(heads, int):
            return heads
    raise ValueError("the model's config does not say how many heads it has")


def _split_heads(projection_input: Any, heads: int) -> np.ndarray:
    """T × (H·d) → H × T × d, float32 on the CPU."""
    tokens, width = projection_input.shape[-2], projection_input.shape[-1]
    if width % heads:
        raise ValueError(f"an output projection's input of width {width} does not split into {heads} heads")
    split = projection_input.float().reshape(tokens, heads, width // heads)
    return split.permute(1, 0, 2).contiguous().cpu().numpy()


def _model_name(model: Any) -> str:
    path = getattr(getattr(model, "config", None), "name_or_path", "") or ""
    return os.path.basename(str(path).rstrip("/")) or type(model).__name__


def _eager_attention(model: Any) -> Any:
    """Switches a transformers model to eager attention (the one that
    returns P) and returns what switches it back."""
    config = getattr(model, "config", None)
    previous = getattr(config, "_attn_implementation", None)
    if previous in (None, "eager") or not hasattr(model, "set_attn_implementation"):
        return None
    model.set_attn_implementation("eager")
    return lambda: model.set_attn_implementation(previous)


def capture_transformer_lens(
    model: Any,
    text: str,
    one_sentence_per_line: bool = False,
    *,
    tokenizer: Any = None,
    attentions: bool = True,
    name: str | None = None,
) -> Capture:
    """Captures a TransformerLens run on ``text``: O from each block's
    ``attn.hook_z`` and P from ``attn.hook_pattern``, and with P each
    head's value norms from ``attn.hook_v`` and the block's ``W_O``.

    ``model``: a ``HookedTransformer`` (TransformerLens 2–3) or a
    ``TransformerBridge`` (TransformerLens 4, e.g.
    ``TransformerBridge.boot_transformers(folder)``), with its tokenizer.
    The input is built from ``tokenizer`` (default ``model.tokenizer``,
    which TransformerLens sets to add a BOS; pass the model's own to get
    the input headscope builds for it) as for a decoder (or an encoder
    where ``model.cfg.attention_dir`` is ``"bidirectional"``).
    A ``HookedTransformer`` loaded with the default weight processing has
    its value biases folded into the output bias, so its O differs from the
    Hugging Face model's by that bias; ``from_pretrained_no_processing``
    (or a bridge without compatibility mode) gives the O transformers
    computes.
    """
    import torch

    cfg = model.cfg
    causal = getattr(cfg, "attention_dir", "causal") != "bidirectional"
    header = _input_header(
        model.tokenizer if tokenizer is None else tokenizer,
        text,
        causal,
        {"one_sentence_per_line": one_sentence_per_line},
        None,
        getattr(cfg, "n_ctx", None),
    )
    device = next(iter(model.parameters())).device
    ids = torch.tensor([header["tokens"]["ids"]], dtype=torch.long, device=device)
    wanted = ("attn.hook_z", "attn.hook_pattern", "attn.hook_v") if attentions else ("attn.hook_z",)
    with torch.no_grad():
        _, cache = model.run_with_cache(ids, names_filter=lambda n: n.endswith(wanted))
    layers = range(cfg.n_layers)
    # hook_z: batch × position × head × d_head.
    outputs = [
        cache[f"blocks.{l}.attn.hook_z"][0].float().permute(1, 0, 2).contiguous().cpu().numpy()
        for l in layers
    ]
    patterns = (
        [cache[f"blocks.{l}.attn.hook_pattern"][0].float().cpu().numpy() for l in layers]
        if attentions
        else None
    )
    norms = None
    if attentions:
        heads = outputs[0].shape[0]
        norms = []
        for l in layers:
            value = cache[f"blocks.{l}.attn.hook_v"][0].float()  # T × H_kv × d
            w_o = model.blocks[l].attn.W_O.detach().float()  # H × d × hidden
            norms.append(_head_value_norms(value, lambda h: w_o[h], heads))
    model_name = name or os.path.basename(str(getattr(cfg, "model_name", "")).rstrip("/"))
    header["model"] = {"name": model_name or type(model).__name__, "type": "transformer_lens"}
    header["producer"] = _producer()
    return Capture(header, outputs, patterns, norms)
