//! A decoder's final norm and language-model head: the hidden states of
//! the last layer (or, for the logit lens, of any layer) → one logit per
//! vocabulary entry. The head's matrix is the checkpoint's `lm_head.weight`
//! (GPT-NeoX's `embed_out.weight`) where it has one, else the token
//! embeddings (tied, as GPT-2, Gemma and SmolLM2 are); Gemma 2 soft-caps
//! the logits (`final_logit_softcapping`).
//!
//! The study never reads it, so a model loads it only when asked
//! ([`crate::model::Model::lm_head`]): its matrix is the largest of many
//! checkpoints (0.5 B parameters of Llama 3 8B).

use super::blocks;
use crate::model::blocks::{Dense, Norm};
use crate::model::config::pre_norm::head_names;
use crate::model::config::{ModelConfig, PreNormShape};
use crate::model::weight::{Weight, WeightBuilder};
use crate::model::Family;
use candle_core::{Result, Tensor};

/// The final norm and the projection to the vocabulary.
pub struct LmHead {
    norm: Norm,
    projection: Dense,
    soft_cap: Option<f32>,
    vocab: usize,
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
        let (shape, (norm_name, head_name)) = Self::names(config)?;
        let norm = blocks::norm(vb.pp(norm_name), config, shape)?;
        let shape_of_head = (config.vocab_size, config.hidden_size);
        let matrix = if vb.contains_tensor(&format!("{head_name}.weight")) {
            vb.pp(head_name).weight(shape_of_head, "weight")?
        } else {
            embeddings.clone()
        };
        Ok(Self {
            norm,
            projection: Dense::new(&matrix, None)?,
            soft_cap: shape.variant.final_logit_softcapping.map(|cap| cap as f32),
            vocab: config.vocab_size,
        })
    }

    /// The family's shape and its head's tensor names, or why it has no
    /// head to load.
    fn names(config: &ModelConfig) -> Result<(&PreNormShape, (&'static str, &'static str))> {
        let shape = config.pre_norm.as_ref().filter(|_| config.is_causal());
        match (shape, head_names(config.family)) {
            (Some(shape), Some(names)) => Ok((shape, names)),
            _ => Err(candle_core::Error::Msg(format!(
                "{} is not a causal decoder: it has no language-model head",
                config.family
            ))),
        }
    }

    /// Whether `name` (as the loader normalises it) is one of the head's
    /// tensors: its matrix or its final norm.
    pub fn holds_tensor(family: Family, name: &str) -> bool {
        head_names(family).is_some_and(|(norm, head)| {
            name.strip_prefix(head) == Some(".weight")
                || name
                    .strip_prefix(norm)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
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

    /// Logits (T × vocab) of hidden states already through the final norm.
    pub fn logits_of_normed(&self, normed: &Tensor) -> Result<Tensor> {
        let logits = self.projection.forward(normed)?;
        match self.soft_cap {
            Some(cap) => (logits / f64::from(cap))?.tanh()? * f64::from(cap),
            None => Ok(logits),
        }
    }
}
