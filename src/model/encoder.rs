//! Our BERT encoder, written in the style of candle's `models/bert.rs`
//! (every block a struct with `load(vb, &config)` and `forward`), but
//! returning what candle's model keeps private: every layer's attention
//! probabilities P and every head's output O = P·V, with the context
//! similarity S = O·Oᵀ computed alongside (ANALYSIS.md §2).
//!
//! Two forward passes share the parameters. `forward` on candle tensors
//! runs on any device. On the CPU the encoder instead borrows the
//! parameters as slices (`cpu()` on each block) and runs [`super::kernels`]
//! on a team of threads ([`super::team`]) that write P, O and S straight
//! into the caller's buffers: about four times faster than candle's ops at
//! BERT sizes (the profile is in `kernels.rs`).
//!
//! One sequence at a time with an all-ones attention mask, as the study's
//! document mode prescribes, so no mask is built or applied.

use super::config::{Activation, BertConfig};
use super::kernels::{self, Act, MatRef};
use super::team::{self, Barrier};
use candle_core::{CpuStorage, DType, Device, Module, Result, Storage, StorageRef, Tensor};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, VarBuilder};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;

/// What one layer hands back from the tensor path, each H×T×T or H×T×d.
pub struct LayerCapture {
    pub attention: Tensor,
    pub head_outputs: Tensor,
    pub similarity: Tensor,
}

/// Where a pass writes what it captures: P and S are L×H×T×T, O is L×H×T×d,
/// each row-major.
pub struct CaptureBuffers<'a> {
    pub attention: &'a mut [f32],
    pub head_outputs: &'a mut [f32],
    pub similarity: &'a mut [f32],
}

/// The `f32` values of a contiguous CPU tensor, borrowed while this lives.
struct HostValues<'a> {
    storage: StorageRef<'a>,
    range: Range<usize>,
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
}

/// A LayerNorm's parameters as slices.
struct NormCpu<'a> {
    gamma: HostValues<'a>,
    beta: HostValues<'a>,
    eps: f32,
}

impl<'a> NormCpu<'a> {
    fn of(norm: &'a LayerNorm) -> Result<Self> {
        let beta = norm
            .bias()
            .ok_or_else(|| candle_core::Error::Msg("LayerNorm without a bias".into()))?;
        Ok(Self {
            gamma: HostValues::of(norm.weight())?,
            beta: HostValues::of(beta)?,
            eps: norm.eps() as f32,
        })
    }

    fn forward(&self, x: &mut [f32]) {
        kernels::layer_norm(x, self.gamma.get(), self.beta.get(), self.eps);
    }
}

/// A dense layer `x·Wᵀ + b`. On the CPU the weight is packed once at load
/// for the kernels ([`kernels::pack_weight`]: panels of 64 columns of Wᵀ,
/// shape panels × inputs × 64); elsewhere it is kept transposed (inputs ×
/// outputs, contiguous), which candle's matmul takes without a per-call
/// transpose.
struct Dense {
    weight: Tensor,
    bias: Tensor,
    packed: bool,
}

impl Dense {
    fn load(vb: VarBuilder, inputs: usize, outputs: usize) -> Result<Self> {
        let layer = linear(inputs, outputs, vb)?;
        Self::new(layer.weight(), layer.bias().expect("linear has a bias"))
    }

    /// From a checkpoint's `outputs × inputs` weight.
    fn new(weight: &Tensor, bias: &Tensor) -> Result<Self> {
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

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
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

    fn cpu(&self) -> Result<DenseCpu<'_>> {
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

struct DenseCpu<'a> {
    packed: HostValues<'a>,
    bias: HostValues<'a>,
}

impl DenseCpu<'_> {
    fn weight(&self) -> kernels::Packed<'_> {
        let outputs = self.bias.get().len();
        let panels = outputs.div_ceil(kernels::PANEL);
        let inputs = self.packed.get().len() / (panels * kernels::PANEL).max(1);
        kernels::Packed::new(self.packed.get(), inputs, outputs)
    }

    fn bias(&self) -> &[f32] {
        self.bias.get()
    }
}

struct BertEmbeddings {
    word_embeddings: Embedding,
    position_embeddings: Embedding,
    token_type_embeddings: Embedding,
    layer_norm: LayerNorm,
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

