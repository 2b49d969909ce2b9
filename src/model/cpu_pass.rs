//! The CPU pass both stacks run, on [`crate::kernels`]: a team of threads
//! ([`super::team`]) split the way tensor-parallel transformers split a
//! layer across devices, so that each thread reads only its share of the
//! weights while multiplying them by every token. A thread owns some query
//! heads (and the key/value heads they read) and some feed-forward
//! columns. Per layer it projects every token to its heads' queries, keys
//! and values, rotates them where the family does, makes those heads' P, O
//! and S in the attention core (straight into the capture), and its partial
//! sum of the attention-output projection (its heads' rows of that weight);
//! at a barrier the partial sums meet, and every thread adds them up, with
//! bias and residual, into the whole attended state. The feed-forward goes
//! the same way: its own intermediate columns (both halves of a gated one),
//! a partial sum of the down projection, a barrier, the sum. Two barriers a
//! layer, none after the last layer's attention unless the residual stream
//! after each layer is wanted (the logit lens): then the last layer runs to
//! its end, and the calling thread hands each layer's output on.
//!
//! Each thread keeps its buffers for the whole pass (`Scratch`); `Pass::run`
//! is the loop over the layers that owns the barriers and the stop (the
//! observer, asked on the calling thread, and a sink's error), around the
//! phases `attention`, `post_attention_output`, `feed_forward` and
//! `add_feed_forward`. Where the sink keeps every layer, each thread writes
//! its heads' P, O and S straight into the sink's buffers; otherwise into
//! one layer's shared buffers, handed to the sink at the barrier.
//!
//! The stacks differ in where the norms sit ([`LayerCpu`]): the BERT-like
//! encoders normalise after each residual sum, the pre-norm families (the
//! decoders, ModernBERT) before each sub-layer, and some of them after each
//! sub-layer's output too (Gemma 2 and 3) or only there (OLMo 2). Queries
//! and keys may be normalised before rotary, per head (Qwen3, Gemma 3) or
//! across all heads (OLMo 2: a third barrier, where the threads' sums of
//! squares meet); rotary may turn only each head's first dimensions
//! (GPT-NeoX); the feed-forward may read the layer's input beside the
//! attention (GPT-NeoX's parallel residual).

use super::ablation::heads::Ablation;
use super::blocks::{DenseCpu, NormCpu};
use super::config::RotaryFrequencies;
use super::stack::{Capture, ForwardError, HeadObserver, LayerCaptures, LayerSink, PassObserver};
use super::team::{self, Barrier};
use crate::captures::HeadSimilarity;
use crate::kernels::attention::{
    attend_rows, context_similarity, value_norms, ScoreRule, ROW_BLOCK,
};
use crate::kernels::{self, Activation, MatRef, SumNorm};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;

/// Rows of the feed-forward made at a time: its intermediate columns are
/// the widest of a layer's buffers (Qwen2.5-0.5B's 4,864 a half, gated: at
/// 32,768 tokens 1.3 GB for all rows).
const FEED_FORWARD_ROWS: usize = 1024;

/// One layer's parameters as slices.
pub(super) struct LayerCpu<'a> {
    /// Pre-norm: the norm of the attention's input (`None`: ModernBERT's
    /// first layer, whose input is the normalised embeddings). Post-norm:
    /// the norm after the attention's residual sum.
    pub(super) attention_norm: Option<NormCpu<'a>>,
    /// Queries, keys and values side by side: H·d, H_kv·d and H_kv·d columns.
    pub(super) qkv: DenseCpu<'a>,
    /// The norms of the queries and keys, before rotary.
    pub(super) qk_norms: Option<QkNormsCpu<'a>>,
    pub(super) attention_output: DenseCpu<'a>,
    /// Pre-norm only: the norm of the attention's output, before the
    /// residual sum (Gemma 2 and 3, OLMo 2).
    pub(super) attention_output_norm: Option<NormCpu<'a>>,
    /// Its heads' Gram matrices in `attention_output` (H × d × d), for
    /// their value norms.
    pub(super) value_grams: &'a [f32],
    /// Pre-norm: the norm of the feed-forward's input (none in OLMo 2);
    /// post-norm: the norm after its residual sum.
    pub(super) feed_forward_norm: Option<NormCpu<'a>>,
    /// Pre-norm only: the norm of the feed-forward's output, before the
    /// residual sum (Gemma 2 and 3, OLMo 2).
    pub(super) feed_forward_output_norm: Option<NormCpu<'a>>,
    /// GPT-NeoX's parallel residual: the feed-forward reads the layer's
    /// input, not the attended state, and both outputs join the residual.
    pub(super) parallel_residual: bool,
    /// The feed-forward's first projection: I columns, or for a gated one
    /// 2·I, the activated half and then the half it is multiplied by.
    pub(super) up: DenseCpu<'a>,
    pub(super) gated: bool,
    pub(super) activation: Activation,
    pub(super) down: DenseCpu<'a>,
    pub(super) rule: ScoreRule,
    /// Rotary positions of this layer's queries and keys, if the family
    /// rotates them.
    pub(super) rotary: Option<&'a RotaryCpu>,
}

/// A layer's norms of its queries and keys (with the model's RMSNorm), before rotary.
pub(super) struct QkNormsCpu<'a> {
    /// Over each head's d values (Qwen3, Gemma 3), or over all heads
    /// together (OLMo 2: H·d and H_kv·d values).
    pub(super) query: NormCpu<'a>,
    pub(super) key: NormCpu<'a>,
    pub(super) across_heads: bool,
}

