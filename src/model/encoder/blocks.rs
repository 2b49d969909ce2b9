//! The encoder's blocks, each a struct with `load(vb, &config)` and a
//! tensor `forward`, plus `cpu()`: a view of its parameters as slices for
//! the CPU pass.

use super::LayerCapture;
use crate::model::config::{Activation, BertConfig};
use crate::model::kernels::{self, Act};
use candle_core::{CpuStorage, DType, Module, Result, Storage, StorageRef, Tensor};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, VarBuilder};
use std::ops::Range;

/// The `f32` values of a contiguous CPU tensor, borrowed while this lives.
pub(super) struct HostValues<'a> {
    pub(super) storage: StorageRef<'a>,
    pub(super) range: Range<usize>,
}

impl<'a> HostValues<'a> {
    pub(super) fn of(tensor: &'a Tensor) -> Result<Self> {
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

    pub(super) fn get(&self) -> &[f32] {
        match &*self.storage {
            Storage::Cpu(CpuStorage::F32(values)) => &values[self.range.clone()],
            _ => unreachable!("HostValues::of accepts only f32 CPU storage"),
        }
    }
}

/// A LayerNorm's parameters as slices.
pub(super) struct NormCpu<'a> {
    pub(super) gamma: HostValues<'a>,
    pub(super) beta: HostValues<'a>,
    pub(super) eps: f32,
}

impl<'a> NormCpu<'a> {
    pub(super) fn of(norm: &'a LayerNorm) -> Result<Self> {
        let beta = norm
            .bias()
            .ok_or_else(|| candle_core::Error::Msg("LayerNorm without a bias".into()))?;
        Ok(Self {
            gamma: HostValues::of(norm.weight())?,
            beta: HostValues::of(beta)?,
            eps: norm.eps() as f32,
        })
    }

    pub(super) fn forward(&self, x: &mut [f32]) {
        kernels::layer_norm(x, self.gamma.get(), self.beta.get(), self.eps);
    }
}

/// A dense layer `x·Wᵀ + b`. On the CPU the weight is packed once at load
/// for the kernels ([`kernels::pack_weight`]: panels of 64 columns of Wᵀ,
/// shape panels × inputs × 64); elsewhere it is kept transposed (inputs ×
/// outputs, contiguous), which candle's matmul takes without a per-call
/// transpose.
pub(super) struct Dense {
    pub(super) weight: Tensor,
    pub(super) bias: Tensor,
    pub(super) packed: bool,
}

impl Dense {
    pub(super) fn load(vb: VarBuilder, inputs: usize, outputs: usize) -> Result<Self> {
        let layer = linear(inputs, outputs, vb)?;
        Self::new(layer.weight(), layer.bias().expect("linear has a bias"))
    }

    /// From a checkpoint's `outputs × inputs` weight.
    pub(super) fn new(weight: &Tensor, bias: &Tensor) -> Result<Self> {
        let (outputs, inputs) = weight.dims2()?;
        let weight_t = weight.t()?.contiguous()?;
        if !weight.device().is_cpu() {
            return Ok(Self {
                weight: weight_t,
                bias: bias.clone(),
                packed: false,
            });
        }
        let values = weight_t.flatten_all()?.to_vec1::<f32>()?;
        let packed = kernels::pack_weight(&values, inputs, outputs);
        let panels = outputs.div_ceil(kernels::PANEL);
        Ok(Self {
            weight: Tensor::from_vec(packed, (panels, inputs, kernels::PANEL), weight.device())?,
            bias: bias.clone(),
            packed: true,
        })
    }

    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let weight_t = if self.packed {
            // Panels side by side again: inputs × (panels·64), padding cut off.
            let (panels, inputs, width) = self.weight.dims3()?;
            self.weight
                .transpose(0, 1)?
                .reshape((inputs, panels * width))?
                .narrow(1, 0, self.bias.dim(0)?)?
        } else {
            self.weight.clone()
        };
        x.matmul(&weight_t)?.broadcast_add(&self.bias)
    }

    pub(super) fn cpu(&self) -> Result<DenseCpu<'_>> {
        if !self.packed {
            return Err(candle_core::Error::Msg(
                "dense weight not packed for the CPU".into(),
            ));
        }
        Ok(DenseCpu {
            packed: HostValues::of(&self.weight)?,
            bias: HostValues::of(&self.bias)?,
        })
    }
}

pub(super) struct DenseCpu<'a> {
    pub(super) packed: HostValues<'a>,
    pub(super) bias: HostValues<'a>,
}

impl DenseCpu<'_> {
    pub(super) fn weight(&self) -> kernels::Packed<'_> {
        let outputs = self.bias.get().len();
        let panels = outputs.div_ceil(kernels::PANEL);
        let inputs = self.packed.get().len() / (panels * kernels::PANEL).max(1);
        kernels::Packed::new(self.packed.get(), inputs, outputs)
    }

    pub(super) fn bias(&self) -> &[f32] {
        self.bias.get()
    }
}

pub(super) struct BertEmbeddings {
    pub(super) word_embeddings: Embedding,
    pub(super) position_embeddings: Embedding,
    pub(super) token_type_embeddings: Embedding,
    pub(super) layer_norm: LayerNorm,
}

