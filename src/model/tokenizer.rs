//! The model's `tokenizer.json`: read with padding and truncation off, and
//! asked which tokens start a sequence and close a sentence. Those come from
//! its post-processor — the rule the tokenizer itself follows when it adds
//! special tokens (`TemplateProcessing`, `RobertaProcessing`,
//! `BertProcessing`, or a `Sequence` holding one) — so `<s>`/`</s>` for
//! RoBERTa and `[CLS]`/`[SEP]` at whatever ids a vocabulary gives them,
//! never BERT's 101/102 by assumption (ANALYSIS.md §8).
//!
//! A decoder's tokenizer adds what it adds (a BOS for Llama, nothing for
//! GPT-2 and Qwen2) and the input keeps it; every token it marks special
//! is never content.

use super::config::ModelConfig;
use crate::tokens::{SpecialToken, SpecialTokens, VocabularyStyle};
use anyhow::{anyhow, bail};
use serde_json::Value;
use std::path::Path;
use tokenizers::Tokenizer;

/// Reads the tokenizer with padding and truncation turned off
/// (sentence-transformers ships fixed padding to 128 and truncation on), and
/// its special tokens.
pub fn load_tokenizer(
    path: &Path,
    config: &ModelConfig,
) -> anyhow::Result<(Tokenizer, SpecialTokens)> {
    let tokenizer = Tokenizer::from_file(path)
        .map_err(|e| anyhow!("{} is not a valid tokenizer.json: {e}", path.display()))?;
    prepare_tokenizer(tokenizer, path, config)
}

/// [`load_tokenizer`] for a tokenizer built elsewhere (a GGUF file's);
/// `path` names its origin in messages.
pub fn prepare_tokenizer(
    mut tokenizer: Tokenizer,
    path: &Path,
    config: &ModelConfig,
) -> anyhow::Result<(Tokenizer, SpecialTokens)> {
    // The padding token is the tokenizer's when it pads, else the model's.
    let pad = tokenizer
        .get_padding()
        .map(|padding| padding.pad_id)
        .or(config.pad_token_id);
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let vocabulary = tokenizer.get_vocab_size(true);
    if vocabulary > config.vocab_size {
        bail!(
            "{} has {vocabulary} tokens but config.json's vocab_size is {}: tokenizer and model do not belong together",
            path.display(),
            config.vocab_size
        );
    }
    let style = vocabulary_style(&tokenizer);
    if config.family.is_causal() {
        let mut specials = decoder_specials(&tokenizer, pad, style)
            .map_err(|e| anyhow!("{}: the tokenizer failed: {e}", path.display()))?;
        specials.bidirectional_decoder = config.is_bidirectional_decoder();
        return Ok((tokenizer, specials));
    }
    let (start, separator) = start_and_separator(&tokenizer).map_err(|problem| {
        anyhow!(
            "{}: {problem}; headscope needs the tokens that start a sequence and close a sentence",
            path.display()
        )
    })?;
    for token in [&start, &separator] {
        if token.id as usize >= config.vocab_size {
            bail!(
                "{}: its {} token has id {}, outside config.json's vocab_size {}",
                path.display(),
                token.text,
                token.id,
                config.vocab_size
            );
        }
    }
    Ok((
        tokenizer,
        SpecialTokens {
            start,
            separator,
            pad,
            causal: false,
            bidirectional_decoder: false,
            special_ids: Vec::new(),
            style,
        },
    ))
}

/// How the tokenizer spells its tokens, from its decoder and
/// pre-tokenizer (the rules that turn text into tokens and back).
fn vocabulary_style(tokenizer: &Tokenizer) -> VocabularyStyle {
    let json = |part: Option<serde_json::Result<Value>>| part.and_then(Result::ok);
    let decoder = json(tokenizer.get_decoder().map(serde_json::to_value));
    let pre_tokenizer = json(tokenizer.get_pre_tokenizer().map(serde_json::to_value));
    VocabularyStyle::of_tokenizer(decoder.as_ref(), pre_tokenizer.as_ref())
}

/// A decoder's special tokens: every added token marked special; `start`
/// (and `separator`, which a decoder's input never holds) names the token
/// the tokenizer puts before a text (Llama's `<s>`) or else its first
/// special token (GPT-2's `<|endoftext|>`).
fn decoder_specials(
    tokenizer: &Tokenizer,
    pad: Option<u32>,
    style: VocabularyStyle,
) -> tokenizers::Result<SpecialTokens> {
    let mut special_ids: Vec<u32> = tokenizer
        .get_added_tokens_decoder()
        .into_iter()
        .filter(|(_, token)| token.special)
        .map(|(id, _)| id)
        .collect();
    special_ids.sort_unstable();
    let probe = tokenizer.encode("a", true)?;
    let added_first = probe
        .get_special_tokens_mask()
        .first()
        .filter(|&&mask| mask == 1)
        .map(|_| probe.get_ids()[0]);
    if let Some(id) = added_first.filter(|id| !special_ids.contains(id)) {
        special_ids.push(id);
        special_ids.sort_unstable();
    }
    let start = match added_first.or_else(|| special_ids.first().copied()) {
        Some(id) => SpecialToken {
            id,
            text: tokenizer.id_to_token(id).unwrap_or_default(),
        },
        // No special token at all: a name that no position will hold.
        None => SpecialToken {
            id: u32::MAX,
            text: String::new(),
        },
    };
    Ok(SpecialTokens {
        separator: start.clone(),
        start,
        pad,
        causal: true,
        bidirectional_decoder: false,
        special_ids,
        style,
    })
}

