#!/usr/bin/env python3
"""Makes the per-family parity fixtures in tests/fixtures/families/.

For each encoder family (bert, roberta, xlm-roberta, camembert, distilbert,
electra, albert) it trains a small tokenizer with the `tokenizers` package
(WordPiece, byte-level BPE or Unigram, as the family's real tokenizers are,
with its start and separator tokens at ids other than BERT's 101/102), builds
a tiny random-weight model with transformers from a config (no hub), saves
it as the base model or with a task head, and runs ref_analysis.py's
reference on the family's text:

    tests/fixtures/families/NAME/        config.json, model.safetensors, tokenizer.json
    tests/fixtures/families/NAME.txt     the text, one sentence per line (written by hand)
    tests/fixtures/families/NAME.json    the figures of ANALYSIS.md
    tests/fixtures/families/NAME.npz     input_ids, attentions, heads, similarity

    .venv-ref/bin/python reference/make_family_fixtures.py [NAME...]

Weights are drawn larger than transformers' initialisation (and biases and
LayerNorm parameters are random, not 0 and 1) so that attention is peaked,
the selected pairs are well separated, and every parameter matters.
"""
import json, os, sys
import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

sys.path.insert(0, os.path.dirname(__file__))
from ref_analysis import reference

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "fixtures", "families")
VOCAB = 1500


def corpus():
    """Text to train the tokenizers on: the project's prose and the fixture texts."""
    files = [os.path.join(REPO, "README.md"), os.path.join(REPO, "docs", "ANALYSIS.md")]
    texts = os.path.join(REPO, "reference", "texts")
    files += [os.path.join(texts, f) for f in sorted(os.listdir(texts))]
    files += [os.path.join(OUT, f) for f in sorted(os.listdir(OUT)) if f.endswith(".txt")]
    lines = []
    for path in files:
        lines += [line.strip() for line in open(path, encoding="utf-8") if line.strip()]
    return lines


