//! `headscope analyze`: the figures of every layer and head of one text, as
//! a table on stdout, or JSON and NPZ files (ANALYSIS.md §6); of a model
//! run on a text, on the induction probe (`--probe induction`, §9), or of
//! a capture file (`--capture`, docs/CAPTURE.md).

use super::args::{InputArgs, LimitArgs, ModelInputArgs, TextArgs};
use super::running::{check_writable, load_model, write_json};
use crate::analysis::Role;
use crate::capture_file::{write_capture, CaptureFile, CaptureSource, ModelDescription};
use crate::model::Model;
use crate::pipeline::RunOutput;
use crate::report::DecoderReport;
use anyhow::bail;
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(crate) struct AnalyzeArgs {
    /// Model folder (config.json, model.safetensors, tokenizer.json) or Hugging Face id.
    #[arg(long, required_unless_present = "capture")]
    pub(crate) model: Option<String>,
    #[command(flatten)]
    pub(crate) input: InputArgs,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
    /// Text file, or - for standard input.
    #[arg(
        required_unless_present_any = ["capture", "probe"],
        conflicts_with_all = ["capture", "probe"]
    )]
    pub(crate) file: Option<PathBuf>,
    /// Analyse a generated input instead of a text: `induction`, the
    /// tokenizer's BOS (if it adds one), 50 seeded random token ids and the
    /// same 50 again (ANALYSIS.md §9), on which induction and
    /// previous-token heads show.
    #[arg(long, value_enum, requires = "model", conflicts_with = "capture")]
    pub(crate) probe: Option<ProbeArg>,
    /// Analyse a capture file (docs/CAPTURE.md) instead of running a model
    /// on a text; the analysis options apply, the input options do not.
    #[arg(long, value_name = "FILE", conflicts_with = "model")]
    pub(crate) capture: Option<PathBuf>,
    /// Also store the run as a capture file (head outputs and attentions).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["capture", "probe"])]
    pub(crate) save_capture: Option<PathBuf>,
    /// Write the figures as JSON (ANALYSIS.md §6) to this file, - for stdout.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Write input ids, attentions, head outputs and similarity as NPZ.
    #[arg(long)]
    pub(crate) npz: Option<PathBuf>,
    /// A decoder's logit lens into the --json file: per layer, the top 5
    /// next tokens and their probabilities at every position, from the
    /// residual stream after that layer through the final norm and LM head.
    #[arg(long, requires = "json", conflicts_with = "capture")]
    pub(crate) logit_lens: bool,
}

/// The generated inputs `--probe` offers.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbeArg {
    Induction,
}

