//! Reading a capture file and checking it against its own header.

use super::header::{Header, TokenTable, FORMAT, HEADER_KEY, VERSION};
use super::{CaptureFile, CaptureFileError};
use crate::captures::Captures;
use crate::kernels::{matmul, MatMut, MatRef};
use crate::tokens::{TokenSequence, VocabularyStyle};
use safetensors::{Dtype, SafeTensors};
use std::path::Path;

pub(super) fn read(path: &Path) -> Result<CaptureFile, CaptureFileError> {
    let bytes = std::fs::read(path).map_err(|error| CaptureFileError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let file = SafeTensors::deserialize(&bytes).map_err(|e| CaptureFileError::NotSafetensors {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    let (_, metadata) =
        SafeTensors::read_metadata(&bytes).map_err(|e| CaptureFileError::NotSafetensors {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
    let header_text = metadata
        .metadata()
        .as_ref()
        .and_then(|m| m.get(HEADER_KEY))
        .ok_or_else(|| CaptureFileError::NoHeader {
            path: path.to_path_buf(),
        })?;
    let header = parse_header(path, header_text)?;
    let inconsistent = |detail: String| CaptureFileError::Inconsistent {
        path: path.to_path_buf(),
        detail,
    };
    let tokens = token_sequence(&header).map_err(inconsistent)?;
    let captures = captures(&header, &file).map_err(inconsistent)?;
    Ok(CaptureFile {
        path: path.to_path_buf(),
        header,
        tokens,
        captures,
    })
}

/// Reads only the header of a capture file: the 8-byte length and the
/// JSON that open every safetensors file, not the tensors after them.
pub(super) fn read_header(path: &Path) -> Result<Header, CaptureFileError> {
    use std::io::Read;
    let io = |error: std::io::Error| CaptureFileError::Io {
        path: path.to_path_buf(),
        error,
    };
    let not_safetensors = |detail: String| CaptureFileError::NotSafetensors {
        path: path.to_path_buf(),
        detail,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut length = [0u8; 8];
    file.read_exact(&mut length)
        .map_err(|e| not_safetensors(e.to_string()))?;
    let length = u64::from_le_bytes(length);
    if length > size.saturating_sub(8) {
        return Err(not_safetensors(format!(
            "its header says {length} bytes, the file has {size}"
        )));
    }
    let mut json = vec![0u8; length as usize];
    file.read_exact(&mut json)
        .map_err(|e| not_safetensors(e.to_string()))?;
    let value: serde_json::Value =
        serde_json::from_slice(&json).map_err(|e| not_safetensors(e.to_string()))?;
    let header_text =
        value["__metadata__"][HEADER_KEY]
            .as_str()
            .ok_or_else(|| CaptureFileError::NoHeader {
                path: path.to_path_buf(),
            })?;
    parse_header(path, header_text)
}

fn parse_header(path: &Path, text: &str) -> Result<Header, CaptureFileError> {
    let bad = |detail: String| CaptureFileError::BadHeader {
        path: path.to_path_buf(),
        detail,
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    if value["format"].as_str() != Some(FORMAT) {
        return Err(bad(format!("its format is not \"{FORMAT}\"")));
    }
    let version = value["version"].as_u64().unwrap_or(0);
    if version != u64::from(VERSION) {
        return Err(CaptureFileError::Version {
            path: path.to_path_buf(),
            found: version.try_into().unwrap_or(u32::MAX),
        });
    }
    serde_json::from_value(value).map_err(|e| bad(e.to_string()))
}

/// The input as the analysis reads it; every list checked against T.
fn token_sequence(header: &Header) -> Result<TokenSequence, String> {
    let table: &TokenTable = &header.tokens;
    let t = table.ids.len();
    if t == 0 {
        return Err("the capture has no tokens".into());
    }
    for (name, len) in [
        ("texts", table.texts.len()),
        ("offsets", table.offsets.len()),
        ("sentence_ids", table.sentence_ids.len()),
    ] {
        if len != t {
            return Err(format!("tokens.{name} has {len} entries for {t} token ids"));
        }
    }
    for (name, positions) in [
        ("special_positions", &table.special_positions),
        ("separator_positions", &table.separator_positions),
    ] {
        if let Some(&bad) = positions.iter().find(|&&p| p >= t) {
            return Err(format!(
                "tokens.{name} holds {bad}, past the last of {t} tokens"
            ));
        }
        if positions.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("tokens.{name} is not strictly ascending"));
        }
    }
    let byte_of_char = byte_offsets(&header.text);
    let chars = byte_of_char.len() - 1;
    let offsets = table
        .offsets
        .iter()
        .enumerate()
        .map(|(i, offset)| match *offset {
            None => Ok(None),
            Some((start, end)) if start <= end && end <= chars => {
                Ok(Some((byte_of_char[start], byte_of_char[end])))
            }
            Some((start, end)) => Err(format!(
                "token {i} has character offsets {start}..{end}, outside the text's {chars} characters"
            )),
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut special = vec![false; t];
    for &p in &table.special_positions {
        special[p] = true;
    }
    let tokens = TokenSequence {
        input_ids: table.ids.clone(),
        token_texts: table.texts.clone(),
        special,
        sentence_ids: table.sentence_ids.clone(),
        offsets,
        sep_id: table.separator_id.unwrap_or(u32::MAX),
        cls_id: table.start_id.unwrap_or(u32::MAX),
        causal: header.causal,
        // A bidirectional model whose separators are sentence ends (a
        // decoder's input) names no separator token.
        bidirectional_decoder: !header.causal && table.separator_id.is_none(),
        // A capture stores the texts alone: their spelling tells the style.
        style: VocabularyStyle::guess(&table.texts),
    };
    let derived = tokens.separator_positions();
    if derived != table.separator_positions {
        let rule = if tokens.sentence_final_separators() {
            "each sentence's last content token"
        } else {
            "every position holding tokens.separator_id"
        };
        return Err(format!(
            "tokens.separator_positions {:?} are not the separators the ids give ({rule}: {:?})",
            abbreviated(&table.separator_positions),
            abbreviated(&derived)
        ));
    }
    Ok(tokens)
}

fn abbreviated(positions: &[usize]) -> String {
    let shown: Vec<String> = positions.iter().take(8).map(|p| p.to_string()).collect();
    let more = if positions.len() > 8 { ", …" } else { "" };
    format!("[{}{more}]", shown.join(", "))
}

/// Byte offset of every character boundary of `text`, the end included.
fn byte_offsets(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(text.len()))
        .collect()
}

/// O and P of every layer, checked against the header, and S = O·Oᵀ.
fn captures(header: &Header, file: &SafeTensors) -> Result<Captures, String> {
    let (l, h, t, d) = (
        header.layers,
        header.heads,
        header.tokens.ids.len(),
        header.head_dim,
    );
    if l == 0 || h == 0 || d == 0 {
        return Err(format!(
            "the header says {l} layers, {h} heads of dimension {d}: nothing to analyse"
        ));
    }
    let expected: usize =
        l * (1 + usize::from(header.attentions) + usize::from(header.value_norms));
    let layer_tensors = file
        .names()
        .into_iter()
        .filter(|n| n.starts_with("layers."))
        .count();
    if layer_tensors != expected {
        return Err(format!(
            "{layer_tensors} layer tensors for {l} layers{}: expected {expected}",
            match (header.attentions, header.value_norms) {
                (true, true) => " with attentions and value norms",
                (true, false) => " with attentions",
                (false, true) => " with value norms",
                (false, false) => "",
            }
        ));
    }
    let mut head_outputs = Vec::with_capacity(l * h * t * d);
    let mut attentions = Vec::with_capacity(if header.attentions { l * h * t * t } else { 0 });
    let mut value_norms = Vec::new();
    for layer in 0..l {
        read_tensor(
            file,
            &format!("layers.{layer}.head_outputs"),
            &[h, t, d],
            &mut head_outputs,
        )?;
        if header.attentions {
            read_tensor(
                file,
                &format!("layers.{layer}.attentions"),
                &[h, t, t],
                &mut attentions,
            )?;
        }
        if header.value_norms {
            read_tensor(
                file,
                &format!("layers.{layer}.value_norms"),
                &[h, t],
                &mut value_norms,
            )?;
        }
    }
    let mut similarity = vec![0.0f32; l * h * t * t];
    for (outputs, square) in head_outputs
        .chunks_exact(t * d)
        .zip(similarity.chunks_exact_mut(t * t))
    {
        let outputs = MatRef::new(outputs, t, d);
        matmul(MatMut::new(square, t, t), outputs, outputs.t(), false, 1.0);
    }
    Ok(Captures {
        layers: l,
        heads: h,
        tokens: t,
        head_dim: d,
        attentions,
        head_outputs,
        similarity,
        value_norms,
        ..Default::default()
    })
}

/// Appends tensor `name` of shape `shape` to `out` as float32.
fn read_tensor(
    file: &SafeTensors,
    name: &str,
    shape: &[usize],
    out: &mut Vec<f32>,
) -> Result<(), String> {
    let view = file
        .tensor(name)
        .map_err(|_| format!("tensor {name} is missing"))?;
    if view.shape() != shape {
        return Err(format!(
            "tensor {name} has shape {:?}, the header says {shape:?}",
            view.shape()
        ));
    }
    let data = view.data();
    let start = out.len();
    match view.dtype() {
        Dtype::F32 => out.extend(
            data.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        ),
        Dtype::F16 => out.extend(
            data.chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32()),
        ),
        Dtype::BF16 => out.extend(
            data.chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32()),
        ),
        other => {
            return Err(format!(
                "tensor {name} is {other:?}; a capture holds float32, float16 or bfloat16"
            ))
        }
    }
    if let Some(i) = out[start..].iter().position(|v| !v.is_finite()) {
        return Err(format!(
            "tensor {name} holds a non-finite value at index {i}"
        ));
    }
    Ok(())
}
