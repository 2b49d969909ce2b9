//! Our BERT encoder, written in the style of candle's `models/bert.rs`
//! (every block a struct with `load(vb, &config)` and `forward`), but
//! returning what candle's model keeps private: every layer's attention
//! probabilities P and every head's output O = P·V, with the context
//! similarity S = O·Oᵀ computed alongside (ANALYSIS.md §2).
//!
//! Every block has two forward passes over the same parameters: `forward`
//! on candle tensors, which runs on any device, and `forward_cpu` on plain
//! slices through [`super::kernels`], which the encoder takes on the CPU
//! because it is about three times faster there and writes P, O and S
//! straight into the caller's buffers (see that module for the profile).
//!
//! One sequence at a time with an all-ones attention mask, as the study's
//! document mode prescribes, so no mask is built or applied.

use super::config::{Activation, BertConfig};
use super::kernels::{self, Act, AttentionOut};
use candle_core::{CpuStorage, DType, Device, Module, Result, Storage, StorageRef, Tensor};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, VarBuilder};

/// What one layer hands back from the tensor path, each H×T×T or H×T×d.
pub struct LayerCapture {
    pub attention: Tensor,
    pub head_outputs: Tensor,
    pub similarity: Tensor,
}

/// The `f32` values of a contiguous CPU tensor, borrowed while this lives.
struct HostValues<'a> {
    storage: StorageRef<'a>,
    range: std::ops::Range<usize>,
}

impl<'a> HostValues<'a> {
    fn of(tensor: &'a Tensor) -> Result<Self> {
        let (storage, layout) = tensor.storage_and_layout();
        let (start, end) = layout
            .contiguous_offsets()
            .ok_or_else(|| candle_core::Error::Msg("weight is not contiguous".into()))?;
        if !matches!(&*storage, Storage::Cpu(CpuStorage::F32(_))) {
            return Err(candle_core::Error::Msg(
                "the CPU forward pass needs f32 weights on the CPU".into(),
            ));
        }
        Ok(Self {
            storage,
            range: start..end,
        })
    }

    fn get(&self) -> &[f32] {
        match &*self.storage {
            Storage::Cpu(CpuStorage::F32(values)) => &values[self.range.clone()],
            _ => unreachable!("HostValues::of accepts only f32 CPU storage"),
        }
    }

    /// Row `index` of a table of rows of `width` values.
    fn row(&self, index: usize, width: usize) -> Result<&[f32]> {
        self.get()
            .get(index * width..(index + 1) * width)
            .ok_or_else(|| candle_core::Error::Msg(format!("row {index} outside a table")))
    }
}

/// `LayerNorm` in place on the CPU path, with the block's own parameters.
fn layer_norm_cpu(norm: &LayerNorm, x: &mut [f32]) -> Result<()> {
    let gamma = HostValues::of(norm.weight())?;
    let beta = norm
        .bias()
        .ok_or_else(|| candle_core::Error::Msg("LayerNorm without a bias".into()))?;
    let beta = HostValues::of(beta)?;
    kernels::layer_norm(x, gamma.get(), beta.get(), norm.eps() as f32);
    Ok(())
}

/// A dense layer `x·Wᵀ + b` whose weight is stored transposed (inputs ×
/// outputs, contiguous) once at load: the layout gemm reads fastest, and
/// candle's matmul takes it without a per-call transpose either.
struct Dense {
    weight_t: Tensor,
    bias: Tensor,
}

impl Dense {
    fn load(vb: VarBuilder, inputs: usize, outputs: usize) -> Result<Self> {
        let layer = linear(inputs, outputs, vb)?;
        Self::new(layer.weight(), layer.bias().expect("linear has a bias"))
    }

