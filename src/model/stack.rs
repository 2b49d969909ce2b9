//! What the two stacks share — the post-norm encoder of the BERT-like
//! families ([`super::encoder`]) and the pre-norm stack of the decoders and
//! of ModernBERT, an encoder ([`super::decoder`]) — so that neither imports
//! the other: the one way into a pass ([`AttentionStack::run`]) with what
//! watches it ([`PassObserver`]) and what it captures into ([`LayerSink`]),
//! why it stops early, the key/value cache of a generation step, host
//! views of tensors, and the steps of their tensor paths that are the same
//! in both: the feed-forward activation and a layer's heads handed to the
//! attention core ([`crate::kernels::attention`], the one place a head's P,
//! O and S are made).

use super::ablation::heads::{Ablation, LayerAblation};
use super::team;
use crate::captures::HeadSimilarity;
use crate::kernels::attention::{attend, value_norms as value_norms_of, ScoreRule};
use crate::kernels::Activation;
use candle_core::{CpuStorage, Device, Result, Storage, StorageRef, Tensor};
use std::ops::{ControlFlow, Range};

/// A stack of attention layers that captures every head.
pub trait AttentionStack {
    /// Where its tensors live.
    fn device(&self) -> &Device;

    /// The one way into a pass: runs `input` through every layer, asking
    /// `observer` before each layer whether to go on (and handing it each
    /// head as it is made, where it asks for them), and capturing into
    /// `sink` as the sink says: every layer's P, O and S into its buffers,
    /// or each layer handed over in turn, with the residual stream after
    /// it where the sink wants it. On a stop, what was captured by then is
    /// left as it is. An error where the stack cannot capture as the sink
    /// or the input asks.
    fn run(
        &self,
        input: PassInput,
        observer: &dyn PassObserver,
        sink: &mut dyn LayerSink,
    ) -> std::result::Result<(), ForwardError>;

    /// Whether [`AttentionStack::run`] hands a sink each layer's captures
    /// with the queries and keys P is made from (what recomputing P and S
    /// per head needs); the BERT-like encoder only keeps every layer.
    fn hands_out_layers(&self) -> bool;

    /// Whether a pass that hands out layers makes each head's P and S on
    /// its own, a block of rows at a time (the tuned CPU pass), rather than
    /// a layer's whole.
    fn makes_heads_in_blocks(&self) -> bool {
        false
    }

    /// How each attention layer, in the order the pass runs them, makes
    /// its heads' attention (the same for every input).
    fn score_rules(&self) -> Vec<ScoreRule>;
}

/// What a pass runs: a whole sequence, the layers of a sequence from one
/// on (from the residual stream before it, as an earlier pass kept it: an
/// ablated pass changes nothing before its first ablated layer), or the
/// tokens that follow those a key/value cache holds (a generation step:
/// each new token one row of every layer, on candle's ops).
pub enum PassInput<'a> {
    Sequence(&'a [u32]),
    Resumed {
        input_ids: &'a [u32],
        /// The first layer run; the layers before it are neither run nor
        /// captured.
        layer: usize,
        /// The input of that layer (T × hidden): the residual stream after
        /// the layer before.
        residual: &'a [f32],
    },
    Cached {
        cache: &'a mut KvCache,
        new_ids: &'a [u32],
    },
}

/// Watches a pass from the thread that started it.
pub trait PassObserver {
    /// Called before layer `layer` runs (every application of a shared
    /// layer counts), in order: where the pass stands, and whether it goes
    /// on (`Break` ends it with [`ForwardError::Cancelled`]).
    fn before_layer(&self, layer: usize) -> ControlFlow<()>;

    /// Where each head goes as soon as it is made, if anywhere.
    fn heads(&self) -> Option<&dyn HeadObserver> {
        None
    }

    /// The heads this pass ablates, if any (ANALYSIS.md §9): an
    /// [`super::ablation::Ablated`] observer names them.
    fn ablation(&self) -> Option<&Ablation> {
        None
    }
}

