//! A decoder's predictions: its LM head, loaded on first use
//! ([`Model::lm_head`]); the logit lens ([`Model::logit_lens`]); and
//! generation ([`Model::generate`]): the prompt run once through a
//! key/value cache, then each new token picked from the last position's
//! logits ([`crate::predictions`]) and run as one row, until the model's
//! end-of-sequence token or the number of new tokens asked for.

use super::decoder::{LmHead, PreNormStack};
use super::stack::{AttentionStack, ForwardError, KvCache, LayerCaptures, LayerSink, PassInput};
use super::weight::WeightBuilder;
use super::{checkpoint, gguf, Model, Network};
use crate::predictions::{greedy, Decoding, LensLayer, LogitLens, Sampler};
use anyhow::{anyhow, bail};
use candle_core::Tensor;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// How many positions' logits the logit lens computes at once.
const LENS_ROWS: usize = 32;

/// The most memory a pass gives the residual stream it keeps for the logit
/// lens ([`Model::keeps_residuals`]), beyond the capture memory limit:
/// SmolLM2's (30 layers × 576) up to 3,880 tokens.
pub const KEPT_RESIDUALS_BYTES: u64 = 256 << 20;

/// Where a model keeps its LM head once loaded.
pub(crate) type HeadSlot = Mutex<Option<Arc<LmHead>>>;

/// What [`Model::generate`] is asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GenerationOptions {
    /// At most this many new tokens.
    pub max_new_tokens: usize,
    pub decoding: Decoding,
}

/// What a generation tells its caller as it goes.
pub enum GenerationEvent<'a> {
    /// One layer's rows of P, O and S of tokens just run (the prompt's
    /// first, then each new token's).
    Rows { layer: usize, rows: LayerRows<'a> },
    /// A new token, as soon as it is picked.
    Token(u32),
}

/// One layer's rows of new tokens at positions `first_position`, …: P and
/// S (H × n × T, each head's n rows against all T tokens so far) and O
/// (H × n × d), row-major.
pub struct LayerRows<'a> {
    pub first_position: usize,
    pub attention: &'a [f32],
    pub head_outputs: &'a [f32],
    pub similarity: &'a [f32],
}

/// The logit lens' sink (and an ablation's): the residual stream after
/// each layer `wanted` picks, kept on the host (T × hidden each) for the LM
/// head to read after the pass, on every thread, rather than between the
/// pass's layers on one.
pub(super) struct ResidualRows<'a> {
    pub(super) wanted: &'a dyn Fn(usize) -> bool,
    pub(super) layers: Vec<(usize, Vec<f32>)>,
}

impl LayerSink for ResidualRows<'_> {
    fn wants_captures(&self) -> bool {
        false
    }

    fn wants_residuals(&self) -> bool {
        true
    }

    fn residual(&mut self, layer: usize, residual: &Tensor) -> Result<(), ForwardError> {
        if (self.wanted)(layer) {
            let rows = residual.flatten_all()?.to_vec1::<f32>()?;
            self.layers.push((layer, rows));
        }
        Ok(())
    }
}

/// A generation step's sink: each layer's rows to `on_event`, and the new
/// tokens' final hidden states (after the last layer) kept.
struct StepRows<'a> {
    first_position: usize,
    on_event: &'a mut dyn FnMut(GenerationEvent),
    hidden: Option<Tensor>,
}

impl LayerSink for StepRows<'_> {
    fn layer(&mut self, layer: usize, captures: LayerCaptures) -> Result<(), ForwardError> {
        (self.on_event)(GenerationEvent::Rows {
            layer,
            rows: LayerRows {
                first_position: self.first_position,
                attention: captures.attention,
                head_outputs: captures.head_outputs,
                similarity: captures.similarity,
            },
        });
        Ok(())
    }

    fn wants_residuals(&self) -> bool {
        true
    }

    fn residual(&mut self, _layer: usize, residual: &Tensor) -> Result<(), ForwardError> {
        self.hidden = Some(residual.clone());
        Ok(())
    }
}