impl QkNormsCpu<'_> {
    /// The barriers a layer's attention phase waits at for them: one where
    /// the norms span the heads, which the threads share out.
    fn barriers(norms: &Option<Self>) -> usize {
        norms
            .as_ref()
            .map_or(0, |norms| usize::from(norms.across_heads))
    }
}

/// The shape of a pass.
#[derive(Clone, Copy)]
pub(super) struct PassShape {
    pub(super) tokens: usize,
    pub(super) hidden: usize,
    pub(super) heads: usize,
    pub(super) kv_heads: usize,
    pub(super) head_dim: usize,
    /// I: the feed-forward's intermediate width (of each half, when gated).
    pub(super) intermediate: usize,
    /// Norms before each sub-layer (else after each residual sum).
    pub(super) pre_norm: bool,
}

/// Rotary positions as transformers' `rotate_half` convention applies
/// them, pairing dimension i with i + r/2 of the r dimensions that turn
/// (each head's first r: all d, or GPT-NeoX's share): cos and sin of every
/// position's angles (T × r, the frequencies repeated for the two halves),
/// times the embedding's scaling (YaRN's), computed in float32 as
/// transformers computes them.
pub(super) struct RotaryCpu {
    cos: Vec<f32>,
    sin: Vec<f32>,
    /// r.
    width: usize,
}

impl RotaryCpu {
    pub(super) fn new(frequencies: &RotaryFrequencies, tokens: usize) -> Self {
        let RotaryFrequencies {
            inverse: inverse_frequencies,
            scaling,
        } = frequencies;
        let width = 2 * inverse_frequencies.len();
        let (mut cos, mut sin) = (
            Vec::with_capacity(tokens * width),
            Vec::with_capacity(tokens * width),
        );
        for position in 0..tokens {
            for _ in 0..2 {
                for &inverse in inverse_frequencies {
                    // As transformers: times the scaling, 1 but for YaRN
                    // (x · 1 is x, bit for bit).
                    let angle = position as f32 * inverse;
                    cos.push(angle.cos() * scaling);
                    sin.push(angle.sin() * scaling);
                }
            }
        }
        Self { cos, sin, width }
    }

    /// cos of every position's angles, T × d.
    pub(super) fn cos(&self) -> &[f32] {
        &self.cos
    }

    /// sin of every position's angles, T × d.
    pub(super) fn sin(&self) -> &[f32] {
        &self.sin
    }

    /// `x·cos + rotate_half(x)·sin` of the first r dimensions of one
    /// head's contiguous T × d vectors; the others pass unchanged.
    fn apply(&self, x: &mut [f32], head_dim: usize) {
        let (r, half) = (self.width, self.width / 2);
        for ((row, cos), sin) in x
            .chunks_exact_mut(head_dim)
            .zip(self.cos.chunks_exact(r))
            .zip(self.sin.chunks_exact(r))
        {
            for i in 0..half {
                let (first, second) = (row[i], row[i + half]);
                row[i] = first * cos[i] + -second * sin[i];
                row[i + half] = second * cos[i + half] + first * sin[i + half];
            }
        }
    }
}

