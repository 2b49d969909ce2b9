//! What the two stacks share — the post-norm encoder of the BERT-like
//! families ([`super::encoder`]) and the pre-norm stack of the decoders and
//! ModernBERT ([`super::decoder`]) — so that neither imports the other: the
//! trait both implement, where a pass writes what it captures, why it stops
//! early, host views of tensors, and the steps of their tensor paths that
//! are the same in both: the feed-forward activation and a layer's heads
//! handed to the attention core ([`crate::kernels::attention`], the one
//! place a head's P, O and S are made).

use super::team;
use crate::kernels::attention::{attend, ScoreRule};
use crate::kernels::Activation;
use candle_core::{CpuStorage, Device, Result, Storage, StorageRef, Tensor};
use std::ops::Range;

/// A stack of attention layers that captures every head.
pub trait AttentionStack {
    /// Where its tensors live.
    fn device(&self) -> &Device;

    /// Runs one sequence of T tokens, writing every layer's P, O and S
    /// into `out`; `cancelled` is polled between layers, and what was
    /// written by then is left as it is.
    fn forward_into(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        out: CaptureBuffers,
    ) -> std::result::Result<(), ForwardError>;

    /// How each attention layer, in the order the pass runs them, makes
    /// its heads' attention (the same for every input).
    fn score_rules(&self) -> Vec<ScoreRule>;
}

/// Where a pass writes what it captures: P and S are L×H×T×T, O is L×H×T×d,
/// each row-major.
pub struct CaptureBuffers<'a> {
    pub attention: &'a mut [f32],
    pub head_outputs: &'a mut [f32],
    pub similarity: &'a mut [f32],
}

impl CaptureBuffers<'_> {
    /// An error unless the buffers hold `layers` layers of `heads` heads
    /// for `tokens` tokens and vectors of `head_dim`.
    pub fn check(&self, layers: usize, heads: usize, tokens: usize, head_dim: usize) -> Result<()> {
        let square = layers * heads * tokens * tokens;
        if self.attention.len() != square
            || self.similarity.len() != square
            || self.head_outputs.len() != layers * heads * tokens * head_dim
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
            head_outputs: &mut self.head_outputs[at(vectors)],
            similarity: &mut self.similarity[at(square)],
        }
    }
}

/// Why a forward pass stopped early.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("cancelled")]
    Cancelled,
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

/// One layer's captures on the host, row-major: P and S (H×T×T), O
/// (H×T×d), and the queries (H×T×d) and keys (H_kv×T×d) as the scores read
/// them (rotated, unscaled), from which P can be made again.
pub struct LayerCaptures<'a> {
    pub attention: &'a [f32],
    pub head_outputs: &'a [f32],
    pub similarity: &'a [f32],
    pub queries: &'a [f32],
    pub keys: &'a [f32],
}

/// Receives one head's P and S (T×T each) as soon as the head is made, on
/// the thread that made it: `(layer, head, attention, similarity)`. A
/// caller's work on each head then runs on every thread of the pass, while
/// the head is in that core's cache.
pub type HeadSink<'a> = dyn Fn(usize, usize, &[f32], &[f32]) + Sync + 'a;

/// Where one layer's heads write P and S (H×T×T) and O (H×T×d).
pub struct LayerAttention<'a> {
    pub attention: &'a mut [f32],
    pub head_outputs: &'a mut [f32],
    pub similarity: &'a mut [f32],
}

/// A layer's heads through the attention core, from their queries (H×T×d)
/// and the keys and values (H_kv×T×d) of their key/value heads: query head
/// h reads key/value head h / (H / H_kv), as transformers' `repeat_kv`
/// lays them out. The heads are shared out among threads leased from the
/// process's budget.
pub(in crate::model) fn attend_layer(
    queries: &[f32],
    keys: &[f32],
    values: &[f32],
    (tokens, head_dim): (usize, usize),
    rule: &ScoreRule,
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
    let mut head_outputs = team::pieces(out.head_outputs, heads, vectors, &ranges);
    let mut similarity = team::pieces(out.similarity, heads, square, &ranges);
    let run = |range: Range<usize>, p: &mut [f32], o: &mut [f32], s: &mut [f32]| {
        for (i, head) in range.enumerate() {
            let kv = head / group.max(1);
            attend(
                &queries[head * vectors..][..vectors],
                &keys[kv * vectors..][..vectors],
                &values[kv * vectors..][..vectors],
                head_dim,
                rule,
                &mut p[i * square..][..square],
                &mut o[i * vectors..][..vectors],
                &mut s[i * square..][..square],
            );
        }
    };
    std::thread::scope(|scope| {
        let mut shares = ranges
            .into_iter()
            .zip(
                attention
                    .iter_mut()
                    .zip(&mut head_outputs)
                    .zip(&mut similarity),
            )
            .filter(|(range, _)| !range.is_empty());
        let first = shares.next();
        for (range, ((p, o), s)) in shares {
            let run = &run;
            scope.spawn(move || run(range, p[0], o[0], s[0]));
        }
        if let Some((range, ((p, o), s))) = first {
            run(range, p[0], o[0], s[0]);
        }
    });
}

/// Heads' output vectors (H×T×d) side by side, T × (H·d), as a tensor on
/// `device`: the input of the attention's output projection.
pub(in crate::model) fn heads_side_by_side(
    head_outputs: &[f32],
    heads: usize,
    tokens: usize,
    device: &Device,
) -> Result<Tensor> {
    let head_dim = head_outputs.len() / (heads * tokens).max(1);
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
