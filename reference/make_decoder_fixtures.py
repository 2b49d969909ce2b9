#!/usr/bin/env python3
"""Makes the decoder parity fixtures in tests/fixtures/families/.

For each decoder family (gpt2, llama, qwen2, mistral, and the families of
today's interpretability papers: gpt_neox (Pythia), gemma, gemma2,
gemma3_text, qwen3, phi3, olmo2) it trains a small tokenizer with the
`tokenizers` package as the family's real tokenizers are built (byte-level
BPE for GPT-2, GPT-NeoX, OLMo-2, Qwen2 and Qwen3; SentencePiece-style BPE
with byte fallback and a BOS for Llama, Mistral, Phi-3 and Gemma, Gemma's
special tokens at its own ids), builds a tiny random-weight model
with transformers from a config (no hub), and runs the reference of
ANALYSIS.md §8 on the family's text (one sentence per line):

    tests/fixtures/families/NAME/        config.json, model.safetensors, tokenizer.json
    tests/fixtures/families/NAME.txt     the text, one sentence per line (written by hand)
    tests/fixtures/families/NAME.json    the figures of ANALYSIS.md
    tests/fixtures/families/NAME.npz     input_ids, attentions, heads, similarity

    .venv-ref/bin/python reference/make_decoder_fixtures.py [NAME...]

The decoders' input (§8): the sentences joined by one space, encoded once by
the tokenizer with its own special tokens; a token belongs to the sentence
of its first non-space character (at or after its start: a token of
whitespace alone goes to the sentence that follows); separators are each
sentence's last token; the text is cut after the last whole sentence that
fits the model's positions. Causal figures: separator attention over keys
j <= i, segmentation None.
"""
import json, os, sys
import numpy as np
import torch
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

sys.path.insert(0, os.path.dirname(__file__))
from make_family_fixtures import OUT, VOCAB, corpus
from ref_analysis import analyse
from torch_ref import load

# The input of the attention's output projection: every query head's P·V.
OUTPUT_PROJECTION = ("attn.c_proj", "self_attn.o_proj", "attention.dense")


def byte_level_bpe(specials, qwen_style=False):
    """GPT-2's layout (ByteLevel pre-tokenizer and post-processor), or
    Qwen2's (NFC, a split regex, then ByteLevel without its own regex)."""
    tok = Tokenizer(models.BPE())
    if qwen_style:
        tok.normalizer = normalizers.NFC()
        split = Regex(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(split, behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=list(specials),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def sentencepiece_bpe(specials, start, missing="éï", prepend_space=True):
    """SentencePiece-style BPE with byte fallback (Llama 2, Gemma): spaces
    become ▁ (Llama also puts one ▁ before the text, Gemma does not),
    `specials` take the first ids and the 256 byte tokens follow them, and a
    template adds `start` before the text. Trained without the characters
    `missing`, which the byte tokens then spell."""
    lines = ["".join(c for c in line if c not in missing) for line in corpus()]
    trained = Tokenizer(models.BPE())
    trained.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁",
                                                     prepend_scheme="first" if prepend_space else "never")
    trained.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=VOCAB - len(specials) - 256))
    model = json.loads(trained.to_str())["model"]
    vocab = {t: i for i, t in enumerate(list(specials) + [f"<0x{b:02X}>" for b in range(256)])}
    for token, _ in sorted(model["vocab"].items(), key=lambda item: item[1]):
        vocab.setdefault(token, len(vocab))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    unk = "<unk>"
    tok = Tokenizer(models.BPE(vocab, merges, unk_token=unk, byte_fallback=True, fuse_unk=True))
    spaces = [normalizers.Replace(" ", "▁")]
    tok.normalizer = normalizers.Sequence(([normalizers.Prepend("▁")] if prepend_space else []) + spaces)
    steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    tok.decoder = decoders.Sequence(steps + ([decoders.Strip(" ", 1, 0)] if prepend_space else []))
    tok.add_special_tokens(list(specials))
    tok.post_processor = processors.TemplateProcessing(single=f"{start} $A", pair=f"{start} $A {start} $B",
                                                       special_tokens=[(start, vocab[start])])
    return tok


