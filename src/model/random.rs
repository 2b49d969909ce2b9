//! Model folders with random weights, for speed work and tests at any shape
//! of any supported family without downloading a checkpoint (`headscope
//! make-random-model`).
//!
//! Weights are drawn like Hugging Face's initialisation (normal with std
//! 0.02, LayerNorm weight 1 and bias 0), so attention patterns are not
//! degenerate; values are seeded, so a folder is reproducible. The tensor
//! names and shapes come from the same family description the loader reads
//! ([`super::family`]).

use super::config::EncoderConfig;
use super::decoder::weights as decoder_weights;
use super::family::Family;
use anyhow::{anyhow, Context};
use candle_core::{DType, Device, Tensor};
use std::collections::HashMap;
use std::path::Path;

/// Naming variants a checkpoint may use, to test that loading accepts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NameStyle {
    /// Save as a checkpoint with a task head does: every tensor behind the
    /// family's prefix (`bert.`, `roberta.`, …) and a classifier's tensors
    /// beside them.
    pub with_head: bool,
    /// Name LayerNorm parameters `gamma`/`beta` as old TF-converted checkpoints do.
    pub gamma_beta: bool,
}

/// Every tensor of a model of this family and shape, with its name and shape.
pub fn tensor_shapes(config: &EncoderConfig) -> Vec<(String, Vec<usize>)> {
    if let Some(shape) = &config.decoder {
        return decoder_weights::tensor_shapes(config, shape);
    }
    let family = config.family;
    let (h, i, e) = (
        config.hidden_size,
        config.intermediate_size,
        config.embedding_width(),
    );
    let embeddings = family.embedding_names();
    let mut shapes = vec![(
        format!("{}.weight", embeddings.words),
        vec![config.vocab_size, e],
    )];
    // DistilBERT's sinusoidal table is left out, as transformers computes it.
    if !config.sinusoidal_pos_embds {
        shapes.push((
            format!("{}.weight", embeddings.positions),
            vec![config.max_position_embeddings, e],
        ));
    }
    if let Some(types) = embeddings.token_types {
        shapes.push((format!("{types}.weight"), vec![config.type_vocab_size, e]));
    }
    shapes.push((format!("{}.weight", embeddings.norm), vec![e]));
    shapes.push((format!("{}.bias", embeddings.norm), vec![e]));
    if let Some(projection) = family.projection_name(e, h) {
        shapes.push((format!("{projection}.weight"), vec![h, e]));
        shapes.push((format!("{projection}.bias"), vec![h]));
    }
    let names = family.layer_names();
    for layer in 0..config.distinct_layers() {
        let p = family.layer_prefix(layer, config.inner_group_num);
        for (name, out_dim, in_dim) in [
            (names.query, h, h),
            (names.key, h, h),
            (names.value, h, h),
            (names.attention_output, h, h),
            (names.intermediate, i, h),
            (names.output, h, i),
        ] {
            shapes.push((format!("{p}.{name}.weight"), vec![out_dim, in_dim]));
            shapes.push((format!("{p}.{name}.bias"), vec![out_dim]));
        }
        for norm in [names.attention_norm, names.output_norm] {
            shapes.push((format!("{p}.{norm}.weight"), vec![h]));
            shapes.push((format!("{p}.{norm}.bias"), vec![h]));
        }
    }
    shapes
}

/// Whether a tensor of [`tensor_shapes`] is a LayerNorm's weight.
fn is_norm_weight(config: &EncoderConfig, name: &str) -> bool {
    if config.decoder.is_some() {
        return decoder_weights::is_norm_weight(name);
    }
    let layer = config.family.layer_names();
    let Some(stem) = name.strip_suffix(".weight") else {
        return false;
    };
    [
        config.family.embedding_names().norm,
        layer.attention_norm,
        layer.output_norm,
    ]
    .iter()
    .any(|norm| stem.ends_with(norm))
}

/// Random tensors for every name of [`tensor_shapes`], seeded.
pub fn random_weights(
    config: &EncoderConfig,
    seed: u64,
) -> anyhow::Result<HashMap<String, Tensor>> {
    let device = Device::Cpu;
    let mut normal = SeededNormal::new(seed);
    let mut tensors = HashMap::new();
    for (name, shape) in tensor_shapes(config) {
        let tensor = if is_norm_weight(config, &name) {
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

/// Renames tensors to the given style, adding a classifier's tensors
/// (which loading must ignore) to a checkpoint with a head.
pub fn styled(
    tensors: HashMap<String, Tensor>,
    family: Family,
    style: NameStyle,
) -> anyhow::Result<HashMap<String, Tensor>> {
    let mut styled: HashMap<String, Tensor> = tensors
        .into_iter()
        .map(|(name, t)| {
            let mut name = if style.gamma_beta && name.contains("LayerNorm.") {
                name.replace("LayerNorm.weight", "LayerNorm.gamma")
                    .replace("LayerNorm.bias", "LayerNorm.beta")
            } else {
                name
            };
            if style.with_head {
                name = format!("{}{name}", family.checkpoint_prefix());
            }
            (name, t)
        })
        .collect();
    if style.with_head {
        styled.insert(
            "classifier.weight".into(),
            Tensor::zeros((2, 3), DType::F32, &Device::Cpu)?,
        );
        styled.insert(
            "classifier.bias".into(),
            Tensor::zeros(2, DType::F32, &Device::Cpu)?,
        );
    }
    Ok(styled)
}

/// Writes `config.json`, `model.safetensors` (random) and a copy of
/// `tokenizer` into `out`, creating the folder.
pub fn write_random_model(
    config: &EncoderConfig,
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
    let tensors = styled(random_weights(config, seed)?, config.family, style)?;
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
