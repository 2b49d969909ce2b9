//! Model folders with random weights, for speed work and tests at any BERT
//! shape without downloading a checkpoint (`headscope make-random-model`).
//!
//! Weights are drawn like Hugging Face's `BertModel` initialisation (normal
//! with std 0.02, LayerNorm weight 1 and bias 0), so attention patterns are
//! not degenerate; values are seeded, so a folder is reproducible.

use super::BertConfig;
use anyhow::{anyhow, Context};
use candle_core::{DType, Device, Tensor};
use std::collections::HashMap;
use std::path::Path;

/// Naming variants a checkpoint may use, to test that loading accepts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NameStyle {
    /// Prefix every tensor with `bert.` as `BertForMaskedLM` checkpoints do.
    pub bert_prefix: bool,
    /// Name LayerNorm parameters `gamma`/`beta` as old TF-converted checkpoints do.
    pub gamma_beta: bool,
}

/// Every tensor of a BERT encoder of this shape, with its name and shape.
pub fn tensor_shapes(config: &BertConfig) -> Vec<(String, Vec<usize>)> {
    let (h, i) = (config.hidden_size, config.intermediate_size);
    let mut shapes = vec![
        (
            "embeddings.word_embeddings.weight".to_string(),
            vec![config.vocab_size, h],
        ),
        (
            "embeddings.position_embeddings.weight".into(),
            vec![config.max_position_embeddings, h],
        ),
        (
            "embeddings.token_type_embeddings.weight".into(),
            vec![config.type_vocab_size, h],
        ),
        ("embeddings.LayerNorm.weight".into(), vec![h]),
        ("embeddings.LayerNorm.bias".into(), vec![h]),
    ];
    for layer in 0..config.num_hidden_layers {
        let p = format!("encoder.layer.{layer}");
        for (name, out_dim, in_dim) in [
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", i, h),
            ("output.dense", h, i),
        ] {
            shapes.push((format!("{p}.{name}.weight"), vec![out_dim, in_dim]));
            shapes.push((format!("{p}.{name}.bias"), vec![out_dim]));
        }
        for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
            shapes.push((format!("{p}.{norm}.weight"), vec![h]));
            shapes.push((format!("{p}.{norm}.bias"), vec![h]));
        }
    }
    shapes
}

/// Random tensors for every name of [`tensor_shapes`], seeded.
pub fn random_weights(config: &BertConfig, seed: u64) -> anyhow::Result<HashMap<String, Tensor>> {
    let device = Device::Cpu;
    let mut normal = SeededNormal::new(seed);
    let mut tensors = HashMap::new();
    for (name, shape) in tensor_shapes(config) {
        let tensor = if name.contains("LayerNorm.weight") {
            Tensor::ones(shape, DType::F32, &device)?
        } else if name.ends_with(".bias") {
            Tensor::zeros(shape, DType::F32, &device)?
        } else {
            let count = shape.iter().product();
            let values: Vec<f32> = (0..count).map(|_| 0.02 * normal.sample()).collect();
            Tensor::from_vec(values, shape, &device)?
        };
        tensors.insert(name, tensor);
    }
    Ok(tensors)
}

/// Standard normal samples from a seeded xorshift generator (Box–Muller);
/// candle's CPU device cannot be seeded, and folders must be reproducible.
struct SeededNormal {
    state: u64,
    spare: Option<f32>,
}

impl SeededNormal {
    fn new(seed: u64) -> Self {
        Self {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            spare: None,
        }
    }

    fn uniform(&mut self) -> f64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        // 53 random bits in (0, 1].
        ((self.state >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    fn sample(&mut self) -> f32 {
        if let Some(value) = self.spare.take() {
            return value;
        }
        let radius = (-2.0 * self.uniform().ln()).sqrt();
        let angle = std::f64::consts::TAU * self.uniform();
        self.spare = Some((radius * angle.sin()) as f32);
        (radius * angle.cos()) as f32
    }
}

/// Renames tensors to the given style.
pub fn styled(tensors: HashMap<String, Tensor>, style: NameStyle) -> HashMap<String, Tensor> {
    tensors
        .into_iter()
        .map(|(name, t)| {
            let mut name = if style.gamma_beta && name.contains("LayerNorm.") {
                name.replace("LayerNorm.weight", "LayerNorm.gamma")
                    .replace("LayerNorm.bias", "LayerNorm.beta")
            } else {
                name
            };
            if style.bert_prefix {
                name = format!("bert.{name}");
            }
            (name, t)
        })
        .collect()
}

/// Writes `config.json`, `model.safetensors` (random) and a copy of
/// `tokenizer` into `out`, creating the folder.
pub fn write_random_model(
    config: &BertConfig,
    tokenizer: &Path,
    out: &Path,
    seed: u64,
    style: NameStyle,
) -> anyhow::Result<()> {
    config.validate().map_err(|p| anyhow!("config: {p}"))?;
    if !tokenizer.is_file() {
        anyhow::bail!("tokenizer file {} does not exist", tokenizer.display());
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let config_json = serde_json::to_string_pretty(config)?;
    std::fs::write(out.join("config.json"), config_json)
        .with_context(|| format!("cannot write {}", out.join("config.json").display()))?;
    let tensors = styled(random_weights(config, seed)?, style);
    let weights = out.join("model.safetensors");
    candle_core::safetensors::save(&tensors, &weights)
        .with_context(|| format!("cannot write {}", weights.display()))?;
    std::fs::copy(tokenizer, out.join("tokenizer.json")).with_context(|| {
        format!(
            "cannot copy {} to {}",
            tokenizer.display(),
            out.join("tokenizer.json").display()
        )
    })?;
    Ok(())
}
