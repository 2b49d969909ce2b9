//! Our encoder for every BERT-like family, written in the style of candle's
//! `models/bert.rs` (every block a struct with `load(vb, &config)` and
//! `forward`), but returning what candle's model keeps private: every
//! layer's attention probabilities P and every head's output O = P·V, with
//! the context similarity S = O·Oᵀ computed alongside (ANALYSIS.md §2).
//!
//! The families differ only where [`super::family`] says: tensor names,
//! embeddings (position ids, token types, a projection) and which weights
//! each layer uses (ALBERT shares them: the encoder holds the distinct
//! layers and a schedule of which one each attention layer runs).
//!
//! Two paths behind the one entry ([`AttentionStack::run`]) share the
//! parameters. On candle tensors (`forward`) it runs on any device. On the
//! CPU the encoder instead borrows the parameters as slices (`cpu()` on
//! each block) and runs [`crate::kernels`] on a team of threads
//! ([`super::team`]) that write P, O and S straight into the sink's
//! buffers: about four times faster than candle's ops at BERT sizes (the
//! profile is in [`crate::kernels`]). Both paths make P, O and S in the one
//! attention core ([`crate::kernels::attention`]). Candle's ops keep every
//! layer (with the residual stream after each where the sink asks); the
//! CPU pass also hands a sink each layer in turn and the residual stream
//! (an ablation keeps only that). The study never recomputes an encoder's
//! P and S ([`AttentionStack::hands_out_layers`] is false), and a
//! key/value cache is refused.
//!
//! One sequence at a time with an all-ones attention mask, as the study's
//! document mode prescribes, so no mask is built or applied.

mod blocks;

use blocks::*;

use super::config::ModelConfig;
use super::cpu_pass::{self, PassShape};
use super::stack::{
    self, hand_out_heads, AttentionStack, Capture, CaptureBuffers, ForwardError, LayerSink,
    PassInput, PassObserver, PassStart, Refusal,
};
use super::weight::WeightBuilder;
use crate::kernels::attention::{AttentionMask, ScoreRule};
use candle_core::{Device, Result, Tensor};

/// Embeddings and the stack of layers; no pooler (the study does not use it).
pub struct Encoder {
    embeddings: Embeddings,
    /// The distinct layers of weights.
    layers: Vec<Layer>,
    /// For each attention layer run, in order, its index into `layers`.
    schedule: Vec<usize>,
    config: ModelConfig,
    device: Device,
}

