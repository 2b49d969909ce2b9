//! Ablation (ANALYSIS.md §9): a pass in which a set of heads writes
//! nothing (`zero`) or its mean output over the input's positions (`mean`)
//! into the attention's output projection, and the effect of that on the
//! model's output: each position's next-token loss (a causal decoder) and
//! how far each token's last hidden state turns (every model).
//!
//! An ablated pass is the one pass ([`Model::run`]) with an observer that
//! names the heads ([`PassObserver::ablation`]); each path puts the
//! ablation where the heads' outputs meet the output projection, in
//! `heads::LayerAblation::apply`, and leaves the heads' own captures as they
//! were made. The effects are read from the residual stream after the last
//! layer, through the final norm where the model has one.

pub(in crate::model) mod heads;

pub use heads::{Ablation, AblationMode};

use super::predict::ResidualRows;
use super::stack::{ForwardError, PassInput, PassObserver};
use super::{Model, Network};
use anyhow::{anyhow, bail};
use candle_core::Tensor;
use std::ops::ControlFlow;

/// An observer that ablates: `inner` watches the pass as before.
pub struct Ablated<'a> {
    pub inner: &'a dyn PassObserver,
    pub ablation: &'a Ablation,
}

impl PassObserver for Ablated<'_> {
    fn before_layer(&self, layer: usize) -> ControlFlow<()> {
        self.inner.before_layer(layer)
    }

    fn heads(&self) -> Option<&dyn super::HeadObserver> {
        self.inner.heads()
    }

    fn ablation(&self) -> Option<&Ablation> {
        Some(self.ablation)
    }
}

/// What a pass gives an ablation to compare: each token's last hidden
/// state and, for a causal decoder, each position's next-token loss; and,
/// where asked, the residual stream after every layer, from which an
/// ablated pass resumes at its first ablated layer.
pub struct PassOutcome {
    /// T × hidden: the residual stream after the last layer, through the
    /// final norm where the model has one (what transformers returns as
    /// `last_hidden_state`).
    pub hidden: Vec<f32>,
    /// Per position i < T − 1: −log p(ids[i + 1]) in nats; empty for a
    /// model without a language-model head.
    pub losses: Vec<f64>,
    /// L × T × hidden, or empty where not asked for.
    pub residuals: Vec<f32>,
}

/// The effect of an ablation on one input, against the same input
/// without it (ANALYSIS.md §9).
#[derive(Clone, Debug, PartialEq)]
pub struct AblationEffect {
    pub ablation: Ablation,
    /// Per position i < T − 1, the next-token loss without and with the
    /// ablation (nats); empty for a model without a language-model head.
    pub loss: Vec<f64>,
    pub ablated_loss: Vec<f64>,
    /// The mean change of the next-token loss; `None` without a head.
    pub delta_loss: Option<f64>,
    /// Per token, 1 − cos of its last hidden state without and with.
    pub token_change: Vec<f64>,
    /// Their mean.
    pub output_change: f64,
}

impl AblationEffect {
    /// The mean next-token loss without and with the ablation; `None`
    /// without a head.
    pub fn mean_losses(&self) -> Option<(f64, f64)> {
        self.delta_loss
            .map(|_| (mean(&self.loss), mean(&self.ablated_loss)))
    }

    fn between(
        ablation: Ablation,
        base: &PassOutcome,
        ablated: PassOutcome,
        hidden: usize,
    ) -> Self {
        let token_change: Vec<f64> = base
            .hidden
            .chunks_exact(hidden.max(1))
            .zip(ablated.hidden.chunks_exact(hidden.max(1)))
            .map(|(a, b)| 1.0 - cosine(a, b))
            .collect();
        let delta_loss =
            (!base.losses.is_empty()).then(|| mean(&ablated.losses) - mean(&base.losses));
        Self {
            ablation,
            loss: base.losses.clone(),
            ablated_loss: ablated.losses,
            delta_loss,
            output_change: mean(&token_change),
            token_change,
        }
    }
}

/// The effect of ablating each head alone: `head_importance`, L × H.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadImportance {
    pub mode: AblationMode,
    pub layers: usize,
    pub heads: usize,
    /// `delta_loss` of each head, layer by layer; `None` without a head.
    pub delta_loss: Option<Vec<f64>>,
    /// `output_change` of each head, layer by layer.
    pub output_change: Vec<f64>,
}

impl HeadImportance {
    /// The figure heads are ranked by, and its name: `delta_loss` where the
    /// model has a language-model head, else `output_change`.
    pub fn ranking(&self) -> (&[f64], &'static str) {
        match &self.delta_loss {
            Some(delta) => (delta, "delta_loss"),
            None => (&self.output_change, "output_change"),
        }
    }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    let norms = (aa * bb).sqrt();
    if norms > 0.0 {
        ab / norms
    } else {
        1.0
    }
}

