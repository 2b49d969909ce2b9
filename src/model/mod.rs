//! Loading a checkpoint — a BERT-like encoder (BERT, RoBERTa, XLM-RoBERTa,
//! CamemBERT, DistilBERT, ELECTRA, ALBERT) or a causal decoder (GPT-2,
//! Llama, Mistral, Qwen2, GPT-NeoX, Gemma 1–3, Qwen3, Phi-3, OLMo 2):
//! [`family`] — and running it with every head captured, by [`encoder`]
//! (the post-norm stack) or [`decoder`] (the pre-norm stack, which runs
//! ModernBERT, an encoder, too), which share [`stack`], `blocks` and the
//! tuned CPU pass (`cpu_pass`); every head's P, O and S are made in
//! [`crate::kernels::attention`].
//!
//! There is one way into a pass, [`Model::run`] (the stack's
//! [`AttentionStack::run`]): an input (a whole sequence, or a generation
//! step's new tokens after a key/value cache), a [`PassObserver`] asked
//! before each layer whether to go on (cancel and progress) and handed each
//! head as it is made, and a [`LayerSink`], the capture mode: every layer
//! kept, what recomputes P and S kept (`capture_modes`), the residual
//! stream for the logit lens or a generation step's rows ([`predict`]).
//! [`Model::capture`] and its kin are those modes' one-line entries.
//!
//! A model comes from a local folder (`config.json`, `model.safetensors` or
//! a sharded checkpoint's index, `tokenizer.json`; weights read by
//! [`checkpoint`]) or from a Hugging Face model id through [`hub`]. Loading
//! checks each file and refuses, with a message naming the file and the
//! problem, any model type headscope does not run or weights that do not fit
//! the config. Tensor names are accepted as the base model saves them or
//! with the family's prefix of a checkpoint with a task head (`bert.`,
//! `roberta.`, `distilbert.`, `electra.`, `albert.`, `transformer.` for GPT-2,
//! `model.` for the Llama family; the head's own tensors
//! are ignored), and with LayerNorm `gamma`/`beta` as older checkpoints name
//! them. Weights stay in the precision the checkpoint stores them
//! ([`weight`]).

pub mod ablation;
mod blocks;
mod capture_modes;
pub mod chat;
pub mod checkpoint;
pub mod config;
mod cpu_pass;
pub mod decoder;
pub mod discovery;
pub mod encoder;
pub mod families;
pub mod family;
pub mod gguf;
pub mod hub;
pub mod predict;
pub mod random;
pub mod stack;
pub mod team;
pub mod tokenizer;
pub mod weight;

use crate::captures::Captures;
use crate::kernels::attention::ROW_BLOCK;
use crate::tokens::SpecialTokens;
use crate::vector_store::goes_to_disk;
use anyhow::{anyhow, bail};
use candle_core::{Device, Tensor};
pub use config::ModelConfig;
pub use decoder::PreNormStack;
pub use encoder::Encoder;
pub use family::Family;
pub use stack::{
    AttentionStack, CaptureBuffers, ForwardError, HeadObserver, HeadRows, KvCache, LayerCaptures,
    LayerSink, PassInput, PassObserver, Refusal,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;
use weight::WeightBuilder;

/// Threads whose working memory [`Model::recomputed_capture_bytes`] counts,
/// the same on every machine (a thread holds two blocks of rows and the
/// top-fraction rule's first batch of candidates: 280 MB at 32,768 tokens).
pub const COUNTED_THREADS: u64 = 4;

/// Where a model comes from, as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ModelSource {
    /// A folder holding config.json, model.safetensors and tokenizer.json.
    Folder(PathBuf),
    /// A llama.cpp GGUF file ([`gguf`]).
    Gguf(PathBuf),
    /// A Hugging Face model id such as `bert-base-uncased`.
    Hub(String),
}

impl ModelSource {
    /// An existing path is a folder; anything else that looks like a model id
    /// (`name` or `owner/name`) goes to the hub.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let text = text.trim();
        if text.is_empty() {
            bail!("no model given: pass a model folder, a GGUF file or a Hugging Face model id");
        }
        let path = Path::new(text);
        if gguf::is_gguf_file(path) {
            return Ok(Self::Gguf(path.to_path_buf()));
        }
        if path.exists() {
            return Ok(Self::Folder(path.to_path_buf()));
        }
        let looks_like_path = text.starts_with('.')
            || text.starts_with('/')
            || text.starts_with('~')
            || text.contains('\\')
            || text.matches('/').count() > 1;
        let valid_id = text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
        if looks_like_path || !valid_id {
            bail!(
                "model folder {text} does not exist (pass a folder holding config.json, model.safetensors and tokenizer.json, a GGUF file, or a Hugging Face model id)"
            );
        }
        Ok(Self::Hub(text.to_string()))
    }

    /// A local path: a GGUF file, or else a folder.
    pub fn local(path: PathBuf) -> Self {
        if gguf::is_gguf_file(&path) {
            Self::Gguf(path)
        } else {
            Self::Folder(path)
        }
    }
}