/// Runs `layers[schedule[first_layer]]`, `layers[schedule[first_layer + 1]]`,
/// … on `states` (T × hidden: the embeddings, or the residual stream before
/// the first layer run) on `threads` threads, capturing every layer's P,
/// O and S as `capture` says: into the sink's buffers of every layer, or
/// into one layer's, handed with the rotated queries and keys P is made
/// from to the sink as soon as the layer's attention is complete (on the
/// calling thread; the next layer reuses them). Each head goes to the
/// observer's head observer, if any, as soon as it is made (on the thread
/// that made it). Only the calling thread asks `observer` before each layer.
/// Where the sink wants the residual stream, the calling thread copies each
/// layer's output (T × hidden) into the buffers' residual rows, or hands it
/// to the sink.
pub(super) fn run(
    shape: PassShape,
    (first_layer, states): (usize, &[f32]),
    layers: &[LayerCpu],
    schedule: &[usize],
    observer: &dyn PassObserver,
    capture: Capture,
    threads: usize,
) -> Result<(), ForwardError> {
    if shape.tokens == 0 || schedule.is_empty() {
        return Ok(());
    }
    let threads = threads.clamp(1, shape.heads);
    kernels::disable_weight_packing();
    let head_ranges = team::split_evenly(shape.heads, threads);
    let panels = shape.intermediate.div_ceil(kernels::PANEL);
    let column_ranges = team::split_evenly(panels, threads)
        .into_iter()
        .map(|panels| {
            let end = (panels.end * kernels::PANEL).min(shape.intermediate);
            (panels.start * kernels::PANEL).min(end)..end
        })
        .collect();
    let square = shape.tokens * shape.tokens;
    let vectors = shape.tokens * shape.head_dim;
    let (mut out, mut sink) = match capture {
        Capture::Kept(out) => (Some(out), None),
        Capture::Layers(sink) => (None, Some(sink)),
    };
    // A sink of the residual stream alone, with no head observer: each
    // head's P and O only (S and the value norms would go unread).
    let captures_wanted =
        sink.as_ref().is_none_or(|sink| sink.wants_captures()) || observer.heads().is_some();
    // Each thread makes one head's P and S at a time in its own buffers
    // where no one reads a layer's whole.
    let squares_per_head = sink.as_ref().is_some_and(|sink| {
        !captures_wanted || (!sink.wants_layer_squares() && observer.heads().is_some())
    });
    let residuals = match (out.as_mut().and_then(|out| out.residuals.take()), &sink) {
        (Some(rows), _) => ResidualsTo::Rows(rows),
        (None, Some(sink)) if sink.wants_residuals() => ResidualsTo::Sink,
        _ => ResidualsTo::Nowhere,
    };
    let mut layer_buffers = [
        (shape.heads * square, !squares_per_head),
        (shape.heads * shape.tokens, !squares_per_head),
        (shape.heads * vectors, true),
        (shape.heads * square, !squares_per_head),
        (shape.heads * shape.tokens, captures_wanted),
        (shape.heads * vectors, captures_wanted),
        (shape.kv_heads * vectors, captures_wanted),
    ]
    .map(|(len, made)| {
        if sink.is_some() && made {
            vec![0.0; len]
        } else {
            Vec::new()
        }
    });
    let [attention_buffer, entropy_buffer, outputs_buffer, similarity_buffer, norms_buffer, queries_buffer, keys_buffer] =
        &mut layer_buffers;
    let streamed = StreamedLayer {
        attention: SharedBuffer::new(attention_buffer),
        attention_entropy: SharedBuffer::new(entropy_buffer),
        head_outputs: SharedBuffer::new(outputs_buffer),
        similarity: SharedBuffer::new(similarity_buffer),
        value_norms: SharedBuffer::new(norms_buffer),
        queries: SharedBuffer::new(queries_buffer),
        keys: SharedBuffer::new(keys_buffer),
    };
    let kept = out.as_mut().map(|out| {
        let attention = team::pieces(out.attention, shape.heads, square, &head_ranges);
        let entropies = team::pieces(
            out.attention_entropy,
            shape.heads,
            shape.tokens,
            &head_ranges,
        );
        let outputs = team::pieces(out.head_outputs, shape.heads, vectors, &head_ranges);
        let similarity = team::pieces(out.similarity, shape.heads, square, &head_ranges);
        let norms = team::pieces(out.value_norms, shape.heads, shape.tokens, &head_ranges);
        attention
            .into_iter()
            .zip(entropies)
            .zip(outputs)
            .zip(similarity)
            .zip(norms)
    });
    let mailboxes = || (0..threads).map(|_| RwLock::new(Vec::new())).collect();
    let pass = Pass {
        shape,
        states,
        first_layer,
        layers,
        schedule,
        heads: head_ranges,
        columns: column_ranges,
        barrier: Barrier::new(threads),
        to_the_end: !matches!(residuals, ResidualsTo::Nowhere),
        captures_wanted,
        squares_per_head,
        head_observer: observer.heads(),
        ablation: observer.ablation(),
        stop_at: AtomicUsize::new(usize::MAX),
        attention_partials: mailboxes(),
        feed_forward_partials: mailboxes(),
        square_sums: mailboxes(),
    };
    let targets: Vec<Targets> = match kept {
        Some(kept) => kept
            .map(
                |((((attention, attention_entropy), head_outputs), similarity), value_norms)| {
                    Targets::Kept {
                        attention,
                        attention_entropy,
                        head_outputs,
                        similarity,
                        value_norms,
                    }
                },
            )
            .collect(),
        None => (0..threads).map(|_| Targets::Streamed(&streamed)).collect(),
    };
    let mut workers = targets
        .into_iter()
        .enumerate()
        .map(|(index, targets)| Worker { index, targets });
    let first = workers.next().expect("at least one thread");
    let pass = &pass;
    let helpers = workers
        .map(|worker| {
            move || {
                // A helper stops where the caller does, which returns
                // why; a helper's panic poisons the barrier.
                let _ = pass.run(worker, None);
            }
        })
        .collect();
    crate::threads::run_with_helpers(helpers, || {
        let caller = Caller {
            observer,
            sink: sink.as_mut().map(|sink| &mut **sink as &mut dyn LayerSink),
            residuals,
        };
        pass.run(first, Some(caller))
    })?;
    if let (Some(sink), false, true) = (sink, pass.to_the_end, captures_wanted) {
        // The last layer has no barrier after its attention: every thread
        // has finished it once the scope has joined them.
        // SAFETY: no thread is left to write the buffers.
        sink.layer(schedule.len() - 1, unsafe { streamed.captures() })?;
    }
    Ok(())
}

/// Where the calling thread puts the residual stream after each layer.
enum ResidualsTo<'a> {
    Nowhere,
    /// Rows of L × T × hidden.
    Rows(&'a mut [f32]),
    /// The sink's [`LayerSink::residual`].
    Sink,
}

/// What only the calling thread of a pass has: the observer (it need not
/// be shareable), the sink of a streamed capture, the residual stream's
/// destination.
struct Caller<'a> {
    observer: &'a dyn PassObserver,
    sink: Option<&'a mut dyn LayerSink>,
    residuals: ResidualsTo<'a>,
}

impl Caller<'_> {
    /// Hands layer `layer`'s output `x` (T × hidden) on, where it is wanted.
    fn residual(&mut self, layer: usize, x: &[f32], hidden: usize) -> Result<(), ForwardError> {
        match (&mut self.residuals, &mut self.sink) {
            (ResidualsTo::Rows(rows), _) => {
                rows[layer * x.len()..][..x.len()].copy_from_slice(x);
                Ok(())
            }
            (ResidualsTo::Sink, Some(sink)) => {
                let rows = x.len() / hidden.max(1);
                let x =
                    candle_core::Tensor::from_slice(x, (rows, hidden), &candle_core::Device::Cpu)?;
                sink.residual(layer, &x)
            }
            _ => Ok(()),
        }
    }
}