pub(crate) fn analyze(args: AnalyzeArgs) -> anyhow::Result<()> {
    if args.logit_lens && args.model.is_none() {
        bail!("--logit-lens needs --model: a capture file holds no LM head");
    }
    // Check output paths before the model runs, so a typo costs nothing.
    for path in [&args.json, &args.npz, &args.save_capture]
        .into_iter()
        .flatten()
    {
        check_writable(path)?;
    }
    let text = match (&args.model, &args.file) {
        (Some(model), Some(file)) => Some(TextArgs {
            input: ModelInputArgs {
                model: model.clone(),
                input: args.input.clone(),
            },
            limits: args.limits.clone(),
            file: file.clone(),
        }),
        _ => None,
    };
    // From the residual stream the run kept, where it did.
    let logit_lens = |model: &Model, output: &RunOutput| {
        let ids = &output.input.tokens.input_ids;
        model.logit_lens_counted(ids, &output.captures.residuals, 5, &|| false, &|_| {})
    };
    let mut lens = None;
    let (name, output) = match (&text, &args.capture) {
        _ if args.probe.is_some() => {
            let model = load_model(args.model.as_deref().unwrap_or_default())?;
            let options = args.input.analysis.options()?;
            let input = crate::pipeline::InputOptions {
                keep_residuals: args.logit_lens,
                ..args.limits.input_options(&args.input)?
            };
            let built = crate::pipeline::prepare_probe(&model, &input)?;
            let output = crate::pipeline::run_prepared(&model, built, &options, &|| false)?;
            if args.logit_lens {
                lens = Some(logit_lens(&model, &output)?);
            }
            (model.name.clone(), output)
        }
        (Some(text), None) => {
            let (model, text, output) = text.run_with_text(args.logit_lens)?;
            if args.logit_lens {
                lens = Some(logit_lens(&model, &output)?);
            }
            if let Some(path) = &args.save_capture {
                let source = CaptureSource {
                    model: ModelDescription {
                        name: model.name.clone(),
                        kind: model.config.family.model_type().to_string(),
                    },
                    text: &text,
                    tokens: &output.input.tokens,
                    captures: &output.captures,
                    with_attention: true,
                    sentences_left_out: output.input.sentences_left_out,
                    tokens_left_out: output.input.tokens_left_out,
                };
                write_capture(path, &source)?;
            }
            (model.name.clone(), output)
        }
        (None, Some(path)) => {
            let options = args.input.analysis.options()?;
            let capture = CaptureFile::read(path)?;
            if !capture.has_attention() {
                eprintln!(
                    "headscope: note: {} holds no attention P: the figures made from P are null",
                    path.display()
                );
            }
            (capture.name(), capture.run_output(&options))
        }
        _ => bail!("analyze needs --model M FILE, or --capture FILE"),
    };
    if let Some(path) = &args.npz {
        crate::npz::write_captures_npz(path, &output.input.tokens.input_ids, &output.captures)?;
    }
    match &args.json {
        Some(path) => {
            let report = DecoderReport {
                report: output.report(),
                prompt_ids: None,
                generated_ids: None,
                logit_lens: lens.as_ref(),
            };
            write_json(path, &report)?;
        }
        None => print_table(&name, &output),
    }
    Ok(())
}

pub(crate) fn fmt(value: Option<f64>, digits: usize) -> String {
    value.map_or("—".into(), |v| format!("{v:.digits$}"))
}

/// The readable per-layer table printed when no --json is given.
pub(crate) fn print_table(name: &str, output: &RunOutput) {
    let a = &output.analysis;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{} · {} tokens ({} content, {} sentences) · {} pairs, {} selected per head · {:.0} ms",
        name,
        a.tokens,
        a.content_tokens,
        a.sentences_analysed,
        a.pairs,
        a.selected_per_head.map_or("—".into(), |k| k.to_string()),
        output.timings.total_ms
    );
    let _ = writeln!(
        out,
        "chance same-sentence fraction: {}",
        fmt(a.baseline_same_sentence_fraction, 3)
    );
    let _ = writeln!(
        out,
        "{:>5} {:>9} {:>13} {:>9} {:>11} {:>12} {:>9} {:>16} {:>9} {:>9}  categories (repetition/focus/local/mixed)  roles (previous/duplicate/induction/sink/separator/self/mixed)",
        "layer", "distance", "same-sentence", "sep-attn", "focus-uniq", "segmentation", "undecided", "own-sep (chance)", "sink-attn", "sink N′"
    );
    for (index, layer) in a.layers.iter().enumerate() {
        let mut counts = [0usize; 4];
        let mut roles = [0usize; Role::ALL.len()];
        for head in &layer.heads {
            if let Some(category) = head.category {
                counts[category as usize] += 1;
            }
            if let Some(role) = head.role {
                roles[role as usize] += 1;
            }
        }
        let roles = roles.map(|n| n.to_string()).join("/");
        let _ = writeln!(
            out,
            "{:>5} {:>9} {:>13} {:>9} {:>11} {:>12} {:>9} {:>16} {:>9} {:>9}  {}/{}/{}/{}  {}",
            index,
            fmt(layer.mean_distance, 2),
            fmt(layer.same_sentence_fraction, 3),
            fmt(layer.separator_attention, 3),
            fmt(layer.focus_uniqueness, 3),
            fmt(layer.segmentation_accuracy, 3),
            fmt(layer.segmentation_undecided, 3),
            format!(
                "{} ({})",
                fmt(layer.segmentation_share, 3),
                fmt(layer.segmentation_share_chance, 3)
            ),
            fmt(layer.sink_attention, 3),
            fmt(layer.sink_attention_vw, 3),
            counts[0],
            counts[1],
            counts[2],
            counts[3],
            roles
        );
    }
}
