//! The command line: `headscope [--model M] [FILE]` opens the app;
//! `analyze`, `ablate`, `generate`, `export`, `compare`, `corpus`, `merge`, `bench`,
//! `make-random-model` and `models` serve scripts, a file each ([`analyze`], [`ablate`],
//! [`generate`], [`export`], [`compare`], [`corpus`] with `merge`, [`bench`],
//! [`random_model`], [`models`]); the
//! arguments they share are [`args`], and loading the model and running it
//! on a file is [`running`].
//!
//! Errors travel up as values and are reported once, here, as one line on
//! stderr with a non-zero exit code.

mod ablate;
mod analyze;
mod args;
mod bench;
mod compare;
mod corpus;
mod export;
mod generate;
mod models;
mod random_model;
mod running;

pub use ablate::ablation_json_from_flags;
pub use args::options_from_flags;
pub use running::check_writable;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "headscope",
    version,
    about = "See what a transformer's attention heads output",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Model folder, GGUF file or Hugging Face id for the app (default: the first model found).
    #[arg(long)]
    model: Option<String>,
    /// Text file to open in the app.
    file: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Analyse a text and print the figures of every layer and head.
    Analyze(analyze::AnalyzeArgs),
    Ablate(ablate::AblateArgs),
    /// Continue a prompt with a decoder (greedy or sampled), and analyse prompt + continuation.
    Generate(generate::GenerateArgs),
    /// Write a head's heatmap (or every head's) as PNG, or its matrix as CSV.
    Export(export::ExportArgs),
    /// Time the whole analysis of an N-token input.
    Bench(bench::BenchArgs),
    /// Write a model folder with random weights of a known model's shape, any family.
    MakeRandomModel(random_model::RandomModelArgs),
    /// Average every figure over a corpus (text files, JSON Lines, Parquet), with spread and 95% intervals.
    Corpus(corpus::CorpusArgs),
    /// Merge the parts of a sharded corpus run (corpus --shard K/N --part FILE) into its report.
    Merge(corpus::MergeArgs),
    /// Run two models on one text and match their heads (--model A --model B).
    Compare(compare::CompareArgs),
    /// Open the app on a capture file (docs/CAPTURE.md), or on a text file.
    View {
        /// A capture file (.safetensors) or a text file.
        file: PathBuf,
        /// With a text file: the model to run on it.
        #[arg(long)]
        model: Option<String>,
    },
    /// List the models on this computer (Hugging Face cache, Ollama, LM Studio) and whether each opens.
    Models(models::ModelsArgs),
}

/// Entry point of the binary: runs the command and returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("headscope: error: {e:#}");
            1
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        None => open_app(cli.model, cli.file),
        Some(Command::View { file, model }) => open_app(model, Some(file)),
        Some(Command::Analyze(args)) => analyze::analyze(args),
        Some(Command::Ablate(args)) => ablate::ablate(args),
        Some(Command::Generate(args)) => generate::generate(args),
        Some(Command::Export(args)) => export::export(args),
        Some(Command::Bench(args)) => bench::bench(args),
        Some(Command::MakeRandomModel(args)) => random_model::make_random_model(args),
        Some(Command::Corpus(args)) => corpus::corpus(args),
        Some(Command::Merge(args)) => corpus::merge(args),
        Some(Command::Compare(args)) => compare::compare(args),
        Some(Command::Models(args)) => models::models(args),
    }
}

/// The app on a text file, or on a capture file, which takes the model's
/// place (and brings its text).
pub fn open_app(model: Option<String>, file: Option<PathBuf>) -> anyhow::Result<()> {
    let start = match file {
        Some(file) if crate::capture_file::is_capture_path(&file) => {
            if model.is_some() {
                anyhow::bail!("{} is a capture file: it needs no --model", file.display());
            }
            crate::app::StartOptions {
                model: Some(file.display().to_string()),
                file: None,
            }
        }
        file => crate::app::StartOptions { model, file },
    };
    crate::app::run(start)
}