/// A buffer the threads write in disjoint parts (each its own heads) and
/// the calling thread reads whole once they have met at a barrier.
struct SharedBuffer {
    data: *mut f32,
    len: usize,
}

// SAFETY: access is coordinated by the pass: threads write disjoint ranges
// (their own heads) and the whole is read only after a barrier, while no
// thread writes (see `Pass::run`).
unsafe impl Sync for SharedBuffer {}

impl SharedBuffer {
    fn new(values: &mut [f32]) -> Self {
        Self {
            data: values.as_mut_ptr(),
            len: values.len(),
        }
    }

    /// # Safety
    /// No other thread may access `range` until the next barrier, and no
    /// one may read the whole buffer meanwhile.
    #[allow(clippy::mut_from_ref)]
    unsafe fn part(&self, range: Range<usize>) -> &mut [f32] {
        assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: in bounds (checked above); exclusive as the caller promises.
        unsafe { std::slice::from_raw_parts_mut(self.data.add(range.start), range.len()) }
    }

    /// # Safety
    /// No thread may write the buffer while the slice lives.
    unsafe fn whole(&self) -> &[f32] {
        // SAFETY: the buffer is `len` values; nobody writes, as the caller promises.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }
}

/// One layer's captures, streamed: P, its row entropies, O, S and the
/// value norms of every head, its rotated queries and its key/value heads'
/// rotated keys.
struct StreamedLayer {
    attention: SharedBuffer,
    attention_entropy: SharedBuffer,
    head_outputs: SharedBuffer,
    similarity: SharedBuffer,
    value_norms: SharedBuffer,
    queries: SharedBuffer,
    keys: SharedBuffer,
}

impl StreamedLayer {
    /// # Safety
    /// No thread may write the buffers while the captures live.
    unsafe fn captures(&self) -> LayerCaptures<'_> {
        // SAFETY: as the caller promises.
        unsafe {
            LayerCaptures {
                attention: self.attention.whole(),
                attention_entropy: self.attention_entropy.whole(),
                head_outputs: self.head_outputs.whole(),
                similarity: self.similarity.whole(),
                value_norms: self.value_norms.whole(),
                queries: self.queries.whole(),
                keys: self.keys.whole(),
            }
        }
    }
}

/// What the threads of one CPU pass share.
struct Pass<'a> {
    shape: PassShape,
    states: &'a [f32],
    /// The first layer of the schedule it runs (`states` is its input).
    first_layer: usize,
    layers: &'a [LayerCpu<'a>],
    schedule: &'a [usize],
    /// Each thread's query heads.
    heads: Vec<Range<usize>>,
    /// Each thread's feed-forward intermediate columns.
    columns: Vec<Range<usize>>,
    barrier: Barrier,
    /// Whether the last layer runs to its end (its output is wanted) or
    /// stops after its attention.
    to_the_end: bool,
    /// Whether anyone reads the captures beyond P and O (see
    /// [`LayerSink::wants_captures`]): else S and the value norms are not
    /// made, and the sink is handed no layer.
    captures_wanted: bool,
    /// Whether each thread makes its heads' P and S in its own buffers, one
    /// head at a time (the sink reads no layer's whole: it gets none).
    squares_per_head: bool,
    /// Where each head goes as soon as it is made.
    head_observer: Option<&'a dyn HeadObserver>,
    /// The heads the pass ablates where their outputs meet the output
    /// projection (ANALYSIS.md §9).
    ablation: Option<&'a Ablation>,
    /// The layer at which the pass stops (`usize::MAX`: none).
    stop_at: AtomicUsize,
    /// Each thread's partial sum of the attention-output projection, T × hidden.
    attention_partials: Vec<RwLock<Vec<f32>>>,
    /// Each thread's partial sum of the feed-forward's down projection.
    feed_forward_partials: Vec<RwLock<Vec<f32>>>,
    /// Each thread's sums of squares of its heads' queries and keys per
    /// token (2 × T), where the q/k norms span the heads.
    square_sums: Vec<RwLock<Vec<f32>>>,
}

/// One thread of the pass and where it writes its heads' captures.
struct Worker<'a> {
    index: usize,
    targets: Targets<'a>,
}

enum Targets<'a> {
    /// Its heads' blocks of every layer.
    Kept {
        attention: Vec<&'a mut [f32]>,
        attention_entropy: Vec<&'a mut [f32]>,
        head_outputs: Vec<&'a mut [f32]>,
        similarity: Vec<&'a mut [f32]>,
        value_norms: Vec<&'a mut [f32]>,
    },
    /// The layer being streamed.
    Streamed(&'a StreamedLayer),
}