impl Encoder {
    /// `vb` is rooted at the encoder (names like `embeddings.word_embeddings.weight`).
    pub fn load(vb: WeightBuilder, config: &ModelConfig) -> Result<Self> {
        let embeddings = Embeddings::load(vb.clone(), config)?;
        let family = config.family;
        let layers = (0..config.distinct_layers())
            .map(|index| {
                Layer::load(
                    vb.pp(family.layer_prefix(index, config.inner_group_num)),
                    config,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            embeddings,
            layers,
            schedule: config.layer_schedule(),
            config: config.clone(),
            device: vb.device().clone(),
        })
    }

    /// The CPU pass ([`super::cpu_pass`]) on `threads` threads, after the
    /// embeddings.
    fn forward_cpu(
        &self,
        input_ids: &[u32],
        (first, residual): PassStart,
        observer: &dyn PassObserver,
        capture: Capture,
        threads: usize,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        // Borrow every parameter before any thread starts, so that nothing
        // inside the pass can fail and leave a thread waiting at a barrier.
        let embeddings = self.embeddings.cpu()?;
        let positions = self.config.position_ids(input_ids);
        if !embeddings.fits(input_ids, &positions) {
            return Err(Refusal::OutsideEmbeddings.into());
        }
        let layers = self
            .layers
            .iter()
            .map(Layer::cpu)
            .collect::<Result<Vec<_>>>()?;
        let states = match residual {
            Some(residual) => residual.to_vec(),
            None => {
                let mut states = vec![0.0; tokens * self.config.hidden_size];
                embeddings.forward(input_ids, &positions, &mut states);
                states
            }
        };
        let shape = PassShape {
            tokens,
            hidden: self.config.hidden_size,
            heads: self.config.num_attention_heads,
            kv_heads: self.config.num_attention_heads,
            head_dim: self.config.head_dim(),
            intermediate: self.config.intermediate_size,
            pre_norm: false,
        };
        cpu_pass::run(
            shape,
            (first, &states),
            &layers,
            &self.schedule,
            observer,
            capture,
            threads,
        )
    }

    /// Candle's ops on any device, each layer's heads through the
    /// attention core on the host.
    fn forward_tensors(
        &self,
        input_ids: &[u32],
        (first, residual): PassStart,
        observer: &dyn PassObserver,
        mut out: CaptureBuffers,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        let (heads, head_dim) = (self.config.num_attention_heads, self.config.head_dim());
        let count = self.schedule.len();
        let ids = Tensor::new(input_ids, &self.device)?;
        let positions = Tensor::new(self.config.position_ids(input_ids), &self.device)?;
        let x = match residual {
            Some(residual) => {
                Tensor::from_slice(residual, (tokens, self.config.hidden_size), &self.device)?
            }
            None => self.embeddings.forward(&ids, &positions)?,
        };
        let mut x = Some(x);
        let layers = self.schedule.iter().map(|&index| &self.layers[index]);
        let size = tokens * self.config.hidden_size;
        let to_the_end = out.residuals.is_some();
        for (index, layer) in layers.enumerate().skip(first) {
            if observer.before_layer(index).is_break() {
                return Err(ForwardError::Cancelled);
            }
            let input = x.take().expect("every layer but the last has an output");
            let capture = out.layer(index, heads, tokens, head_dim);
            let ablation = stack::layer_ablation(observer, index);
            let last = index + 1 == count && !to_the_end;
            x = layer.forward(&input, capture, ablation, last)?;
            if let (Some(rows), Some(x)) = (out.residuals.as_deref_mut(), &x) {
                let values = x.flatten_all()?.to_vec1::<f32>()?;
                rows[index * size..][..size].copy_from_slice(&values);
            }
            let made = out.layer(index, heads, tokens, head_dim);
            let made = [
                &*made.attention,
                made.attention_entropy,
                made.similarity,
                made.value_norms,
            ];
            hand_out_heads(observer.heads(), index, tokens, made);
        }
        Ok(())
    }
}

impl AttentionStack for Encoder {
    fn device(&self) -> &Device {
        &self.device
    }

    /// The CPU pass where the tensors are on the CPU, candle's ops
    /// elsewhere, which keep every layer only (they hand out no layers);
    /// no key/value cache.
    fn run(
        &self,
        input: PassInput,
        observer: &dyn PassObserver,
        sink: &mut dyn LayerSink,
    ) -> std::result::Result<(), ForwardError> {
        let Some((input_ids, start)) = input.sequence() else {
            return Err(unsupported(
                "the encoder runs whole sequences: it has no key/value cache",
            ));
        };
        let tokens = input_ids.len();
        let dims = (
            self.schedule.len(),
            self.config.num_attention_heads,
            tokens,
            self.config.head_dim(),
        );
        let capture = Capture::of(sink, dims)?;
        if self.device.is_cpu() {
            let lease = crate::threads::lease(tokens.max(1));
            self.forward_cpu(input_ids, start, observer, capture, lease.threads())
        } else {
            let Capture::Kept(out) = capture else {
                return Err(unsupported(
                    "off the CPU the encoder keeps every layer: it hands out no layer",
                ));
            };
            self.forward_tensors(input_ids, start, observer, out)
        }
    }

    fn hands_out_layers(&self) -> bool {
        false
    }

