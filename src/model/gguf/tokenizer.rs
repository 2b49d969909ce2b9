//! The tokenizer a GGUF file describes in its metadata, built as
//! transformers builds it (`integrations/gguf/gguf_tokenizer_mapping.py`
//! and the tokenizer classes it hands the vocabulary to), so that a text
//! gets the ids transformers gives it:
//!
//! - `tokenizer.ggml.model` `gpt2`: byte-level BPE (GPT-2's layout) from
//!   the tokens, respelled in GPT-2's byte alphabet where needed, and the
//!   merges; the split regex transformers substitutes for the file's
//!   `tokenizer.ggml.pre` (Llama 3's, Qwen2's, …; GPT-2's own for others);
//! - `llama`: SentencePiece-style BPE with byte fallback, a `▁` prepended
//!   to the text, and the merges given, or recovered from the scores as
//!   transformers' `generate_merges` does.
//!
//! Every token the file marks as control is a special token, every
//! user-defined one an added token, and the BOS, EOS, unknown and padding
//! tokens are special; a BOS (or EOS) is added around the text as the
//! file's `add_bos_token` says (for `llama` vocabularies, yes unless it
//! says no). The tokenizer is written as a `tokenizer.json` document and
//! read by the `tokenizers` crate.

use super::file::GgufFile;
use anyhow::{anyhow, bail};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use tokenizers::Tokenizer;

/// llama.cpp's token types.
const CONTROL: i64 = 3;
const USER_DEFINED: i64 = 4;

const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const TEKKEN_SPLIT: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const GPT4O_SPLIT: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The split regex transformers uses for a `tokenizer.ggml.pre` name
/// (`GGUF_PRE_TOKENIZER_SPLITS`); `None`: GPT-2's own.
fn split_regex(pre: &str) -> Option<&'static str> {
    Some(match pre {
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral" | "midm-2.0"
        | "lfm2" | "jina-v5-nano" | "dbrx" | "smaug-bpe" => LLAMA3_SPLIT,
        "tekken" => TEKKEN_SPLIT,
        "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "megrez" => QWEN2_SPLIT,
        "gpt-4o" | "llama4" | "kanana2" | "talkie" | "minimax-m2" => GPT4O_SPLIT,
        _ => return None,
    })
}