    fn cpu(&self) -> Result<EmbeddingsCpu<'_>> {
        Ok(EmbeddingsCpu {
            words: HostValues::of(self.word_embeddings.embeddings())?,
            positions: HostValues::of(self.position_embeddings.embeddings())?,
            types: HostValues::of(self.token_type_embeddings.embeddings())?,
            norm: NormCpu::of(&self.layer_norm)?,
            hidden: self.word_embeddings.hidden_size(),
        })
    }
}

struct EmbeddingsCpu<'a> {
    words: HostValues<'a>,
    positions: HostValues<'a>,
    types: HostValues<'a>,
    norm: NormCpu<'a>,
    hidden: usize,
}

impl EmbeddingsCpu<'_> {
    /// Whether every id has a row and every position up to `tokens` exists.
    fn fits(&self, input_ids: &[u32]) -> bool {
        let rows = |table: &HostValues| table.get().len() / self.hidden.max(1);
        input_ids
            .iter()
            .all(|&id| (id as usize) < rows(&self.words))
            && input_ids.len() <= rows(&self.positions)
            && rows(&self.types) > 0
    }

    /// The embeddings of `input_ids`, which sit at positions `first..`, into
    /// `out` (rows × hidden). Callers check [`Self::fits`] first.
    fn forward(&self, input_ids: &[u32], first: usize, out: &mut [f32]) {
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

    fn cpu(&self) -> Result<OutputCpu<'_>> {
        Ok(OutputCpu {
            dense: self.dense.cpu()?,
            norm: NormCpu::of(&self.layer_norm)?,
        })
    }
}

struct OutputCpu<'a> {
    dense: DenseCpu<'a>,
    norm: NormCpu<'a>,
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

    fn act(&self) -> Act {
        match self.activation {
            Activation::Gelu => Act::GeluErf,
            Activation::GeluTanh => Act::GeluTanh,
            Activation::Relu => Act::Relu,
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

    fn cpu(&self) -> Result<LayerCpu<'_>> {
        Ok(LayerCpu {
            qkv: self.self_attention.qkv.cpu()?,
            attention_output: self.attention_output.cpu()?,
            intermediate: self.intermediate.dense.cpu()?,
            activation: self.intermediate.act(),
            output: self.output.cpu()?,
        })
    }
}