/// A finished (or stopped) generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    pub generated_ids: Vec<u32>,
    /// It stopped at an end-of-sequence token (the last of `generated_ids`).
    pub ended: bool,
    /// `cancelled` stopped it.
    pub cancelled: bool,
}

impl Model {
    /// The decoder, or an error saying that `what` needs one.
    fn causal_decoder(&self, what: &str) -> anyhow::Result<&PreNormStack> {
        match &self.network {
            Network::PreNorm(decoder) if self.config.is_causal() => Ok(decoder),
            _ => bail!(
                "{what} needs a decoder: {} ({}) is an encoder",
                self.name,
                self.config.family
            ),
        }
    }

    /// The final norm and LM head, read from the model's files the first
    /// time they are asked for (the study's loads skip the head's matrix).
    pub fn lm_head(&self) -> anyhow::Result<Arc<LmHead>> {
        self.causal_decoder("a language-model head")?;
        self.final_head()
    }

    /// [`Model::lm_head`] of any model on the pre-norm stack: an encoder's
    /// (ModernBERT, EmbeddingGemma) is its final norm alone.
    pub fn final_head(&self) -> anyhow::Result<Arc<LmHead>> {
        let Network::PreNorm(decoder) = &self.network else {
            bail!(
                "{} ({}) has no final norm: its layers end in their own",
                self.name,
                self.config.family
            );
        };
        let mut slot = self.lm_head.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(head) = slot.as_ref() {
            return Ok(head.clone());
        }
        let device = decoder.device();
        let vb = if gguf::is_gguf_file(&self.folder) {
            gguf::head_tensors(&self.folder, &self.config, device)?
        } else {
            let files = checkpoint::weight_files(&self.folder)?.ok_or_else(|| {
                anyhow!(
                    "{} no longer holds the model's weights",
                    self.folder.display()
                )
            })?;
            let family = self.config.family;
            let tensors = super::read_normalised(&files, family, device, &|name| {
                LmHead::holds_tensor(family, name)
            })?;
            WeightBuilder::new(tensors, device)
        };
        let head = decoder.load_head(&vb).map_err(|e| {
            anyhow!(
                "{}: cannot load the language-model head: {}",
                self.folder.display(),
                super::without_backtrace(&e)
            )
        })?;
        let head = Arc::new(head);
        *slot = Some(head.clone());
        Ok(head)
    }

    /// Whether a pass over `tokens` tokens keeps the residual stream after
    /// each layer in its captures ([`Captures::residuals`]): for a causal
    /// decoder, whose logit lens and next tokens then need no pass of
    /// their own, when it takes at most [`KEPT_RESIDUALS_BYTES`].
    ///
    /// [`Captures::residuals`]: crate::captures::Captures::residuals
    pub fn keeps_residuals(&self, tokens: usize) -> bool {
        let bytes = (self.layers() * tokens * self.config.hidden_size * 4) as u64;
        matches!(self.network, Network::PreNorm(_))
            && self.config.is_causal()
            && bytes <= KEPT_RESIDUALS_BYTES
    }

    /// The logit lens of `input_ids`: per layer, the `k` likeliest next
    /// tokens at every position, from the residual stream after that layer
    /// through the final norm and the LM head, and the true next token's
    /// rank.
    pub fn logit_lens(
        &self,
        input_ids: &[u32],
        k: usize,
        cancelled: &dyn Fn() -> bool,
    ) -> anyhow::Result<LogitLens> {
        self.logit_lens_counted(input_ids, &[], k, cancelled, &|_| {})
    }

    /// [`Model::logit_lens`] from `kept`, the residual stream a run of
    /// `input_ids` kept ([`Model::keeps_residuals`]), or from a pass of its
    /// own where `kept` is empty; `layer_done` hears of each layer's index
    /// once its row is computed (the app's progress counts them).
    pub fn logit_lens_counted(
        &self,
        input_ids: &[u32],
        kept: &[f32],
        k: usize,
        cancelled: &dyn Fn() -> bool,
        layer_done: &dyn Fn(usize),
    ) -> anyhow::Result<LogitLens> {
        let layers = self.lens_layers(input_ids, kept, k, cancelled, &|_| true, layer_done)?;
        Ok(LogitLens { layers })
    }