/// A cancel check is an observer that only says whether to stop.
impl<F: Fn() -> bool> PassObserver for F {
    fn before_layer(&self, _layer: usize) -> ControlFlow<()> {
        if self() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// Receives the heads of a whole sequence's pass as they are made, on the
/// thread that made each: a caller's work on each head then runs on every
/// thread of the pass, while the head is in that core's cache. Not called
/// on a generation step. Hence `Sync`, apart from the [`PassObserver`] that
/// hands it out, which the pass asks only on its own thread: a run's watch
/// need not be shareable (the app's and the tests' keep their progress in
/// a `Cell`).
pub trait HeadObserver: Sync {
    /// Head `head` of layer `layer` is about to be made, the size of what
    /// each of its keys writes through it known (T; ANALYSIS.md §9's value
    /// weighting; empty where the pass has none): what it returns takes the
    /// head's P a block of rows at a time, then its S.
    fn begin(&self, layer: usize, head: usize, value_norms: &[f32]) -> Box<dyn HeadRows + '_>;
}

/// One head as the pass makes it ([`HeadObserver::begin`]).
pub trait HeadRows {
    /// Rows `first`, … of its P (each T wide), in order, with each row's
    /// entropy as the attention core made it with P.
    fn attention_rows(&mut self, first: usize, rows: &[f32], entropies: &[f32]);

    /// The head is made: its S, kept whole or made from its outputs O in
    /// blocks (the tuned CPU pass keeps neither P nor S of a head whole).
    fn finish(self: Box<Self>, similarity: HeadSimilarity);
}

/// Where a pass puts what it captures: the capture mode. A sink either
/// keeps every layer, giving the pass the final buffers to write into
/// ([`LayerSink::kept`]), or takes each layer in turn
/// ([`LayerSink::layer`]), and may ask for the residual stream after
/// each layer ([`LayerSink::residual`]).
pub trait LayerSink {
    /// The buffers of every layer's P, O and S, for a sink that keeps them
    /// all: the pass writes them there (the tuned CPU pass as it makes
    /// them, with no copy) and hands the sink no layer. `None`: the sink
    /// takes each layer.
    fn kept(&mut self) -> Option<CaptureBuffers<'_>> {
        None
    }

    /// Layer `layer`'s captures, once its attention is complete (on a
    /// generation step, its new tokens' rows), in buffers the next layer
    /// reuses.
    fn layer(
        &mut self,
        _layer: usize,
        _captures: LayerCaptures,
    ) -> std::result::Result<(), ForwardError> {
        Ok(())
    }

    /// Whether it reads each layer's P and S whole (H × T × T). A sink that
    /// does not (the streamed analysis, which takes each head from the
    /// pass's head observer) lets the tuned CPU pass keep one head's at a
    /// time on each thread, so that memory grows with T², not H·T²: the
    /// layer it is handed then has no P and no S.
    fn wants_layer_squares(&self) -> bool {
        true
    }

    /// Whether it reads the layers' captures at all. A sink of the residual
    /// stream alone (an ablation's) does not: the pass may then make only
    /// what the next layer needs of each head (P and O, not S or the value
    /// norms) and hand it no layer.
    fn wants_captures(&self) -> bool {
        true
    }

    /// Whether it wants the residual stream after each layer: the last
    /// layer then runs to its end.
    fn wants_residuals(&self) -> bool {
        false
    }

    /// The residual stream after layer `layer` (T × hidden; on a generation
    /// step, the new tokens' rows: after the last layer, their final hidden
    /// states before the final norm).
    fn residual(
        &mut self,
        _layer: usize,
        _residual: &Tensor,
    ) -> std::result::Result<(), ForwardError> {
        Ok(())
    }
}

/// Where a pass writes what it captures, as its sink says: into the
/// sink's buffers of every layer, or a layer at a time to the sink.
pub(in crate::model) enum Capture<'s> {
    Kept(CaptureBuffers<'s>),
    Layers(&'s mut dyn LayerSink),
}

impl<'s> Capture<'s> {
    /// What `sink` asks of a pass of `layers` layers of `heads` heads over
    /// `tokens` tokens: an error if its buffers do not fit them.
    pub(in crate::model) fn of(
        sink: &'s mut dyn LayerSink,
        (layers, heads, tokens, head_dim): (usize, usize, usize, usize),
    ) -> Result<Self> {
        // Asked twice: buffers returned from one branch only would keep
        // the sink borrowed in the other.
        if sink.kept().is_none() {
            return Ok(Self::Layers(sink));
        }
        let out = sink.kept().expect("a sink that keeps every layer");
        out.check(layers, heads, tokens, head_dim)?;
        Ok(Self::Kept(out))
    }
}

/// The heads of layer `layer` that `observer`'s pass ablates, if any.
pub(in crate::model) fn layer_ablation(
    observer: &dyn PassObserver,
    layer: usize,
) -> LayerAblation<'_> {
    observer
        .ablation()
        .map_or(LayerAblation::NONE, |ablation| ablation.layer(layer))
}

/// Hands each head of layer `layer` (its P, P's row entropies, S and
/// value norms: H×T×T, H×T, H×T×T, H×T) to `observer`, where there is
/// one: on candle's ops, the heads of a layer once it is made, on the
/// calling thread.
pub(in crate::model) fn hand_out_heads(
    observer: Option<&dyn HeadObserver>,
    layer: usize,
    tokens: usize,
    [attention, attention_entropy, similarity, value_norms]: [&[f32]; 4],
) {
    let Some(observer) = observer else {
        return;
    };
    let (square, row) = ((tokens * tokens).max(1), tokens.max(1));
    // A layer without value norms hands each head an empty slice.
    let norms = value_norms.chunks(row).chain(std::iter::repeat(&[][..]));
    // Likewise without entropies: the analysis then makes them from P.
    let entropies = attention_entropy
        .chunks(row)
        .chain(std::iter::repeat(&[][..]));
    let heads = attention
        .chunks(square)
        .zip(entropies)
        .zip(similarity.chunks(square))
        .zip(norms);
    for (head, (((attention, entropies), similarity), value_norms)) in heads.enumerate() {
        let mut made = observer.begin(layer, head, value_norms);
        made.attention_rows(0, attention, entropies);
        made.finish(HeadSimilarity::Stored(similarity));
    }
}

/// Where a whole sequence's pass starts: at layer `0.0`, from the states
/// `0.1` (T × hidden) or, where `None`, from the sequence's embeddings.
pub(in crate::model) type PassStart<'a> = (usize, Option<&'a [f32]>);