impl BertEmbeddings {
    pub(super) fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
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
        })
    }

    /// `input_ids` is a T-vector; token types are all 0 (ANALYSIS.md §1).
    pub(super) fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let tokens = input_ids.dim(0)?;
        let device = input_ids.device();
        let positions = Tensor::arange(0u32, tokens as u32, device)?;
        let token_types = Tensor::zeros(tokens, DType::U32, device)?;
        let x = self.word_embeddings.forward(input_ids)?;
        let x = x.add(&self.position_embeddings.forward(&positions)?)?;
        let x = x.broadcast_add(&self.token_type_embeddings.forward(&token_types)?)?;
        self.layer_norm.forward(&x)
    }

    pub(super) fn cpu(&self) -> Result<EmbeddingsCpu<'_>> {
        Ok(EmbeddingsCpu {
            words: HostValues::of(self.word_embeddings.embeddings())?,
            positions: HostValues::of(self.position_embeddings.embeddings())?,
            types: HostValues::of(self.token_type_embeddings.embeddings())?,
            norm: NormCpu::of(&self.layer_norm)?,
            hidden: self.word_embeddings.hidden_size(),
        })
    }
}

pub(super) struct EmbeddingsCpu<'a> {
    pub(super) words: HostValues<'a>,
    pub(super) positions: HostValues<'a>,
    pub(super) types: HostValues<'a>,
    pub(super) norm: NormCpu<'a>,
    pub(super) hidden: usize,
}

impl EmbeddingsCpu<'_> {
    /// Whether every id has a row and every position up to `tokens` exists.
    pub(super) fn fits(&self, input_ids: &[u32]) -> bool {
        let rows = |table: &HostValues| table.get().len() / self.hidden.max(1);
        input_ids
            .iter()
            .all(|&id| (id as usize) < rows(&self.words))
            && input_ids.len() <= rows(&self.positions)
            && rows(&self.types) > 0
    }

    /// The embeddings of `input_ids`, which sit at positions `first..`, into
    /// `out` (rows × hidden). Callers check [`Self::fits`] first.
    pub(super) fn forward(&self, input_ids: &[u32], first: usize, out: &mut [f32]) {
        let hidden = self.hidden;
        let row = |table: &HostValues, index: usize| -> Vec<f32> {
            table.get()[index * hidden..(index + 1) * hidden].to_vec()
        };
        let token_type = row(&self.types, 0);
        for (offset, (&id, x)) in input_ids.iter().zip(out.chunks_mut(hidden)).enumerate() {
            let word = &self.words.get()[id as usize * hidden..][..hidden];
            let place = &self.positions.get()[(first + offset) * hidden..][..hidden];
            for (((x, w), p), t) in x.iter_mut().zip(word).zip(place).zip(&token_type) {
                *x = w + p + t;
            }
        }
        self.norm.forward(out);
    }
}

/// Query, key and value projections fused into one matrix product.
pub(super) struct BertSelfAttention {
    pub(super) qkv: Dense,
    pub(super) heads: usize,
    pub(super) head_dim: usize,
}

impl BertSelfAttention {
    pub(super) fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
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
    pub(super) fn forward(&self, x: &Tensor) -> Result<(Tensor, LayerCapture)> {
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
}

/// Dense + residual + LayerNorm, used after attention and after the feed-forward.
pub(super) struct BertOutput {
    pub(super) dense: Dense,
    pub(super) layer_norm: LayerNorm,
}

impl BertOutput {
    pub(super) fn load(vb: VarBuilder, in_dim: usize, config: &BertConfig) -> Result<Self> {
        Ok(Self {
            dense: Dense::load(vb.pp("dense"), in_dim, config.hidden_size)?,
            layer_norm: layer_norm(
                config.hidden_size,
                config.layer_norm_eps,
                vb.pp("LayerNorm"),
            )?,
        })
    }

    pub(super) fn forward(&self, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        self.layer_norm
            .forward(&self.dense.forward(x)?.add(residual)?)
    }

    pub(super) fn cpu(&self) -> Result<OutputCpu<'_>> {
        Ok(OutputCpu {
            dense: self.dense.cpu()?,
            norm: NormCpu::of(&self.layer_norm)?,
        })
    }
}

pub(super) struct OutputCpu<'a> {
    pub(super) dense: DenseCpu<'a>,
    pub(super) norm: NormCpu<'a>,
}

pub(super) struct BertIntermediate {
    pub(super) dense: Dense,
    pub(super) activation: Activation,
}

impl BertIntermediate {
    pub(super) fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        let activation = config.activation().map_err(candle_core::Error::Msg)?;
        Ok(Self {
            dense: Dense::load(vb.pp("dense"), config.hidden_size, config.intermediate_size)?,
            activation,
        })
    }

    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.dense.forward(x)?;
        match self.activation {
            Activation::Gelu => x.gelu_erf(),
            Activation::GeluTanh => x.gelu(),
            Activation::Relu => x.relu(),
        }
    }

    pub(super) fn act(&self) -> Act {
        match self.activation {
            Activation::Gelu => Act::GeluErf,
            Activation::GeluTanh => Act::GeluTanh,
            Activation::Relu => Act::Relu,
        }
    }
}

pub(super) struct BertLayer {
    pub(super) self_attention: BertSelfAttention,
    pub(super) attention_output: BertOutput,
    pub(super) intermediate: BertIntermediate,
    pub(super) output: BertOutput,
}

impl BertLayer {
    pub(super) fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
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
    pub(super) fn forward(&self, x: &Tensor, last: bool) -> Result<(Option<Tensor>, LayerCapture)> {
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

    pub(super) fn cpu(&self) -> Result<LayerCpu<'_>> {
        Ok(LayerCpu {
            qkv: self.self_attention.qkv.cpu()?,
            attention_output: self.attention_output.cpu()?,
            intermediate: self.intermediate.dense.cpu()?,
            activation: self.intermediate.act(),
            output: self.output.cpu()?,
        })
    }
}

pub(super) struct LayerCpu<'a> {
    pub(super) qkv: DenseCpu<'a>,
    pub(super) attention_output: OutputCpu<'a>,
    pub(super) intermediate: DenseCpu<'a>,
    pub(super) activation: Act,
    pub(super) output: OutputCpu<'a>,
}
