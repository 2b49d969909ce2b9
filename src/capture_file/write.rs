//! Writing a capture file from a run of headscope's own engine: what the
//! Python package writes from a PyTorch model, written from Rust (the round
//! trip the tests check, and `headscope analyze --save-capture`).

use super::header::{Header, ModelDescription, TokenTable, FORMAT, HEADER_KEY, VERSION};
use crate::atomic_file::{write_atomically, WriteError};
use crate::captures::{Captures, HeadId};
use crate::tokens::TokenSequence;
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// One run to store.
pub struct CaptureSource<'a> {
    pub model: ModelDescription,
    /// The text the token offsets point into.
    pub text: &'a str,
    pub tokens: &'a TokenSequence,
    pub captures: &'a Captures,
    /// Store every P too (else O alone).
    pub with_attention: bool,
    pub sentences_left_out: usize,
    pub tokens_left_out: usize,
}

/// The header of `source` (character offsets from the tokens' byte ranges).
pub fn header_of(source: &CaptureSource) -> Header {
    let tokens = source.tokens;
    let char_of_byte = char_indices(source.text);
    let offsets = tokens
        .offsets
        .iter()
        .map(|o| o.map(|(start, end)| (char_of_byte(start), char_of_byte(end))))
        .collect();
    let known = |id: u32| (id != u32::MAX).then_some(id);
    Header {
        format: FORMAT.into(),
        version: VERSION,
        model: source.model.clone(),
        causal: tokens.causal,
        text: source.text.to_string(),
        layers: source.captures.layers,
        heads: source.captures.heads,
        head_dim: source.captures.head_dim,
        attentions: source.with_attention,
        value_norms: writes_value_norms(source),
        tokens: TokenTable {
            ids: tokens.input_ids.clone(),
            texts: tokens.token_texts.clone(),
            offsets,
            sentence_ids: tokens.sentence_ids.clone(),
            special_positions: (0..tokens.len()).filter(|&i| tokens.special[i]).collect(),
            separator_positions: tokens.separator_positions(),
            start_id: known(tokens.cls_id),
            separator_id: if tokens.sentence_final_separators() {
                None
            } else {
                known(tokens.sep_id)
            },
        },
        sentences_left_out: source.sentences_left_out,
        tokens_left_out: source.tokens_left_out,
        producer: format!("headscope {}", env!("CARGO_PKG_VERSION")),
    }
}

/// A byte offset of `text` → its character offset.
fn char_indices(text: &str) -> impl Fn(usize) -> usize + '_ {
    move |byte| text[..byte.min(text.len())].chars().count()
}

/// Whether the file of `source` holds the value norms: with P, where the
/// run made them.
fn writes_value_norms(source: &CaptureSource) -> bool {
    let captures = source.captures;
    source.with_attention
        && captures.value_norms.len() == captures.layers * captures.heads * captures.tokens
}

/// Writes `source` to `path` as a capture file (atomically).
pub fn write_capture(path: &Path, source: &CaptureSource) -> Result<(), WriteError> {
    let header = header_of(source);
    let captures = source.captures;
    let (h, t, d) = (captures.heads, captures.tokens, captures.head_dim);
    let mut layers: Vec<(String, Vec<u8>, Vec<usize>)> = Vec::new();
    for layer in 0..captures.layers {
        let mut outputs = Vec::with_capacity(h * t * d * 4);
        let mut attentions = Vec::new();
        for head in 0..h {
            let id = HeadId::new(layer, head);
            outputs.extend(
                captures
                    .head_output(id)
                    .iter()
                    .flat_map(|v| v.to_le_bytes()),
            );
            if source.with_attention {
                attentions.extend(captures.attention(id).iter().flat_map(|v| v.to_le_bytes()));
            }
        }
        layers.push((
            format!("layers.{layer}.head_outputs"),
            outputs,
            vec![h, t, d],
        ));
        if source.with_attention {
            layers.push((
                format!("layers.{layer}.attentions"),
                attentions,
                vec![h, t, t],
            ));
        }
        if header.value_norms {
            let norms = &captures.value_norms[layer * h * t..(layer + 1) * h * t];
            layers.push((
                format!("layers.{layer}.value_norms"),
                norms.iter().flat_map(|v| v.to_le_bytes()).collect(),
                vec![h, t],
            ));
        }
    }
    let views: Vec<(String, TensorView)> = layers
        .iter()
        .map(|(name, bytes, shape)| {
            let view = TensorView::new(Dtype::F32, shape.clone(), bytes)
                .expect("the byte count matches the shape");
            (name.clone(), view)
        })
        .collect();
    let metadata = HashMap::from([(
        HEADER_KEY.to_string(),
        serde_json::to_string(&header).expect("a header serialises"),
    )]);
    let bytes = safetensors::serialize(views, Some(metadata))
        .map_err(|e| std::io::Error::other(e.to_string()))
        .map_err(|error| WriteError::Io {
            path: path.to_path_buf(),
            error,
        })?;
    write_atomically(path, |w: &mut dyn Write| w.write_all(&bytes))
}
