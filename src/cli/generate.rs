//! `headscope generate`: a decoder continues a prompt — greedily, or
//! sampled (temperature, top-p, top-k, seed) — printing the continuation
//! as it comes (Ctrl+C stops it and keeps what was written); with
//! `--json`, the analysis of prompt and continuation together (the fields
//! of `analyze --json`) with the ids of each.

use super::args::AnalysisArgs;
use super::running::{
    check_writable, load_model, read_text, report_window, stop_on_ctrl_c, write_json,
};
use crate::model::chat::chat_prompt_ids;
use crate::model::predict::{GenerationEvent, GenerationOptions};
use crate::model::Model;
use crate::pipeline::{self, InputOptions};
use crate::predictions::{Decoding, Sampling};
use crate::report::DecoderReport;
use anyhow::{anyhow, bail};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub(crate) struct GenerateArgs {
    /// Model folder, GGUF file or Hugging Face id: a causal decoder.
    #[arg(long)]
    pub(crate) model: String,
    /// At most this many new tokens (fewer where the model's end-of-sequence token comes first).
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub(crate) max_new_tokens: usize,
    /// Sample the new tokens at this temperature (without any sampling option: greedy, the likeliest token).
    #[arg(long, value_name = "T")]
    pub(crate) temperature: Option<f32>,
    /// Sample only among the likeliest tokens whose probabilities reach P.
    #[arg(long, value_name = "P")]
    pub(crate) top_p: Option<f32>,
    /// Sample only among the K likeliest tokens.
    #[arg(long, value_name = "K")]
    pub(crate) top_k: Option<usize>,
    /// Seed of the sampling: the same seed repeats a run exactly (default: a new seed, printed on stderr).
    #[arg(long, value_name = "S")]
    pub(crate) seed: Option<u64>,
    /// The text is a user message: put it through the model's chat template.
    #[arg(long)]
    pub(crate) chat: bool,
    /// Write the analysis of prompt + continuation as JSON (the fields of analyze --json, with prompt_ids and generated_ids), - for stdout.
    #[arg(long, value_name = "OUT")]
    pub(crate) json: Option<PathBuf>,
    /// At most this much memory, in MB, for the analysis' captures (as analyze's).
    #[arg(long, value_name = "MB", default_value_t = pipeline::DEFAULT_CAPTURE_MEMORY_MB)]
    pub(crate) capture_memory_mb: u64,
    #[command(flatten)]
    pub(crate) analysis: AnalysisArgs,
    /// The prompt's text file (its final line ending is not part of it), or - for standard input.
    pub(crate) file: PathBuf,
}

impl GenerateArgs {
    fn decoding(&self) -> anyhow::Result<Decoding> {
        if self.temperature.is_none()
            && self.top_p.is_none()
            && self.top_k.is_none()
            && self.seed.is_none()
        {
            return Ok(Decoding::Greedy);
        }
        let seed = self.seed.unwrap_or_else(|| {
            let seed = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |t| t.as_nanos() as u64);
            eprintln!("headscope: sampling with --seed {seed}");
            seed
        });
        let sampling = Sampling {
            temperature: self.temperature.unwrap_or(1.0),
            top_p: self.top_p.unwrap_or(1.0),
            top_k: self.top_k.unwrap_or(0),
            seed,
        };
        sampling.check().map_err(|e| anyhow!("--{e}"))?;
        Ok(Decoding::Sampled(sampling))
    }
}

