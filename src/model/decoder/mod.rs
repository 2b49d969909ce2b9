//! The pre-norm stack ([`PreNormStack`]): the causal decoders (GPT-2;
//! Llama, Mistral, Qwen2; GPT-NeoX, Gemma 1–3, Qwen3, Phi-3, OLMo 2) and
//! ModernBERT, an encoder, which runs on it bidirectionally (the folder
//! keeps the name of the families it was written for). Like
//! [`super::encoder`] it captures every layer's attention probabilities
//! P, every query head's output O = P·V (with grouped-query attention, V
//! of the head's key/value group) and S = O·Oᵀ, through the one entry
//! every stack has, [`AttentionStack::run`].
//!
//! A whole sequence, on any device: embeddings (GPT-2 adds its learned
//! position table, Gemma scales them by √hidden; the others rotate queries
//! and keys instead), then layers whose attention is causal (and, where the
//! config says, limited to a sliding window). The families differ only
//! where [`PreNormShape::variant`] says and [`blocks`] reads it. On the CPU
//! every family's layer runs the tuned CPU pass the encoder runs
//! ([`super::cpu_pass`]): norms before and/or after each sub-layer, q/k
//! norms, partial rotary, the parallel residual, a GGUF file's quantized
//! blocks; on another device, candle's ops, each layer's heads through the
//! attention core on the host ([`super::stack::attend_layer`]).
//!
//! A generation step ([`PassInput::Cached`], for [`super::predict`]) runs
//! the new tokens through a key/value cache on candle's ops, each new token
//! one row of every layer; the final norm and LM head are [`LmHead`],
//! loaded apart.

mod blocks;
mod head;

use blocks::{AttentionBuffers, DecoderLayer, RotaryTables};
pub use head::LmHead;

use super::blocks::Norm;
use super::config::{Activation, ModelConfig, PreNormShape, RotaryFrequencies};
use super::cpu_pass::{self, PassShape, RotaryCpu};
use super::family::Family;
use super::stack::{
    self, hand_out_heads, AttentionStack, Capture, ForwardError, KvCache, LayerSink, PassInput,
    PassObserver, PassStart, Refusal,
};
use super::weight::{Weight, WeightBuilder};
use crate::kernels::attention::ScoreRule;
use candle_core::{Device, Module, Result, Tensor};
use candle_nn::Embedding;

/// Token (and for GPT-2 position) embeddings and the stack of layers; the
/// final norm and language-model head, which the study does not read, are
/// loaded apart ([`LmHead`]).
pub struct PreNormStack {
    /// In the checkpoint's precision: a token's row is widened when read.
    words: Weight,
    positions: Option<Embedding>,
    /// ModernBERT normalises its embeddings.
    embedding_norm: Option<Norm>,
    layers: Vec<DecoderLayer>,
    rotary: Option<RotaryFrequencies>,
    /// ModernBERT's and Gemma 3's local layers' frequencies.
    local_rotary: Option<RotaryFrequencies>,
    /// Gemma's √hidden, in float32 (transformers casts it to the
    /// embeddings' precision before the product).
    embedding_scale: Option<f32>,
    activation: Activation,
    config: ModelConfig,
    device: Device,
    /// On the CPU, with layers the pass takes (every family's).
    cpu_pass: bool,
}

