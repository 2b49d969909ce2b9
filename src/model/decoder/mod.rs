//! Our decoder for the causal families (GPT-2; Llama, Mistral, Qwen2;
//! GPT-NeoX, Gemma 1–3, Qwen3, Phi-3, OLMo 2), and
//! the pre-norm stack ModernBERT runs on too (bidirectionally), returning,
//! like [`super::encoder`], every layer's attention
//! probabilities P, every query head's output O = P·V (with grouped-query
//! attention, V of the head's key/value group) and S = O·Oᵀ.
//!
//! One forward pass, on any device: embeddings (GPT-2 adds its learned
//! position table, Gemma scales them by √hidden; the others rotate queries
//! and keys instead), then layers whose attention is causal (and, where the
//! config says, limited to a sliding window). The families differ only
//! where [`PreNormShape::variant`] says and [`blocks`] reads it. On the CPU
//! the plain pre-norm layer runs the tuned CPU pass the encoder runs
//! ([`super::cpu_pass`]), with its norms before each sub-layer; on another
//! device, with a GGUF file's quantized blocks, or with layers the pass
//! does not take (norms after a sublayer, q/k norms, partial rotary, a
//! parallel residual), candle's ops, each layer's heads through the
//! attention core on the host ([`super::stack::attend_layer`]).
//!
//! For a decoder's predictions ([`super::predict`]) the stack also runs on
//! candle's ops with the residual stream after each layer handed out (the
//! logit lens), and through a key/value cache ([`Decoder::forward_cached`]:
//! each new token one row of every layer); its final norm and LM head are
//! [`LmHead`], loaded apart.

mod blocks;
mod head;

use blocks::{AttentionBuffers, DecoderLayer, LayerCache, RotaryTables};
pub use head::LmHead;

use super::blocks::Norm;
use super::config::{Activation, ModelConfig, PreNormShape};
use super::cpu_pass::{self, Capture, LayerSink, PassShape, RotaryCpu};
use super::family::Family;
use super::stack::{AttentionStack, CaptureBuffers, ForwardError, HeadSink, LayerCaptures};
use super::weight::{Weight, WeightBuilder};
use crate::kernels::attention::ScoreRule;
use candle_core::{Device, Module, Result, Tensor};
use candle_nn::Embedding;

/// Where a pass hands the residual stream after each layer (its index, T ×
/// hidden).
pub type ResidualSink<'a> = dyn FnMut(usize, &Tensor) -> Result<()> + 'a;

/// Token (and for GPT-2 position) embeddings and the stack of layers; the
/// final norm and language-model head, which the study does not read, are
/// loaded apart ([`LmHead`]).
pub struct Decoder {
    /// In the checkpoint's precision: a token's row is widened when read.
    words: Weight,
    positions: Option<Embedding>,
    /// ModernBERT normalises its embeddings.
    embedding_norm: Option<Norm>,
    layers: Vec<DecoderLayer>,
    inverse_frequencies: Option<Vec<f32>>,
    /// ModernBERT's and Gemma 3's local layers' frequencies.
    local_inverse_frequencies: Option<Vec<f32>>,
    /// Gemma's √hidden, in float32 (transformers casts it to the
    /// embeddings' precision before the product).
    embedding_scale: Option<f32>,
    activation: Activation,
    config: ModelConfig,
    device: Device,
    /// On the CPU, with layers and weights the packed kernels take (a GGUF file's
    /// quantized blocks go through candle's ops, dequantized per product).
    cpu_pass: bool,
}

impl Decoder {
    /// `vb` is rooted at the base model (names like `wte.weight` or
    /// `embed_tokens.weight`).
    pub fn load(vb: WeightBuilder, config: &ModelConfig) -> Result<Self> {
        let shape: &PreNormShape = config.pre_norm.as_ref().ok_or_else(|| {
            candle_core::Error::Msg(format!("{} has no decoder fields", config.family))
        })?;
        let activation = config.activation().map_err(candle_core::Error::Msg)?;
        // Asked before the layers load: each hands its matrices over.
        let quantized = vb.holds_quantized();
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
        let cpu_pass = vb.device().is_cpu()
            && !quantized
            && layers.iter().all(|layer| layer.fits_cpu_pass(shape));
        Ok(Self {
            words,
            positions,
            embedding_norm,
            layers,
            inverse_frequencies: shape
                .rope
                .as_ref()
                .map(|rope| rope.inverse_frequencies(shape.rotary_dims())),
            local_inverse_frequencies: shape
                .local_rope
                .as_ref()
                .map(|rope| rope.inverse_frequencies(shape.rotary_dims())),
            embedding_scale: shape.variant.embedding_scale.factor(hidden),
            activation,
            config: config.clone(),
            device: vb.device().clone(),
            cpu_pass,
        })
    }

