//! The CPU pass: each thread of a team owns some heads and some
//! feed-forward columns of every layer, and the threads meet at a barrier to
//! add up their partial sums (see [`crate::model::team`]).

use super::blocks::*;
use crate::kernels::attention::{attend, AttentionMask, ScoreRule};
use crate::kernels::{self, MatRef};
use crate::model::config::ModelConfig;
use crate::model::stack::ForwardError;
use crate::model::team::Barrier;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;

/// What the threads of one CPU pass share.
pub(super) struct Pass<'a> {
    pub(super) config: &'a ModelConfig,
    pub(super) input_ids: &'a [u32],
    /// The position id of each token.
    pub(super) positions: Vec<u32>,
    pub(super) embeddings: EmbeddingsCpu<'a>,
    /// The distinct layers of weights.
    pub(super) layers: Vec<LayerCpu<'a>>,
    /// The layer each attention layer runs, in order.
    pub(super) schedule: &'a [usize],
    /// Each thread's heads.
    pub(super) heads: Vec<Range<usize>>,
    /// Each thread's feed-forward intermediate columns.
    pub(super) columns: Vec<Range<usize>>,
    pub(super) barrier: Barrier,
    /// The layer at which the pass stops (`usize::MAX`: none).
    pub(super) stop_at: AtomicUsize,
    /// Each thread's partial sum of the attention-output projection, T × hidden.
    pub(super) attention_partials: Vec<RwLock<Vec<f32>>>,
    /// Each thread's partial sum of the feed-forward's down projection.
    pub(super) feed_forward_partials: Vec<RwLock<Vec<f32>>>,
}

/// One thread's share of the capture: its heads' blocks of every layer.
pub(super) struct Worker<'a> {
    pub(super) index: usize,
    pub(super) attention: Vec<&'a mut [f32]>,
    pub(super) head_outputs: Vec<&'a mut [f32]>,
    pub(super) similarity: Vec<&'a mut [f32]>,
}

impl Pass<'_> {
    /// One thread's whole pass. Only the first thread polls `cancelled` (it
    /// need not be shareable): it posts the layer in `stop_at` and skips to
    /// the layer's first barrier, after which every thread sees it, so all
    /// stop at the same layer (in the last layer, which has no barrier, the
    /// others just finish).
    pub(super) fn run(
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
        let rule = ScoreRule::new(head_dim, AttentionMask::default());
        self.embeddings
            .forward(self.input_ids, &self.positions, &mut x);
        let count = self.schedule.len();
        for (l, layer) in self.schedule.iter().map(|&i| &self.layers[i]).enumerate() {
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
                    attend(
                        query,
                        key,
                        value,
                        head_dim,
                        &rule,
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
pub(super) fn sum_partials(
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
