//! The arguments the commands share: the model and how a text becomes its
//! input, the window's limits, the analysis options, one text to analyse.

use super::running::{load_model, read_text, run_on_text};
use crate::analysis::{AnalysisOptions, Selection, SimilarityVariant};
use crate::input::InputMode;
use crate::model::Model;
use crate::pipeline::{self, InputOptions, RunOutput};
use anyhow::bail;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// The model and how a text becomes its input: shared by every command
/// that runs the model on texts (`analyze`, `export`, `corpus`).
#[derive(Args, Debug, Clone)]
pub(crate) struct ModelInputArgs {
    /// Model folder (config.json, model.safetensors, tokenizer.json), GGUF file or Hugging Face id.
    #[arg(long)]
    pub(crate) model: String,
    #[command(flatten)]
    pub(crate) input: InputArgs,
}

/// The input options read through a [`ModelInputArgs`] as its own.
impl std::ops::Deref for ModelInputArgs {
    type Target = InputArgs;
    fn deref(&self) -> &InputArgs {
        &self.input
    }
}

/// How a text becomes a model's input, and the analysis options: the part
/// of [`ModelInputArgs`] that `compare` shares for its two models.
#[derive(Args, Debug, Clone)]
pub(crate) struct InputArgs {
    /// Each non-empty line is one sentence.
    #[arg(long, conflicts_with = "plain")]
    pub(crate) one_sentence_per_line: bool,
    /// The tokenizer's own encoding of the text: one [CLS] ... [SEP] per window.
    #[arg(long)]
    pub(crate) plain: bool,
    #[command(flatten)]
    pub(crate) analysis: AnalysisArgs,
}

impl InputArgs {
    pub(crate) fn mode(&self) -> InputMode {
        if self.plain {
            InputMode::Plain
        } else if self.one_sentence_per_line {
            InputMode::OneSentencePerLine
        } else {
            InputMode::Document
        }
    }
}

/// The window limits of the commands that analyse texts (`analyze`,
/// `export`, `compare`, `corpus`), below the model's own limit.
#[derive(Args, Debug, Clone)]
pub(crate) struct LimitArgs {
    /// At most this many tokens (below the model's own limit); the text is
    /// cut at the last whole sentence that fits.
    #[arg(long, value_name = "N")]
    pub(crate) max_tokens: Option<usize>,
    /// At most this much memory, in MB, for the attentions and similarities
    /// of every head. A decoder whose P and S need more keeps only what
    /// recomputes them (queries, keys, head outputs); a text that does not
    /// fit even so is cut.
    #[arg(long, value_name = "MB", default_value_t = pipeline::DEFAULT_CAPTURE_MEMORY_MB)]
    pub(crate) capture_memory_mb: u64,
}

impl LimitArgs {
    /// The input options of `input` within these limits.
    pub(crate) fn input_options(&self, input: &InputArgs) -> anyhow::Result<InputOptions> {
        if self.max_tokens.is_some_and(|n| n < 3) || self.capture_memory_mb == 0 {
            bail!("--max-tokens must be at least 3 and --capture-memory-mb at least 1");
        }
        Ok(InputOptions {
            mode: input.mode(),
            max_tokens: self.max_tokens,
            capture_memory_mb: Some(self.capture_memory_mb),
            ..Default::default()
        })
    }
}

/// Options of the commands that analyse one text.
#[derive(Args, Debug, Clone)]
pub(crate) struct TextArgs {
    #[command(flatten)]
    pub(crate) input: ModelInputArgs,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
    /// Text file, or - for standard input.
    pub(crate) file: PathBuf,
}

impl TextArgs {
    /// Reads the text, loads the model and runs the whole analysis,
    /// warning on stderr about Latin-1 input and anything left out.
    pub(crate) fn run(&self) -> anyhow::Result<(Model, RunOutput)> {
        let (model, _, output) = self.run_with_text(false)?;
        Ok((model, output))
    }

    /// [`TextArgs::run`], which also hands back the text it read, keeping a decoder's residual
    /// stream where `keep_residuals` asks ([`InputOptions::keep_residuals`]).
    pub(crate) fn run_with_text(
        &self,
        keep_residuals: bool,
    ) -> anyhow::Result<(Model, String, RunOutput)> {
        let options = self.input.analysis.options()?;
        let input = InputOptions {
            keep_residuals,
            ..self.limits.input_options(&self.input)?
        };
        let text = read_text(&self.file)?;
        let model = load_model(&self.input.model)?;
        let output = run_on_text(&model, &text, &self.file, &input, &options)?;
        Ok((model, text, output))
    }
}

#[derive(Args, Debug, Clone)]
pub(crate) struct AnalysisArgs {
    /// Share of candidate pairs selected per head (top-fraction rule).
    #[arg(long, default_value_t = 0.01)]
    pub(crate) q: f64,
    /// How the strongest pairs are selected.
    #[arg(long, value_enum, default_value_t = SelectionArg::TopFraction)]
    pub(crate) selection: SelectionArg,
    /// z for --selection above-mean: S > mean + z·std.
    #[arg(long, default_value_t = 3.0)]
    pub(crate) z: f64,
    /// k for --selection top-k-per-row.
    #[arg(long, default_value_t = 1)]
    pub(crate) k: usize,
    /// Which similarity the pairs are ranked by.
    #[arg(long, value_enum, default_value_t = SimilarityArg::Raw)]
    pub(crate) similarity: SimilarityArg,
    /// Largest j − i that counts as local.
    #[arg(long, default_value_t = 4)]
    pub(crate) window: usize,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
pub(crate) enum SelectionArg {
    TopFraction,
    AboveMean,
    TopKPerRow,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
pub(crate) enum SimilarityArg {
    Raw,
    Cosine,
    RowOverDiagonal,
    ZScore,
}

impl AnalysisArgs {
    pub(crate) fn options(&self) -> anyhow::Result<AnalysisOptions> {
        if !(self.q > 0.0 && self.q <= 1.0) {
            bail!("--q {} is outside (0, 1]", self.q);
        }
        if !self.z.is_finite() {
            bail!("--z {} is not a number", self.z);
        }
        if self.k == 0 {
            bail!("--k must be at least 1");
        }
        Ok(AnalysisOptions {
            selection: match self.selection {
                SelectionArg::TopFraction => Selection::TopFraction { q: self.q },
                SelectionArg::AboveMean => Selection::AboveMean { z: self.z },
                SelectionArg::TopKPerRow => Selection::TopKPerRow { k: self.k },
            },
            similarity: match self.similarity {
                SimilarityArg::Raw => SimilarityVariant::Raw,
                SimilarityArg::Cosine => SimilarityVariant::Cosine,
                SimilarityArg::RowOverDiagonal => SimilarityVariant::RowOverDiagonal,
                SimilarityArg::ZScore => SimilarityVariant::ZScore,
            },
            local_window: self.window,
        })
    }
}

/// The input and analysis options as `headscope analyze` reads them from
/// its flags (`--one-sentence-per-line`, `--q 0.02`, `--max-tokens 256`,
/// …), with the same defaults and checks: for callers outside the command
/// line (the Python package) that must analyse exactly as it does.
pub fn options_from_flags(flags: &[String]) -> anyhow::Result<(InputOptions, AnalysisOptions)> {
    #[derive(clap::Parser)]
    #[command(name = "headscope analyze", no_binary_name = true)]
    struct Flags {
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        limits: LimitArgs,
    }
    let flags = <Flags as clap::Parser>::try_parse_from(flags)
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim()))?;
    Ok((
        flags.limits.input_options(&flags.input)?,
        flags.input.analysis.options()?,
    ))
}