def llama_style(missing="éï"):
    """Llama 2's tokenizer.json: `<unk>`, `<s>`, `</s>` at 0, 1, 2, one ▁
    before the text, `<s>` added before it."""
    return sentencepiece_bpe(["<unk>", "<s>", "</s>"], "<s>", missing)


def shape(tok, **extra):
    """Tiny: hidden 32, 4 query heads of 8, 2 layers."""
    config = dict(vocab_size=tok.get_vocab_size(), hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
                  intermediate_size=64, max_position_embeddings=128)
    config.update(extra)
    return config


def make_gpt2():
    tok = byte_level_bpe(["<|endoftext|>"])
    eot = tok.token_to_id("<|endoftext|>")
    # 64 positions: the text is cut after its last whole sentence that fits.
    config = transformers.GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                     activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0, bos_token_id=eot, eos_token_id=eot)
    return tok, transformers.GPT2LMHeadModel(config)


def make_llama():
    tok = llama_style()
    # Grouped-query attention (2 key/value heads for 4 query heads) and
    # Llama 3's RoPE scaling, its original context short enough that the
    # low, middle and high frequencies each take their branch.
    rope = {"rope_type": "llama3", "rope_theta": 5000.0, "factor": 4.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
    config = transformers.LlamaConfig(**shape(tok, num_key_value_heads=2, rms_norm_eps=1e-5, bos_token_id=1,
                                              eos_token_id=2, rope_parameters=rope, tie_word_embeddings=False))
    return tok, transformers.LlamaForCausalLM(config)


def make_qwen2():
    tok = byte_level_bpe(["<|endoftext|>", "<|im_start|>", "<|im_end|>"], qwen_style=True)
    config = transformers.Qwen2Config(**shape(tok, num_key_value_heads=2, rms_norm_eps=1e-6,
                                              rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                                              tie_word_embeddings=True))
    return tok, transformers.Qwen2Model(config)


def make_mistral():
    tok = llama_style()
    # One key/value head for all four query heads, and a sliding window of
    # 5 tokens: each query sees itself and the 4 tokens before it.
    config = transformers.MistralConfig(**shape(tok, num_key_value_heads=1, sliding_window=5, bos_token_id=1,
                                                eos_token_id=2,
                                                rope_parameters={"rope_type": "linear", "rope_theta": 10000.0,
                                                                 "factor": 2.0}))
    return tok, transformers.MistralForCausalLM(config)


def make_gpt_neox():
    # Pythia: byte-level BPE with no start token, a fused query_key_value
    # laid out per head, rotary on a quarter of each head's dimensions, the
    # parallel residual, LayerNorms with biases.
    tok = byte_level_bpe(["<|endoftext|>", "<|padding|>"])
    config = transformers.GPTNeoXConfig(**shape(tok, bos_token_id=0, eos_token_id=0, hidden_act="gelu",
                                                use_parallel_residual=True, attention_bias=True,
                                                rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                                 "partial_rotary_factor": 0.25},
                                                tie_word_embeddings=False))
    return tok, transformers.GPTNeoXForCausalLM(config)


GEMMA_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]


def make_gemma():
    # RMSNorm scaled by (1 + w), embeddings scaled by √hidden, GeGLU, one
    # key/value head, and a head_dim (16) that is not hidden / heads (8).
    tok = sentencepiece_bpe(GEMMA_SPECIALS, "<bos>", prepend_space=False)
    config = transformers.GemmaConfig(**shape(tok, num_key_value_heads=1, head_dim=16, pad_token_id=0,
                                              eos_token_id=1, bos_token_id=2, hidden_act="gelu_pytorch_tanh",
                                              tie_word_embeddings=True))
    return tok, transformers.GemmaForCausalLM(config)


def make_gemma2():
    # As Gemma, plus attention-logit soft-capping (low enough to bite on
    # these weights), a sliding window of 6 on every other layer, the
    # query scaled by query_pre_attn_scalar, norms after attention and
    # feed-forward.
    tok = sentencepiece_bpe(GEMMA_SPECIALS, "<bos>", prepend_space=False)
    config = transformers.Gemma2Config(**shape(tok, num_key_value_heads=2, head_dim=8, pad_token_id=0,
                                               eos_token_id=1, bos_token_id=2, query_pre_attn_scalar=12,
                                               attn_logit_softcapping=4.0, final_logit_softcapping=30.0,
                                               sliding_window=6, num_hidden_layers=3,
                                               layer_types=["sliding_attention", "full_attention",
                                                            "sliding_attention"],
                                               tie_word_embeddings=True))
    return tok, transformers.Gemma2ForCausalLM(config)


