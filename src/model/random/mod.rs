//! Model folders with random weights, for speed work and tests at any shape
//! of any supported family without downloading a checkpoint (`headscope
//! make-random-model`).
//!
//! Weights are drawn like Hugging Face's initialisation (normal with std
//! 0.02, LayerNorm weight 1 and bias 0), so attention patterns are not
//! degenerate; values are seeded, so a folder is reproducible. The tensor
//! names and shapes ([`tensors`]) are those the loader reads. They are written in float32, bfloat16 or float16
//! ([`WeightDtype`]), tensor by tensor: the safetensors header is known
//! from the shapes, so an 8B-parameter model is written without ever being
//! held in memory.

mod tensors;

use super::config::pre_norm::NormKind;
use super::config::ModelConfig;
use super::family::Family;
use anyhow::{anyhow, Context};
use candle_core::{Device, Tensor};
use half::slice::HalfFloatSliceExt;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use tensors::is_norm_weight;
pub use tensors::tensor_shapes;

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

/// How a tensor of a random model is filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fill {
    Ones,
    Zeros,
    /// Normal with std 0.02, drawn from the model's one seeded generator
    /// in the order of [`tensor_shapes`].
    Normal,
}

impl Fill {
    fn of(config: &ModelConfig, name: &str) -> Self {
        // Gemma's norms scale by 1 + w: their identity is w = 0.
        let plus_one = config
            .pre_norm
            .as_ref()
            .is_some_and(|shape| shape.variant.norm == NormKind::RmsPlusOne);
        if is_norm_weight(config, name) && plus_one {
            Self::Zeros
        } else if is_norm_weight(config, name) {
            Self::Ones
        } else if name.ends_with(".bias") {
            Self::Zeros
        } else {
            Self::Normal
        }
    }

    /// The next `out.len()` values of this tensor.
    fn values(self, normal: &mut SeededNormal, out: &mut [f32]) {
        match self {
            Self::Ones => out.fill(1.0),
            Self::Zeros => out.fill(0.0),
            Self::Normal => out.iter_mut().for_each(|v| *v = 0.02 * normal.sample()),
        }
    }
}

/// Random tensors for every name of [`tensor_shapes`], seeded, in float32
/// (the values [`write_random_model`] writes).
pub fn random_weights(config: &ModelConfig, seed: u64) -> anyhow::Result<HashMap<String, Tensor>> {
    let mut normal = SeededNormal::new(seed);
    let mut tensors = HashMap::new();
    for (name, shape) in tensor_shapes(config) {
        let mut values = vec![0.0; shape.iter().product()];
        Fill::of(config, &name).values(&mut normal, &mut values);
        tensors.insert(name, Tensor::from_vec(values, shape, &Device::Cpu)?);
    }
    Ok(tensors)
}

/// The precision a random model's weights are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightDtype {
    #[default]
    F32,
    Bf16,
    F16,
}

impl WeightDtype {
    /// Its name in a safetensors header.
    fn safetensors_name(self) -> &'static str {
        match self {
            Self::F32 => "F32",
            Self::Bf16 => "BF16",
            Self::F16 => "F16",
        }
    }

    fn bytes(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::Bf16 | Self::F16 => 2,
        }
    }

    /// `values` in this precision (rounded to nearest), little-endian, into `out`.
    fn encode(self, values: &[f32], out: &mut Vec<u8>) {
        out.clear();
        match self {
            Self::F32 => out.extend(values.iter().flat_map(|v| v.to_le_bytes())),
            Self::Bf16 => {
                let mut halves = vec![half::bf16::ZERO; values.len()];
                halves.convert_from_f32_slice(values);
                out.extend(halves.iter().flat_map(|v| v.to_le_bytes()));
            }
            Self::F16 => {
                let mut halves = vec![half::f16::ZERO; values.len()];
                halves.convert_from_f32_slice(values);
                out.extend(halves.iter().flat_map(|v| v.to_le_bytes()));
            }
        }
    }
}

impl std::str::FromStr for WeightDtype {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.to_ascii_lowercase().as_str() {
            "f32" | "float32" => Ok(Self::F32),
            "bf16" | "bfloat16" => Ok(Self::Bf16),
            "f16" | "float16" => Ok(Self::F16),
            _ => Err(format!("{text:?} is not f32, bf16 or f16")),
        }
    }
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

