//! `headscope make-random-model`: a model folder with random weights of a
//! known shape or a `config.json`'s, any family (no download).

use anyhow::bail;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub(crate) struct RandomModelArgs {
    /// Shape to copy: bert-base-uncased, all-minilm-l6-v2, roberta-base,
    /// xlm-roberta-base, camembert-base, distilbert-base-uncased,
    /// electra-base-discriminator, electra-small-discriminator, albert-base-v2,
    /// gpt2, smollm2-135m (a Llama), qwen2-0.5b, llama-3-8b, pythia-160m,
    /// gemma-2b, gemma-2-2b, gemma-3-1b, qwen3-0.6b, phi-3-mini, olmo-2-1b,
    /// or a config.json / model folder.
    #[arg(long)]
    pub(crate) like: String,
    /// tokenizer.json to put in the folder.
    #[arg(long)]
    pub(crate) tokenizer: PathBuf,
    /// Output folder.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Precision of the weights written: f32, bf16 or f16.
    #[arg(long, default_value = "f32")]
    pub(crate) dtype: crate::model::random::WeightDtype,
}

pub(crate) fn make_random_model(args: RandomModelArgs) -> anyhow::Result<()> {
    use crate::model::{random, ModelConfig};
    let config = match ModelConfig::like(&args.like) {
        Some(config) => config,
        None => {
            let path = Path::new(&args.like);
            let config_path = if path.is_dir() {
                path.join("config.json")
            } else {
                path.to_path_buf()
            };
            if !config_path.is_file() {
                bail!(
                    "--like {}: not a known shape ({}) nor a config.json",
                    args.like,
                    ModelConfig::KNOWN_SHAPES.join(", ")
                );
            }
            ModelConfig::from_file(&config_path)?
        }
    };
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template("{msg} {bar:40} {bytes}/{total_bytes} {eta}")
            .expect("a valid template"),
    );
    bar.set_message("writing weights");
    random::write_random_model_with(
        &config,
        &args.tokenizer,
        &args.out,
        args.seed,
        Default::default(),
        args.dtype,
        &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        },
    )?;
    bar.finish_and_clear();
    eprintln!(
        "headscope: wrote a random {} {}-layer, {}-head, hidden {} model to {}",
        config.family,
        config.num_hidden_layers,
        config.num_attention_heads,
        config.hidden_size,
        args.out.display()
    );
    Ok(())
}