impl<'a> PassInput<'a> {
    /// A whole sequence's ids and where its pass starts; `None` for a
    /// generation step.
    pub(in crate::model) fn sequence(&self) -> Option<(&'a [u32], PassStart<'a>)> {
        match *self {
            Self::Sequence(input_ids) => Some((input_ids, (0, None))),
            Self::Resumed {
                input_ids,
                layer,
                residual,
            } => Some((input_ids, (layer, Some(residual)))),
            Self::Cached { .. } => None,
        }
    }
}

/// Every layer's keys, values and head outputs of the tokens run so far,
/// for [`PassInput::Cached`].
pub struct KvCache {
    pub(in crate::model) layers: Vec<LayerCache>,
    pub(in crate::model) tokens: usize,
}

impl KvCache {
    /// An empty cache of `layers` layers.
    pub(in crate::model) fn new(layers: usize) -> Self {
        Self {
            layers: (0..layers).map(|_| LayerCache::default()).collect(),
            tokens: 0,
        }
    }

    /// Tokens run so far.
    pub fn tokens(&self) -> usize {
        self.tokens
    }
}

/// One layer's keys and values (per key/value head, T×d, rotated) and head
/// outputs (per query head, T×d) of the tokens run so far: what the rows
/// of a new token's P, O and S are made from.
#[derive(Default)]
pub(in crate::model) struct LayerCache {
    pub(in crate::model) keys: Vec<Vec<f32>>,
    pub(in crate::model) values: Vec<Vec<f32>>,
    pub(in crate::model) outputs: Vec<Vec<f32>>,
    pub(in crate::model) tokens: usize,
}

impl LayerCache {
    /// Appends `rows` new tokens' keys and values (each H_kv×rows×d).
    pub(in crate::model) fn append(
        &mut self,
        keys: &[f32],
        values: &[f32],
        kv_heads: usize,
        rows: usize,
        d: usize,
    ) {
        let size = rows * d;
        self.keys.resize_with(kv_heads, Vec::new);
        self.values.resize_with(kv_heads, Vec::new);
        for head in 0..kv_heads {
            self.keys[head].extend_from_slice(&keys[head * size..][..size]);
            self.values[head].extend_from_slice(&values[head * size..][..size]);
        }
        self.tokens += rows;
    }
}

/// Where a pass writes what it captures: P and S are L×H×T×T, O is L×H×T×d,
/// P's row entropies (made with P by the attention core) and the value
/// norms (‖v_j W_O^h‖, ANALYSIS.md §9) L×H×T, each row-major;
/// and, where asked, the residual stream after each layer (L×T×hidden: a
/// decoder's, which its logit lens reads; the BERT-like encoder keeps none).
pub struct CaptureBuffers<'a> {
    pub attention: &'a mut [f32],
    pub attention_entropy: &'a mut [f32],
    pub head_outputs: &'a mut [f32],
    pub similarity: &'a mut [f32],
    pub value_norms: &'a mut [f32],
    pub residuals: Option<&'a mut [f32]>,
}

