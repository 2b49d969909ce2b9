//! The encoder's blocks, each a struct with `load(vb, &config)` and a
//! tensor `forward`, plus `cpu()`: a view of its parameters as slices for
//! the CPU pass. Tensor names come from the family's description
//! ([`crate::model::family`]); the computation is the same for all. Dense
//! weights and the word embeddings stay in the checkpoint's precision
//! ([`crate::model::weight`]); norms, biases and the small position and
//! token-type tables are float32.

use crate::kernels::attention::{AttentionMask, ScoreRule};
use crate::kernels::{self, MatRef};
use crate::model::ablation::heads::LayerAblation;
use crate::model::blocks::{Dense, DenseCpu, HeadGrams, Norm, NormCpu};
use crate::model::config::{Activation, ModelConfig};
use crate::model::cpu_pass::LayerCpu;
use crate::model::family::LayerNames;
use crate::model::stack::{self, attend_layer, HostValues, LayerAttention};
use crate::model::weight::{HostWeight, Weight, WeightBuilder};
use candle_core::{DType, Module, Result, Tensor};
use candle_nn::Embedding;

/// A `(rows, width)` table of float32 parameters.
fn embedding(rows: usize, width: usize, vb: WeightBuilder) -> Result<Embedding> {
    Ok(Embedding::new(vb.get((rows, width), "weight")?, width))
}

fn layer_norm(size: usize, eps: f64, vb: WeightBuilder) -> Result<Norm> {
    Norm::layer(vb, size, eps, true)
}

/// Word, position and (except in DistilBERT) token-type embeddings, summed
/// and normalised, then projected to the hidden size where the family's
/// embeddings are narrower (ELECTRA's `embeddings_project`, ALBERT's
/// `embedding_hidden_mapping_in`).
pub(super) struct Embeddings {
    /// In the checkpoint's precision: a token's row is widened when read.
    pub(super) word_embeddings: Weight,
    pub(super) position_embeddings: Embedding,
    pub(super) token_type_embeddings: Option<Embedding>,
    pub(super) layer_norm: Norm,
    pub(super) projection: Option<Dense>,
}

impl Embeddings {
    /// `vb` is rooted at the encoder.
    pub(super) fn load(vb: WeightBuilder, config: &ModelConfig) -> Result<Self> {
        let names = config.family.embedding_names();
        let width = config.embedding_width();
        let positions = format!("{}.weight", names.positions);
        // DistilBERT's sinusoidal table is fixed: transformers fills it from
        // the formula when a checkpoint leaves it out.
        let position_embeddings = if config.sinusoidal_pos_embds && !vb.contains_tensor(&positions)
        {
            let table = sinusoidal_table(config.max_position_embeddings, width);
            Embedding::new(
                Tensor::from_vec(table, (config.max_position_embeddings, width), vb.device())?,
                width,
            )
        } else {
            embedding(
                config.max_position_embeddings,
                width,
                vb.pp(names.positions),
            )?
        };
        let projection = config
            .family
            .projection_name(width, config.hidden_size)
            .map(|name| Dense::load(vb.pp(name), width, config.hidden_size, true))
            .transpose()?;
        Ok(Self {
            word_embeddings: vb
                .pp(names.words)
                .weight((config.vocab_size, width), "weight")?,
            position_embeddings,
            token_type_embeddings: names
                .token_types
                .map(|name| embedding(config.type_vocab_size, width, vb.pp(name)))
                .transpose()?,
            layer_norm: layer_norm(width, config.layer_norm_eps, vb.pp(names.norm))?,
            projection,
        })
    }

    /// `input_ids` and `positions` are T-vectors; token types are all 0
    /// (ANALYSIS.md §1).
    pub(super) fn forward(&self, input_ids: &Tensor, positions: &Tensor) -> Result<Tensor> {
        let tokens = input_ids.dim(0)?;
        let mut x = self.word_embeddings.rows(input_ids)?;
        if let Some(types) = &self.token_type_embeddings {
            let token_types = Tensor::zeros(tokens, DType::U32, input_ids.device())?;
            x = x.broadcast_add(&types.forward(&token_types)?)?;
        }
        let x = x.add(&self.position_embeddings.forward(positions)?)?;
        let x = self.layer_norm.forward(&x)?;
        match &self.projection {
            Some(projection) => projection.forward(&x),
            None => Ok(x),
        }
    }

    pub(super) fn cpu(&self) -> Result<EmbeddingsCpu<'_>> {
        Ok(EmbeddingsCpu {
            words: HostWeight::of(&self.word_embeddings)?,
            positions: HostValues::of(self.position_embeddings.embeddings())?,
            types: self
                .token_type_embeddings
                .as_ref()
                .map(|types| HostValues::of(types.embeddings()))
                .transpose()?,
            norm: self.layer_norm.cpu()?,
            projection: self.projection.as_ref().map(Dense::cpu).transpose()?,
            width: self.word_embeddings.dims2()?.1,
        })
    }
}

