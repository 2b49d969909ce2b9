//! A GGUF file's tensors under the Hugging Face names the decoder reads
//! (`blk.N.attn_q.weight` → `layers.N.self_attn.q_proj.weight`), each
//! read once: float32 as it is, float16 and bfloat16 kept in half
//! precision, quantized blocks kept quantized ([`super::quantized`]).
//!
//! llama.cpp's converter interleaves the two rotary halves of each head's
//! query and key rows for the `llama` architecture; transformers' loader
//! puts them back (`LlamaTensorProcessor._reverse_permute_weights`), and so
//! does this, by moving whole rows — which, rows being whole blocks, works
//! on quantized data without dequantizing it. The LM head's matrix
//! (`output.weight`, `lm_head.weight`) is read only when asked for; tensors
//! the decoder never reads (`rope_freqs.weight`) are skipped, as
//! transformers skips tensors it has no name for.

use super::file::{GgufFile, RawTensor, TensorType};
use super::quantized::QuantizedWeight;
use crate::model::config::ModelConfig;
use crate::model::weight::Weight;
use candle_core::quantized::GgmlDType;
use candle_core::{DType, Device, Tensor};
use std::collections::HashMap;

/// GGUF name (after `blk.N.`) → the Llama family's (after `layers.N.`).
const LAYER_TENSORS: [(&str, &str); 9] = [
    ("attn_norm", "input_layernorm"),
    ("attn_q", "self_attn.q_proj"),
    ("attn_k", "self_attn.k_proj"),
    ("attn_v", "self_attn.v_proj"),
    ("attn_output", "self_attn.o_proj"),
    ("ffn_norm", "post_attention_layernorm"),
    ("ffn_gate", "mlp.gate_proj"),
    ("ffn_up", "mlp.up_proj"),
    ("ffn_down", "mlp.down_proj"),
];

/// The Hugging Face name of a GGUF tensor, or `None` for one the study
/// does not read.
pub fn hf_name(gguf: &str) -> Option<String> {
    match gguf {
        "token_embd.weight" => return Some("embed_tokens.weight".into()),
        "output_norm.weight" => return Some("norm.weight".into()),
        "output.weight" => return Some("lm_head.weight".into()),
        _ => {}
    }
    let rest = gguf.strip_prefix("blk.")?;
    let (layer, rest) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (stem, suffix) = rest.rsplit_once('.')?;
    let (_, hf) = LAYER_TENSORS.iter().find(|(g, _)| *g == stem)?;
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
    let unpermute = file.string("general.architecture")? == "llama";
    let (heads, kv_heads) = (config.num_attention_heads, config.key_value_heads());
    let mut names: Vec<String> = file.content.tensor_infos.keys().cloned().collect();
    names.sort();
    let mut out = ReadTensors {
        floats: HashMap::new(),
        quantized: HashMap::new(),
    };
    for gguf in names {
        let Some(name) = hf_name(&gguf).filter(|name| keep(name)) else {
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
        let weight = to_weight(raw, device).map_err(|e| {
            anyhow::anyhow!(
                "{}: tensor {gguf}: {}",
                file.path.display(),
                crate::model::without_backtrace(&e)
            )
        })?;
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