def make_gemma3_text():
    # q/k RMSNorm, local layers with their own rope base, the global one
    # with linear rope scaling (as Gemma 3 4B), the pattern local, local,
    # global.
    tok = sentencepiece_bpe(GEMMA_SPECIALS, "<bos>", prepend_space=False)
    rope = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "rope_theta": 1000000.0, "factor": 8.0}}
    config = transformers.Gemma3TextConfig(**shape(tok, num_key_value_heads=2, head_dim=8, pad_token_id=0,
                                                   eos_token_id=1, bos_token_id=2, query_pre_attn_scalar=8,
                                                   sliding_window=6, num_hidden_layers=3,
                                                   layer_types=["sliding_attention", "sliding_attention",
                                                                "full_attention"],
                                                   rope_parameters=rope, tie_word_embeddings=True))
    return tok, transformers.Gemma3ForCausalLM(config)


def make_qwen3():
    # q/k RMSNorm per head, a head_dim (16) that is not hidden / heads.
    tok = byte_level_bpe(["<|endoftext|>", "<|im_start|>", "<|im_end|>"], qwen_style=True)
    config = transformers.Qwen3Config(**shape(tok, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
                                              rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                                              tie_word_embeddings=True))
    return tok, transformers.Qwen3ForCausalLM(config)


def make_phi3():
    # Fused qkv_proj (grouped: 2 key/value heads) and gate_up_proj, rotary
    # on three quarters of each head (Phi-4-mini's partial rotary).
    tok = llama_style()
    config = transformers.Phi3Config(**shape(tok, num_key_value_heads=2, bos_token_id=1, eos_token_id=2,
                                             pad_token_id=0, original_max_position_embeddings=128,
                                             rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                              "partial_rotary_factor": 0.75},
                                             tie_word_embeddings=False))
    return tok, transformers.Phi3ForCausalLM(config)


def make_olmo2():
    # q/k RMSNorm over all heads together, norms after attention and
    # feed-forward (none before).
    tok = byte_level_bpe(["<|endoftext|>", "<|pad|>"])
    config = transformers.Olmo2Config(**shape(tok, num_key_value_heads=4, pad_token_id=1, bos_token_id=None,
                                              eos_token_id=0, tie_word_embeddings=False))
    return tok, transformers.Olmo2ForCausalLM(config)


FAMILIES = {"gpt2": make_gpt2, "llama": make_llama, "qwen2": make_qwen2, "mistral": make_mistral,
            "gpt_neox": make_gpt_neox, "gemma": make_gemma, "gemma2": make_gemma2,
            "gemma3_text": make_gemma3_text, "qwen3": make_qwen3, "phi3": make_phi3, "olmo2": make_olmo2}


def randomise(model, seed):
    """Larger random weights, random biases and norms."""
    gen = torch.Generator().manual_seed(seed)
    normal = lambda shape: torch.randn(shape, generator=gen)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                is_norm_weight = name.endswith("weight")
                p.copy_((1.0 if is_norm_weight else 0.0) + 0.1 * normal(p.shape))
            elif any(table in name for table in ("wte", "wpe", "embed_tokens", "embed_in")):
                p.copy_(normal(p.shape))
            else:
                # GPT-2's Conv1D stores inputs × outputs, Linear outputs × inputs.
                fan_in = p.shape[0] if ".c_" in name else p.shape[1]
                p.copy_(1.6 / fan_in ** 0.5 * normal(p.shape))


def max_positions(config):
    return getattr(config, "n_positions", None) or config.max_position_embeddings