/// The start and separator tokens the post-processor adds around one sequence.
pub fn start_and_separator(tokenizer: &Tokenizer) -> Result<(SpecialToken, SpecialToken), String> {
    let processor = tokenizer
        .get_post_processor()
        .ok_or("it has no post-processor (the rule that adds special tokens)")?;
    let value = serde_json::to_value(processor).map_err(|e| e.to_string())?;
    from_processor(&value)
}

fn from_processor(value: &Value) -> Result<(SpecialToken, SpecialToken), String> {
    let kind = value["type"].as_str().unwrap_or_default();
    match kind {
        "BertProcessing" | "RobertaProcessing" => Ok((
            pair_token(&value["cls"], kind)?,
            pair_token(&value["sep"], kind)?,
        )),
        "TemplateProcessing" => from_template(value),
        "Sequence" => {
            let processors = value["processors"].as_array().cloned().unwrap_or_default();
            processors
                .iter()
                .find_map(|inner| from_processor(inner).ok())
                .ok_or_else(|| {
                    "no processor of its post-processor sequence adds start and separator tokens"
                        .to_string()
                })
        }
        other => Err(format!(
            "its post-processor {other:?} adds no start and separator tokens"
        )),
    }
}

/// `["</s>", 2]` of `RobertaProcessing` and `BertProcessing`.
fn pair_token(value: &Value, kind: &str) -> Result<SpecialToken, String> {
    match (value[0].as_str(), value[1].as_u64()) {
        (Some(text), Some(id)) => Ok(SpecialToken {
            id: u32::try_from(id).map_err(|_| format!("{kind}: token id {id} is too large"))?,
            text: text.to_string(),
        }),
        _ => Err(format!("{kind}: {value} is not a [token, id] pair")),
    }
}

/// `TemplateProcessing`'s single-sequence template, which must be one
/// special token, the sequence, one special token (`[CLS] $A [SEP]`).
fn from_template(value: &Value) -> Result<(SpecialToken, SpecialToken), String> {
    let pieces = value["single"]
        .as_array()
        .ok_or("TemplateProcessing without a single-sequence template")?;
    let sequence = pieces
        .iter()
        .position(|piece| piece.get("Sequence").is_some())
        .ok_or("TemplateProcessing's template has no sequence")?;
    let specials = |pieces: &[Value]| -> Vec<String> {
        pieces
            .iter()
            .filter_map(|piece| piece["SpecialToken"]["id"].as_str().map(str::to_string))
            .collect()
    };
    let (before, after) = (
        specials(&pieces[..sequence]),
        specials(&pieces[sequence + 1..]),
    );
    let ([start], [separator]) = (before.as_slice(), after.as_slice()) else {
        return Err(format!(
            "its template adds {} token(s) before the text and {} after it, not one and one",
            before.len(),
            after.len()
        ));
    };
    let token = |name: &str| -> Result<SpecialToken, String> {
        let entry = &value["special_tokens"][name];
        match (entry["ids"].as_array(), entry["tokens"].as_array()) {
            (Some(ids), Some(texts)) if ids.len() == 1 && texts.len() == 1 => {
                let id = ids[0].as_u64().and_then(|id| u32::try_from(id).ok());
                match (id, texts[0].as_str()) {
                    (Some(id), Some(text)) => Ok(SpecialToken {
                        id,
                        text: text.to_string(),
                    }),
                    _ => Err(format!("its template's {name} is not a token id and text")),
                }
            }
            _ => Err(format!(
                "its template's {name} is not one token of the vocabulary"
            )),
        }
    };
    Ok((token(start)?, token(separator)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn token(id: u32, text: &str) -> SpecialToken {
        SpecialToken {
            id,
            text: text.into(),
        }
    }

    #[test]
    fn each_post_processor_gives_its_start_and_separator() {
        let roberta = json!({"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
            "trim_offsets": true, "add_prefix_space": false});
        assert_eq!(
            from_processor(&roberta),
            Ok((token(0, "<s>"), token(2, "</s>")))
        );
        let bert = json!({"type": "BertProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 3]});
        assert_eq!(
            from_processor(&bert),
            Ok((token(3, "[CLS]"), token(4, "[SEP]")))
        );
        let template = json!({"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [5], "tokens": ["<s>"]},
                               "</s>": {"id": "</s>", "ids": [6], "tokens": ["</s>"]}}});
        assert_eq!(
            from_processor(&template),
            Ok((token(5, "<s>"), token(6, "</s>")))
        );
        let sequence = json!({"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
            template]});
        assert_eq!(
            from_processor(&sequence),
            Ok((token(5, "<s>"), token(6, "</s>")))
        );
    }

    #[test]
    fn templates_without_one_start_and_one_separator_are_refused() {
        let no_start = json!({"type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}});
        let error = from_processor(&no_start).unwrap_err();
        assert!(error.contains("0 token(s) before"), "{error}");
        let byte_level = json!({"type": "ByteLevel"});
        assert!(from_processor(&byte_level)
            .unwrap_err()
            .contains("ByteLevel"));
    }
}