impl PreNormStack {
    /// `vb` is rooted at the base model (names like `wte.weight` or
    /// `embed_tokens.weight`).
    pub fn load(vb: WeightBuilder, config: &ModelConfig) -> Result<Self> {
        let shape: &PreNormShape = config.pre_norm.as_ref().ok_or_else(|| {
            candle_core::Error::Msg(format!("{} has no decoder fields", config.family))
        })?;
        let activation = config
            .activation()
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        let hidden = config.hidden_size;
        let words = vb
            .pp(config.family.word_embeddings())
            .weight((config.vocab_size, hidden), "weight")?;
        let positions = (config.family == Family::Gpt2)
            .then(|| -> Result<Embedding> {
                let table = vb
                    .pp("wpe")
                    .get((config.max_position_embeddings, hidden), "weight")?;
                Ok(Embedding::new(table, hidden))
            })
            .transpose()?;
        let embedding_norm = (config.family == Family::ModernBert)
            .then(|| blocks::norm(vb.pp("embeddings.norm"), config, shape))
            .transpose()?;
        let layers = (0..config.num_hidden_layers)
            .map(|index| DecoderLayer::load(&vb, config, shape, index))
            .collect::<Result<Vec<_>>>()?;
        let cpu_pass = vb.device().is_cpu() && layers.iter().all(DecoderLayer::fits_cpu_pass);
        Ok(Self {
            words,
            positions,
            embedding_norm,
            layers,
            rotary: shape
                .rope
                .as_ref()
                .map(|rope| rope.frequencies(shape.rotary_dims())),
            local_rotary: shape
                .local_rope
                .as_ref()
                .map(|rope| rope.frequencies(shape.rotary_dims())),
            embedding_scale: shape.variant.embedding_scale.factor(hidden),
            activation,
            config: config.clone(),
            device: vb.device().clone(),
            cpu_pass,
        })
    }

    /// [`AttentionStack::run`] of a whole sequence on candle's ops, on
    /// any device, each layer's heads through the attention core on the
    /// host: each layer's captures copied into the sink's buffers, or
    /// handed to it; where it wants the residual stream, the last layer
    /// runs to its end and each layer's output (T × hidden) goes there too.
    fn forward_tensors(
        &self,
        input_ids: &[u32],
        (first, residual): PassStart,
        observer: &dyn PassObserver,
        mut capture: Capture,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        let (heads, head_dim) = (self.config.num_attention_heads, self.config.head_dim());
        let count = self.layers.len();
        let residuals = match &capture {
            Capture::Kept(out) => out.residuals.is_some(),
            Capture::Layers(sink) => sink.wants_residuals(),
        };
        let x = match residual {
            Some(residual) => {
                Tensor::from_slice(residual, (tokens, self.config.hidden_size), &self.device)?
            }
            None => self.embeddings(input_ids, 0)?,
        };
        let (rotary, local_rotary) = self.rotary_tables(0..tokens)?;
        let mut x = Some(x);
        let mut buffers = AttentionBuffers::default();
        for (index, layer) in self.layers.iter().enumerate().skip(first) {
            if observer.before_layer(index).is_break() {
                return Err(ForwardError::Cancelled);
            }
            let input = x.take().expect("every layer but the last has an output");
            let rotary = Self::layer_rotary(layer, &rotary, &local_rotary);
            let last = index + 1 == count && !residuals;
            let ablation = stack::layer_ablation(observer, index);
            let next = layer.forward(
                &input,
                rotary,
                self.activation,
                &mut buffers,
                ablation,
                last,
            )?;
            drop(input);
            let captured = buffers.captures();
            match &mut capture {
                Capture::Kept(out) => {
                    let target = out.layer(index, heads, tokens, head_dim);
                    target.attention.copy_from_slice(captured.attention);
                    target
                        .attention_entropy
                        .copy_from_slice(captured.attention_entropy);
                    target.head_outputs.copy_from_slice(captured.head_outputs);
                    target.similarity.copy_from_slice(captured.similarity);
                    target.value_norms.copy_from_slice(captured.value_norms);
                    if let (Some(rows), Some(next)) = (out.residuals.as_deref_mut(), &next) {
                        let size = tokens * self.config.hidden_size;
                        let values = next.flatten_all()?.to_vec1::<f32>()?;
                        rows[index * size..][..size].copy_from_slice(&values);
                    }
                }
                Capture::Layers(sink) => {
                    let made = [
                        captured.attention,
                        captured.attention_entropy,
                        captured.similarity,
                        captured.value_norms,
                    ];
                    hand_out_heads(observer.heads(), index, tokens, made);
                    sink.layer(index, captured)?;
                    if let (true, Some(next)) = (residuals, &next) {
                        sink.residual(index, next)?;
                    }
                }
            }
            x = next;
        }
        Ok(())
    }