def decoder_input(tok, sentences, max_len):
    """(ids, sentence ids with -1 for none, special flags, separator
    positions, sentences analysed) as ANALYSIS.md §8 builds a decoder's input."""
    text = " ".join(sentences)
    spans, at = [], 0
    for s in sentences:
        spans.append((at, at + len(s)))
        at += len(s) + 1
    enc = tok.encode(text)
    special_ids = {i for i, t in tok.get_added_tokens_decoder().items() if t.special}
    ids = enc.ids
    special = [bool(m) or i in special_ids for i, m in zip(ids, enc.special_tokens_mask)]

    def sentence_of(start, end):
        if start == end:
            return None  # added by the post-processor
        p = start
        while p < len(text) and text[p].isspace():
            p += 1
        return next((k for k, (a, b) in enumerate(spans) if a <= p < b), None)

    place = [sentence_of(s, e) for s, e in enc.offsets]
    # The longest prefix that ends with a whole sentence (or the whole text).
    n = len(spans)
    while n > 0:
        keep = [i for i in range(len(ids)) if (place[i] is None and i < len(ids) and all(
            q is None for q in place[:i + 1])) or (place[i] is not None and place[i] < n)]
        if len(keep) <= max_len:
            break
        n -= 1
    assert keep == list(range(len(keep))), "a decoder's input is a prefix of its encoding"
    ids = np.array([ids[i] for i in keep])
    sent = np.array([-1 if special[i] or place[i] is None else place[i] for i in keep])
    special = np.array([special[i] for i in keep])
    content = [i for i in keep if not special[i]]
    separators = [i for a, i in enumerate(content) if a + 1 == len(content) or sent[content[a + 1]] != sent[i]]
    return ids, sent, special, separators, n


def run(model, ids):
    """Heads (L,H,T,d), attentions and similarity (L,H,T,T)."""
    caught = []
    hooks = [module.register_forward_pre_hook(lambda mod, inp: caught.append(inp[0][0]))
             for name, module in model.named_modules() if name.endswith(OUTPUT_PROJECTION)]
    assert hooks, "no attention output projection found"
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
        H = model.config.num_attention_heads
        T = ids.shape[1]
        assert len(caught) == len(out.attentions), (len(caught), len(out.attentions))
        heads = torch.stack([c.view(T, H, -1).transpose(0, 1) for c in caught])
        sims = heads @ heads.transpose(-1, -2)
        att = torch.stack([a[0] for a in out.attentions])
    for h in hooks:
        h.remove()
    return heads.numpy(), att.numpy(), sims.numpy()


def reference(folder, text_file, model=None):
    """The figures and tensors of ANALYSIS.md §8 for the text, with the
    folder's tokenizer and its model (or `model`, loaded otherwise)."""
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tok.no_padding(); tok.no_truncation()
    model = model if model is not None else load(folder)
    sentences = [s.strip() for s in open(text_file, encoding="utf-8") if s.strip()]
    ids, sent, special, separators, analysed = decoder_input(tok, sentences, max_positions(model.config))
    heads, att, sims = run(model, torch.from_numpy(ids).unsqueeze(0))
    figures = analyse(ids, sent, special, att, heads, sims, None, separators=separators, causal=True)
    figures["input_ids"] = ids.tolist()
    figures["sentences_analysed"] = analysed
    figures["sentences_left_out"] = len(sentences) - analysed
    return figures, (ids, att, heads, sims)


def make(name, seed):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(seed)
    tok, model = FAMILIES[name]()
    randomise(model, seed)
    model.eval()
    model.save_pretrained(folder)
    for extra in ("generation_config.json",):
        path = os.path.join(folder, extra)
        if os.path.exists(path):
            os.remove(path)
    tok.save(os.path.join(folder, "tokenizer.json"))
    write_fixture(os.path.join(OUT, name), *reference(folder, os.path.join(OUT, f"{name}.txt")))


def write_fixture(stem, figures, tensors):
    """STEM.json (the figures) and STEM.npz (input_ids, attentions, heads, similarity)."""
    ids, att, heads, sims = tensors
    with open(f"{stem}.json", "w") as out:
        json.dump(figures, out, indent=1)
    np.savez_compressed(f"{stem}.npz", input_ids=ids.astype(np.int64), attentions=att, heads=heads,
                        similarity=sims)
    print(f"{os.path.basename(stem)}: {len(ids)} tokens, {att.shape[0]} layers, heads {heads.shape}, "
          f"{figures['sentences_left_out']} sentences left out, ids {ids[:3].tolist()}…{ids[-1]}")


def main():
    names = sys.argv[1:] or list(FAMILIES)
    for seed, name in enumerate(FAMILIES):
        if name in names:
            make(name, seed + 11)


if __name__ == "__main__":
    main()
