//! A decoder's final norm and language-model head: the hidden states of
//! the last layer (or, for the logit lens, of any layer) → one logit per
//! vocabulary entry. The head's matrix is the checkpoint's `lm_head.weight`
//! (GPT-NeoX's `embed_out.weight`) where it has one, else the token
//! embeddings (tied, as GPT-2, Gemma and SmolLM2 are); Gemma 2 soft-caps
//! the logits (`final_logit_softcapping`). An encoder on the pre-norm
//! stack (ModernBERT, EmbeddingGemma) has the final norm alone, through
//! which an ablation reads its last hidden states.
//!
//! The study never reads it, so a model loads it only when asked
//! ([`crate::model::Model::lm_head`]): its matrix is the largest of many
//! checkpoints (0.5 B parameters of Llama 3 8B).

use super::blocks;
use crate::kernels::MatRef;
use crate::model::blocks::{Dense, Norm};
use crate::model::config::pre_norm::{final_norm_name, head_names};
use crate::model::config::ModelConfig;
use crate::model::weight::{Weight, WeightBuilder};
use crate::model::Family;
use candle_core::{Result, Tensor};

thread_local! {
    /// A block of rows' logits ([`LmHead::next_token_losses`]), kept for
    /// the thread's next block.
    static LOGITS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// −log softmax(logits)[next]: exponentials in f32, in the CPU's widest
/// vectors (one logit row is a vocabulary of them, T rows a pass; an
/// importance grid makes 271 passes), summed in f64 a block at a time.
fn next_token_loss(logits: &[f32], next: usize) -> f64 {
    let (max, sum) = crate::kernels::exp_sum(logits);
    sum.ln() - f64::from(logits[next] - max)
}

/// The final norm and, for a causal decoder, the projection to the
/// vocabulary (an encoder on the pre-norm stack has the norm alone: its
/// last hidden states are through it).
pub struct LmHead {
    norm: Norm,
    projection: Option<Dense>,
    soft_cap: Option<f32>,
    vocab: usize,
    family: Family,
}

impl LmHead {
    /// From the head's tensors under the loader's names (`vb`: the final
    /// norm, and the head's own matrix where the checkpoint has one), else
    /// tied to `embeddings`, the token table.
    pub(in crate::model) fn load(
        vb: &WeightBuilder,
        config: &ModelConfig,
        embeddings: &Weight,
    ) -> Result<Self> {
        let shape = config.pre_norm.as_ref().ok_or_else(|| {
            candle_core::Error::Msg(format!("{} has no final norm", config.family))
        })?;
        let norm = blocks::norm(vb.pp(final_norm_name(config.family)), config, shape)?;
        let projection = match head_names(config.family).filter(|_| config.is_causal()) {
            Some((_, head_name)) => {
                let shape_of_head = (config.vocab_size, config.hidden_size);
                let matrix = if vb.contains_tensor(&format!("{head_name}.weight")) {
                    vb.pp(head_name).weight(shape_of_head, "weight")?
                } else {
                    embeddings.clone()
                };
                Some(Dense::new(&matrix, None)?)
            }
            None => None,
        };
        Ok(Self {
            norm,
            projection,
            soft_cap: shape.variant.final_logit_softcapping.map(|cap| cap as f32),
            vocab: config.vocab_size,
            family: config.family,
        })
    }

    /// Whether `name` (as the loader normalises it) is one of the head's
    /// tensors: its matrix or its final norm.
    pub fn holds_tensor(family: Family, name: &str) -> bool {
        Self::is_head_matrix(family, name)
            || name
                .strip_prefix(final_norm_name(family))
                .is_some_and(|rest| rest.starts_with('.'))
    }

    /// Whether `name` is the head's own matrix, which the study's loads skip.
    pub fn is_head_matrix(family: Family, name: &str) -> bool {
        head_names(family).is_some_and(|(_, head)| name.strip_prefix(head) == Some(".weight"))
    }

    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// Logits (T × vocab) of hidden states (T × hidden) that have not yet
    /// been through the final norm: the residual stream after any layer.
    pub fn logits(&self, residual: &Tensor) -> Result<Tensor> {
        self.logits_of_normed(&self.normed(residual)?)
    }

    /// Hidden states (T × hidden) through the final norm: the last hidden
    /// states, as transformers returns them.
    pub fn normed(&self, residual: &Tensor) -> Result<Tensor> {
        self.norm.forward(residual)
    }

    /// −log p(`next[i]`) in nats of each row i of `normed` (rows × hidden,
    /// through the final norm) whose next token is given. On the CPU a
    /// block of rows at a time on each thread of the budget, its logits in
    /// a buffer the thread keeps: neither the T × vocab logits nor copies
    /// of them are ever made (an importance grid does this once a pass);
    /// elsewhere a block's logits through [`LmHead::logits_of_normed`].
    pub fn next_token_losses(
        &self,
        normed: &[f32],
        next: &[Option<usize>],
        device: &candle_core::Device,
    ) -> Result<Vec<Option<f64>>> {
        const BLOCK: usize = 128;
        let projection = self.projection()?;
        let (rows, vocab) = (next.len(), self.vocab);
        let hidden = normed.len() / rows.max(1);
        let blocks = rows.div_ceil(BLOCK);
        let block_rows = |b: usize| b * BLOCK..((b + 1) * BLOCK).min(rows);
        let losses_of = |logits: &[f32], range: std::ops::Range<usize>| {
            let first = range.start;
            range
                .map(|i| {
                    let at = (i - first) * vocab;
                    next[i].map(|n| next_token_loss(&logits[at..at + vocab], n))
                })
                .collect::<Vec<_>>()
        };
        let Ok(dense) = projection.cpu() else {
            let mut losses = Vec::with_capacity(rows);
            for b in 0..blocks {
                let range = block_rows(b);
                let x = &normed[range.start * hidden..range.end * hidden];
                let x = Tensor::from_slice(x, (range.len(), hidden), device)?;
                let logits = self.logits_of_normed(&x)?.flatten_all()?.to_vec1::<f32>()?;
                losses.extend(losses_of(&logits, range));
            }
            return Ok(losses);
        };
        let blocks = crate::threads::map_indices(blocks, crate::threads::total(), |b| {
            let range = block_rows(b);
            LOGITS.with_borrow_mut(|logits| {
                logits.resize(range.len() * vocab, 0.0);
                let x = MatRef::new(
                    &normed[range.start * hidden..range.end * hidden],
                    range.len(),
                    hidden,
                );
                dense
                    .weight()
                    .product(x, 0..hidden, 0..vocab, logits, false);
                if let Some(cap) = self.soft_cap {
                    // As candle's `logits / cap`, `tanh`, `· cap` compute it.
                    let inverse = (1.0 / f64::from(cap)) as f32;
                    for v in logits.iter_mut() {
                        *v = (*v * inverse).tanh() * cap;
                    }
                }
                losses_of(logits, range)
            })
        });
        Ok(blocks.into_iter().flatten().collect())
    }

    fn projection(&self) -> Result<&Dense> {
        self.projection.as_ref().ok_or_else(|| {
            candle_core::Error::Msg(format!(
                "{} is not a causal decoder: it has no language-model head",
                self.family
            ))
        })
    }

    /// Logits (T × vocab) of hidden states already through the final norm.
    pub fn logits_of_normed(&self, normed: &Tensor) -> Result<Tensor> {
        let logits = self.projection()?.forward(normed)?;
        match self.soft_cap {
            Some(cap) => (logits / f64::from(cap))?.tanh()? * f64::from(cap),
            None => Ok(logits),
        }
    }
}