    /// The model's own next-token predictions at every position of
    /// `input_ids` (the logit lens' last layer alone): its `k` likeliest,
    /// and the true next token's rank; from `kept` as in
    /// [`Model::logit_lens_counted`].
    pub fn next_tokens(
        &self,
        input_ids: &[u32],
        kept: &[f32],
        k: usize,
        cancelled: &dyn Fn() -> bool,
    ) -> anyhow::Result<LensLayer> {
        let last = self.layers().saturating_sub(1);
        let wanted = |l| l == last;
        let mut layers = self.lens_layers(input_ids, kept, k, cancelled, &wanted, &|_| {})?;
        layers
            .pop()
            .ok_or_else(|| anyhow!("the model has no layers"))
    }

    /// The lens rows of the layers `wanted` picks, in layer order, from
    /// the residual stream `kept` (L × T × hidden) or, where it is empty,
    /// a pass's; `layer_done` hears of each layer once it is passed.
    fn lens_layers(
        &self,
        input_ids: &[u32],
        kept: &[f32],
        k: usize,
        cancelled: &dyn Fn() -> bool,
        wanted: &dyn Fn(usize) -> bool,
        layer_done: &dyn Fn(usize),
    ) -> anyhow::Result<Vec<LensLayer>> {
        self.check_input(input_ids)?;
        let device = self.causal_decoder("the logit lens")?.device().clone();
        let head = self.lm_head()?;
        let (tokens, hidden) = (input_ids.len(), self.config.hidden_size);
        let streamed;
        let residuals: Vec<(usize, &[f32])> = if kept.is_empty() {
            let mut sink = ResidualRows {
                wanted,
                layers: Vec::new(),
            };
            self.run(PassInput::Sequence(input_ids), &cancelled, &mut sink)?;
            streamed = sink.layers;
            streamed.iter().map(|(l, rows)| (*l, &rows[..])).collect()
        } else {
            if kept.len() != self.layers() * tokens * hidden {
                bail!("the kept residual stream is not of this input");
            }
            kept.chunks_exact(tokens * hidden)
                .enumerate()
                .filter(|&(l, _)| wanted(l))
                .collect()
        };
        let mut layers = Vec::new();
        let mut passed = 0;
        for (l, residual) in residuals {
            if cancelled() {
                return Err(ForwardError::Cancelled.into());
            }
            // A few rows at a time: a long input's logits of every
            // position would take T × vocab floats at once.
            let mut layer = LensLayer::default();
            for start in (0..tokens).step_by(LENS_ROWS) {
                let rows = LENS_ROWS.min(tokens - start);
                let x = &residual[start * hidden..(start + rows) * hidden];
                let x = Tensor::from_slice(x, (rows, hidden), &device)?;
                let logits = head.logits(&x)?.flatten_all()?.to_vec1::<f32>()?;
                let next_ids = input_ids.get(start + 1..).unwrap_or_default();
                layer.extend(LensLayer::of_logits(&logits, head.vocab(), k, next_ids));
            }
            layers.push(layer);
            // The layers no row was asked of are passed too.
            for passed_layer in passed..=l {
                layer_done(passed_layer);
            }
            passed = l + 1;
        }
        for passed_layer in passed..self.layers() {
            layer_done(passed_layer);
        }
        Ok(layers)
    }

    /// The text `generated_ids` add after `prompt_ids` (special tokens left
    /// out): the whole decoded less the prompt's, so that a tokenizer that
    /// drops a sequence's leading space (SentencePiece's) keeps the space
    /// between prompt and continuation.
    pub fn continuation_text(&self, prompt_ids: &[u32], generated_ids: &[u32]) -> String {
        let decode = |ids: &[u32]| self.tokenizer.decode(ids, true).unwrap_or_default();
        let all: Vec<u32> = prompt_ids.iter().chain(generated_ids).copied().collect();
        let (whole, prompt) = (decode(&all), decode(prompt_ids));
        match whole.strip_prefix(prompt.as_str()) {
            Some(continuation) => continuation.to_string(),
            None => decode(generated_ids),
        }
    }