    /// Rotary tables (global, and local where the family has its own) of
    /// the positions `positions`.
    fn rotary_tables(
        &self,
        positions: std::ops::Range<usize>,
    ) -> Result<(Option<RotaryTables>, Option<RotaryTables>)> {
        let tables = |frequencies: &Option<RotaryFrequencies>| {
            frequencies
                .as_ref()
                .map(|frequencies| {
                    RotaryTables::positions(frequencies, positions.clone(), &self.device)
                })
                .transpose()
        };
        Ok((tables(&self.rotary)?, tables(&self.local_rotary)?))
    }

    /// The tables a layer rotates by: its local ones for a local layer.
    fn layer_rotary<'a>(
        layer: &DecoderLayer,
        rotary: &'a Option<RotaryTables>,
        local_rotary: &'a Option<RotaryTables>,
    ) -> Option<&'a RotaryTables> {
        match local_rotary {
            Some(local) if layer.local => Some(local),
            _ => rotary.as_ref(),
        }
    }

    /// An empty key/value cache for a generation step
    /// ([`PassInput::Cached`]).
    pub fn new_cache(&self) -> KvCache {
        KvCache::new(self.layers.len())
    }

    /// [`AttentionStack::run`] of the tokens `new_ids`, which follow those
    /// `cache` holds, through every layer, each new token costing its own
    /// rows only: their keys, values and head outputs join the cache, each
    /// layer's rows of P, O and S (every head's n rows against all T tokens
    /// so far) go to the sink, and where it wants the residual stream, the
    /// new tokens' rows after each layer (after the last, their final
    /// hidden states, n × hidden, before the final norm). On candle's ops,
    /// whatever the device; the heads go to no observer (they are rows).
    fn run_cached(
        &self,
        cache: &mut KvCache,
        new_ids: &[u32],
        observer: &dyn PassObserver,
        sink: &mut dyn LayerSink,
    ) -> std::result::Result<(), ForwardError> {
        let first = cache.tokens;
        let positions = first..first + new_ids.len();
        if positions.end > self.config.max_tokens() {
            return Err(Refusal::PastContext {
                tokens: positions.end,
                max: self.config.max_tokens(),
            }
            .into());
        }
        let (rotary, local_rotary) = self.rotary_tables(positions)?;
        let mut x = self.embeddings(new_ids, first)?;
        let mut buffers = AttentionBuffers::default();
        let residuals = sink.wants_residuals();
        for (index, (layer, layer_cache)) in self.layers.iter().zip(&mut cache.layers).enumerate() {
            if observer.before_layer(index).is_break() {
                return Err(ForwardError::Cancelled);
            }
            let rotary = Self::layer_rotary(layer, &rotary, &local_rotary);
            x = layer.forward_cached(&x, rotary, self.activation, layer_cache, &mut buffers)?;
            sink.layer(index, buffers.captures())?;
            if residuals {
                sink.residual(index, &x)?;
            }
        }
        cache.tokens += new_ids.len();
        Ok(())
    }

    /// The final norm and LM head, from the head's tensors (`vb`, as the
    /// base model's names: `norm.weight`, and `lm_head.weight` where the
    /// checkpoint has one), tied to the token embeddings otherwise.
    pub fn load_head(&self, vb: &WeightBuilder) -> Result<LmHead> {
        LmHead::load(vb, &self.config, &self.words)
    }

    /// The token (and GPT-2's position) embeddings of tokens at positions
    /// `first`, `first + 1`, …, normalised where the family normalises
    /// them: T × hidden.
    fn embeddings(&self, input_ids: &[u32], first: usize) -> Result<Tensor> {
        let ids = Tensor::new(input_ids, &self.device)?;
        let mut x = self.words.rows(&ids)?;
        if let Some(scale) = self.embedding_scale {
            x = (x * f64::from(scale))?;
        }
        if let Some(table) = &self.positions {
            let positions: Vec<u32> = self
                .config
                .position_ids(input_ids)
                .into_iter()
                .map(|p| p + first as u32)
                .collect();
            let positions = Tensor::new(positions, &self.device)?;
            x = x.add(&table.forward(&positions)?)?;
        }
        if let Some(norm) = &self.embedding_norm {
            x = norm.forward(&x)?;
        }
        Ok(x)
    }

    /// The CPU pass ([`super::cpu_pass`]), after the embeddings, on
    /// `threads` threads, or those the process's budget lends it.
    fn forward_cpu(
        &self,
        input_ids: &[u32],
        (first, residual): PassStart,
        observer: &dyn PassObserver,
        capture: Capture,
        threads: Option<usize>,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        // Before the lease: widening a half-precision table leases threads too.
        let states = match residual {
            Some(residual) => residual.to_vec(),
            None => self
                .embeddings(input_ids, 0)?
                .flatten_all()?
                .to_vec1::<f32>()?,
        };
        let tables = |frequencies: &Option<RotaryFrequencies>| {
            frequencies
                .as_ref()
                .map(|frequencies| RotaryCpu::new(frequencies, tokens))
        };
        let (rotary, local_rotary) = (tables(&self.rotary), tables(&self.local_rotary));
        // Borrow every parameter before any thread starts, so that nothing
        // inside the pass can fail and leave a thread waiting at a barrier.
        let layers = self
            .layers
            .iter()
            .map(|layer| {
                let rotary = match &local_rotary {
                    Some(local) if layer.local => Some(local),
                    _ => rotary.as_ref(),
                };
                layer.cpu(self.activation, rotary)
            })
            .collect::<Result<Vec<_>>>()?;
        let schedule: Vec<usize> = (0..layers.len()).collect();
        let shape = PassShape {
            tokens,
            hidden: self.config.hidden_size,
            heads: self.config.num_attention_heads,
            kv_heads: self.config.key_value_heads(),
            head_dim: self.config.head_dim(),
            intermediate: self.config.intermediate_size,
            pre_norm: true,
        };
        let lease = threads
            .is_none()
            .then(|| crate::threads::lease(tokens.max(1)));
        cpu_pass::run(
            shape,
            (first, &states),
            &layers,
            &schedule,
            observer,
            capture,
            threads.or(lease.map(|lease| lease.threads())).unwrap_or(1),
        )
    }
}