impl std::fmt::Display for ModelSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Folder(path) | Self::Gguf(path) => write!(f, "{}", path.display()),
            Self::Hub(id) => write!(f, "{id}"),
        }
    }
}

/// Progress of a model load, for the CLI's stderr and the app's model panel.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadProgress {
    /// Bytes of one file downloaded from the hub so far, of `total`.
    Downloading { file: String, done: u64, total: u64 },
    /// Reading and checking the files of a folder.
    Reading(PathBuf),
}

/// The network of a model: the post-norm encoder of the BERT-like
/// families, or the pre-norm stack of the decoders and ModernBERT.
pub enum Network {
    PostNorm(Encoder),
    PreNorm(PreNormStack),
}

impl Network {
    /// Loads the network the config's family names.
    pub fn load(vb: WeightBuilder, config: &ModelConfig) -> candle_core::Result<Self> {
        Ok(if config.pre_norm.is_some() {
            Self::PreNorm(PreNormStack::load(vb, config)?)
        } else {
            Self::PostNorm(Encoder::load(vb, config)?)
        })
    }

    /// The stack, as the trait both share.
    pub fn stack(&self) -> &dyn AttentionStack {
        match self {
            Self::PostNorm(encoder) => encoder,
            Self::PreNorm(stack) => stack,
        }
    }
}