/// DistilBERT's fixed position table: row p, column j is sin (even j) or
/// cos (odd j) of p / 10000^(2⌊j/2⌋/width), computed in double precision as
/// transformers computes it with numpy.
pub(super) fn sinusoidal_table(positions: usize, width: usize) -> Vec<f32> {
    let mut table = Vec::with_capacity(positions * width);
    for position in 0..positions {
        for j in 0..width {
            let angle = position as f64 / 10000f64.powf((2 * (j / 2)) as f64 / width as f64);
            table.push(if j % 2 == 0 { angle.sin() } else { angle.cos() } as f32);
        }
    }
    table
}

pub(super) struct EmbeddingsCpu<'a> {
    pub(super) words: HostWeight<'a>,
    pub(super) positions: HostValues<'a>,
    pub(super) types: Option<HostValues<'a>>,
    pub(super) norm: NormCpu<'a>,
    pub(super) projection: Option<DenseCpu<'a>>,
    /// Width of the embeddings (before any projection).
    pub(super) width: usize,
}

impl EmbeddingsCpu<'_> {
    /// Whether every id and every position has a row.
    pub(super) fn fits(&self, input_ids: &[u32], positions: &[u32]) -> bool {
        let rows = |values: usize| values / self.width.max(1);
        input_ids
            .iter()
            .all(|&id| (id as usize) < rows(self.words.get().len()))
            && positions
                .iter()
                .all(|&p| (p as usize) < rows(self.positions.get().len()))
            && self
                .types
                .as_ref()
                .is_none_or(|types| rows(types.get().len()) > 0)
    }

    /// The embeddings of `input_ids` at `positions` into `out` (rows ×
    /// hidden). Callers check [`Self::fits`] first.
    pub(super) fn forward(&self, input_ids: &[u32], positions: &[u32], out: &mut [f32]) {
        let width = self.width;
        let mut narrow = Vec::new();
        let sums: &mut [f32] = match &self.projection {
            Some(_) => {
                narrow.resize(input_ids.len() * width, 0.0);
                &mut narrow
            }
            None => out,
        };
        let token_type = self.types.as_ref().map(|types| &types.get()[..width]);
        for ((&id, &place), x) in input_ids.iter().zip(positions).zip(sums.chunks_mut(width)) {
            // In transformers' order: (word + token type) + position.
            let row = id as usize * width;
            self.words.get().widen_into(row..row + width, x);
            if let Some(token_type) = token_type {
                for (x, t) in x.iter_mut().zip(token_type) {
                    *x += t;
                }
            }
            let place = &self.positions.get()[place as usize * width..][..width];
            for (x, p) in x.iter_mut().zip(place) {
                *x += p;
            }
        }
        self.norm.forward(sums);
        if let Some(projection) = &self.projection {
            let hidden = projection.outputs();
            kernels::seed_rows(out, projection.bias());
            projection.weight().product(
                MatRef::new(&narrow, input_ids.len(), width),
                0..width,
                0..hidden,
                out,
                true,
            );
        }
    }
}

/// Query, key and value projections fused into one matrix product.
pub(super) struct SelfAttention {
    pub(super) qkv: Dense,
    pub(super) heads: usize,
    pub(super) head_dim: usize,
}

impl SelfAttention {
    /// `vb` is rooted at the layer.
    pub(super) fn load(
        vb: WeightBuilder,
        config: &ModelConfig,
        names: &LayerNames,
    ) -> Result<Self> {
        let hidden = config.hidden_size;
        let [query, key, value] = [names.query, names.key, names.value].map(|name| vb.pp(name));
        let weight = |vb: &WeightBuilder| vb.weight((hidden, hidden), "weight");
        let bias = |vb: &WeightBuilder| vb.get(hidden, "bias");
        let weight = Weight::cat(&[&weight(&query)?, &weight(&key)?, &weight(&value)?])?;
        let bias = Tensor::cat(&[bias(&query)?, bias(&key)?, bias(&value)?], 0)?;
        Ok(Self {
            qkv: Dense::new(&weight, Some(&bias))?,
            heads: config.num_attention_heads,
            head_dim: config.head_dim(),
        })
    }

    /// T×hidden → context T×hidden, every head's P, O and S into `out`.
    pub(super) fn forward(
        &self,
        x: &Tensor,
        (mut out, value_grams): (LayerAttention, &[f32]),
        ablation: LayerAblation,
    ) -> Result<Tensor> {
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
        let (query, key, value) = (
            HostValues::of(&query)?,
            HostValues::of(&key)?,
            HostValues::of(&value)?,
        );
        let rule = ScoreRule::new(self.head_dim, AttentionMask::default());
        attend_layer(
            query.get(),
            key.get(),
            value.get(),
            (tokens, self.head_dim),
            (&rule, value_grams),
            &mut out,
        );
        stack::heads_side_by_side(out.head_outputs, self.heads, tokens, x.device(), ablation)
    }
}

