//! A GGUF file's tensors under the Hugging Face names the decoder reads
//! (`blk.N.attn_q.weight` → `layers.N.self_attn.q_proj.weight`), each
//! read once: float32 as it is, float16 and bfloat16 kept in half
//! precision, quantized blocks kept quantized ([`super::quantized`]).
//!
//! llama.cpp's converter interleaves the two rotary halves of each head's
//! query and key rows for the `llama` architecture; transformers' loader
//! puts them back (`LlamaTensorProcessor._reverse_permute_weights`), and so
//! does this, by moving whole rows — which, rows being whole blocks, works
//! on quantized data without dequantizing it; GPT-NeoX's fused
//! `attn_qkv`, which the converter regroups as all queries, keys, then
//! values, goes back to `query_key_value`'s per-head layout the same way.
//! Gemma's norm weights, stored plus one, are read minus one in float32
//! (`Gemma2TensorProcessor`). The LM head's matrix (`output.weight`) is
//! read only when asked for; `rope_freqs.weight` is read by
//! [`super::config`], and tensors the decoder never reads are skipped, as
//! transformers skips tensors it has no name for.

use super::file::{GgufFile, RawTensor, TensorType};
use super::quantized::QuantizedWeight;
use crate::model::config::pre_norm::{head_names, NormKind, QkvLayout};
use crate::model::config::ModelConfig;
use crate::model::family::Family;
use crate::model::weight::Weight;
use crate::model::without_backtrace;
use candle_core::quantized::GgmlDType;
use candle_core::{DType, Device, Tensor};
use std::collections::HashMap;

/// The Hugging Face name of a GGUF tensor of a Llama-family file, or
/// `None` for one the study does not read.
pub fn hf_name(gguf: &str) -> Option<String> {
    hf_name_in(Family::Llama, gguf)
}

/// The Hugging Face name of a GGUF tensor of a `family` file, or `None`
/// for one the study does not read.
pub fn hf_name_in(family: Family, gguf: &str) -> Option<String> {
    let (norm, head) = head_names(family)?;
    match gguf {
        "token_embd.weight" => return Some(format!("{}.weight", family.word_embeddings())),
        "output.weight" => return Some(format!("{head}.weight")),
        _ => {}
    }
    if let Some(suffix) = gguf.strip_prefix("output_norm.") {
        return Some(format!("{norm}.{suffix}"));
    }
    let rest = gguf.strip_prefix("blk.")?;
    let (layer, rest) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (stem, suffix) = rest.rsplit_once('.')?;
    let hf = family.spec().pre_norm()?.gguf_tensors.hf_name(stem)?;
    Some(format!("layers.{layer}.{hf}.{suffix}"))
}

/// The file's tensors: floats by name, quantized matrices by name.
pub struct ReadTensors {
    pub floats: HashMap<String, Tensor>,
    pub quantized: HashMap<String, QuantizedWeight>,
}