    /// From a checkpoint's `outputs × inputs` weight.
    fn new(weight: &Tensor, bias: &Tensor) -> Result<Self> {
        Ok(Self {
            weight_t: weight.t()?.contiguous()?,
            bias: bias.clone(),
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.matmul(&self.weight_t)?.broadcast_add(&self.bias)
    }

    /// `out = x·Wᵀ + b (+ residual)`.
    fn forward_cpu(&self, x: &[f32], residual: Option<&[f32]>, out: &mut [f32]) -> Result<()> {
        let weight_t = HostValues::of(&self.weight_t)?;
        let bias = HostValues::of(&self.bias)?;
        kernels::dense(x, weight_t.get(), bias.get(), residual, out);
        Ok(())
    }
}

struct BertEmbeddings {
    word_embeddings: Embedding,
    position_embeddings: Embedding,
    token_type_embeddings: Embedding,
    layer_norm: LayerNorm,
    hidden: usize,
}

impl BertEmbeddings {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        Ok(Self {
            word_embeddings: embedding(
                config.vocab_size,
                config.hidden_size,
                vb.pp("word_embeddings"),
            )?,
            position_embeddings: embedding(
                config.max_position_embeddings,
                config.hidden_size,
                vb.pp("position_embeddings"),
            )?,
            token_type_embeddings: embedding(
                config.type_vocab_size,
                config.hidden_size,
                vb.pp("token_type_embeddings"),
            )?,
            layer_norm: layer_norm(
                config.hidden_size,
                config.layer_norm_eps,
                vb.pp("LayerNorm"),
            )?,
            hidden: config.hidden_size,
        })
    }

    /// `input_ids` is a T-vector; token types are all 0 (ANALYSIS.md §1).
    fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let tokens = input_ids.dim(0)?;
        let device = input_ids.device();
        let positions = Tensor::arange(0u32, tokens as u32, device)?;
        let token_types = Tensor::zeros(tokens, DType::U32, device)?;
        let x = self.word_embeddings.forward(input_ids)?;
        let x = x.add(&self.position_embeddings.forward(&positions)?)?;
        let x = x.broadcast_add(&self.token_type_embeddings.forward(&token_types)?)?;
        self.layer_norm.forward(&x)
    }

    /// The same on the CPU path, into `out` (T × hidden).
    fn forward_cpu(&self, input_ids: &[u32], out: &mut [f32]) -> Result<()> {
        let hidden = self.hidden;
        let words = HostValues::of(self.word_embeddings.embeddings())?;
        let positions = HostValues::of(self.position_embeddings.embeddings())?;
        let types = HostValues::of(self.token_type_embeddings.embeddings())?;
        let token_type = types.row(0, hidden)?;
        for (position, (&id, x)) in input_ids.iter().zip(out.chunks_mut(hidden)).enumerate() {
            let (word, place) = (words.row(id as usize, hidden)?, positions.row(position, hidden)?);
            for (((x, w), p), t) in x.iter_mut().zip(word).zip(place).zip(token_type) {
                *x = w + p + t;
            }
        }
        layer_norm_cpu(&self.layer_norm, out)
    }
}

/// Query, key and value projections fused into one matrix product.
struct BertSelfAttention {
    qkv: Dense,
    heads: usize,
    head_dim: usize,
}

impl BertSelfAttention {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        let hidden = config.hidden_size;
        let query = linear(hidden, hidden, vb.pp("query"))?;
        let key = linear(hidden, hidden, vb.pp("key"))?;
        let value = linear(hidden, hidden, vb.pp("value"))?;
        let weight = Tensor::cat(&[query.weight(), key.weight(), value.weight()], 0)?;
        let bias = Tensor::cat(
            &[
                query.bias().expect("linear has a bias"),
                key.bias().expect("linear has a bias"),
                value.bias().expect("linear has a bias"),
            ],
            0,
        )?;
        Ok(Self {
            qkv: Dense::new(&weight, &bias)?,
            heads: config.num_attention_heads,
            head_dim: config.head_dim(),
        })
    }

    /// T×hidden → (context T×hidden, capture).
    fn forward(&self, x: &Tensor) -> Result<(Tensor, LayerCapture)> {
        let tokens = x.dim(0)?;
        let hidden = self.heads * self.head_dim;
        let qkv = self.qkv.forward(x)?;
        let split = |part: usize| -> Result<Tensor> {
            qkv.narrow(1, part * hidden, hidden)?
                .reshape((tokens, self.heads, self.head_dim))?
                .transpose(0, 1)?
                .contiguous()
        };
        let (query, key, value) = (split(0)?, split(1)?, split(2)?);
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        let scores = (query.matmul(&key.t()?)? * scale)?;
        let attention = candle_nn::ops::softmax_last_dim(&scores)?;
        let head_outputs = attention.matmul(&value)?;
        let similarity = head_outputs.matmul(&head_outputs.t()?)?;
        let context = head_outputs
            .transpose(0, 1)?
            .contiguous()?
            .reshape((tokens, hidden))?;
        Ok((
            context,
            LayerCapture {
                attention,
                head_outputs,
                similarity,
            },
        ))
    }

    /// T×hidden `x` → `context` (T×hidden), with P, O and S written to `out`.
    fn forward_cpu(
        &self,
        x: &[f32],
        scratch: &mut Scratch,
        out: AttentionOut,
    ) -> Result<()> {
        self.qkv.forward_cpu(x, None, &mut scratch.qkv)?;
        kernels::attention(
            &scratch.qkv,
            scratch.tokens,
            self.heads,
            self.head_dim,
            out,
            &mut scratch.context,
        );
        Ok(())
    }
}