impl CaptureBuffers<'_> {
    /// An error unless the buffers hold `layers` layers of `heads` heads
    /// for `tokens` tokens and vectors of `head_dim`.
    pub fn check(&self, layers: usize, heads: usize, tokens: usize, head_dim: usize) -> Result<()> {
        let square = layers * heads * tokens * tokens;
        if self.attention.len() != square
            || self.similarity.len() != square
            || self.head_outputs.len() != layers * heads * tokens * head_dim
            || self.value_norms.len() != layers * heads * tokens
            || self.attention_entropy.len() != layers * heads * tokens
        {
            return Err(candle_core::Error::Msg(
                "capture buffers of the wrong size".into(),
            ));
        }
        Ok(())
    }

    /// Layer `index`'s part of each buffer.
    pub fn layer(
        &mut self,
        index: usize,
        heads: usize,
        tokens: usize,
        head_dim: usize,
    ) -> LayerAttention<'_> {
        let (square, vectors) = (heads * tokens * tokens, heads * tokens * head_dim);
        let at = |size: usize| index * size..(index + 1) * size;
        LayerAttention {
            attention: &mut self.attention[at(square)],
            attention_entropy: &mut self.attention_entropy[at(heads * tokens)],
            head_outputs: &mut self.head_outputs[at(vectors)],
            similarity: &mut self.similarity[at(square)],
            value_norms: &mut self.value_norms[at(heads * tokens)],
        }
    }
}

/// Why a forward pass stopped early.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("cancelled")]
    Cancelled,
    /// An input or a capture the model does not take.
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

/// What a model refuses to run, before any layer: said to the user as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the input has {tokens} tokens; this model takes 1 to {max}")]
    Length { tokens: usize, max: usize },
    #[error("{tokens} tokens are more than this model takes ({max})")]
    PastContext { tokens: usize, max: usize },
    #[error("token id {id} is outside the model's vocabulary of {vocabulary}")]
    OutsideVocabulary { id: u32, vocabulary: usize },
    #[error("token id or position outside the model")]
    OutsideEmbeddings,
    /// A capture mode the stack does not run (the BERT-like encoder keeps
    /// every layer, and neither recomputes nor generates).
    #[error("{0}")]
    Unsupported(&'static str),
}

/// One layer's captures on the host, row-major: P and S (H×T×T), O
/// (H×T×d), the value norms (H×T), and the queries (H×T×d) and keys
/// (H_kv×T×d) as the scores read them (rotated, unscaled), from which P
/// can be made again; P's row entropies (H×T). On a generation step, the
/// new tokens' rows: P and S H×n×T, O H×n×d, the entropies H×n, and no
/// value norms, queries or keys (nothing recomputes rows).
pub struct LayerCaptures<'a> {
    pub attention: &'a [f32],
    pub attention_entropy: &'a [f32],
    pub head_outputs: &'a [f32],
    pub similarity: &'a [f32],
    pub value_norms: &'a [f32],
    pub queries: &'a [f32],
    pub keys: &'a [f32],
}

/// Where one layer's heads write P and S (H×T×T), P's row entropies
/// (H×T), O (H×T×d) and their value norms (H×T; empty: none made).
pub struct LayerAttention<'a> {
    pub attention: &'a mut [f32],
    pub attention_entropy: &'a mut [f32],
    pub head_outputs: &'a mut [f32],
    pub similarity: &'a mut [f32],
    pub value_norms: &'a mut [f32],
}