    /// The ids generation stops at: `eos_token_id` (one or a list) of the
    /// folder's `generation_config.json`, else of its `config.json`; a GGUF
    /// file's `tokenizer.ggml.eos_token_id`.
    pub fn stop_ids(&self) -> Vec<u32> {
        if gguf::is_gguf_file(&self.folder) {
            return gguf::file::GgufFile::open(&self.folder)
                .ok()
                .and_then(|file| file.integer("tokenizer.ggml.eos_token_id").ok().flatten())
                .map(|id| vec![id as u32])
                .unwrap_or_default();
        }
        ["generation_config.json", "config.json"]
            .iter()
            .find_map(|name| {
                let text = std::fs::read_to_string(self.folder.join(name)).ok()?;
                let value: Value = serde_json::from_str(&text).ok()?;
                let ids = match value.get("eos_token_id")? {
                    Value::Array(ids) => ids.iter().filter_map(Value::as_u64).collect(),
                    id => vec![id.as_u64()?],
                };
                Some(ids.into_iter().map(|id| id as u32).collect::<Vec<u32>>())
            })
            .unwrap_or_default()
    }

    /// Continues `prompt_ids` by up to `options.max_new_tokens` tokens,
    /// stopping after an end-of-sequence token ([`Model::stop_ids`]) or when
    /// `cancelled` says so (polled before each new token); every layer's
    /// rows and every new token go to `on_event` as they exist. Each new
    /// token is run as one row through the key/value cache; the last one
    /// picked is not run (nothing reads its rows).
    pub fn generate(
        &self,
        prompt_ids: &[u32],
        options: &GenerationOptions,
        cancelled: &dyn Fn() -> bool,
        on_event: &mut dyn FnMut(GenerationEvent),
    ) -> anyhow::Result<Generation> {
        self.check_input(prompt_ids)?;
        let decoder = self.causal_decoder("generation")?;
        let head = self.lm_head()?;
        let room = self.max_tokens() - prompt_ids.len();
        let wanted = options.max_new_tokens.min(room);
        let stops = self.stop_ids();
        let mut sampler = match options.decoding {
            Decoding::Greedy => None,
            Decoding::Sampled(sampling) => {
                sampling.check()?;
                Some(Sampler::new(sampling))
            }
        };
        let mut generation = Generation {
            generated_ids: Vec::new(),
            ended: false,
            cancelled: false,
        };
        let mut cache = decoder.new_cache();
        let run = |ids: &[u32], cache: &mut KvCache, on_event: &mut dyn FnMut(GenerationEvent)| {
            let mut sink = StepRows {
                first_position: cache.tokens(),
                on_event,
                hidden: None,
            };
            let input = PassInput::Cached {
                cache,
                new_ids: ids,
            };
            self.run(input, &|| false, &mut sink)?;
            sink.hidden
                .ok_or_else(|| anyhow!("the model has no layers"))
        };
        let mut hidden = run(prompt_ids, &mut cache, on_event)?;
        let mut picked = Vec::new();
        while picked.len() < wanted {
            if cancelled() {
                generation.cancelled = true;
                break;
            }
            let last = hidden.narrow(0, hidden.dim(0)? - 1, 1)?;
            let logits = head.logits(&last)?.flatten_all()?.to_vec1::<f32>()?;
            let id = match sampler.as_mut() {
                Some(sampler) => sampler.pick(&logits),
                None => greedy(&logits),
            };
            picked.push(id);
            on_event(GenerationEvent::Token(id));
            if stops.contains(&id) {
                generation.ended = true;
                break;
            }
            if picked.len() < wanted {
                hidden = run(&[id], &mut cache, on_event)?;
            }
        }
        generation.generated_ids = picked;
        Ok(generation)
    }
}