/// Dense + residual + LayerNorm, used after attention and after the feed-forward.
struct BertOutput {
    dense: Dense,
    layer_norm: LayerNorm,
}

impl BertOutput {
    fn load(vb: VarBuilder, in_dim: usize, config: &BertConfig) -> Result<Self> {
        Ok(Self {
            dense: Dense::load(vb.pp("dense"), in_dim, config.hidden_size)?,
            layer_norm: layer_norm(
                config.hidden_size,
                config.layer_norm_eps,
                vb.pp("LayerNorm"),
            )?,
        })
    }

    fn forward(&self, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        self.layer_norm
            .forward(&self.dense.forward(x)?.add(residual)?)
    }

    fn forward_cpu(&self, x: &[f32], residual: &[f32], out: &mut [f32]) -> Result<()> {
        self.dense.forward_cpu(x, Some(residual), out)?;
        layer_norm_cpu(&self.layer_norm, out)
    }
}

struct BertIntermediate {
    dense: Dense,
    activation: Activation,
}

impl BertIntermediate {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        let activation = config.activation().map_err(candle_core::Error::Msg)?;
        Ok(Self {
            dense: Dense::load(vb.pp("dense"), config.hidden_size, config.intermediate_size)?,
            activation,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.dense.forward(x)?;
        match self.activation {
            Activation::Gelu => x.gelu_erf(),
            Activation::GeluTanh => x.gelu(),
            Activation::Relu => x.relu(),
        }
    }

    fn forward_cpu(&self, x: &[f32], out: &mut [f32]) -> Result<()> {
        self.dense.forward_cpu(x, None, out)?;
        kernels::activate(
            out,
            match self.activation {
                Activation::Gelu => Act::GeluErf,
                Activation::GeluTanh => Act::GeluTanh,
                Activation::Relu => Act::Relu,
            },
        );
        Ok(())
    }
}

/// The CPU path's working buffers, allocated once per pass and reused by
/// every layer (a fresh allocation per op would fault its pages in again).
struct Scratch {
    tokens: usize,
    qkv: Vec<f32>,
    context: Vec<f32>,
    attended: Vec<f32>,
    intermediate: Vec<f32>,
}

impl Scratch {
    fn new(tokens: usize, config: &BertConfig) -> Self {
        let hidden = config.hidden_size;
        Self {
            tokens,
            qkv: vec![0.0; tokens * 3 * hidden],
            context: vec![0.0; tokens * hidden],
            attended: vec![0.0; tokens * hidden],
            intermediate: vec![0.0; tokens * config.intermediate_size],
        }
    }
}

struct BertLayer {
    self_attention: BertSelfAttention,
    attention_output: BertOutput,
    intermediate: BertIntermediate,
    output: BertOutput,
}

impl BertLayer {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        Ok(Self {
            self_attention: BertSelfAttention::load(vb.pp("attention.self"), config)?,
            attention_output: BertOutput::load(
                vb.pp("attention.output"),
                config.hidden_size,
                config,
            )?,
            intermediate: BertIntermediate::load(vb.pp("intermediate"), config)?,
            output: BertOutput::load(vb.pp("output"), config.intermediate_size, config)?,
        })
    }