struct LayerCpu<'a> {
    qkv: DenseCpu<'a>,
    attention_output: OutputCpu<'a>,
    intermediate: DenseCpu<'a>,
    activation: Act,
    output: OutputCpu<'a>,
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
    /// P, O and S into `out`. `cancelled` is polled between layers so that a
    /// stale request is abandoned quickly; what was written by then is left
    /// as it is.
    pub fn forward_into(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        out: CaptureBuffers,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        let square = self.layers.len() * self.config.num_attention_heads * tokens * tokens;
        if out.attention.len() != square
            || out.similarity.len() != square
            || out.head_outputs.len() * tokens != square * self.config.head_dim()
        {
            return Err(candle_core::Error::Msg("capture buffers of the wrong size".into()).into());
        }
        if self.device.is_cpu() {
            let threads = candle_core::utils::get_num_threads().clamp(1, tokens.max(1));
            self.forward_cpu(input_ids, cancelled, out, threads)
        } else {
            self.forward_tensors(input_ids, cancelled, out)
        }
    }

    /// The CPU pass on `threads` threads, split the way tensor-parallel
    /// transformers split a layer across devices, so that each thread reads
    /// only its share of the weights while multiplying them by every token:
    /// a thread owns some heads and some feed-forward columns. Per layer it
    /// projects every token to its heads' queries, keys and values, computes
    /// those heads' P, O and S in full (straight into the capture), and its
    /// partial sum of the attention-output projection (its heads' rows of
    /// that weight); at the barrier the partial sums meet, and every thread
    /// adds them up, with bias, residual and LayerNorm, into the whole
    /// attended state. The feed-forward goes the same way: its own
    /// intermediate columns, a partial sum of the down projection, a barrier,
    /// the sum. Two barriers a layer, none after the last layer's attention.
    fn forward_cpu(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        out: CaptureBuffers,
        threads: usize,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        if tokens == 0 || self.layers.is_empty() {
            return Ok(());
        }
        let heads = self.config.num_attention_heads;
        let threads = threads.clamp(1, heads);
        kernels::disable_weight_packing();
        // Borrow every parameter before any thread starts, so that nothing
        // inside the pass can fail and leave a thread waiting at a barrier.
        let embeddings = self.embeddings.cpu()?;
        if !embeddings.fits(input_ids) {
            return Err(
                candle_core::Error::Msg("token id or position outside the model".into()).into(),
            );
        }
        let layers = self
            .layers
            .iter()
            .map(BertLayer::cpu)
            .collect::<Result<Vec<_>>>()?;
        let head_ranges = team::split_evenly(heads, threads);
        let panels = self.config.intermediate_size.div_ceil(kernels::PANEL);
        let column_ranges = team::split_evenly(panels, threads)
            .into_iter()
            .map(|panels| {
                let end = (panels.end * kernels::PANEL).min(self.config.intermediate_size);
                (panels.start * kernels::PANEL).min(end)..end
            })
            .collect();
        let square = tokens * tokens;
        let vectors = tokens * self.config.head_dim();
        let attention = team::pieces(out.attention, heads, square, &head_ranges);
        let head_outputs = team::pieces(out.head_outputs, heads, vectors, &head_ranges);
        let similarity = team::pieces(out.similarity, heads, square, &head_ranges);
        let mailboxes = || (0..threads).map(|_| RwLock::new(Vec::new())).collect();
        let pass = Pass {
            config: &self.config,
            input_ids,
            embeddings,
            layers,
            heads: head_ranges,
            columns: column_ranges,
            barrier: Barrier::new(threads),
            stop_at: AtomicUsize::new(usize::MAX),
            attention_partials: mailboxes(),
            feed_forward_partials: mailboxes(),
        };
        let mut workers = attention
            .into_iter()
            .zip(head_outputs)
            .zip(similarity)
            .enumerate()
            .map(|(index, ((attention, head_outputs), similarity))| Worker {
                index,
                attention,
                head_outputs,
                similarity,
            });
        let first = workers.next().expect("at least one thread");
        std::thread::scope(|scope| {
            for worker in workers {
                let pass = &pass;
                scope.spawn(move || pass.run(worker, None));
            }
            pass.run(first, Some(cancelled))
        })
    }

    /// Candle's ops on any device, each layer's capture copied to the host.
    fn forward_tensors(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        out: CaptureBuffers,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        let heads = self.config.num_attention_heads;
        let square = heads * tokens * tokens;
        let vectors = heads * tokens * self.config.head_dim();
        let count = self.layers.len();
        let per_layer = out
            .attention
            .chunks_mut(square)
            .zip(out.head_outputs.chunks_mut(vectors))
            .zip(out.similarity.chunks_mut(square));
        let ids = Tensor::new(input_ids, &self.device)?;
        let mut x = Some(self.embeddings.forward(&ids)?);
        for (index, (layer, ((attention, head_outputs), similarity))) in
            self.layers.iter().zip(per_layer).enumerate()
        {
            if cancelled() {
                return Err(ForwardError::Cancelled);
            }
            let input = x.take().expect("every layer but the last has an output");
            let (next, capture) = layer.forward(&input, index + 1 == count)?;
            copy_to_host(&capture.attention, attention)?;
            copy_to_host(&capture.head_outputs, head_outputs)?;
            copy_to_host(&capture.similarity, similarity)?;
            x = next;
        }
        Ok(())
    }
}

/// What the threads of one CPU pass share.
struct Pass<'a> {
    config: &'a BertConfig,
    input_ids: &'a [u32],
    embeddings: EmbeddingsCpu<'a>,
    layers: Vec<LayerCpu<'a>>,
    /// Each thread's heads.
    heads: Vec<Range<usize>>,
    /// Each thread's feed-forward intermediate columns.
    columns: Vec<Range<usize>>,
    barrier: Barrier,
    /// The layer at which the pass stops (`usize::MAX`: none).
    stop_at: AtomicUsize,
    /// Each thread's partial sum of the attention-output projection, T × hidden.
    attention_partials: Vec<RwLock<Vec<f32>>>,
    /// Each thread's partial sum of the feed-forward's down projection.
    feed_forward_partials: Vec<RwLock<Vec<f32>>>,
}

/// One thread's share of the capture: its heads' blocks of every layer.
struct Worker<'a> {
    index: usize,
    attention: Vec<&'a mut [f32]>,
    head_outputs: Vec<&'a mut [f32]>,
    similarity: Vec<&'a mut [f32]>,
}