/// Reads every tensor the decoder reads whose Hugging Face name `keep`
/// keeps, in the file's own precision, onto `device` (each is read and
/// rearranged on the CPU first).
pub fn read(
    file: &mut GgufFile,
    config: &ModelConfig,
    device: &Device,
    keep: &dyn Fn(&str) -> bool,
) -> anyhow::Result<ReadTensors> {
    let family = config.family;
    let unpermute = file.string("general.architecture")? == "llama";
    let variant = config.pre_norm.as_ref().map(|shape| &shape.variant);
    // Gemma's norms, stored plus one (below); GPT-NeoX's fused q/k/v.
    let norm_plus_one = variant.is_some_and(|v| v.norm == NormKind::RmsPlusOne);
    let per_head_qkv = variant.is_some_and(|v| v.qkv_layout == QkvLayout::InterleavedPerHead);
    let (heads, kv_heads) = (config.num_attention_heads, config.key_value_heads());
    let mut names: Vec<String> = file.content.tensor_infos.keys().cloned().collect();
    names.sort();
    let mut out = ReadTensors {
        floats: HashMap::new(),
        quantized: HashMap::new(),
    };
    for gguf in names {
        let Some(name) = hf_name_in(family, &gguf).filter(|name| keep(name)) else {
            continue;
        };
        let mut raw = file.read_tensor(&gguf)?;
        let groups = if gguf.contains(".attn_q.") {
            Some(heads)
        } else if gguf.contains(".attn_k.") {
            Some(kv_heads)
        } else {
            None
        };
        if let Some(groups) = groups.filter(|_| unpermute) {
            raw = raw.reorder_rows(&rotary_order(raw.rows(), groups));
        }
        if per_head_qkv && gguf.contains(".attn_qkv.") {
            raw = neox_qkv_rows(raw, heads);
        }
        let problem = |e: &dyn std::fmt::Display| {
            anyhow::anyhow!("{}: tensor {gguf}: {e}", file.path.display())
        };
        // llama.cpp's converter stores Gemma's norm weights plus one
        // (`norm_shift`); transformers' loader takes the one off again in
        // float32 (`Gemma2TensorProcessor`), and so does this.
        if norm_plus_one && gguf.ends_with("norm.weight") {
            let tensor =
                match to_weight(raw, &Device::Cpu).map_err(|e| problem(&without_backtrace(&e)))? {
                    Weight::Quantized(blocks) => blocks.dequantize(),
                    Weight::F32(tensor) | Weight::Half(tensor) => tensor.to_dtype(DType::F32),
                }
                .and_then(|t| t.affine(1.0, -1.0))
                .and_then(|t| t.to_device(device))
                .map_err(|e| problem(&without_backtrace(&e)))?;
            out.floats.insert(name, tensor);
            continue;
        }
        let weight = to_weight(raw, device).map_err(|e| problem(&without_backtrace(&e)))?;
        match weight {
            Weight::Quantized(blocks) => {
                out.quantized.insert(name, blocks);
            }
            Weight::F32(tensor) | Weight::Half(tensor) => {
                out.floats.insert(name, tensor);
            }
        }
    }
    Ok(out)
}

/// GPT-NeoX's fused projection (weight or bias) back in Hugging Face's
/// order: llama.cpp's converter stores all queries, then all keys, then
/// all values; `query_key_value` holds each head's query, key and value
/// side by side.
fn neox_qkv_rows(raw: RawTensor, heads: usize) -> RawTensor {
    if raw.shape.dims().len() == 1 {
        // A bias: its values are the rows.
        let values = raw.shape.dims()[0];
        let width = raw.data.len() / values;
        let order = neox_qkv_order(values, heads);
        let mut data = Vec::with_capacity(raw.data.len());
        for &row in &order {
            data.extend_from_slice(&raw.data[row * width..(row + 1) * width]);
        }
        return RawTensor { data, ..raw };
    }
    let order = neox_qkv_order(raw.rows(), heads);
    raw.reorder_rows(&order)
}

/// For each Hugging Face row of GPT-NeoX's `query_key_value`, the GGUF
/// row holding it.
pub fn neox_qkv_order(rows: usize, heads: usize) -> Vec<usize> {
    let head_dim = rows / 3 / heads.max(1);
    let mut order = Vec::with_capacity(rows);
    for head in 0..heads {
        for part in 0..3 {
            for i in 0..head_dim {
                order.push(part * heads * head_dim + head * head_dim + i);
            }
        }
    }
    order
}

/// One tensor of the file as headscope keeps it: float32, float16 and
/// bfloat16 as candle tensors of their own type, blocks quantized.
pub fn to_weight(raw: RawTensor, device: &Device) -> candle_core::Result<Weight> {
    let dtype = match raw.dtype {
        TensorType::Candle(GgmlDType::F32) => DType::F32,
        TensorType::Candle(GgmlDType::F16) => DType::F16,
        TensorType::Candle(GgmlDType::BF16) => DType::BF16,
        _ => return Ok(Weight::Quantized(QuantizedWeight::from_raw(raw, device)?)),
    };
    let tensor = Tensor::from_raw_buffer(&raw.data, dtype, raw.shape.dims(), device)?;
    Weight::new(tensor)
}