    /// Runs the decoder on one sequence, handing each layer's captures to
    /// `sink` as soon as they exist (the caller keeps what it needs: a long
    /// input's P and S of every layer would not fit in memory), and, where
    /// given, each head's P and S to `heads` before its layer goes to
    /// `sink` (on the CPU pass, on the thread that made the head).
    pub fn forward_layers(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        heads: Option<&HeadSink>,
        sink: &mut dyn FnMut(usize, LayerCaptures) -> std::result::Result<(), ForwardError>,
    ) -> std::result::Result<(), ForwardError> {
        if self.cpu_pass {
            let mut sink = |index: usize, layer: LayerCaptures| sink(index, layer);
            let layers: &mut LayerSink = &mut sink;
            return self.forward_cpu(input_ids, cancelled, Capture::Streamed { layers, heads });
        }
        let Some(heads) = heads else {
            return self.forward_tensors(input_ids, cancelled, sink, None);
        };
        let square = input_ids.len() * input_ids.len();
        let mut sink = |index: usize, layer: LayerCaptures| {
            let squares = layer
                .attention
                .chunks(square)
                .zip(layer.similarity.chunks(square));
            for (head, (attention, similarity)) in squares.enumerate() {
                heads(index, head, attention, similarity);
            }
            sink(index, layer)
        };
        self.forward_tensors(input_ids, cancelled, &mut sink, None)
    }

    /// [`Decoder::forward_layers`] on candle's ops, on any device, each
    /// layer's heads through the attention core on the host. With
    /// `residuals`, the last layer runs to its end and each layer's output
    /// (the residual stream after it, T × hidden) goes there too.
    fn forward_tensors(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        sink: &mut dyn FnMut(usize, LayerCaptures) -> std::result::Result<(), ForwardError>,
        mut residuals: Option<&mut ResidualSink>,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        let count = self.layers.len();
        let x = self.embeddings(input_ids, 0)?;
        let (rotary, local_rotary) = self.rotary_tables(0..tokens)?;
        let mut x = Some(x);
        let mut buffers = AttentionBuffers::default();
        for (index, layer) in self.layers.iter().enumerate() {
            if cancelled() {
                return Err(ForwardError::Cancelled);
            }
            let input = x.take().expect("every layer but the last has an output");
            let rotary = Self::layer_rotary(layer, &rotary, &local_rotary);
            let last = index + 1 == count && residuals.is_none();
            let next = layer.forward(&input, rotary, self.activation, &mut buffers, last)?;
            drop(input);
            sink(index, buffers.captures())?;
            if let (Some(residuals), Some(next)) = (residuals.as_mut(), &next) {
                residuals(index, next)?;
            }
            x = next;
        }
        Ok(())
    }

    /// Runs the decoder like [`Decoder::forward_layers`], also handing
    /// `residual` the residual stream after each layer (T × hidden), the
    /// input of the logit lens. On candle's ops whatever the device: the
    /// tuned CPU pass keeps its hidden states inside its threads.
    pub fn forward_with_residuals(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        sink: &mut dyn FnMut(usize, LayerCaptures) -> std::result::Result<(), ForwardError>,
        residual: &mut ResidualSink,
    ) -> std::result::Result<(), ForwardError> {
        self.forward_tensors(input_ids, cancelled, sink, Some(residual))
    }