    /// The layer's capture, and its output unless `last`: nothing reads the
    /// final hidden states, so the last layer stops after its attention
    /// (saving its output projection and feed-forward, about 8% of
    /// BERT-base's work).
    fn forward(&self, x: &Tensor, last: bool) -> Result<(Option<Tensor>, LayerCapture)> {
        let (context, capture) = self.self_attention.forward(x)?;
        if last {
            return Ok((None, capture));
        }
        let attended = self.attention_output.forward(&context, x)?;
        let x = self
            .output
            .forward(&self.intermediate.forward(&attended)?, &attended)?;
        Ok((Some(x), capture))
    }

    /// The same on slices: `x` holds the layer's input and, unless `last`,
    /// receives its output.
    fn forward_cpu(
        &self,
        x: &mut [f32],
        scratch: &mut Scratch,
        out: AttentionOut,
        last: bool,
    ) -> Result<()> {
        self.self_attention.forward_cpu(x, scratch, out)?;
        if last {
            return Ok(());
        }
        self.attention_output
            .forward_cpu(&scratch.context, x, &mut scratch.attended)?;
        self.intermediate
            .forward_cpu(&scratch.attended, &mut scratch.intermediate)?;
        self.output
            .forward_cpu(&scratch.intermediate, &scratch.attended, x)
    }
}

/// Embeddings and the stack of layers; no pooler (the study does not use it).
pub struct BertEncoder {
    embeddings: BertEmbeddings,
    layers: Vec<BertLayer>,
    config: BertConfig,
    device: Device,
}

/// Why a forward pass stopped early.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("cancelled")]
    Cancelled,
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

impl BertEncoder {
    /// `vb` is rooted at the encoder (names like `embeddings.word_embeddings.weight`).
    pub fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        let embeddings = BertEmbeddings::load(vb.pp("embeddings"), config)?;
        let layers = (0..config.num_hidden_layers)
            .map(|index| BertLayer::load(vb.pp(format!("encoder.layer.{index}")), config))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            embeddings,
            layers,
            config: config.clone(),
            device: vb.device().clone(),
        })
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Runs the encoder on one sequence of T tokens, writing every layer's
    /// P and S (L×H×T×T) and O (L×H×T×d) into `out`, layer after layer.
    /// `cancelled` is polled between layers so that a stale request is
    /// abandoned quickly; what was written by then is left as it is.
    pub fn forward_into(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        out: AttentionOut,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        let heads = self.config.num_attention_heads;
        let square = heads * tokens * tokens;
        let vectors = heads * tokens * self.config.head_dim();
        let count = self.layers.len();
        if out.attention.len() != count * square
            || out.similarity.len() != count * square
            || out.head_outputs.len() != count * vectors
        {
            return Err(candle_core::Error::Msg("capture buffers of the wrong size".into()).into());
        }
        let per_layer = out
            .attention
            .chunks_mut(square)
            .zip(out.head_outputs.chunks_mut(vectors))
            .zip(out.similarity.chunks_mut(square))
            .map(|((attention, head_outputs), similarity)| AttentionOut {
                attention,
                head_outputs,
                similarity,
            });
        if self.device.is_cpu() {
            self.forward_cpu(input_ids, cancelled, per_layer)
        } else {
            self.forward_tensors(input_ids, cancelled, per_layer)
        }
    }

    /// The CPU path: slices and [`kernels`], P, O and S written in place.
    fn forward_cpu<'a>(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        per_layer: impl Iterator<Item = AttentionOut<'a>>,
    ) -> std::result::Result<(), ForwardError> {
        let count = self.layers.len();
        let mut x = vec![0.0; input_ids.len() * self.config.hidden_size];
        let mut scratch = Scratch::new(input_ids.len(), &self.config);
        self.embeddings.forward_cpu(input_ids, &mut x)?;
        for (index, (layer, out)) in self.layers.iter().zip(per_layer).enumerate() {
            if cancelled() {
                return Err(ForwardError::Cancelled);
            }
            layer.forward_cpu(&mut x, &mut scratch, out, index + 1 == count)?;
        }
        Ok(())
    }

    /// Candle's ops on any device, each layer's capture copied to the host.
    fn forward_tensors<'a>(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        per_layer: impl Iterator<Item = AttentionOut<'a>>,
    ) -> std::result::Result<(), ForwardError> {
        let count = self.layers.len();
        let ids = Tensor::new(input_ids, &self.device)?;
        let mut x = Some(self.embeddings.forward(&ids)?);
        for (index, (layer, out)) in self.layers.iter().zip(per_layer).enumerate() {
            if cancelled() {
                return Err(ForwardError::Cancelled);
            }
            let input = x.take().expect("every layer but the last has an output");
            let (next, capture) = layer.forward(&input, index + 1 == count)?;
            copy_to_host(&capture.attention, out.attention)?;
            copy_to_host(&capture.head_outputs, out.head_outputs)?;
            copy_to_host(&capture.similarity, out.similarity)?;
            x = next;
        }
        Ok(())
    }
}