/// A loaded model: its shape, tokenizer and network, ready to run.
pub struct Model {
    pub name: String,
    pub folder: PathBuf,
    pub config: ModelConfig,
    pub tokenizer: Tokenizer,
    pub network: Network,
    /// The start and separator tokens of its tokenizer's post-processor.
    pub specials: SpecialTokens,
    /// A decoder's final norm and LM head, once asked for
    /// ([`Model::lm_head`]): the study never reads them.
    pub(crate) lm_head: predict::HeadSlot,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("name", &self.name)
            .field("folder", &self.folder)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Loads from a folder or the hub; `progress` hears about downloads.
    pub fn load(
        source: &ModelSource,
        progress: &mut dyn FnMut(LoadProgress),
    ) -> anyhow::Result<Self> {
        let (folder, name) = match source {
            ModelSource::Gguf(path) => {
                progress(LoadProgress::Reading(path.clone()));
                return gguf::load(path, &default_device()?);
            }
            ModelSource::Folder(folder) => (
                folder.clone(),
                folder
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| folder.display().to_string()),
            ),
            ModelSource::Hub(id) => (hub::fetch(id, progress)?, id.clone()),
        };
        progress(LoadProgress::Reading(folder.clone()));
        let mut model = Self::load_folder(&folder, &default_device()?)?;
        model.name = name;
        Ok(model)
    }

    /// Loads the three files of a local folder onto `device`.
    pub fn load_folder(folder: &Path, device: &Device) -> anyhow::Result<Self> {
        if gguf::is_gguf_file(folder) {
            return gguf::load(folder, device);
        }
        if !folder.is_dir() {
            bail!(
                "model folder {} does not exist or is not a folder",
                folder.display()
            );
        }
        let config_path = folder.join("config.json");
        let tokenizer_path = folder.join("tokenizer.json");
        let missing = |what: &str| {
            let hint =
                if what == checkpoint::WEIGHTS_FILE && folder.join("pytorch_model.bin").is_file() {
                    " (only pytorch_model.bin is there: headscope reads safetensors weights)"
                } else {
                    ""
                };
            anyhow!(
                "model folder {} has no {what}{hint}; a model folder needs config.json, model.safetensors (or a sharded model.safetensors.index.json) and tokenizer.json",
                folder.display()
            )
        };
        for (path, what) in [
            (&config_path, "config.json"),
            (&tokenizer_path, "tokenizer.json"),
        ] {
            if !path.is_file() {
                return Err(missing(what));
            }
        }
        let weight_files =
            checkpoint::weight_files(folder)?.ok_or_else(|| missing(checkpoint::WEIGHTS_FILE))?;
        let config = ModelConfig::from_file(&config_path)?;
        let (tokenizer, specials) = tokenizer::load_tokenizer(&tokenizer_path, &config)?;
        let family = config.family;
        let tensors = load_weights(&weight_files, family, device, &|name| {
            !decoder::LmHead::is_head_matrix(family, name)
        })?;
        let vb = WeightBuilder::new(tensors, device);
        let weights_name = if weight_files.len() == 1 {
            weight_files[0].display().to_string()
        } else {
            folder.join(checkpoint::INDEX_FILE).display().to_string()
        };
        let network = Network::load(vb, &config).map_err(|e| {
            anyhow!(
                "{} does not fit {} ({} tensor names): {}",
                weights_name,
                config_path.display(),
                config.family,
                without_backtrace(&e)
            )
        })?;
        Ok(Self {
            name: folder.display().to_string(),
            folder: folder.to_path_buf(),
            config,
            tokenizer,
            network,
            specials,
            lm_head: Default::default(),
        })
    }

    /// Attention layers L (for ALBERT, every application of a shared layer).
    pub fn layers(&self) -> usize {
        self.config.attention_layers()
    }

    pub fn heads(&self) -> usize {
        self.config.num_attention_heads
    }

    /// The longest input the model takes, in tokens.
    pub fn max_tokens(&self) -> usize {
        self.config.max_tokens()
    }

    /// Bytes the captures of a `tokens`-token input take: P and S of every
    /// head (T×T float32 each) and its output vectors (T×d).
    pub fn capture_bytes(&self, tokens: usize) -> u64 {
        let (heads, t) = ((self.layers() * self.heads()) as u64, tokens as u64);
        heads * (2 * t * t + t * self.config.head_dim() as u64) * 4
    }

    /// Bytes a `tokens`-token input takes when P and S are not kept but
    /// recomputed per head ([`Model::capture_recomputable`]): the keys of
    /// every head, and its outputs O and queries where they stay in memory
    /// (else they go to a scratch file: [`Model::scratch_bytes`]); and what
    /// the pass holds while it makes them: on the tuned CPU pass, which
    /// makes each head a block of rows at a time, each thread's blocks and
    /// the candidates of the top-fraction rule it keeps (counted for
    /// [`COUNTED_THREADS`] whatever the machine), elsewhere a layer's P and
    /// S whole, 3·H·T². Machine-independent, so that a window's cut is too.
    /// `None` for the BERT-like encoders, which always keep P and S.
    pub fn recomputed_capture_bytes(&self, tokens: usize) -> Option<u64> {
        let stack = self.network.stack();
        if !stack.hands_out_layers() {
            return None;
        }
        let (layers, heads, t) = (self.layers() as u64, self.heads() as u64, tokens as u64);
        let d = self.config.head_dim() as u64;
        let kv_heads = self.config.key_value_heads() as u64;
        let outputs_and_queries = 2 * layers * heads * t * d;
        let in_memory = match self.scratch_bytes(tokens) {
            0 => outputs_and_queries,
            _ => 0,
        };
        let vectors = layers * kv_heads * t * d + in_memory;
        let working = if stack.makes_heads_in_blocks() {
            // A block of P and one of S; 4 × k candidates (k: 1% of T²/2)
            // of 12 bytes each.
            COUNTED_THREADS * (2 * ROW_BLOCK.min(tokens) as u64 * t + 6 * t * t / 100)
        } else {
            3 * heads * t * t
        };
        Some((vectors + working) * 4)
    }

    /// Bytes of a `tokens`-token pass that recomputes P and S
    /// ([`Model::capture_recomputable`]) kept in a scratch file on disk:
    /// every head's outputs O and queries, each L×H×T×d, where each
    /// [`goes_to_disk`]; else 0.
    pub fn scratch_bytes(&self, tokens: usize) -> u64 {
        let vectors = self.layers() * self.heads() * tokens * self.config.head_dim();
        if goes_to_disk(vectors) {
            2 * vectors as u64 * 4
        } else {
            0
        }
    }

    /// Values of the residual stream a pass over `tokens` tokens keeps
    /// where `wanted` and [`Model::keeps_residuals`]: L × T × hidden, or 0.
    fn kept_residual_values(&self, tokens: usize, wanted: bool) -> usize {
        if wanted && self.keeps_residuals(tokens) {
            self.layers() * tokens * self.config.hidden_size
        } else {
            0
        }
    }

    /// Checks that `input_ids` is an input this model takes.
    fn check_input(&self, input_ids: &[u32]) -> Result<(), ForwardError> {
        let tokens = input_ids.len();
        if tokens == 0 || tokens > self.max_tokens() {
            return Err(Refusal::Length {
                tokens,
                max: self.max_tokens(),
            }
            .into());
        }
        if let Some(&bad) = input_ids
            .iter()
            .find(|&&id| id as usize >= self.config.vocab_size)
        {
            return Err(Refusal::OutsideVocabulary {
                id: bad,
                vocabulary: self.config.vocab_size,
            }
            .into());
        }
        Ok(())
    }

    /// The one way into a pass: checks the input, then runs it through
    /// the network ([`AttentionStack::run`]), `observer` asked before each
    /// layer, capturing into `sink`. The methods below are its capture
    /// modes: every layer kept ([`Model::capture_into`]), what recomputes P
    /// and S kept ([`Model::capture_recomputable`]); the logit lens and
    /// generation ([`predict`]) are two more.
    pub fn run(
        &self,
        input: PassInput,
        observer: &dyn PassObserver,
        sink: &mut dyn LayerSink,
    ) -> Result<(), ForwardError> {
        if let Some((input_ids, (layer, residual))) = input.sequence() {
            self.check_input(input_ids)?;
            let hidden = input_ids.len() * self.config.hidden_size;
            if residual.is_some_and(|r| layer >= self.layers() || r.len() != hidden) {
                return Err(Refusal::Unsupported(
                    "a resumed pass needs a layer of the model and its input's residual stream",
                )
                .into());
            }
        }
        self.network.stack().run(input, observer, sink)
    }

    /// Runs the model keeping, instead of every P and S, what recomputes
    /// them ([`Captures::recompute`]); each layer's full captures go to
    /// `on_layer` while they exist, for the figures that need them, and
    /// each of its heads' P and S, before, to the observer's head observer
    /// where it has one (on the CPU pass, on the thread that made the
    /// head). An error for the BERT-like encoders.
    pub fn capture_recomputable(
        &self,
        input_ids: &[u32],
        observer: &dyn PassObserver,
        keep_residuals: bool,
        on_layer: &mut dyn FnMut(usize, &LayerCaptures),
    ) -> Result<Captures, ForwardError> {
        // Before the buffers are sized: an input too long must not size them.
        self.check_input(input_ids)?;
        let stack = self.network.stack();
        if !stack.hands_out_layers() {
            return Err(
                Refusal::Unsupported("only the decoder stack recomputes its attention").into(),
            );
        }
        let (layers, heads, head_dim) = (self.layers(), self.heads(), self.config.head_dim());
        let kv_heads = self.config.key_value_heads();
        let tokens = input_ids.len();
        let residuals = self.kept_residual_values(tokens, keep_residuals);
        let dims = (layers, heads, kv_heads, tokens, head_dim);
        let mut sink = capture_modes::Recomputable::new(dims, residuals, on_layer);
        self.run(PassInput::Sequence(input_ids), observer, &mut sink)?;
        Ok(sink.into_captures(stack.score_rules()))
    }

    /// Runs the model and gathers every layer's P, O and S into plain
    /// buffers ([`Model::capture_into`]). Returns
    /// `ForwardError::Cancelled` as soon as `observer` says so before a
    /// layer (a closure `|| false` never does).
    pub fn capture(
        &self,
        input_ids: &[u32],
        observer: &dyn PassObserver,
    ) -> Result<Captures, ForwardError> {
        let mut captures = Captures::default();
        self.capture_into(input_ids, observer, false, &mut captures)?;
        Ok(captures)
    }

    /// [`Model::capture`] into an existing `Captures`, whose buffers are kept
    /// when they already have the right sizes (a rerun at the same length
    /// then touches no new memory: at BERT-base and 512 tokens they are
    /// 300 MB, whose page faults alone cost tens of milliseconds). On an
    /// error the contents are unspecified.
    pub fn capture_into(
        &self,
        input_ids: &[u32],
        observer: &dyn PassObserver,
        keep_residuals: bool,
        captures: &mut Captures,
    ) -> Result<(), ForwardError> {
        // Before the buffers are sized: an input too long must not size them.
        self.check_input(input_ids)?;
        let dims = (
            self.layers(),
            self.heads(),
            input_ids.len(),
            self.config.head_dim(),
        );
        let residuals = self.kept_residual_values(input_ids.len(), keep_residuals);
        let mut sink = capture_modes::KeepAll::new(captures, dims, residuals);
        self.run(PassInput::Sequence(input_ids), observer, &mut sink)
    }
}