/// Dense + residual + LayerNorm, used after attention and after the feed-forward.
pub(super) struct SubLayerOutput {
    pub(super) dense: Dense,
    pub(super) layer_norm: Norm,
}

impl SubLayerOutput {
    /// `vb` is rooted at the layer; `dense` and `norm` name the two blocks.
    pub(super) fn load(
        vb: &WeightBuilder,
        (dense, norm): (&str, &str),
        in_dim: usize,
        config: &ModelConfig,
    ) -> Result<Self> {
        Ok(Self {
            dense: Dense::load(vb.pp(dense), in_dim, config.hidden_size, true)?,
            layer_norm: layer_norm(config.hidden_size, config.layer_norm_eps, vb.pp(norm))?,
        })
    }

    pub(super) fn forward(&self, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        self.layer_norm
            .forward(&self.dense.forward(x)?.add(residual)?)
    }
}

pub(super) struct Intermediate {
    pub(super) dense: Dense,
    pub(super) activation: Activation,
}

impl Intermediate {
    pub(super) fn load(vb: WeightBuilder, config: &ModelConfig) -> Result<Self> {
        let activation = config
            .activation()
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        Ok(Self {
            dense: Dense::load(vb, config.hidden_size, config.intermediate_size, true)?,
            activation,
        })
    }

    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        stack::activate(&self.dense.forward(x)?, self.activation)
    }
}

/// One layer of weights. Every family's layer is post-norm: attention,
/// output projection, residual, LayerNorm; feed-forward, residual, LayerNorm.
pub(super) struct Layer {
    pub(super) self_attention: SelfAttention,
    pub(super) attention_output: SubLayerOutput,
    pub(super) intermediate: Intermediate,
    pub(super) output: SubLayerOutput,
    /// Its heads' Gram matrices in the attention's output projection, for
    /// value weighting.
    output_grams: HeadGrams,
}

impl Layer {
    /// `vb` is rooted at the layer's prefix.
    pub(super) fn load(vb: WeightBuilder, config: &ModelConfig) -> Result<Self> {
        let names = config.family.layer_names();
        Ok(Self {
            self_attention: SelfAttention::load(vb.clone(), config, &names)?,
            attention_output: SubLayerOutput::load(
                &vb,
                (names.attention_output, names.attention_norm),
                config.hidden_size,
                config,
            )?,
            intermediate: Intermediate::load(vb.pp(names.intermediate), config)?,
            output: SubLayerOutput::load(
                &vb,
                (names.output, names.output_norm),
                config.intermediate_size,
                config,
            )?,
            output_grams: HeadGrams::default(),
        })
    }

    /// Its heads' P, O and S into `capture`, and its output unless `last`: nothing reads the
    /// final hidden states, so the last layer stops after its attention
    /// (saving its output projection and feed-forward, about 8% of
    /// BERT-base's work).
    pub(super) fn forward(
        &self,
        x: &Tensor,
        capture: LayerAttention,
        ablation: LayerAblation,
        last: bool,
    ) -> Result<Option<Tensor>> {
        let context = self
            .self_attention
            .forward(x, (capture, self.value_grams()?), ablation)?;
        if last {
            return Ok(None);
        }
        let attended = self.attention_output.forward(&context, x)?;
        let x = self
            .output
            .forward(&self.intermediate.forward(&attended)?, &attended)?;
        Ok(Some(x))
    }

    /// Its heads' Gram matrices in the attention's output projection
    /// (H×d×d).
    pub(super) fn value_grams(&self) -> Result<&[f32]> {
        let attention = &self.self_attention;
        self.output_grams.of(
            &self.attention_output.dense,
            attention.heads,
            attention.head_dim,
        )
    }

    pub(super) fn cpu(&self) -> Result<LayerCpu<'_>> {
        let head_dim = self.self_attention.head_dim;
        Ok(LayerCpu {
            attention_norm: Some(self.attention_output.layer_norm.cpu()?),
            qkv: self.self_attention.qkv.cpu()?,
            qk_norms: None,
            attention_output: self.attention_output.dense.cpu()?,
            attention_output_norm: None,
            value_grams: self.value_grams()?,
            feed_forward_norm: Some(self.output.layer_norm.cpu()?),
            feed_forward_output_norm: None,
            parallel_residual: false,
            up: self.intermediate.dense.cpu()?,
            gated: false,
            activation: self.intermediate.activation,
            down: self.output.dense.cpu()?,
            rule: ScoreRule::new(head_dim, AttentionMask::default()),
            rotary: None,
        })
    }
}