impl AttentionStack for PreNormStack {
    fn device(&self) -> &Device {
        &self.device
    }

    /// A whole sequence on the tuned CPU pass where the decoder has one,
    /// else on candle's ops; a generation step on candle's ops.
    fn run(
        &self,
        input: PassInput,
        observer: &dyn PassObserver,
        sink: &mut dyn LayerSink,
    ) -> std::result::Result<(), ForwardError> {
        let (input_ids, start) = match input.sequence() {
            Some(sequence) => sequence,
            None if observer.ablation().is_some() => {
                return Err(Refusal::Unsupported("an ablated pass runs whole sequences").into())
            }
            None => {
                let PassInput::Cached { cache, new_ids } = input else {
                    unreachable!("a pass that is not a sequence's is a generation step's")
                };
                return self.run_cached(cache, new_ids, observer, sink);
            }
        };
        let dims = (
            self.layers.len(),
            self.config.num_attention_heads,
            input_ids.len(),
            self.config.head_dim(),
        );
        let capture = Capture::of(sink, dims)?;
        if self.cpu_pass {
            self.forward_cpu(input_ids, start, observer, capture, None)
        } else {
            self.forward_tensors(input_ids, start, observer, capture)
        }
    }

    fn hands_out_layers(&self) -> bool {
        true
    }

    fn makes_heads_in_blocks(&self) -> bool {
        self.cpu_pass
    }