impl Pass<'_> {
    /// One thread's whole pass. Only the first thread polls `cancelled` (it
    /// need not be shareable): it posts the layer in `stop_at` and skips to
    /// the layer's first barrier, after which every thread sees it, so all
    /// stop at the same layer (in the last layer, which has no barrier, the
    /// others just finish).
    fn run(
        &self,
        mut worker: Worker,
        cancelled: Option<&dyn Fn() -> bool>,
    ) -> std::result::Result<(), ForwardError> {
        let _poison = self.barrier.poison_on_panic();
        let me = worker.index;
        let heads = self.heads[me].clone();
        let columns = self.columns[me].clone();
        let tokens = self.input_ids.len();
        let head_dim = self.config.head_dim();
        let hidden = self.config.hidden_size;
        let (square, vectors) = (tokens * tokens, tokens * head_dim);
        let width = heads.len() * head_dim;
        let mut x = vec![0.0; tokens * hidden];
        let mut attended = vec![0.0; tokens * hidden];
        // This thread's heads' queries, keys and values, each T × (heads·d),
        // and one head's of each made contiguous (T × d).
        let mut projections = vec![0.0; 3 * tokens * width];
        let mut qkv = vec![0.0; 3 * vectors];
        // This thread's heads' outputs side by side, T × (heads·d).
        let mut context = vec![0.0; tokens * width];
        let mut intermediate = vec![0.0; tokens * columns.len()];
        self.embeddings.forward(self.input_ids, 0, &mut x);
        let count = self.layers.len();
        for (l, layer) in self.layers.iter().enumerate() {
            let last = l + 1 == count;
            if cancelled.is_some_and(|cancelled| cancelled()) {
                self.stop_at.store(l, Ordering::Relaxed);
                if last {
                    return Err(ForwardError::Cancelled);
                }
            } else {
                // One product per part for all this thread's heads: whole
                // 64-column panels even when d is 32, and half the calls.
                let states = MatRef::new(&x, tokens, hidden);
                for (part, out) in projections.chunks_mut(tokens * width).enumerate() {
                    let first = part * hidden + heads.start * head_dim;
                    let columns = first..first + width;
                    kernels::seed_rows(out, &layer.qkv.bias()[columns.clone()]);
                    layer
                        .qkv
                        .weight()
                        .product(states, 0..hidden, columns, out, true);
                }
                for i in 0..heads.len() {
                    // Contiguous copies: gemm reads a head's keys and values
                    // faster this way than through the block's row stride.
                    let parts = projections.chunks(tokens * width);
                    for (dst, src) in qkv.chunks_mut(vectors).zip(parts) {
                        for (row, values) in dst.chunks_mut(head_dim).zip(src.chunks(width)) {
                            row.copy_from_slice(&values[i * head_dim..(i + 1) * head_dim]);
                        }
                    }
                    let (query, rest) = qkv.split_at(vectors);
                    let (key, value) = rest.split_at(vectors);
                    let o = &mut worker.head_outputs[l][i * vectors..(i + 1) * vectors];
                    kernels::attend(
                        query,
                        key,
                        value,
                        head_dim,
                        &mut worker.attention[l][i * square..(i + 1) * square],
                        o,
                        &mut worker.similarity[l][i * square..(i + 1) * square],
                    );
                    for (row, values) in context.chunks_mut(width).zip(o.chunks(head_dim)) {
                        row[i * head_dim..(i + 1) * head_dim].copy_from_slice(values);
                    }
                }
                if last {
                    return Ok(());
                }
                let mut partial = self.attention_partials[me].write().expect("mailbox");
                partial.resize(tokens * hidden, 0.0);
                layer.attention_output.dense.weight().product(
                    MatRef::new(&context, tokens, width),
                    heads.start * head_dim..heads.end * head_dim,
                    0..hidden,
                    &mut partial,
                    false,
                );
            }
            self.barrier.wait();
            if self.stop_at.load(Ordering::Relaxed) <= l {
                return Err(ForwardError::Cancelled);
            }
            sum_partials(
                &self.attention_partials,
                &layer.attention_output,
                &x,
                &mut attended,
            );
            let states = MatRef::new(&attended, tokens, hidden);
            layer.intermediate.weight().product(
                states,
                0..hidden,
                columns.clone(),
                &mut intermediate,
                false,
            );
            let bias = &layer.intermediate.bias()[columns.clone()];
            kernels::activate(&mut intermediate, bias, layer.activation);
            let mut partial = self.feed_forward_partials[me].write().expect("mailbox");
            partial.resize(tokens * hidden, 0.0);
            layer.output.dense.weight().product(
                MatRef::new(&intermediate, tokens, columns.len()),
                columns.clone(),
                0..hidden,
                &mut partial,
                false,
            );
            drop(partial);
            self.barrier.wait();
            sum_partials(
                &self.feed_forward_partials,
                &layer.output,
                &attended,
                &mut x,
            );
        }
        Ok(())
    }
}