/// A layer's heads through the attention core, from their queries (H×T×d)
/// and the keys and values (H_kv×T×d) of their key/value heads: query head
/// h reads key/value head h / (H / H_kv), as transformers' `repeat_kv`
/// lays them out. Each head's value norms too where `value_grams` (the
/// heads' Gram matrices of the output projection, H×d×d) are given and
/// `out` has room for them. The heads are shared out among threads leased
/// from the process's budget.
pub(in crate::model) fn attend_layer(
    queries: &[f32],
    keys: &[f32],
    values: &[f32],
    (tokens, head_dim): (usize, usize),
    (rule, value_grams): (&ScoreRule, &[f32]),
    out: &mut LayerAttention,
) {
    let vectors = tokens * head_dim;
    if vectors == 0 {
        return;
    }
    let heads = queries.len() / vectors;
    let group = heads / (keys.len() / vectors).max(1);
    let lease = crate::threads::lease(heads);
    let ranges = team::split_evenly(heads, lease.threads().min(heads.max(1)));
    let square = tokens * tokens;
    let mut attention = team::pieces(out.attention, heads, square, &ranges);
    let mut entropies = team::pieces(out.attention_entropy, heads, tokens, &ranges);
    let mut head_outputs = team::pieces(out.head_outputs, heads, vectors, &ranges);
    let mut similarity = team::pieces(out.similarity, heads, square, &ranges);
    let norms = !value_grams.is_empty() && out.value_norms.len() == heads * tokens;
    let mut value_norms = if norms {
        team::pieces(out.value_norms, heads, tokens, &ranges)
    } else {
        ranges
            .iter()
            .map(|_| vec![<&mut [f32]>::default()])
            .collect()
    };
    let gram = head_dim * head_dim;
    let run = |range: Range<usize>,
               (p, e): (&mut [f32], &mut [f32]),
               o: &mut [f32],
               s: &mut [f32],
               n: &mut [f32]| {
        for (i, head) in range.enumerate() {
            let kv = head / group.max(1);
            let value = &values[kv * vectors..][..vectors];
            attend(
                &queries[head * vectors..][..vectors],
                &keys[kv * vectors..][..vectors],
                value,
                head_dim,
                rule,
                (
                    &mut p[i * square..][..square],
                    &mut e[i * tokens..][..tokens],
                ),
                &mut o[i * vectors..][..vectors],
                &mut s[i * square..][..square],
            );
            if norms {
                let gram = &value_grams[head * gram..][..gram];
                value_norms_of(value, gram, head_dim, &mut n[i * tokens..][..tokens]);
            }
        }
    };
    std::thread::scope(|scope| {
        let mut shares = ranges
            .into_iter()
            .zip(
                attention
                    .iter_mut()
                    .zip(&mut entropies)
                    .zip(&mut head_outputs)
                    .zip(&mut similarity)
                    .zip(&mut value_norms),
            )
            .filter(|(range, _)| !range.is_empty());
        let first = shares.next();
        for (range, ((((p, e), o), s), n)) in shares {
            let run = &run;
            scope.spawn(move || run(range, (p[0], e[0]), o[0], s[0], n[0]));
        }
        if let Some((range, ((((p, e), o), s), n))) = first {
            run(range, (p[0], e[0]), o[0], s[0], n[0]);
        }
    });
}

/// Heads' output vectors (H×T×d) side by side, T × (H·d), as a tensor on
/// `device`: the input of the attention's output projection, with the
/// heads `ablation` names ablated there.
pub(in crate::model) fn heads_side_by_side(
    head_outputs: &[f32],
    heads: usize,
    tokens: usize,
    device: &Device,
    ablation: LayerAblation,
) -> Result<Tensor> {
    let head_dim = head_outputs.len() / (heads * tokens).max(1);
    let ablated;
    let head_outputs = if ablation.is_empty() {
        head_outputs
    } else {
        ablated = ablation.applied_to_heads(head_outputs, head_dim, tokens);
        &ablated
    };
    Tensor::from_slice(head_outputs, (heads, tokens, head_dim), device)?
        .transpose(0, 1)?
        .contiguous()?
        .reshape((tokens, heads * head_dim))
}

/// The feed-forward activation on a tensor (the tensor paths).
pub(in crate::model) fn activate(x: &Tensor, activation: Activation) -> Result<Tensor> {
    match activation {
        Activation::Gelu => x.gelu_erf(),
        Activation::GeluTanh => x.gelu(),
        Activation::Relu => x.relu(),
        Activation::Silu => candle_nn::ops::silu(x),
    }
}

/// A float32 tensor's values on the host: borrowed from a contiguous CPU
/// tensor (no copy: a layer's P alone is 235 MB at 2,048 tokens), copied
/// otherwise.
pub(in crate::model) enum HostValues<'a> {
    Borrowed(StorageRef<'a>, Range<usize>),
    Copied(Vec<f32>),
}

impl<'a> HostValues<'a> {
    /// An error unless the tensor is float32.
    pub(in crate::model) fn of(tensor: &'a Tensor) -> Result<Self> {
        let (storage, layout) = tensor.storage_and_layout();
        if let (Storage::Cpu(CpuStorage::F32(_)), Some((start, end))) =
            (&*storage, layout.contiguous_offsets())
        {
            return Ok(Self::Borrowed(storage, start..end));
        }
        drop(storage);
        Ok(Self::Copied(tensor.flatten_all()?.to_vec1::<f32>()?))
    }

    pub(in crate::model) fn get(&self) -> &[f32] {
        match self {
            Self::Borrowed(storage, range) => match &**storage {
                Storage::Cpu(CpuStorage::F32(values)) => &values[range.clone()],
                _ => unreachable!("HostValues::of borrows only f32 CPU storage"),
            },
            Self::Copied(values) => values,
        }
    }
}