/// The CPU, or the first CUDA device when built with the `cuda` feature.
pub fn default_device() -> anyhow::Result<Device> {
    #[cfg(feature = "cuda")]
    {
        if let Ok(device) = Device::new_cuda(0) {
            return Ok(device);
        }
    }
    Ok(Device::Cpu)
}

/// Reads the tensors of the checkpoint's files that `keep` keeps (by
/// their normalised names), each in its own precision
/// ([`checkpoint::read_tensors_where`]), normalising names (the family's
/// prefix, `gamma`/`beta`).
fn load_weights(
    files: &[PathBuf],
    family: Family,
    device: &Device,
    keep: &dyn Fn(&str) -> bool,
) -> anyhow::Result<HashMap<String, Tensor>> {
    let tensors = read_normalised(files, family, device, keep)?;
    let words = format!("{}.weight", family.word_embeddings());
    if !tensors.contains_key(&words) {
        bail!(
            "{} has no {words} (nor {}{words}): not a {} checkpoint",
            files[0].display(),
            family.checkpoint_prefix(),
            family
        );
    }
    Ok(tensors)
}

/// The tensors of the checkpoint's files that `keep` keeps, by their
/// normalised names.
fn read_normalised(
    files: &[PathBuf],
    family: Family,
    device: &Device,
    keep: &dyn Fn(&str) -> bool,
) -> anyhow::Result<HashMap<String, Tensor>> {
    let mut tensors = HashMap::new();
    for path in files {
        let keep = |name: &str| keep(&normalise_tensor_name(name, family));
        for (name, tensor) in checkpoint::read_tensors_where(path, device, &keep)? {
            tensors.insert(normalise_tensor_name(&name, family), tensor);
        }
    }
    Ok(tensors)
}