/// `out = LayerNorm(residual + bias + every thread's partial sum)`.
fn sum_partials(
    partials: &[RwLock<Vec<f32>>],
    block: &OutputCpu,
    residual: &[f32],
    out: &mut [f32],
) {
    let posts: Vec<_> = partials
        .iter()
        .map(|post| post.read().expect("mailbox"))
        .collect();
    let posts: Vec<&[f32]> = posts.iter().map(|post| post.as_slice()).collect();
    let norm = &block.norm;
    let norm = (norm.gamma.get(), norm.beta.get(), norm.eps);
    kernels::sum_layer_norm(out, &posts, block.dense.bias(), residual, norm);
}

/// Copies a tensor's values, in row-major order, into `out`.
fn copy_to_host(tensor: &Tensor, out: &mut [f32]) -> Result<()> {
    let values = tensor.flatten_all()?.to_vec1::<f32>()?;
    if values.len() != out.len() {
        return Err(candle_core::Error::Msg(
            "capture of an unexpected size".into(),
        ));
    }
    out.copy_from_slice(&values);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random encoder with random biases and LayerNorm parameters (the
    /// generator sets 0 and 1) and larger query/key weights, so that
    /// attention is peaked.
    fn encoder(act: &str) -> BertEncoder {
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
        BertEncoder::load(vb, &config).unwrap()
    }

    /// Runs one path into fresh buffers: (P, O, S); `threads` 0 means the
    /// tensor path.
    fn run(
        encoder: &BertEncoder,
        ids: &[u32],
        threads: usize,
        cancelled: &dyn Fn() -> bool,
    ) -> std::result::Result<[Vec<f32>; 3], ForwardError> {
        let config = &encoder.config;
        let (l, h, t) = (
            config.num_hidden_layers,
            config.num_attention_heads,
            ids.len(),
        );
        let mut p = vec![f32::NAN; l * h * t * t];
        let mut o = vec![f32::NAN; l * h * t * config.head_dim()];
        let mut s = vec![f32::NAN; l * h * t * t];
        let out = CaptureBuffers {
            attention: &mut p,
            head_outputs: &mut o,
            similarity: &mut s,
        };
        if threads == 0 {
            encoder.forward_tensors(ids, cancelled, out)?;
        } else {
            encoder.forward_cpu(ids, cancelled, out, threads)?;
        }
        Ok([p, o, s])
    }

    /// The slice path on any number of threads computes what candle's ops
    /// compute, for every activation.
    #[test]
    fn cpu_kernels_match_candle_ops() {
        for act in ["gelu", "gelu_new", "relu"] {
            let encoder = encoder(act);
            let ids: Vec<u32> = (0..37).map(|i| (i * 53 % 199) as u32).collect();
            let reference = run(&encoder, &ids, 0, &|| false).unwrap();
            for threads in [1, 2, 3] {
                let fast = run(&encoder, &ids, threads, &|| false).unwrap();
                for (name, (ours, theirs)) in
                    ["P", "O", "S"].iter().zip(fast.iter().zip(&reference))
                {
                    let scale = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
                    for (a, b) in ours.iter().zip(theirs) {
                        assert!(
                            (a - b).abs() <= 1e-5 * scale,
                            "{act}, {threads} threads, {name}: {a} vs {b} (scale {scale})"
                        );
                    }
                }
            }
        }
    }

    /// Cancelling at any layer stops every thread (no thread is left waiting).
    #[test]
    fn cancelling_stops_all_threads() {
        let encoder = encoder("gelu");
        let ids: Vec<u32> = (0..20).collect();
        for stop_after in 0..3 {
            for threads in [1, 2, 3] {
                let polls = AtomicUsize::new(0);
                let cancelled = || polls.fetch_add(1, Ordering::Relaxed) >= stop_after;
                let result = run(&encoder, &ids, threads, &cancelled);
                assert!(matches!(result, Err(ForwardError::Cancelled)));
            }
        }
    }
}