    /// Rotary tables (global, and local where the family has its own) of
    /// the positions `positions`.
    fn rotary_tables(
        &self,
        positions: std::ops::Range<usize>,
    ) -> Result<(Option<RotaryTables>, Option<RotaryTables>)> {
        let tables = |inverse: &Option<Vec<f32>>| {
            inverse
                .as_ref()
                .map(|inverse| RotaryTables::positions(inverse, positions.clone(), &self.device))
                .transpose()
        };
        Ok((
            tables(&self.inverse_frequencies)?,
            tables(&self.local_inverse_frequencies)?,
        ))
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

    /// An empty key/value cache for [`Decoder::forward_cached`].
    pub fn new_cache(&self) -> KvCache {
        KvCache {
            layers: self.layers.iter().map(|_| LayerCache::default()).collect(),
            tokens: 0,
        }
    }

    /// Runs the tokens `new_ids`, which follow those `cache` holds, through
    /// every layer, each new token costing its own rows only: their keys,
    /// values and head outputs join the cache, each layer's rows of P, O
    /// and S (every head's n rows against all T tokens so far) go to
    /// `rows`, and the new tokens' final hidden states (n × hidden, before
    /// the final norm) are returned. On candle's ops, whatever the device.
    pub fn forward_cached(
        &self,
        cache: &mut KvCache,
        new_ids: &[u32],
        rows: &mut dyn FnMut(usize, LayerRows),
    ) -> Result<Tensor> {
        let first = cache.tokens;
        let positions = first..first + new_ids.len();
        if positions.end > self.config.max_tokens() {
            return Err(candle_core::Error::Msg(format!(
                "{} tokens are more than this model takes ({})",
                positions.end,
                self.config.max_tokens()
            )));
        }
        let (rotary, local_rotary) = self.rotary_tables(positions)?;
        let mut x = self.embeddings(new_ids, first)?;
        let mut buffers = AttentionBuffers::default();
        for (index, (layer, layer_cache)) in self.layers.iter().zip(&mut cache.layers).enumerate() {
            let rotary = Self::layer_rotary(layer, &rotary, &local_rotary);
            x = layer.forward_cached(&x, rotary, self.activation, layer_cache, &mut buffers)?;
            let captured = buffers.captures();
            rows(
                index,
                LayerRows {
                    first_position: first,
                    attention: captured.attention,
                    head_outputs: captured.head_outputs,
                    similarity: captured.similarity,
                },
            );
        }
        cache.tokens += new_ids.len();
        Ok(x)
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

    /// The CPU pass ([`super::cpu_pass`]), after the embeddings, on the
    /// threads the process's budget lends it.
    fn forward_cpu(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        capture: Capture,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        // Before the lease: widening a half-precision table leases threads too.
        let states = self
            .embeddings(input_ids, 0)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let tables = |inverse: &Option<Vec<f32>>| {
            inverse
                .as_ref()
                .map(|inverse| RotaryCpu::new(inverse, tokens))
        };
        let (rotary, local_rotary) = (
            tables(&self.inverse_frequencies),
            tables(&self.local_inverse_frequencies),
        );
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
        let lease = crate::threads::lease(tokens.max(1));
        cpu_pass::run(
            shape,
            &states,
            &layers,
            &schedule,
            capture,
            lease.threads(),
            cancelled,
        )
    }
}

/// Every layer's keys, values and head outputs of the tokens run so far
/// ([`Decoder::forward_cached`]).
pub struct KvCache {
    layers: Vec<LayerCache>,
    tokens: usize,
}

impl KvCache {
    /// Tokens run so far.
    pub fn tokens(&self) -> usize {
        self.tokens
    }
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

impl AttentionStack for Decoder {
    fn device(&self) -> &Device {
        &self.device
    }

    fn forward_into(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        out: CaptureBuffers,
    ) -> std::result::Result<(), ForwardError> {
        let (tokens, heads, head_dim) = (
            input_ids.len(),
            self.config.num_attention_heads,
            self.config.head_dim(),
        );
        out.check(self.layers.len(), heads, tokens, head_dim)?;
        if self.cpu_pass {
            return self.forward_cpu(input_ids, cancelled, Capture::Kept(out));
        }
        let mut out = out;
        self.forward_layers(input_ids, cancelled, None, &mut |index, layer| {
            let target = out.layer(index, heads, tokens, head_dim);
            target.attention.copy_from_slice(layer.attention);
            target.head_outputs.copy_from_slice(layer.head_outputs);
            target.similarity.copy_from_slice(layer.similarity);
            Ok(())
        })
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
    use crate::model::{Model, Network};

    /// Every layer's captures, in order, as one stream of values.
    fn captured(
        run: impl FnOnce(
            &mut dyn FnMut(usize, LayerCaptures) -> std::result::Result<(), ForwardError>,
        ) -> std::result::Result<(), ForwardError>,
    ) -> Vec<Vec<f32>> {
        let mut layers = Vec::new();
        run(&mut |index, layer| {
            assert_eq!(index, layers.len());
            let parts = [
                layer.attention,
                layer.head_outputs,
                layer.similarity,
                layer.queries,
                layer.keys,
            ];
            layers.push(parts.concat());
            Ok(())
        })
        .unwrap();
        layers
    }

    /// On every pre-norm fixture (GPT-2, Llama, Mistral, Qwen2: grouped
    /// queries, sliding windows, biases; ModernBERT: local windows either
    /// side, two rotary thetas, GeGLU), the CPU pass computes what candle's
    /// ops compute, kept or streamed.
    #[test]
    fn cpu_pass_matches_candle_ops() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families");
        for name in ["gpt2", "llama", "mistral", "qwen2", "modernbert"] {
            let model = Model::load_folder(&fixtures.join(name), &Device::Cpu).unwrap();
            let Network::Decoder(decoder) = &model.network else {
                panic!("{name} is not on the pre-norm stack");
            };
            let ids: Vec<u32> = (0..29)
                .map(|i| (i * 37 % model.config.vocab_size.min(500)) as u32)
                .collect();
            let reference = captured(|sink| decoder.forward_tensors(&ids, &|| false, sink, None));
            let streamed = captured(|sink| decoder.forward_layers(&ids, &|| false, None, sink));
            assert_eq!(reference.len(), model.layers(), "{name}");
            for (layer, (ours, theirs)) in streamed.iter().zip(&reference).enumerate() {
                let scale = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
                for (a, b) in ours.iter().zip(theirs) {
                    assert!(
                        (a - b).abs() <= 2e-5 * scale.max(1.0),
                        "{name} layer {layer}: {a} vs {b}"
                    );
                }
            }
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