/// One thread's share of the work and its buffers, kept for the whole pass.
struct Scratch {
    /// Its thread's index.
    me: usize,
    /// Its query heads.
    heads: Range<usize>,
    /// The key/value heads its query heads read.
    kv_heads: Range<usize>,
    /// Its feed-forward intermediate columns.
    columns: Range<usize>,
    /// The hidden states, T × hidden: the layer's input, then its output.
    x: Vec<f32>,
    /// The state after the attention's residual sum, T × hidden.
    attended: Vec<f32>,
    /// A pre-norm sub-layer's normalised input (empty when post-norm).
    normed: Vec<f32>,
    /// Its queries (T × width) and its key/value heads' keys and values
    /// (T × kv_width each).
    queries: Vec<f32>,
    keys: Vec<f32>,
    values: Vec<f32>,
    /// One head's query, and its key/value heads' keys and values, each
    /// made contiguous (T × d) and rotated where the family rotates them.
    query: Vec<f32>,
    head_keys: Vec<f32>,
    head_values: Vec<f32>,
    /// Its heads' outputs side by side, T × width.
    context: Vec<f32>,
    /// Its feed-forward columns for a block of rows, at most
    /// [`FEED_FORWARD_ROWS`] × columns (and, gated, their multiplier).
    intermediate: Vec<f32>,
    multiplier: Vec<f32>,
    /// The bias of a first projection without one.
    no_bias: Vec<f32>,
    /// A block of rows of one head's P (ROW_BLOCK × T), where the pass
    /// makes each head a block at a time.
    head_attention: Vec<f32>,
    /// A streamed head's row entropies (T).
    head_entropy: Vec<f32>,
}

impl Scratch {
    fn new(pass: &Pass, me: usize) -> Self {
        let shape = pass.shape;
        let heads = pass.heads[me].clone();
        let columns = pass.columns[me].clone();
        let (tokens, hidden, head_dim) = (shape.tokens, shape.hidden, shape.head_dim);
        let group = shape.heads / shape.kv_heads.max(1);
        let kv_heads = heads.start / group..(heads.end - 1) / group + 1;
        let vectors = tokens * head_dim;
        let (width, kv_width) = (heads.len() * head_dim, kv_heads.len() * head_dim);
        Self {
            me,
            x: pass.states.to_vec(),
            attended: vec![0.0; tokens * hidden],
            normed: if shape.pre_norm {
                vec![0.0; tokens * hidden]
            } else {
                Vec::new()
            },
            queries: vec![0.0; tokens * width],
            keys: vec![0.0; tokens * kv_width],
            values: vec![0.0; tokens * kv_width],
            query: vec![0.0; vectors],
            head_keys: vec![0.0; kv_heads.len() * vectors],
            head_values: vec![0.0; kv_heads.len() * vectors],
            context: vec![0.0; tokens * width],
            intermediate: vec![0.0; FEED_FORWARD_ROWS.min(tokens) * columns.len()],
            multiplier: if pass.layers.iter().any(|l| l.gated) {
                vec![0.0; FEED_FORWARD_ROWS.min(tokens) * columns.len()]
            } else {
                Vec::new()
            },
            no_bias: vec![0.0; columns.len()],
            head_attention: if pass.squares_per_head {
                vec![0.0; ROW_BLOCK.min(tokens) * tokens]
            } else {
                Vec::new()
            },
            head_entropy: vec![0.0; tokens],
            heads,
            kv_heads,
            columns,
        }
    }
}