/// Copies a tensor's values, in row-major order, into `out`.
fn copy_to_host(tensor: &Tensor, out: &mut [f32]) -> Result<()> {
    let values = tensor.flatten_all()?.to_vec1::<f32>()?;
    if values.len() != out.len() {
        return Err(candle_core::Error::Msg("capture of an unexpected size".into()));
    }
    out.copy_from_slice(&values);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs one path into fresh buffers: (P, O, S).
    fn run(encoder: &BertEncoder, ids: &[u32], cpu: bool) -> [Vec<f32>; 3] {
        let config = &encoder.config;
        let (l, h, t) = (config.num_hidden_layers, config.num_attention_heads, ids.len());
        let mut p = vec![f32::NAN; l * h * t * t];
        let mut o = vec![f32::NAN; l * h * t * config.head_dim()];
        let mut s = vec![f32::NAN; l * h * t * t];
        let out = AttentionOut {
            attention: &mut p,
            head_outputs: &mut o,
            similarity: &mut s,
        };
        let square = h * t * t;
        let vectors = h * t * config.head_dim();
        let per_layer = out
            .attention
            .chunks_mut(square)
            .zip(out.head_outputs.chunks_mut(vectors))
            .zip(out.similarity.chunks_mut(square))
            .map(|((attention, head_outputs), similarity)| AttentionOut {
                attention,
                head_outputs,
                similarity,
            });
        if cpu {
            encoder.forward_cpu(ids, &|| false, per_layer).unwrap();
        } else {
            encoder.forward_tensors(ids, &|| false, per_layer).unwrap();
        }
        [p, o, s]
    }

    /// The slice path computes what candle's ops compute, for every activation.
    #[test]
    fn cpu_kernels_match_candle_ops() {
        for act in ["gelu", "gelu_new", "relu"] {
            let config = BertConfig {
                hidden_size: 48,
                num_hidden_layers: 3,
                num_attention_heads: 4,
                intermediate_size: 96,
                max_position_embeddings: 64,
                vocab_size: 200,
                hidden_act: act.into(),
                ..BertConfig::bert_base_uncased()
            };
            let mut tensors = super::super::random::random_weights(&config, 3).unwrap();
            // Random biases and LayerNorm parameters (the generator sets 0 and
            // 1), and larger query/key weights so that attention is peaked.
            for (name, tensor) in tensors.iter_mut() {
                let pattern = |offset: f32| {
                    let values: Vec<f32> = (0..tensor.elem_count())
                        .map(|i| offset + 0.1 * (i as f32 * 0.7).sin())
                        .collect();
                    Tensor::from_vec(values, tensor.shape(), &Device::Cpu).unwrap()
                };
                if name.ends_with(".bias") {
                    *tensor = pattern(0.0);
                } else if name.ends_with("LayerNorm.weight") {
                    *tensor = pattern(1.0);
                } else if name.contains(".query.") || name.contains(".key.") {
                    *tensor = (&*tensor * 20.0).unwrap();
                }
            }
            let vb = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
            let encoder = BertEncoder::load(vb, &config).unwrap();
            let ids: Vec<u32> = (0..37).map(|i| (i * 53 % 199) as u32).collect();
            let fast = run(&encoder, &ids, true);
            let reference = run(&encoder, &ids, false);
            for (name, (ours, theirs)) in ["P", "O", "S"].iter().zip(fast.iter().zip(&reference)) {
                let scale = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
                for (a, b) in ours.iter().zip(theirs) {
                    assert!(
                        (a - b).abs() <= 1e-5 * scale,
                        "{act} {name}: {a} vs {b} (scale {scale})"
                    );
                }
            }
        }
    }
}