pub(crate) fn generate(args: GenerateArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.json {
        check_writable(path)?;
    }
    let options = args.analysis.options()?;
    let decoding = args.decoding()?;
    if args.max_new_tokens == 0 || args.capture_memory_mb == 0 {
        bail!("--max-new-tokens and --capture-memory-mb must be at least 1");
    }
    let text = read_text(&args.file)?;
    let prompt = strip_final_line_ending(&text);
    if prompt.trim().is_empty() {
        bail!("{}: the prompt is empty", args.file.display());
    }
    let model = load_model(&args.model)?;
    if !model.config.is_causal() {
        bail!(
            "generation needs a decoder: {} is an encoder ({})",
            model.name,
            model.config.family
        );
    }
    let prompt_ids = prompt_ids(&model, prompt, args.chat)?;
    // With the JSON on stdout, the continuation goes to stderr.
    let json_on_stdout = args.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    let mut out: Box<dyn Write> = if json_on_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    eprintln!(
        "headscope: {} continues {} prompt tokens (at most {} new)",
        model.name,
        prompt_ids.len(),
        args.max_new_tokens
    );
    // Ctrl+C stops after the token being computed; what was written stays.
    let stop = stop_on_ctrl_c("writing the continuation so far");
    let start = Instant::now();
    let mut printer = ContinuationPrinter {
        prompt_ids: &prompt_ids,
        ids: Vec::new(),
        printed: 0,
    };
    let generation = model.generate(
        &prompt_ids,
        &GenerationOptions {
            max_new_tokens: args.max_new_tokens,
            decoding,
        },
        &|| stop.load(std::sync::atomic::Ordering::SeqCst),
        &mut |event| {
            if let GenerationEvent::Token(id) = event {
                printer.push(&model, id, &mut out);
            }
        },
    )?;
    let _ = writeln!(out);
    eprintln!(
        "headscope: {} new tokens in {:.1} s{}",
        generation.generated_ids.len(),
        start.elapsed().as_secs_f64(),
        if generation.ended {
            ", ended by the model"
        } else if generation.cancelled {
            ", stopped by Ctrl+C"
        } else {
            ""
        }
    );
    let Some(path) = &args.json else {
        return Ok(());
    };
    let all: Vec<u32> = prompt_ids
        .iter()
        .chain(&generation.generated_ids)
        .copied()
        .collect();
    let input = InputOptions {
        capture_memory_mb: Some(args.capture_memory_mb),
        ..Default::default()
    };
    let (built, _) = pipeline::prepare_ids(&model, &all, &input)?;
    report_window(&built, "prompt + continuation");
    let output = pipeline::run_prepared(&model, built, &options, &|| false)?;
    write_json(
        path,
        &DecoderReport {
            report: output.report(),
            prompt_ids: Some(&prompt_ids),
            generated_ids: Some(&generation.generated_ids),
            logit_lens: None,
        },
    )
}

/// The text without its final line ending (a file's last line has one).
fn strip_final_line_ending(text: &str) -> &str {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.strip_suffix('\r').unwrap_or(text)
}

/// The prompt's ids: the text as the tokenizer encodes it with its own
/// special tokens (as the study's input), or through the chat template.
fn prompt_ids(model: &Model, prompt: &str, chat: bool) -> anyhow::Result<Vec<u32>> {
    if chat {
        return chat_prompt_ids(model, prompt);
    }
    let encoding = model
        .tokenizer
        .encode(prompt, true)
        .map_err(|e| anyhow!("the tokenizer failed: {e}"))?;
    Ok(encoding.get_ids().to_vec())
}

/// Prints a continuation as its tokens come: the text the tokens so far
/// add to the prompt ([`Model::continuation_text`]), a piece at a time,
/// held back while it ends inside a character (a byte-level token may cut
/// one in two).
struct ContinuationPrinter<'a> {
    prompt_ids: &'a [u32],
    ids: Vec<u32>,
    printed: usize,
}

impl ContinuationPrinter<'_> {
    fn push(&mut self, model: &Model, id: u32, out: &mut dyn Write) {
        self.ids.push(id);
        let text = model.continuation_text(self.prompt_ids, &self.ids);
        if text.ends_with('\u{FFFD}') || !text.is_char_boundary(self.printed.min(text.len())) {
            return;
        }
        if let Some(new) = text.get(self.printed..) {
            let _ = write!(out, "{new}");
            let _ = out.flush();
            self.printed = text.len();
        }
    }
}