impl Pass<'_> {
    /// One thread's whole pass: the layers' phases between the barriers.
    /// Only the first thread, the caller, asks the observer: on a stop it
    /// posts the layer in `stop_at` and skips to the layer's first barrier,
    /// after which every thread sees it, so all stop at the same layer (in
    /// a last layer without barriers, the others just finish).
    fn run(&self, mut worker: Worker, mut caller: Option<Caller>) -> Result<(), ForwardError> {
        let _poison = self.barrier.poison_on_panic();
        let mut scratch = Scratch::new(self, worker.index);
        let count = self.schedule.len();
        let mut failed = None;
        let layers = self.schedule.iter().map(|&i| &self.layers[i]);
        for (l, layer) in layers.enumerate().skip(self.first_layer) {
            // The study needs only the last layer's attention.
            let ends_early = l + 1 == count && !self.to_the_end;
            let stop = |caller: &Caller| caller.observer.before_layer(l).is_break();
            if failed.is_some() || caller.as_ref().is_some_and(stop) {
                self.stop_at.store(l, Ordering::Relaxed);
                // Meet the others at the barriers inside their attention
                // (what this thread posts there is stale: no one uses
                // the stopped layer's results).
                for _ in 0..QkNormsCpu::barriers(&layer.qk_norms) {
                    self.barrier.wait();
                }
                if ends_early {
                    return Err(failed.unwrap_or(ForwardError::Cancelled));
                }
            } else {
                self.attention(&mut scratch, &mut worker.targets, l, layer);
                if ends_early {
                    return Ok(());
                }
                self.post_attention_output(&scratch, layer);
            }
            self.barrier.wait();
            if self.stop_at.load(Ordering::Relaxed) <= l {
                return Err(failed.unwrap_or(ForwardError::Cancelled));
            }
            let sink = caller.as_mut().and_then(|caller| caller.sink.as_mut());
            let sink = sink.filter(|_| self.captures_wanted);
            if let (Some(sink), Targets::Streamed(streamed)) = (sink, &worker.targets) {
                // Every thread has written this layer (they met at the
                // barrier) and none writes it again before the next
                // barrier, which this thread reaches only after the sink.
                // SAFETY: as just said.
                if let Err(error) = sink.layer(l, unsafe { streamed.captures() }) {
                    failed = Some(error);
                }
            }
            self.feed_forward(&mut scratch, layer);
            self.barrier.wait();
            self.add_feed_forward(&mut scratch, layer);
            if let Some(caller) = caller.as_mut().filter(|_| failed.is_none()) {
                if let Err(error) = caller.residual(l, &scratch.x, self.shape.hidden) {
                    failed = Some(error);
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// The attention phase of layer `l`: this thread's queries, keys and
    /// values, and its heads' P, O and S through the attention core into
    /// `targets`, their outputs side by side in the scratch's context.
    fn attention(&self, scratch: &mut Scratch, targets: &mut Targets, l: usize, layer: &LayerCpu) {
        let shape = self.shape;
        let Scratch {
            me,
            heads,
            kv_heads,
            x,
            normed,
            queries,
            keys,
            values,
            query,
            head_keys,
            head_values,
            context,
            head_attention,
            head_entropy,
            ..
        } = scratch;
        let (tokens, hidden, head_dim) = (shape.tokens, shape.hidden, shape.head_dim);
        let group = shape.heads / shape.kv_heads.max(1);
        let (square, vectors) = (tokens * tokens, tokens * head_dim);
        let (width, kv_width) = (heads.len() * head_dim, kv_heads.len() * head_dim);
        let input = if shape.pre_norm {
            normed.copy_from_slice(x);
            if let Some(norm) = &layer.attention_norm {
                norm.forward(normed);
            }
            &*normed
        } else {
            &*x
        };
        let states = MatRef::new(input, tokens, hidden);
        let query_columns = heads.start * head_dim..heads.end * head_dim;
        let key_start = shape.heads * head_dim;
        let value_start = key_start + shape.kv_heads * head_dim;
        let kv_columns = kv_heads.start * head_dim..kv_heads.end * head_dim;
        for (out, columns) in [
            (&mut *queries, query_columns),
            (
                &mut *keys,
                key_start + kv_columns.start..key_start + kv_columns.end,
            ),
            (
                &mut *values,
                value_start + kv_columns.start..value_start + kv_columns.end,
            ),
        ] {
            project(&layer.qkv, states, hidden, columns, out);
        }
        let per_head_norms = match &layer.qk_norms {
            Some(norms) if norms.across_heads => {
                let own = (heads.clone(), kv_heads.clone());
                self.norm_across_heads(*me, own, queries, keys, norms);
                None
            }
            norms => norms.as_ref(),
        };
        // Contiguous copies: gemm reads a head's keys and values
        // faster this way than through the block's row stride.
        for (i, (keys_of_head, values_of_head)) in head_keys
            .chunks_mut(vectors)
            .zip(head_values.chunks_mut(vectors))
            .enumerate()
        {
            gather_head(keys, kv_width, i, head_dim, keys_of_head);
            gather_head(values, kv_width, i, head_dim, values_of_head);
            if let Some(norms) = per_head_norms {
                norms.key.forward(keys_of_head);
            }
            if let Some(rotary) = layer.rotary {
                rotary.apply(keys_of_head, head_dim);
            }
            let kv = kv_heads.start + i;
            let first_reader = heads.contains(&(kv * group));
            if let (Targets::Streamed(streamed), true) =
                (&*targets, first_reader && self.captures_wanted)
            {
                // SAFETY: kv's first query head is this thread's,
                // so no other thread writes these keys.
                let keys = unsafe { streamed.keys.part(kv * vectors..(kv + 1) * vectors) };
                keys.copy_from_slice(keys_of_head);
            }
        }
        for (i, head) in heads.clone().enumerate() {
            gather_head(queries, width, i, head_dim, query);
            if let Some(norms) = per_head_norms {
                norms.query.forward(query);
            }
            if let Some(rotary) = layer.rotary {
                rotary.apply(query, head_dim);
            }
            let kv = (head / group - kv_heads.start) * vectors;
            let (p, e, o, s, n) = match &mut *targets {
                Targets::Kept {
                    attention,
                    attention_entropy,
                    head_outputs,
                    similarity,
                    value_norms,
                } => (
                    &mut attention[l][i * square..(i + 1) * square],
                    &mut attention_entropy[l][i * tokens..(i + 1) * tokens],
                    &mut head_outputs[l][i * vectors..(i + 1) * vectors],
                    &mut similarity[l][i * square..(i + 1) * square],
                    &mut value_norms[l][i * tokens..(i + 1) * tokens],
                ),
                // SAFETY: the head is this thread's alone, and the
                // whole is read only after the next barrier.
                Targets::Streamed(streamed) => unsafe {
                    let output = streamed
                        .head_outputs
                        .part(head * vectors..(head + 1) * vectors);
                    let (p, e, s) = if self.squares_per_head {
                        (&mut head_attention[..], &mut head_entropy[..], &mut [][..])
                    } else {
                        (
                            streamed.attention.part(head * square..(head + 1) * square),
                            streamed
                                .attention_entropy
                                .part(head * tokens..(head + 1) * tokens),
                            streamed.similarity.part(head * square..(head + 1) * square),
                        )
                    };
                    let n = if self.captures_wanted {
                        streamed
                            .queries
                            .part(head * vectors..(head + 1) * vectors)
                            .copy_from_slice(query);
                        streamed
                            .value_norms
                            .part(head * tokens..(head + 1) * tokens)
                    } else {
                        &mut [][..]
                    };
                    (p, e, output, s, n)
                },
            };
            let (keys, values) = (&head_keys[kv..kv + vectors], &head_values[kv..kv + vectors]);
            if self.captures_wanted {
                let gram = head_dim * head_dim;
                value_norms(
                    values,
                    &layer.value_grams[head * gram..][..gram],
                    head_dim,
                    n,
                );
            }
            let mut made = self
                .head_observer
                .map(|observer| observer.begin(l, head, n));
            // A block of rows at a time (the attention core's blocks, the
            // same bits as the whole), each handed to the observer while
            // it is in this core's cache: where the pass keeps P and S
            // whole, it writes each block in its place; where not, this
            // thread holds ROW_BLOCK × T of P, and no S.
            for first in (0..tokens).step_by(ROW_BLOCK) {
                let end = (first + ROW_BLOCK).min(tokens);
                let p = if self.squares_per_head {
                    &mut p[..(end - first) * tokens]
                } else {
                    &mut p[first * tokens..end * tokens]
                };
                attend_rows(
                    &query[first * head_dim..end * head_dim],
                    keys,
                    values,
                    head_dim,
                    first,
                    &layer.rule,
                    (p, Some(&mut e[first..end])),
                    &mut o[first * head_dim..end * head_dim],
                );
                if let Some(made) = &mut made {
                    made.attention_rows(first, p, &e[first..end]);
                }
            }
            let made_whole = !self.squares_per_head && self.captures_wanted;
            if made_whole {
                context_similarity(o, head_dim, s);
            }
            if let Some(made) = made {
                made.finish(if made_whole {
                    HeadSimilarity::Stored(s)
                } else {
                    HeadSimilarity::Outputs(o, head_dim)
                });
            }
            for (row, values) in context.chunks_mut(width).zip(o.chunks(head_dim)) {
                row[i * head_dim..(i + 1) * head_dim].copy_from_slice(values);
            }
            if let Some(ablation) = self.ablation {
                let columns = i * head_dim..(i + 1) * head_dim;
                ablation.layer(l).apply(head, context, width, columns);
            }
        }
    }

    /// OLMo 2's RMSNorm of all heads' queries (and of all key/value heads'
    /// keys) of each token: this thread posts the sums of squares of its
    /// heads' (and of the key/value heads whose first query head is its,
    /// so each is counted once), and after a barrier normalises its own
    /// columns by the totals.
    fn norm_across_heads(
        &self,
        me: usize,
        (heads, kv_heads): (Range<usize>, Range<usize>),
        queries: &mut [f32],
        keys: &mut [f32],
        norms: &QkNormsCpu,
    ) {
        let (tokens, head_dim) = (self.shape.tokens, self.shape.head_dim);
        let group = self.shape.heads / self.shape.kv_heads.max(1);
        let (width, kv_width) = (heads.len() * head_dim, kv_heads.len() * head_dim);
        let mut counted_kv = kv_heads.clone().filter(|kv| heads.contains(&(kv * group)));
        let counted_keys = match (counted_kv.clone().next(), counted_kv.next_back()) {
            (Some(first), Some(last)) => {
                (first - kv_heads.start) * head_dim..(last + 1 - kv_heads.start) * head_dim
            }
            _ => 0..0,
        };
        {
            let mut post = self.square_sums[me].write().expect("mailbox");
            post.clear();
            let square_sum = |row: &[f32]| row.iter().map(|v| v * v).sum::<f32>();
            post.extend(queries.chunks(width).map(square_sum));
            post.extend(
                keys.chunks(kv_width)
                    .map(|row| square_sum(&row[counted_keys.clone()])),
            );
        }
        self.barrier.wait();
        let mut totals = vec![0.0f32; 2 * tokens];
        for post in &self.square_sums {
            let post = post.read().expect("mailbox");
            if post.len() == totals.len() {
                for (total, sum) in totals.iter_mut().zip(post.iter()) {
                    *total += sum;
                }
            }
        }
        let (query_totals, key_totals) = totals.split_at(tokens);
        let (query_columns, key_columns) = (
            heads.start * head_dim..heads.end * head_dim,
            kv_heads.start * head_dim..kv_heads.end * head_dim,
        );
        for (block, norm, totals, columns) in [
            (queries, &norms.query, query_totals, query_columns),
            (keys, &norms.key, key_totals, key_columns),
        ] {
            if let Some((gamma, eps)) = norm.rms() {
                let whole = gamma.len() as f32;
                for (row, total) in block.chunks_mut(columns.len()).zip(totals) {
                    let inverse = 1.0 / (total / whole + eps).sqrt();
                    for (v, g) in row.iter_mut().zip(&gamma[columns.clone()]) {
                        *v = g * (*v * inverse);
                    }
                }
            }
        }
    }

    /// Posts this thread's partial sum of the attention-output projection
    /// (its heads' rows of that weight), for every thread to add up after
    /// the barrier.
    fn post_attention_output(&self, scratch: &Scratch, layer: &LayerCpu) {
        let (tokens, hidden, head_dim) =
            (self.shape.tokens, self.shape.hidden, self.shape.head_dim);
        let heads = &scratch.heads;
        let width = heads.len() * head_dim;
        let mut partial = self.attention_partials[scratch.me]
            .write()
            .expect("mailbox");
        partial.resize(tokens * hidden, 0.0);
        layer.attention_output.weight().product(
            MatRef::new(&scratch.context, tokens, width),
            heads.start * head_dim..heads.end * head_dim,
            0..hidden,
            &mut partial,
            false,
        );
    }

    /// The feed-forward phase, once every thread has posted its attention
    /// output: the attended state (the partial sums added up, with bias and
    /// residual), then this thread's intermediate columns and its posted
    /// partial sum of the down projection.
    fn feed_forward(&self, scratch: &mut Scratch, layer: &LayerCpu) {
        let shape = self.shape;
        let (tokens, hidden) = (shape.tokens, shape.hidden);
        let Scratch {
            me,
            columns,
            x,
            attended,
            normed,
            intermediate,
            multiplier,
            no_bias,
            ..
        } = scratch;
        let after_attention = if shape.pre_norm {
            &layer.attention_output_norm
        } else {
            &layer.attention_norm
        };
        sum_partials(
            &self.attention_partials,
            layer.attention_output.bias(),
            x,
            attended,
            sum_norm(shape.pre_norm, after_attention),
        );
        let input = if shape.pre_norm {
            // x is still the layer's input: only `add_feed_forward` overwrites it.
            normed.copy_from_slice(if layer.parallel_residual { x } else { attended });
            if let Some(norm) = &layer.feed_forward_norm {
                norm.forward(normed);
            }
            &*normed
        } else {
            &*attended
        };
        let bias = &layer.up.bias();
        let bias = if bias.is_empty() {
            &*no_bias
        } else {
            &bias[columns.clone()]
        };
        let mut partial = self.feed_forward_partials[*me].write().expect("mailbox");
        partial.resize(tokens * hidden, 0.0);
        // Rows are independent here: a block of them at a time, so that the
        // intermediate columns take FEED_FORWARD_ROWS rows, not T.
        for first in (0..tokens).step_by(FEED_FORWARD_ROWS) {
            let rows = first..(first + FEED_FORWARD_ROWS).min(tokens);
            let block = rows.len() * columns.len();
            let intermediate = &mut intermediate[..block];
            let states = MatRef::new(
                &input[rows.start * hidden..rows.end * hidden],
                rows.len(),
                hidden,
            );
            project_columns(&layer.up, states, hidden, columns.clone(), intermediate);
            kernels::activate(intermediate, bias, layer.activation);
            if layer.gated {
                let multiplier = &mut multiplier[..block];
                let half = shape.intermediate;
                let gate_columns = half + columns.start..half + columns.end;
                project(&layer.up, states, hidden, gate_columns, multiplier);
                for (v, m) in intermediate.iter_mut().zip(&*multiplier) {
                    *v *= m;
                }
            }
            layer.down.weight().product(
                MatRef::new(intermediate, rows.len(), columns.len()),
                columns.clone(),
                0..hidden,
                &mut partial[rows.start * hidden..rows.end * hidden],
                false,
            );
        }
    }

    /// The layer's output, once every thread has posted its feed-forward
    /// partial sum: they added up, with bias and residual, into `x`.
    fn add_feed_forward(&self, scratch: &mut Scratch, layer: &LayerCpu) {
        let pre_norm = self.shape.pre_norm;
        let after_feed_forward = if pre_norm {
            &layer.feed_forward_output_norm
        } else {
            &layer.feed_forward_norm
        };
        sum_partials(
            &self.feed_forward_partials,
            layer.down.bias(),
            &scratch.attended,
            &mut scratch.x,
            sum_norm(pre_norm, after_feed_forward),
        );
    }
}

/// `out = x·W[:, columns] + b[columns]` (the bias where the projection has one).
fn project(dense: &DenseCpu, x: MatRef, inputs: usize, columns: Range<usize>, out: &mut [f32]) {
    let bias = dense.bias();
    let seeded = !bias.is_empty();
    if seeded {
        kernels::seed_rows(out, &bias[columns.clone()]);
    }
    dense.weight().product(x, 0..inputs, columns, out, seeded);
}

/// `out = x·W[:, columns]`, the bias left to the activation's pass.
fn project_columns(
    dense: &DenseCpu,
    x: MatRef,
    inputs: usize,
    columns: Range<usize>,
    out: &mut [f32],
) {
    dense.weight().product(x, 0..inputs, columns, out, false);
}

/// Head `index`'s d columns of `block` (T rows of `width`) into `out` (T × d).
fn gather_head(block: &[f32], width: usize, index: usize, head_dim: usize, out: &mut [f32]) {
    for (row, values) in out.chunks_mut(head_dim).zip(block.chunks(width)) {
        row.copy_from_slice(&values[index * head_dim..(index + 1) * head_dim]);
    }
}

/// Where a sub-layer's end normalises: a pre-norm layer's norm after a
/// sub-layer (if any) on its output, a post-norm layer's on the residual sum.
fn sum_norm<'a>(pre_norm: bool, norm: &'a Option<NormCpu>) -> SumNorm<'a> {
    match norm {
        None => SumNorm::None,
        Some(norm) if pre_norm => SumNorm::OnSublayer(norm.row_norm()),
        Some(norm) => SumNorm::AfterResidual(norm.row_norm()),
    }
}

/// `out = residual + bias + every thread's partial sum`, normalised where
/// `norm` says.
fn sum_partials(
    partials: &[RwLock<Vec<f32>>],
    bias: &[f32],
    residual: &[f32],
    out: &mut [f32],
    norm: SumNorm,
) {
    let posts: Vec<_> = partials
        .iter()
        .map(|post| post.read().expect("mailbox"))
        .collect();
    let posts: Vec<&[f32]> = posts.iter().map(|post| post.as_slice()).collect();
    kernels::sum_rows(out, &posts, bias, residual, norm);
}
