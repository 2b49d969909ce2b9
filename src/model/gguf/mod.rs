//! Opening a llama.cpp GGUF file as it is — `--model FILE.gguf` — with no
//! conversion: the config from its metadata ([`config`]), the tokenizer
//! from its vocabulary ([`tokenizer`]), its tensors read once in their own
//! precision, quantized blocks staying quantized in memory and dequantized
//! where the pass reaches them ([`quantized`], [`tensors`]).
//!
//! headscope opens the architectures `llama` (Llama, Mistral, SmolLM, …),
//! `qwen2`, `qwen3`, `gemma`, `gemma2`, `gemma3`, `phi3`, `olmo2` and
//! `gptneox` ([`config::architectures`]: every family it runs that
//! llama.cpp writes), with tensors in every type llama.cpp's quantizer
//! writes for the mixes people download — F32, F16, BF16, Q8_0, Q4_0,
//! Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS (a
//! Q4_K_M file holds Q5_0 or Q8_0 where rows are not a multiple of 256) —
//! and computes what llama.cpp's model computes: the config as llama.cpp
//! reads the metadata (sliding windows and their pattern, soft-caps,
//! Gemma 3's local rope base, key lengths, partial rotary, `rope_freqs`
//! and linear rope scaling), the weights and token ids as transformers'
//! GGUF loading gives them (`from_pretrained(dir, gguf_file=NAME)`) where
//! it loads the architecture. Other architectures, rope scalings (YaRN,
//! LongRoPE), tensor types (named with the tensor) and damaged files are
//! refused with a message naming the file and the problem.

pub mod config;
pub mod file;
pub mod iquants;
pub mod quantized;
pub mod tensors;
pub mod tokenizer;

use super::config::ModelConfig;
use super::decoder::LmHead;
use super::weight::WeightBuilder;
use super::{without_backtrace, Model, Network};
use anyhow::anyhow;
use candle_core::Device;
use file::GgufFile;
use std::path::Path;

/// Whether `path` is a GGUF file: by its extension, or (Ollama's blobs
/// have none) by its first bytes.
pub fn is_gguf_file(path: &Path) -> bool {
    if !path.is_file() {
        return false;
    }
    if path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("gguf"))
    {
        return true;
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut magic))
        .is_ok_and(|()| &magic == b"GGUF")
}

/// The file's name; for a file without the `.gguf` extension (an Ollama
/// blob, `sha256-…`), the model's own name from its metadata instead.
fn display_name(file: &GgufFile) -> String {
    let file_name = file
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.path.display().to_string());
    let has_extension = file
        .path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("gguf"));
    match file.string("general.name") {
        Ok(name) if !has_extension => name.to_string(),
        _ => file_name,
    }
}

/// Loads a GGUF file onto `device`.
pub fn load(path: &Path, device: &Device) -> anyhow::Result<Model> {
    let mut file = GgufFile::open(path)?;
    file.check_tensor_types()?;
    let config = config::encoder_config(&mut file)?;
    let tokenizer = tokenizer::build(&file)?;
    let (tokenizer, specials) = super::tokenizer::prepare_tokenizer(tokenizer, path, &config)?;
    let family = config.family;
    let read = tensors::read(&mut file, &config, device, &|name| {
        !LmHead::is_head_matrix(family, name)
    })?;
    let vb = WeightBuilder::with_quantized(read.floats, read.quantized, device);
    let network = Network::load(vb, &config).map_err(|e| {
        anyhow!(
            "{}'s tensors do not fit its metadata ({} layers of {}): {}",
            path.display(),
            config.num_hidden_layers,
            config.family,
            without_backtrace(&e)
        )
    })?;
    Ok(Model {
        name: display_name(&file),
        folder: path.to_path_buf(),
        config,
        tokenizer,
        network,
        specials,
        lm_head: Default::default(),
    })
}

/// The tensors of a GGUF file's final norm and LM head (`output_norm`,
/// `output`, where it has one), for [`LmHead`], under the names the
/// decoder reads.
pub fn head_tensors(
    path: &Path,
    config: &ModelConfig,
    device: &Device,
) -> anyhow::Result<WeightBuilder> {
    let mut file = GgufFile::open(path)?;
    let family = config.family;
    let read = tensors::read(&mut file, config, device, &|name| {
        LmHead::holds_tensor(family, name)
    })?;
    Ok(WeightBuilder::with_quantized(
        read.floats,
        read.quantized,
        device,
    ))
}