/// A tensor's name in the given style.
fn styled_name(name: &str, family: Family, style: NameStyle) -> String {
    let name = if style.gamma_beta && name.contains("LayerNorm.") {
        name.replace("LayerNorm.weight", "LayerNorm.gamma")
            .replace("LayerNorm.bias", "LayerNorm.beta")
    } else {
        name.to_string()
    };
    if style.with_head {
        format!("{}{name}", family.checkpoint_prefix())
    } else {
        name
    }
}

/// Every tensor of the checkpoint to write: its name in `style`, shape
/// and fill, in the order their values are drawn; with a head, a
/// classifier's tensors (which loading must ignore) after them.
fn checkpoint_tensors(config: &ModelConfig, style: NameStyle) -> Vec<(String, Vec<usize>, Fill)> {
    let mut tensors: Vec<_> = tensor_shapes(config)
        .into_iter()
        .map(|(name, shape)| {
            let fill = Fill::of(config, &name);
            (styled_name(&name, config.family, style), shape, fill)
        })
        .collect();
    if style.with_head {
        tensors.push(("classifier.weight".into(), vec![2, 3], Fill::Zeros));
        tensors.push(("classifier.bias".into(), vec![2], Fill::Zeros));
    }
    tensors
}

/// Writes the safetensors file of `tensors` in `dtype`, one chunk of values
/// at a time; `progress` hears the bytes written so far and in all.
fn write_safetensors(
    path: &Path,
    tensors: &[(String, Vec<usize>, Fill)],
    dtype: WeightDtype,
    seed: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> anyhow::Result<()> {
    let mut header = serde_json::Map::new();
    let mut offset = 0;
    for (name, shape, _) in tensors {
        let end = offset + shape.iter().product::<usize>() * dtype.bytes();
        header.insert(
            name.clone(),
            serde_json::json!({
                "dtype": dtype.safetensors_name(),
                "shape": shape,
                "data_offsets": [offset, end],
            }),
        );
        offset = end;
    }
    let total = offset as u64;
    let mut header = serde_json::to_string(&header)?.into_bytes();
    // The data starts 8-byte aligned, as the format recommends.
    header.resize(header.len().next_multiple_of(8), b' ');
    let file = std::fs::File::create(path)?;
    let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
    file.write_all(&(header.len() as u64).to_le_bytes())?;
    file.write_all(&header)?;
    let mut normal = SeededNormal::new(seed);
    let (mut values, mut bytes) = (Vec::new(), Vec::new());
    let mut written = 0;
    for (_, shape, fill) in tensors {
        let mut left: usize = shape.iter().product();
        while left > 0 {
            values.resize(left.min(1 << 20), 0.0);
            fill.values(&mut normal, &mut values);
            dtype.encode(&values, &mut bytes);
            file.write_all(&bytes)?;
            left -= values.len();
            written += bytes.len() as u64;
            progress(written, total);
        }
    }
    file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(())
}

/// Writes `config.json`, `model.safetensors` (random, float32) and a copy
/// of `tokenizer` into `out`, creating the folder.
pub fn write_random_model(
    config: &ModelConfig,
    tokenizer: &Path,
    out: &Path,
    seed: u64,
    style: NameStyle,
) -> anyhow::Result<()> {
    write_random_model_with(
        config,
        tokenizer,
        out,
        seed,
        style,
        WeightDtype::F32,
        &mut |_, _| {},
    )
}

/// [`write_random_model`] with the weights in `dtype`; `progress` hears
/// the bytes of weights written so far and in all.
pub fn write_random_model_with(
    config: &ModelConfig,
    tokenizer: &Path,
    out: &Path,
    seed: u64,
    style: NameStyle,
    dtype: WeightDtype,
    progress: &mut dyn FnMut(u64, u64),
) -> anyhow::Result<()> {
    config.validate().map_err(|p| anyhow!("config: {p}"))?;
    if !tokenizer.is_file() {
        anyhow::bail!("tokenizer file {} does not exist", tokenizer.display());
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let config_json = serde_json::to_string_pretty(config)?;
    std::fs::write(out.join("config.json"), config_json)
        .with_context(|| format!("cannot write {}", out.join("config.json").display()))?;
    let weights = out.join("model.safetensors");
    let tensors = checkpoint_tensors(config, style);
    write_safetensors(&weights, &tensors, dtype, seed, progress)
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