    fn score_rules(&self) -> Vec<ScoreRule> {
        self.layers
            .iter()
            .map(|l| l.attention.score_rule())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stack::LayerCaptures;
    use crate::model::{Model, Network};

    /// Every layer's captures, in order, as one stream of values.
    struct Streamed(Vec<Vec<f32>>);

    impl LayerSink for Streamed {
        fn layer(
            &mut self,
            index: usize,
            layer: LayerCaptures,
        ) -> std::result::Result<(), ForwardError> {
            assert_eq!(index, self.0.len());
            let parts = [
                layer.attention,
                layer.head_outputs,
                layer.similarity,
                layer.value_norms,
                layer.queries,
                layer.keys,
            ];
            self.0.push(parts.concat());
            Ok(())
        }
    }

    fn captured(
        run: impl FnOnce(&mut dyn LayerSink) -> std::result::Result<(), ForwardError>,
    ) -> Vec<Vec<f32>> {
        let mut layers = Streamed(Vec::new());
        run(&mut layers).unwrap();
        layers.0
    }

    /// On every pre-norm fixture (GPT-2, Llama, Mistral, Qwen2: grouped
    /// queries, sliding windows, biases; ModernBERT: local windows either
    /// side, two rotary thetas, GeGLU; GPT-NeoX: partial rotary, parallel
    /// residual; Gemma 1–3 and EmbeddingGemma: norms by (1 + w), norms after
    /// each sub-layer, soft-caps, per-head q/k norms; Qwen3: per-head q/k
    /// norms; Phi-3: fused projections; OLMo 2: norms only after each
    /// sub-layer, q/k norms across heads), and on GGUF files of quantized
    /// blocks (every type of llama.cpp's mixes, rows that do not start at
    /// a block's edge), the CPU pass computes what candle's ops compute,
    /// kept or streamed, on one thread and on three (heads and key/value
    /// groups split unevenly).
    #[test]
    fn cpu_pass_matches_candle_ops() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let folders = [
            "gpt2",
            "llama",
            "mistral",
            "qwen2",
            "modernbert",
            "gpt_neox",
            "gemma",
            "gemma2",
            "gemma3_text",
            "embeddinggemma",
            "qwen3",
            "phi3",
            "olmo2",
        ]
        .map(|name| format!("families/{name}"));
        // Quantized blocks of every type llama.cpp's mixes hold.
        let files = ["mixed", "gemma3", "gptneox", "olmo2", "qwen3"]
            .map(|name| format!("gguf/{name}.gguf"));
        for name in folders.iter().chain(&files) {
            let model = Model::load_folder(&fixtures.join(name), &Device::Cpu).unwrap();
            let Network::PreNorm(decoder) = &model.network else {
                panic!("{name} is not on the pre-norm stack");
            };
            let ids: Vec<u32> = (0..29)
                .map(|i| (i * 37 % model.config.vocab_size.min(500)) as u32)
                .collect();
            let reference = captured(|sink| {
                decoder.forward_tensors(&ids, (0, None), &|| false, Capture::Layers(sink))
            });
            assert!(decoder.cpu_pass, "{name} runs on the CPU pass");
            assert_eq!(reference.len(), model.layers(), "{name}");
            for threads in [1, 3] {
                let streamed = captured(|sink| {
                    let capture = Capture::Layers(sink);
                    decoder.forward_cpu(&ids, (0, None), &|| false, capture, Some(threads))
                });
                assert_eq!(streamed.len(), reference.len(), "{name}");
                for (layer, (ours, theirs)) in streamed.iter().zip(&reference).enumerate() {
                    let scale = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
                    for (a, b) in ours.iter().zip(theirs) {
                        assert!(
                            (a - b).abs() <= 2e-5 * scale.max(1.0),
                            "{name} layer {layer}, {threads} threads: {a} vs {b}"
                        );
                    }
                }
            }
            let streamed = captured(|sink| decoder.run(PassInput::Sequence(&ids), &|| false, sink));
            let captures = model.capture(&ids, &|| false).unwrap();
            let kept: Vec<f32> = streamed
                .iter()
                .flat_map(|layer| {
                    let square = model.heads() * ids.len() * ids.len();
                    layer[..square].to_vec()
                })
                .collect();
            assert_eq!(captures.attentions, kept, "{name}: kept and streamed P");
        }
    }
}