/// The tokenizer of the file's metadata.
pub fn build(file: &GgufFile) -> anyhow::Result<Tokenizer> {
    let path = file.path.display();
    let kind = file.string("tokenizer.ggml.model")?;
    let tokens = file
        .strings("tokenizer.ggml.tokens")?
        .ok_or_else(|| anyhow!("{path}: the metadata has no tokenizer.ggml.tokens"))?;
    let types: Vec<i64> = file
        .numbers("tokenizer.ggml.token_type")
        .unwrap_or_default()
        .into_iter()
        .map(|t| t as i64)
        .collect();
    let merges = file.strings("tokenizer.ggml.merges")?;
    let architecture = file.string("general.architecture").unwrap_or("");
    let gemma = matches!(architecture, "gemma" | "gemma2" | "gemma3");
    let phi3 = architecture == "phi3";
    let mut normalizer = Value::Null;
    let (model, pre_tokenizer, decoder, byte_level) = match kind {
        "gpt2" => {
            let spelling = byte_spelling();
            let alphabet: HashSet<char> = spelling.iter().copied().collect();
            let vocab: Vec<String> = tokens
                .iter()
                .map(|token| {
                    if token.chars().all(|c| alphabet.contains(&c)) {
                        token.to_string()
                    } else {
                        token.bytes().map(|b| spelling[b as usize]).collect()
                    }
                })
                .collect();
            let merges = merges
                .ok_or_else(|| anyhow!("{path}: a gpt2 tokenizer without tokenizer.ggml.merges"))?;
            let model = json!({
                "type": "BPE", "dropout": null, "unk_token": null,
                "continuing_subword_prefix": "", "end_of_word_suffix": "",
                "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                "vocab": vocabulary(&vocab), "merges": split_merges(&merges),
            });
            let byte_level = |use_regex: bool| {
                json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": use_regex})
            };
            let pre = file.string("tokenizer.ggml.pre").ok();
            let pre_tokenizer = match pre.and_then(split_regex) {
                Some(regex) => json!({"type": "Sequence", "pretokenizers": [
                    {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": false},
                    byte_level(false),
                ]}),
                None => byte_level(true),
            };
            let decoder = json!({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true});
            (model, pre_tokenizer, decoder, true)
        }
        "llama" if gemma => {
            // transformers' `gemma_tokenizer`: a token of spaces is looked
            // up as `▁`s; merges, when the file has none, rebuilt in the
            // file's order of the tokens (Gemma's scores do not follow its
            // merges); GemmaTokenizer's normalizer and pre-tokenizer.
            let vocab: Vec<String> = tokens
                .iter()
                .map(|t| {
                    if t.contains(' ') && t.trim().is_empty() {
                        "▁".repeat(t.chars().count())
                    } else {
                        t.to_string()
                    }
                })
                .collect();
            let merges = match merges {
                Some(merges) => split_merges(&merges),
                None => {
                    let spelled: Vec<&str> = vocab.iter().map(String::as_str).collect();
                    let positions: Vec<f64> = (0..spelled.len()).map(|i| -(i as f64)).collect();
                    generate_merges(&spelled, &positions)
                        .into_iter()
                        .map(|(l, r)| json!([l, r]))
                        .collect()
                }
            };
            let unk = file
                .integer("tokenizer.ggml.unknown_token_id")?
                .and_then(|id| tokens.get(id as usize).copied())
                .unwrap_or("None");
            let model = json!({
                "type": "BPE", "dropout": null, "unk_token": unk,
                "continuing_subword_prefix": null, "end_of_word_suffix": null,
                "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
                "vocab": vocabulary(&vocab), "merges": merges,
            });
            let pre_tokenizer = json!({"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false});
            let decoder = json!({"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
            ]});
            normalizer = json!({"type": "Replace", "pattern": {"String": " "}, "content": "▁"});
            (model, pre_tokenizer, decoder, false)
        }
        "llama" => {
            let merges = match merges {
                Some(merges) => split_merges(&merges),
                None => {
                    let scores = file.numbers("tokenizer.ggml.scores").ok_or_else(|| {
                        anyhow!("{path}: a llama tokenizer with neither merges nor scores")
                    })?;
                    generate_merges(&tokens, &scores)
                        .into_iter()
                        .map(|(l, r)| json!([l, r]))
                        .collect()
                }
            };
            let vocab: Vec<String> = tokens.iter().map(|t| t.to_string()).collect();
            let model = json!({
                "type": "BPE", "dropout": null, "unk_token": null,
                "continuing_subword_prefix": null, "end_of_word_suffix": null,
                "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
                "vocab": vocabulary(&vocab), "merges": merges,
            });
            // Phi-3 (transformers' `phi3_tokenizer`): the prefix space
            // from a normalizer, no pre-tokenizer.
            let pre_tokenizer = if phi3 {
                normalizer = json!({"type": "Sequence", "normalizers": [
                    {"type": "Prepend", "prepend": "▁"},
                    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
                ]});
                Value::Null
            } else {
                json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false})
            };
            let decoder = json!({"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ]});
            (model, pre_tokenizer, decoder, false)
        }
        other => bail!(
            "{path}: tokenizer.ggml.model {other} is not supported (headscope builds gpt2 and llama tokenizers)"
        ),
    };

    // Control tokens are special, user-defined ones plain added tokens
    // (`add_gguf_special_tokens`); a control token outside a byte-level
    // alphabet is a llama.cpp mislabel transformers skips.
    let alphabet: HashSet<char> = byte_spelling().into_iter().collect();
    let mut added = Vec::new();
    let mut seen = HashSet::new();
    let mut add = |id: usize, special: bool, added: &mut Vec<Value>| {
        if seen.insert(id) {
            added.push(
                json!({"id": id, "content": tokens[id], "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": special}),
            );
        }
    };
    for (id, &kind) in types.iter().enumerate().take(tokens.len()) {
        let spelled = !byte_level || tokens[id].chars().all(|c| alphabet.contains(&c));
        if kind == CONTROL && spelled {
            add(id, true, &mut added);
        }
    }
    for (id, &kind) in types.iter().enumerate().take(tokens.len()) {
        let spelled = !byte_level || tokens[id].chars().all(|c| alphabet.contains(&c));
        if kind == USER_DEFINED && spelled {
            add(id, false, &mut added);
        }
    }
    // The named special tokens are special too (`TokenizersBackend`).
    let named = |key: &str| -> anyhow::Result<Option<usize>> {
        let id = file.integer(&format!("tokenizer.ggml.{key}"))?;
        match id.map(|id| id as usize) {
            Some(id) if id >= tokens.len() => {
                bail!("{path}: tokenizer.ggml.{key} {id} is outside the vocabulary")
            }
            id => Ok(id),
        }
    };
    let (bos, eos) = (named("bos_token_id")?, named("eos_token_id")?);
    for id in [
        bos,
        eos,
        named("unknown_token_id")?,
        named("padding_token_id")?,
    ]
    .into_iter()
    .flatten()
    {
        add(id, true, &mut added);
    }

    let add_bos = file
        .flag("tokenizer.ggml.add_bos_token")
        .unwrap_or(kind == "llama");
    let add_eos = file.flag("tokenizer.ggml.add_eos_token").unwrap_or(false);
    let post_processor = template(
        bos.filter(|_| add_bos).map(|id| (tokens[id], id)),
        eos.filter(|_| add_eos).map(|id| (tokens[id], id)),
    );
    let document = json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": added, "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
        "decoder": decoder, "model": model,
    });
    document
        .to_string()
        .parse::<Tokenizer>()
        .map_err(|e| anyhow!("{path}: its tokenizer metadata does not make a tokenizer: {e}"))
}