impl Model {
    /// One pass of `input_ids` under `observer` (which may ablate), from
    /// layer `first` on with `residual` its input where given, and what an
    /// ablation compares of it, with the residual stream after every
    /// layer where `keep_residuals` asks (a whole pass only).
    pub fn pass_outcome(
        &self,
        input_ids: &[u32],
        start: Option<(usize, &[f32])>,
        observer: &dyn PassObserver,
        keep_residuals: bool,
    ) -> anyhow::Result<PassOutcome> {
        let (tokens, hidden) = (input_ids.len(), self.config.hidden_size);
        let input = match start {
            Some((layer, residual)) => PassInput::Resumed {
                input_ids,
                layer,
                residual,
            },
            None => PassInput::Sequence(input_ids),
        };
        let stack = self.network.stack();
        let mut rows = if stack.hands_out_layers() || stack.device().is_cpu() {
            let last = self.layers().saturating_sub(1);
            let wanted = |layer| keep_residuals || layer == last;
            let mut sink = ResidualRows {
                wanted: &wanted,
                layers: Vec::new(),
            };
            self.run(input, observer, &mut sink)?;
            sink.layers.into_iter().flat_map(|(_, rows)| rows).collect()
        } else {
            // Off the CPU the encoder keeps every layer.
            let mut captures = crate::captures::Captures::default();
            let dims = (self.layers(), self.heads(), tokens, self.config.head_dim());
            let residuals = self.layers() * tokens * hidden;
            let mut sink = super::capture_modes::KeepAll::new(&mut captures, dims, residuals);
            self.run(input, observer, &mut sink)?;
            captures.residuals
        };
        let last = rows.split_off(rows.len() - tokens * hidden);
        let residuals = if keep_residuals {
            rows.extend_from_slice(&last);
            rows
        } else {
            Vec::new()
        };
        if matches!(self.network, Network::PostNorm(_)) {
            // The last layer's output is the encoder's last hidden state:
            // its norm is the layer's own.
            return Ok(PassOutcome {
                hidden: last,
                losses: Vec::new(),
                residuals,
            });
        }
        let head = self.final_head()?;
        let device = stack.device().clone();
        let x = Tensor::from_slice(&last, (tokens, hidden), &device)?;
        let hidden = head.normed(&x)?.flatten_all()?.to_vec1::<f32>()?;
        let losses = if self.config.is_causal() {
            let next: Vec<Option<usize>> = (0..tokens)
                .map(|i| input_ids.get(i + 1).map(|&id| id as usize))
                .collect();
            let losses = head.next_token_losses(&hidden, &next, &device)?;
            losses.into_iter().flatten().collect()
        } else {
            Vec::new()
        };
        Ok(PassOutcome {
            hidden,
            losses,
            residuals,
        })
    }

    /// The effect of `ablation` on `input_ids` against `base`, the same
    /// input's [`Model::pass_outcome`] without it (resumed from its
    /// residual stream where it kept it).
    pub fn ablate_against(
        &self,
        input_ids: &[u32],
        base: &PassOutcome,
        ablation: &Ablation,
        cancelled: &dyn Fn() -> bool,
    ) -> anyhow::Result<AblationEffect> {
        for &(layer, head) in ablation.heads() {
            if layer >= self.layers() || head >= self.heads() {
                bail!(
                    "head {layer}.{head} is not in the model ({} layers × {} heads; both count from 0)",
                    self.layers(),
                    self.heads()
                );
            }
        }
        let observer = Ablated {
            inner: &cancelled,
            ablation,
        };
        // Nothing changes before the first ablated layer: from there on,
        // where the base kept the residual stream.
        let size = input_ids.len() * self.config.hidden_size;
        let start = ablation
            .resumes_at()
            .filter(|&layer| base.residuals.len() >= layer * size)
            .map(|layer| (layer, &base.residuals[(layer - 1) * size..layer * size]));
        let ablated = self.pass_outcome(input_ids, start, &observer, false)?;
        Ok(AblationEffect::between(
            ablation.clone(),
            base,
            ablated,
            self.config.hidden_size,
        ))
    }

    /// The effect of `ablation` on `input_ids` (two passes: without and with).
    pub fn ablate(
        &self,
        input_ids: &[u32],
        ablation: &Ablation,
        cancelled: &dyn Fn() -> bool,
    ) -> anyhow::Result<AblationEffect> {
        // Kept where the ablated pass can resume from it.
        let resumes = ablation.resumes_at().is_some();
        let base = self.pass_outcome(input_ids, None, &cancelled, resumes)?;
        self.ablate_against(input_ids, &base, ablation, cancelled)
    }

    /// `head_importance`: the effect of ablating each head alone, L × H
    /// ablated passes after one without, each from its head's layer on;
    /// `head_done` hears how many heads are done of how many.
    pub fn head_importance(
        &self,
        input_ids: &[u32],
        mode: AblationMode,
        cancelled: &dyn Fn() -> bool,
        head_done: &dyn Fn(usize, usize),
    ) -> anyhow::Result<HeadImportance> {
        let base = self.pass_outcome(input_ids, None, &cancelled, true)?;
        let (layers, heads) = (self.layers(), self.heads());
        let mut importance = HeadImportance {
            mode,
            layers,
            heads,
            delta_loss: (!base.losses.is_empty()).then(Vec::new),
            output_change: Vec::with_capacity(layers * heads),
        };
        for layer in 0..layers {
            for head in 0..heads {
                if cancelled() {
                    return Err(anyhow!(ForwardError::Cancelled));
                }
                let ablation = Ablation::new(mode, [(layer, head)]);
                let effect = self.ablate_against(input_ids, &base, &ablation, cancelled)?;
                if let (Some(grid), Some(delta)) = (&mut importance.delta_loss, effect.delta_loss) {
                    grid.push(delta);
                }
                importance.output_change.push(effect.output_change);
                head_done(layer * heads + head + 1, layers * heads);
            }
        }
        Ok(importance)
    }
}

/// Parses heads written `layer.head` (both from 0), separated by commas:
/// `3.4,5.1`.
pub fn parse_heads(text: &str) -> Result<Vec<(usize, usize)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            let parsed = part
                .split_once('.')
                .and_then(|(l, h)| Some((l.trim().parse().ok()?, h.trim().parse().ok()?)));
            parsed.ok_or_else(|| {
                format!("`{part}` is not a head: write layer.head, both from 0 (e.g. 3.4)")
            })
        })
        .collect()
}