    fn score_rules(&self) -> Vec<ScoreRule> {
        let rule = ScoreRule::new(self.config.head_dim(), AttentionMask::default());
        vec![rule; self.schedule.len()]
    }
}

/// The error for a pass the encoder does not run.
fn unsupported(what: &'static str) -> ForwardError {
    Refusal::Unsupported(what).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::model::family::Family;

    /// A small config of `family` (ALBERT: 3 layers from 2 groups of 2).
    fn config(family: Family, act: &str) -> ModelConfig {
        ModelConfig {
            family,
            hidden_size: 48,
            embedding_size: family.has_embedding_size().then_some(24),
            num_hidden_layers: 3,
            num_attention_heads: 4,
            intermediate_size: 96,
            max_position_embeddings: 64,
            vocab_size: 200,
            hidden_act: act.into(),
            type_vocab_size: if family == Family::DistilBert { 0 } else { 2 },
            pad_token_id: Some(1),
            num_hidden_groups: if family == Family::Albert { 2 } else { 1 },
            inner_group_num: if family == Family::Albert { 2 } else { 1 },
            ..ModelConfig::bert_base_uncased()
        }
    }

    /// A random encoder with random biases and LayerNorm parameters (the
    /// generator sets 0 and 1) and larger query/key weights, so that
    /// attention is peaked.
    fn encoder(config: &ModelConfig) -> Encoder {
        let mut tensors = super::super::random::random_weights(config, 3).unwrap();
        let names = config.family.layer_names();
        for (name, tensor) in tensors.iter_mut() {
            let pattern = |offset: f32| {
                let values: Vec<f32> = (0..tensor.elem_count())
                    .map(|i| offset + 0.1 * (i as f32 * 0.7).sin())
                    .collect();
                Tensor::from_vec(values, tensor.shape(), &Device::Cpu).unwrap()
            };
            if name.ends_with(".bias") {
                *tensor = pattern(0.0);
            } else if tensor.rank() == 1 {
                *tensor = pattern(1.0);
            } else if name.contains(&format!("{}.", names.query))
                || name.contains(&format!("{}.", names.key))
            {
                *tensor = (&*tensor * 20.0).unwrap();
            }
        }
        let vb = WeightBuilder::new(tensors, &Device::Cpu);
        Encoder::load(vb, config).unwrap()
    }

    /// Runs one path into fresh buffers: (P, O, S, value norms, P's row
    /// entropies); `threads` 0 means the tensor path.
    fn run(
        encoder: &Encoder,
        ids: &[u32],
        threads: usize,
        cancelled: &dyn Fn() -> bool,
    ) -> std::result::Result<[Vec<f32>; 5], ForwardError> {
        let config = &encoder.config;
        let (l, h, t) = (
            config.attention_layers(),
            config.num_attention_heads,
            ids.len(),
        );
        let mut p = vec![f32::NAN; l * h * t * t];
        let mut o = vec![f32::NAN; l * h * t * config.head_dim()];
        let mut s = vec![f32::NAN; l * h * t * t];
        let mut n = vec![f32::NAN; l * h * t];
        let mut e = vec![f32::NAN; l * h * t];
        let out = CaptureBuffers {
            attention: &mut p,
            attention_entropy: &mut e,
            head_outputs: &mut o,
            similarity: &mut s,
            value_norms: &mut n,
            residuals: None,
        };
        if threads == 0 {
            encoder.forward_tensors(ids, (0, None), &cancelled, out)?;
        } else {
            encoder.forward_cpu(ids, (0, None), &cancelled, Capture::Kept(out), threads)?;
        }
        Ok([p, o, s, n, e])
    }

    fn assert_paths_agree(encoder: &Encoder, ids: &[u32], what: &str) {
        let reference = run(encoder, ids, 0, &|| false).unwrap();
        for threads in [1, 2, 3] {
            let fast = run(encoder, ids, threads, &|| false).unwrap();
            let names = ["P", "O", "S", "value norms", "entropies"];
            for (name, (ours, theirs)) in names.iter().zip(fast.iter().zip(&reference)) {
                let scale = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
                for (a, b) in ours.iter().zip(theirs) {
                    assert!(
                        (a - b).abs() <= 1e-5 * scale,
                        "{what}, {threads} threads, {name}: {a} vs {b} (scale {scale})"
                    );
                }
            }
        }
    }

    /// The slice path on any number of threads computes what candle's ops
    /// compute, for every activation and every family (a padding token in
    /// the input moves RoBERTa's positions).
    #[test]
    fn cpu_kernels_match_candle_ops() {
        let ids: Vec<u32> = (0..37).map(|i| (i * 53 % 199) as u32).collect();
        for act in ["gelu", "gelu_new", "relu", "silu"] {
            assert_paths_agree(&encoder(&config(Family::Bert, act)), &ids, act);
        }
        for family in Family::ENCODERS.into_iter().filter(|f| !f.is_pre_norm()) {
            let encoder = encoder(&config(family, "gelu"));
            assert_paths_agree(&encoder, &ids, family.model_type());
        }
    }

    /// Under an ablation both paths ablate alike (zero and mean, a head
    /// of a layer ALBERT runs twice), keep the heads' own captures, and
    /// hand out the same residual stream; the ablation moves it.
    #[test]
    fn both_paths_ablate_alike() {
        use crate::model::ablation::{Ablated, Ablation, AblationMode};
        let config = config(Family::Albert, "gelu_new");
        let encoder = encoder(&config);
        let ids: Vec<u32> = (0..23).map(|i| (i * 31 % 199) as u32).collect();
        let (l, h, t) = (
            config.attention_layers(),
            config.num_attention_heads,
            ids.len(),
        );
        let run = |ablation: &Ablation, threads: usize| {
            let observer = Ablated {
                inner: &|| false,
                ablation,
            };
            let mut p = vec![0.0; l * h * t * t];
            let mut o = vec![0.0; l * h * t * config.head_dim()];
            let mut s = vec![0.0; l * h * t * t];
            let mut residuals = vec![f32::NAN; l * t * config.hidden_size];
            let mut n = vec![0.0; l * h * t];
            let mut e = vec![0.0; l * h * t];
            let out = CaptureBuffers {
                attention: &mut p,
                attention_entropy: &mut e,
                head_outputs: &mut o,
                similarity: &mut s,
                value_norms: &mut n,
                residuals: Some(&mut residuals),
            };
            if threads == 0 {
                encoder
                    .forward_tensors(&ids, (0, None), &observer, out)
                    .unwrap();
            } else {
                let out = Capture::Kept(out);
                encoder
                    .forward_cpu(&ids, (0, None), &observer, out, threads)
                    .unwrap();
            }
            (p, residuals)
        };
        let none = run(&Ablation::default(), 0);
        for mode in [AblationMode::Zero, AblationMode::Mean] {
            let ablation = Ablation::new(mode, [(0, 1), (2, 3), (2, 0)]);
            let reference = run(&ablation, 0);
            let layer_0 = h * t * t;
            assert!(
                reference.0[..layer_0] == none.0[..layer_0],
                "{mode:?}: layer 0's P"
            );
            assert!(
                reference.1 != none.1,
                "{mode:?}: the ablation moves the output"
            );
            for threads in [1, 2] {
                let ours = run(&ablation, threads);
                let scale = reference.1.iter().fold(0f32, |m, v| m.max(v.abs()));
                for (a, b) in ours.1.iter().zip(&reference.1) {
                    assert!(
                        (a - b).abs() <= 1e-5 * scale,
                        "{mode:?}, {threads} threads: {a} vs {b}"
                    );
                }
            }
        }
    }

    /// ALBERT loads each shared layer once and runs it where the groups say.
    #[test]
    fn albert_loads_shared_layers_once() {
        let encoder = encoder(&config(Family::Albert, "gelu_new"));
        assert_eq!(encoder.layers.len(), 4);
        assert_eq!(encoder.schedule, [0, 1, 0, 1, 2, 3]);
    }

    /// Cancelling at any layer stops every thread (no thread is left waiting).
    #[test]
    fn cancelling_stops_all_threads() {
        let encoder = encoder(&config(Family::Bert, "gelu"));
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