def wordpiece(specials, added=(), lowercase=True):
    """BERT-style WordPiece; `specials` get the first ids, `added` the last."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(corpus(), trainers.WordPieceTrainer(vocab_size=VOCAB, special_tokens=list(specials)))
    tok.add_special_tokens(list(added))
    return tok


def byte_level_bpe(specials):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=list(specials),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer)
    return tok


def unigram(specials, lowercase=False):
    """SentencePiece-style Unigram with the Metaspace pre-tokenizer."""
    tok = Tokenizer(models.Unigram())
    steps = [normalizers.Nmt(), normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=VOCAB, special_tokens=list(specials), unk_token="<unk>")
    tok.train_from_iterator(corpus(), trainer)
    return tok


def template(tok, start, sep, pair_sep=None):
    """`start $A sep` for one sequence (pair: `start $A sep [pair_sep] $B sep`)."""
    middle = f"{sep} {pair_sep} " if pair_sep else f"{sep} "
    tok.post_processor = processors.TemplateProcessing(
        single=f"{start} $A {sep}", pair=f"{start} $A {middle}$B:1 {sep}:1",
        special_tokens=[(start, tok.token_to_id(start)), (sep, tok.token_to_id(sep))])


def common(tok, **extra):
    """The shape every fixture shares: 4 heads of 8, hidden 32."""
    shape = dict(vocab_size=tok.get_vocab_size(), hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
                 intermediate_size=64, max_position_embeddings=128, hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0)
    shape.update(extra)
    return shape


def make_bert():
    # [CLS] and [SEP] added after training: the last ids of the vocabulary.
    tok = wordpiece(["[UNK]"], added=["[PAD]", "[CLS]", "[SEP]", "[MASK]"])
    template(tok, "[CLS]", "[SEP]")
    config = transformers.BertConfig(**common(tok, pad_token_id=tok.token_to_id("[PAD]")))
    return tok, transformers.BertForMaskedLM(config)


def make_roberta():
    tok = byte_level_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True,
                                                      add_prefix_space=False)
    config = transformers.RobertaConfig(**common(tok, max_position_embeddings=130, type_vocab_size=1,
                                                 layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
                                                 eos_token_id=2, num_labels=3))
    return tok, transformers.RobertaForSequenceClassification(config)


def make_xlm_roberta():
    tok = unigram(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    template(tok, "<s>", "</s>", pair_sep="</s>")
    # 63 positions after the padding index: the text is cut after its
    # third sentence, which ends at the last position.
    config = transformers.XLMRobertaConfig(**common(tok, max_position_embeddings=65, type_vocab_size=1,
                                                    layer_norm_eps=1e-5, pad_token_id=1))
    return tok, transformers.XLMRobertaModel(config, add_pooling_layer=False)


def make_camembert():
    # CamemBERT's own layout: <s> and </s> at 5 and 6, padding at 1.
    tok = unigram(["<s>NOTUSED", "<pad>", "</s>NOTUSED", "<unk>", "<unk>NOTUSED", "<s>", "</s>", "<mask>"])
    template(tok, "<s>", "</s>", pair_sep="</s>")
    config = transformers.CamembertConfig(**common(tok, max_position_embeddings=130, type_vocab_size=1,
                                                   layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=5,
                                                   eos_token_id=6))
    return tok, transformers.CamembertForMaskedLM(config)


def make_distilbert():
    tok = wordpiece(["[UNK]", "[PAD]", "[MASK]", "[CLS]", "[SEP]"])
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    config = transformers.DistilBertConfig(vocab_size=tok.get_vocab_size(), dim=32, n_heads=4, n_layers=2,
                                           hidden_dim=64, max_position_embeddings=128, dropout=0.0,
                                           attention_dropout=0.0, sinusoidal_pos_embds=True,
                                           pad_token_id=tok.token_to_id("[PAD]"), num_labels=2)
    return tok, transformers.DistilBertForSequenceClassification(config)


def make_electra():
    tok = wordpiece(["[PAD]", "[UNK]", "[SEP]", "[CLS]", "[MASK]"])
    template(tok, "[CLS]", "[SEP]")
    # embedding_size 16 ≠ hidden 32: the embeddings are projected.
    config = transformers.ElectraConfig(**common(tok, embedding_size=16))
    return tok, transformers.ElectraForPreTraining(config)


def make_albert():
    tok = unigram(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], lowercase=True)
    template(tok, "[CLS]", "[SEP]")
    # Three layers from two groups of two shared layers: six attention layers,
    # the first two applications of group 0 using the same weights.
    config = transformers.AlbertConfig(**common(tok, embedding_size=16, num_hidden_layers=3, num_hidden_groups=2,
                                                inner_group_num=2, hidden_act="gelu_new", pad_token_id=0,
                                                bos_token_id=2, eos_token_id=3))
    return tok, transformers.AlbertForMaskedLM(config)


def make_modernbert():
    # ModernBERT's layout: byte-level BPE, its specials after the vocabulary.
    tok = byte_level_bpe(["<|endoftext|>"])
    tok.add_special_tokens(["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"])
    template(tok, "[CLS]", "[SEP]")
    # Rotary positions with a global and a local theta, GeGLU, no biases;
    # layer 0 global, layer 1 local with a window of 8 (4 each side).
    config = transformers.ModernBertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=32, num_attention_heads=4, num_hidden_layers=2,
        intermediate_size=48, max_position_embeddings=128, global_attn_every_n_layers=2, local_attention=8,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0}},
        pad_token_id=tok.token_to_id("[PAD]"), cls_token_id=tok.token_to_id("[CLS]"),
        sep_token_id=tok.token_to_id("[SEP]"), bos_token_id=tok.token_to_id("[CLS]"),
        eos_token_id=tok.token_to_id("[SEP]"), hidden_activation="gelu")
    return tok, transformers.ModernBertForMaskedLM(config)


FAMILIES = {
    "bert": make_bert,
    "roberta": make_roberta,
    "xlm-roberta": make_xlm_roberta,
    "camembert": make_camembert,
    "distilbert": make_distilbert,
    "electra": make_electra,
    "albert": make_albert,
    "modernbert": make_modernbert,
}


def randomise(model, seed):
    """Larger random weights, random biases and norms; sinusoidal positions kept."""
    gen = torch.Generator().manual_seed(seed)
    normal = lambda shape: torch.randn(shape, generator=gen)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "position_embeddings" in name and getattr(model.config, "sinusoidal_pos_embds", False):
                continue
            if p.dim() == 1:
                is_norm = "norm" in name.lower() and name.endswith("weight")
                p.copy_((1.0 if is_norm else 0.0) + 0.1 * normal(p.shape))
            elif "embeddings" in name:
                p.copy_(normal(p.shape))
            else:
                p.copy_(1.2 / p.shape[1] ** 0.5 * normal(p.shape))


def make(name, seed):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(seed)
    tok, model = FAMILIES[name]()
    randomise(model, seed)
    model.eval()
    model.save_pretrained(folder)
    if name == "distilbert":
        # Sinusoidal positions are computed, not stored: transformers fills a
        # missing table from the formula, and so must headscope.
        path = os.path.join(folder, "model.safetensors")
        tensors = {k: v for k, v in load_file(path).items() if "position_embeddings" not in k}
        save_file(tensors, path, metadata={"format": "pt"})
    tok.save(os.path.join(folder, "tokenizer.json"))
    text = os.path.join(OUT, f"{name}.txt")
    figures, (ids, att, heads, sims) = reference(folder, text)
    json.dump(figures, open(os.path.join(OUT, f"{name}.json"), "w"), indent=1)
    np.savez_compressed(os.path.join(OUT, f"{name}.npz"), input_ids=ids.astype(np.int64),
                        attentions=att, heads=heads, similarity=sims)
    print(f"{name}: {len(ids)} tokens, {att.shape[0]} attention layers, "
          f"{figures['sentences_left_out']} sentences left out, ids {ids[:3].tolist()}…{ids[-1]}")


def main():
    names = sys.argv[1:] or list(FAMILIES)
    for seed, name in enumerate(FAMILIES):
        if name in names:
            make(name, seed + 1)


if __name__ == "__main__":
    main()