/// `bert.encoder.layer.0.attention.output.LayerNorm.gamma` →
/// `encoder.layer.0.attention.output.LayerNorm.weight` (for BERT; each
/// family strips its own prefix).
pub fn normalise_tensor_name(name: &str, family: Family) -> String {
    let name = name
        .strip_prefix(family.checkpoint_prefix())
        .unwrap_or(name);
    if let Some(stem) = name.strip_suffix(".gamma") {
        format!("{stem}.weight")
    } else if let Some(stem) = name.strip_suffix(".beta") {
        format!("{stem}.bias")
    } else {
        name.to_string()
    }
}

/// Where `scripts/fetch-test-model.sh` puts all-MiniLM-L6-v2:
/// `$HEADSCOPE_CACHE/models/all-MiniLM-L6-v2`, by default under `~/.cache/headscope`.
pub fn test_model_dir() -> PathBuf {
    cache_dir().join("models").join("all-MiniLM-L6-v2")
}

/// headscope's own cache folder.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("HEADSCOPE_CACHE") {
        return PathBuf::from(dir);
    }
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("headscope")
}

/// The model to open when the user named none: `$HEADSCOPE_MODEL`, the
/// cached test model, or `bert-base-uncased` from the Hugging Face cache.
pub fn find_default_model() -> Option<ModelSource> {
    if let Some(text) = std::env::var_os("HEADSCOPE_MODEL") {
        if let Ok(source) = ModelSource::parse(&text.to_string_lossy()) {
            return Some(source);
        }
    }
    let test_model = test_model_dir();
    if is_model_folder(&test_model) {
        return Some(ModelSource::Folder(test_model));
    }
    hub::cached_folder("bert-base-uncased").map(ModelSource::Folder)
}

/// Whether a folder holds the files a model needs (the weights in one
/// file or sharded).
pub fn is_model_folder(folder: &Path) -> bool {
    ["config.json", "tokenizer.json"]
        .iter()
        .all(|f| folder.join(f).is_file())
        && [checkpoint::WEIGHTS_FILE, checkpoint::INDEX_FILE]
            .iter()
            .any(|f| folder.join(f).is_file())
}

/// A candle error's message without the backtrace candle appends when
/// `RUST_BACKTRACE` is set: users get one line, not a stack.
pub fn without_backtrace(error: &candle_core::Error) -> String {
    let text = error.to_string();
    match text.find("\n   0: ") {
        Some(end) => text[..end].trim_end().to_string(),
        None => text,
    }
}