/// For each Hugging Face row of a rotary projection with `groups` heads,
/// the GGUF row holding it: llama.cpp stores head h's row (half, i) at
/// (i, half).
pub fn rotary_order(rows: usize, groups: usize) -> Vec<usize> {
    let pairs = rows / groups / 2;
    let mut order = Vec::with_capacity(rows);
    for head in 0..groups {
        for half in 0..2 {
            for i in 0..pairs {
                order.push(head * 2 * pairs + 2 * i + half);
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_the_llama_family() {
        assert_eq!(
            hf_name("blk.12.attn_q.weight").as_deref(),
            Some("layers.12.self_attn.q_proj.weight")
        );
        assert_eq!(
            hf_name("blk.0.attn_k.bias").as_deref(),
            Some("layers.0.self_attn.k_proj.bias")
        );
        assert_eq!(
            hf_name("token_embd.weight").as_deref(),
            Some("embed_tokens.weight")
        );
        assert_eq!(hf_name("output.weight").as_deref(), Some("lm_head.weight"));
        assert_eq!(hf_name("rope_freqs.weight"), None);
    }

    #[test]
    fn names_map_to_each_family() {
        let name = |family, gguf| hf_name_in(family, gguf);
        assert_eq!(
            name(Family::Gemma3Text, "blk.1.ffn_norm.weight").as_deref(),
            Some("layers.1.pre_feedforward_layernorm.weight")
        );
        assert_eq!(
            name(Family::Gemma2, "blk.0.post_ffw_norm.weight").as_deref(),
            Some("layers.0.post_feedforward_layernorm.weight")
        );
        assert_eq!(
            name(Family::Qwen3, "blk.0.attn_k_norm.weight").as_deref(),
            Some("layers.0.self_attn.k_norm.weight")
        );
        assert_eq!(name(Family::Qwen3, "blk.0.post_ffw_norm.weight"), None);
        assert_eq!(
            name(Family::Olmo2, "blk.2.post_attention_norm.weight").as_deref(),
            Some("layers.2.post_attention_layernorm.weight")
        );
        assert_eq!(
            name(Family::Phi3, "blk.0.ffn_up.weight").as_deref(),
            Some("layers.0.mlp.gate_up_proj.weight")
        );
        assert_eq!(
            name(Family::Phi3, "blk.0.attn_qkv.weight").as_deref(),
            Some("layers.0.self_attn.qkv_proj.weight")
        );
        assert_eq!(
            name(Family::GptNeoX, "blk.3.attn_qkv.bias").as_deref(),
            Some("layers.3.attention.query_key_value.bias")
        );
        assert_eq!(
            name(Family::GptNeoX, "token_embd.weight").as_deref(),
            Some("embed_in.weight")
        );
        assert_eq!(
            name(Family::GptNeoX, "output_norm.bias").as_deref(),
            Some("final_layer_norm.bias")
        );
        assert_eq!(
            name(Family::GptNeoX, "output.weight").as_deref(),
            Some("embed_out.weight")
        );
    }

    /// GPT-NeoX: the converter's all-q, all-k, all-v rows back to each
    /// head's q, k, v side by side.
    #[test]
    fn neox_order_undoes_the_converters_regrouping() {
        let (heads, head_dim) = (3, 2);
        let rows = 3 * heads * head_dim;
        // HF row (head, part, i) → GGUF row (part, head, i), as the
        // converter's reshape(heads, 3, head_dim) and concatenation.
        let mut gguf = vec![0; rows];
        for head in 0..heads {
            for part in 0..3 {
                for i in 0..head_dim {
                    gguf[part * heads * head_dim + head * head_dim + i] =
                        head * 3 * head_dim + part * head_dim + i;
                }
            }
        }
        let back: Vec<usize> = neox_qkv_order(rows, heads)
            .iter()
            .map(|&r| gguf[r])
            .collect();
        assert_eq!(back, (0..rows).collect::<Vec<_>>());
    }

    /// The order undoes llama.cpp's permutation: permuting HF rows as
    /// llama.cpp's converter does and then reading them in this order
    /// gives the HF rows back.
    #[test]
    fn rotary_order_undoes_llama_cpp_permutation() {
        let (heads, pairs) = (3, 4);
        let rows = heads * 2 * pairs;
        // llama.cpp: reshape(heads, 2, pairs) then swap to (heads, pairs, 2).
        let mut gguf = vec![0; rows];
        for head in 0..heads {
            for half in 0..2 {
                for i in 0..pairs {
                    gguf[head * 2 * pairs + 2 * i + half] = head * 2 * pairs + half * pairs + i;
                }
            }
        }
        let back: Vec<usize> = rotary_order(rows, heads).iter().map(|&r| gguf[r]).collect();
        assert_eq!(back, (0..rows).collect::<Vec<_>>());
    }
}