/// transformers' `update_post_processor`: `[BOS] $A [EOS]` as the file asks.
fn template(bos: Option<(&str, usize)>, eos: Option<(&str, usize)>) -> Value {
    let special =
        |token: &str, type_id: u32| json!({"SpecialToken": {"id": token, "type_id": type_id}});
    let sequence = |id: &str, type_id: u32| json!({"Sequence": {"id": id, "type_id": type_id}});
    let mut single = Vec::new();
    let mut pair = Vec::new();
    for (part, type_id, out) in [("A", 0, &mut single), ("B", 1, &mut pair)] {
        if let Some((token, _)) = bos {
            out.push(special(token, type_id));
        }
        out.push(sequence(part, type_id));
        if let Some((token, _)) = eos {
            out.push(special(token, type_id));
        }
    }
    let pair = [single.clone(), pair].concat();
    let mut specials = Map::new();
    for (token, id) in [bos, eos].into_iter().flatten() {
        specials.insert(
            token.to_string(),
            json!({"id": token, "ids": [id], "tokens": [token]}),
        );
    }
    json!({"type": "TemplateProcessing", "single": single, "pair": pair, "special_tokens": specials})
}

/// token → id; a token listed twice keeps its last id (as a Python dict).
fn vocabulary(tokens: &[String]) -> Map<String, Value> {
    let mut vocab = Map::new();
    for (id, token) in tokens.iter().enumerate() {
        vocab.insert(token.clone(), json!(id));
    }
    vocab
}

fn split_merges(merges: &[&str]) -> Vec<Value> {
    merges
        .iter()
        .map(|merge| {
            let (left, right) = merge.split_once(' ').unwrap_or((merge, ""));
            json!([left, right])
        })
        .collect()
}

/// transformers' `generate_merges(vocab, scores)`: every split of every
/// token into two tokens of the vocabulary, best score first (then the
/// longer left and right parts), ties in vocabulary order.
pub fn generate_merges(tokens: &[&str], scores: &[f64]) -> Vec<(String, String)> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut score_of: HashMap<&str, f64> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (id, &token) in tokens.iter().enumerate() {
        index.insert(token, id);
        if score_of
            .insert(token, scores.get(id).copied().unwrap_or(0.0))
            .is_none()
        {
            order.push(token);
        }
    }
    let mut merges: Vec<(&str, &str, f64)> = Vec::new();
    for token in order {
        let score = score_of[token];
        let mut local: Vec<(&str, &str, f64)> = token
            .char_indices()
            .skip(1)
            .map(|(at, _)| token.split_at(at))
            .filter(|(l, r)| index.contains_key(l) && index.contains_key(r))
            .map(|(l, r)| (l, r, score))
            .collect();
        local.sort_by_key(|(l, r, _)| (index[l], index[r]));
        merges.extend(local);
    }
    let key = |m: &(&str, &str, f64)| (m.2, m.0.chars().count(), m.1.chars().count());
    merges.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        kb.0.total_cmp(&ka.0)
            .then(kb.1.cmp(&ka.1))
            .then(kb.2.cmp(&ka.2))
    });
    merges
        .into_iter()
        .map(|(l, r, _)| (l.to_string(), r.to_string()))
        .collect()
}

/// GPT-2's printable spelling of each of the 256 bytes.
fn byte_spelling() -> Vec<char> {
    let printable =
        |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut extra = 0;
    (0..256u32)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).expect("a Latin-1 code point")
            } else {
                extra += 1;
                char::from_u32(255 + extra).expect("a code point")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_spelling_is_gpt2s() {
        let spelling = byte_spelling();
        assert_eq!(spelling[b' ' as usize], 'Ġ');
        assert_eq!(spelling[b'\n' as usize], 'Ċ');
        assert_eq!(spelling[b'a' as usize], 'a');
        assert_eq!(spelling.iter().collect::<HashSet<_>>().len(), 256);
    }

    /// Merges come best score first; a token's own splits in vocabulary
    /// order.
    #[test]
    fn merges_follow_the_scores() {
        let tokens = ["a", "b", "c", "ab", "bc", "abc"];
        let scores = [0.0, 0.0, 0.0, -1.0, -2.0, -3.0];
        let merges = generate_merges(&tokens, &scores);
        let pairs: Vec<(&str, &str)> = merges
            .iter()
            .map(|(l, r)| (l.as_str(), r.as_str()))
            .collect();
        assert_eq!(pairs, [("a", "b"), ("b", "c"), ("ab", "c"), ("a", "bc")]);
    }
}
