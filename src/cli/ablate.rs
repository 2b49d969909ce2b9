//! `headscope ablate`: does a head matter (ANALYSIS.md §9)? Runs a text
//! with a set of heads ablated (`--heads 3.4,5.1`, zero or mean) and says
//! how the model's output moved against the same text without: the mean
//! change of the next-token loss (a causal decoder) and of the last hidden
//! states; or, with `--importance`, that effect of each head alone, the
//! L × H `head_importance` grid, its strongest heads printed. `--json`
//! writes every position's figures.

use super::analyze::ProbeArg;
use super::args::{InputArgs, LimitArgs};
use super::running::{
    check_writable, load_model, read_text, report_window, stop_on_ctrl_c, write_json,
};
use crate::model::ablation::{parse_heads, Ablation, AblationEffect, AblationMode, HeadImportance};
use crate::model::Model;
use crate::pipeline;
use anyhow::{anyhow, bail};
use clap::{Args, ValueEnum};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Instant;

#[derive(Args, Debug)]
pub(crate) struct AblateArgs {
    /// Model folder (config.json, model.safetensors, tokenizer.json), GGUF file or Hugging Face id.
    #[arg(long)]
    pub(crate) model: String,
    #[command(flatten)]
    pub(crate) ablation: AblationFlags,
    /// Write every position's figures as JSON, - for stdout.
    #[arg(long, value_name = "OUT")]
    pub(crate) json: Option<PathBuf>,
    /// Text file, or - for standard input.
    #[arg(required_unless_present = "probe", conflicts_with = "probe")]
    pub(crate) file: Option<PathBuf>,
}

/// What to ablate and how the text becomes the input: the flags the
/// command and the Python package's `ablate` share.
#[derive(Args, Debug, Clone)]
pub(crate) struct AblationFlags {
    #[command(flatten)]
    pub(crate) input: InputArgs,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
    /// The heads to ablate together, layer.head (both from 0), separated by commas: 3.4,5.1.
    #[arg(long, value_name = "HEADS", required_unless_present = "importance")]
    pub(crate) heads: Option<String>,
    /// Ablate each head alone instead: the L × H grid of their effects (L × H passes).
    #[arg(long, conflicts_with = "heads")]
    pub(crate) importance: bool,
    /// What an ablated head's output becomes: zero, or its mean over the input's positions.
    #[arg(long, value_enum, default_value_t = ModeArg::Zero)]
    pub(crate) mode: ModeArg,
    /// Run a generated input instead of a text: `induction`, as `analyze --probe` (ANALYSIS.md §9).
    #[arg(long, value_enum)]
    pub(crate) probe: Option<ProbeArg>,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
pub(crate) enum ModeArg {
    Zero,
    Mean,
}

impl From<ModeArg> for AblationMode {
    fn from(mode: ModeArg) -> Self {
        match mode {
            ModeArg::Zero => Self::Zero,
            ModeArg::Mean => Self::Mean,
        }
    }
}

/// What `--json` writes (and the Python package's `ablate` returns).
#[derive(Serialize)]
pub(crate) struct AblationJson {
    model: String,
    mode: &'static str,
    input_ids: Vec<u32>,
    tokens: Vec<String>,
    #[serde(flatten)]
    result: ResultJson,
}

#[derive(Serialize)]
#[serde(untagged)]
enum ResultJson {
    Heads {
        /// Each ablated head as [layer, head].
        heads: Vec<[usize; 2]>,
        delta_loss: Option<f64>,
        output_change: f64,
        /// Per position i < T − 1: the loss of token i + 1 without and with.
        loss: Vec<f64>,
        ablated_loss: Vec<f64>,
        token_change: Vec<f64>,
    },
    Importance {
        /// L rows of H: each head's delta_loss, ablated alone.
        head_importance_delta_loss: Option<Vec<Vec<f64>>>,
        head_importance_output_change: Vec<Vec<f64>>,
    },
}

pub(crate) fn ablate(args: AblateArgs) -> anyhow::Result<()> {
    if let Some(json) = &args.json {
        check_writable(json)?;
    }
    let text = args.file.as_deref().map(read_text).transpose()?;
    let model = load_model(&args.model)?;
    let stop = stop_on_ctrl_c("an ablation");
    let cancelled = || stop.load(Ordering::Relaxed);
    let start = Instant::now();
    let what = match &args.file {
        Some(file) => file.display().to_string(),
        None => "the probe".into(),
    };
    let report = ablation_report(
        &model,
        text.as_deref(),
        &args.ablation,
        &what,
        true,
        &cancelled,
    )?;
    eprintln!(
        "headscope: {} tokens in {:.1} s",
        report.input_ids.len(),
        start.elapsed().as_secs_f64()
    );
    if let Some(path) = &args.json {
        write_json(path, &report)?;
    }
    Ok(())
}

/// Runs the ablation `flags` ask on `text`, or on the probe they name
/// (`what` names the input in messages), with the importance grid's
/// progress on stderr, its summary on stdout where `summary` asks.
pub(crate) fn ablation_report(
    model: &Model,
    text: Option<&str>,
    flags: &AblationFlags,
    what: &str,
    summary: bool,
    cancelled: &dyn Fn() -> bool,
) -> anyhow::Result<AblationJson> {
    let heads = match &flags.heads {
        Some(list) => parse_heads(list).map_err(|e| anyhow!("--heads: {e}"))?,
        None => Vec::new(),
    };
    if flags.heads.is_some() && heads.is_empty() {
        bail!("--heads names no head: write layer.head, e.g. 3.4");
    }
    let input = flags.limits.input_options(&flags.input)?;
    let built = match (flags.probe, text) {
        (Some(ProbeArg::Induction), _) => pipeline::prepare_probe(model, &input),
        (None, Some(text)) => pipeline::prepare_input(model, text, &input),
        (None, None) => bail!("give a text or --probe induction"),
    }
    .map_err(|e| anyhow!("{what}: {e}"))?;
    report_window(&built, what);
    let ids = &built.tokens.input_ids;
    let mode = AblationMode::from(flags.mode);
    let start = Instant::now();
    let result = if flags.importance {
        let tenths = std::cell::Cell::new(0);
        let importance = model.head_importance(ids, mode, cancelled, &|done, total| {
            // A line every tenth of the way: the grid takes L × H passes.
            if done * 10 / total > tenths.get() {
                tenths.set(done * 10 / total);
                eprintln!(
                    "headscope: ablated {done} of {total} heads ({:.0} s)",
                    start.elapsed().as_secs_f64()
                );
            }
        })?;
        if summary {
            print_importance(&importance);
        }
        importance_json(&importance)
    } else {
        let effect = model.ablate(ids, &Ablation::new(mode, heads), cancelled)?;
        if summary {
            print_effect(&effect);
        }
        effect_json(effect)
    };
    Ok(AblationJson {
        model: model.name.clone(),
        mode: mode.name(),
        input_ids: ids.clone(),
        tokens: built.tokens.token_texts.clone(),
        result,
    })
}

/// The ablation `ablation_report` runs, with `headscope ablate`'s flags as written
/// (`["--heads", "3.4", "--mode", "mean"]`), as JSON: for callers outside
/// the command line (the Python package), which must ablate exactly as
/// it does.
pub fn ablation_json_from_flags(
    model: &Model,
    text: Option<&str>,
    flags: &[String],
) -> anyhow::Result<String> {
    #[derive(clap::Parser)]
    #[command(name = "headscope ablate", no_binary_name = true)]
    struct Flags {
        #[command(flatten)]
        ablation: AblationFlags,
    }
    let flags = <Flags as clap::Parser>::try_parse_from(flags)
        .map_err(|e| anyhow!("{}", e.render().to_string().trim()))?;
    let what = if flags.ablation.probe.is_some() {
        "the probe"
    } else {
        "the text"
    };
    let report = ablation_report(model, text, &flags.ablation, what, false, &|| false)?;
    Ok(serde_json::to_string(&report)?)
}

fn print_effect(effect: &AblationEffect) {
    let heads: Vec<String> = effect
        .ablation
        .heads()
        .iter()
        .map(|(l, h)| format!("{l}.{h}"))
        .collect();
    println!(
        "ablated ({}): {}",
        effect.ablation.mode.name(),
        heads.join(", ")
    );
    if let (Some(delta), Some((before, after))) = (effect.delta_loss, effect.mean_losses()) {
        println!("next-token loss: {before:.4} → {after:.4} nats (delta_loss {delta:+.4})");
    }
    println!(
        "output_change (mean 1 − cos of the last hidden states): {:.6}",
        effect.output_change
    );
}

/// The ten heads whose ablation moves the output most.
fn print_importance(importance: &HeadImportance) {
    let (grid, what) = importance.ranking();
    let mut order: Vec<usize> = (0..grid.len()).collect();
    order.sort_by(|&a, &b| grid[b].total_cmp(&grid[a]).then(a.cmp(&b)));
    println!(
        "head_importance ({} ablation, each head alone), by {what}:",
        importance.mode.name()
    );
    println!("{:>6} {:>12} {:>14}", "head", "delta_loss", "output_change");
    for &i in order.iter().take(10) {
        let (l, h) = (i / importance.heads, i % importance.heads);
        let delta = importance
            .delta_loss
            .as_ref()
            .map_or("-".to_string(), |d| format!("{:+.5}", d[i]));
        println!(
            "{:>6} {delta:>12} {:>14.6}",
            format!("{l}.{h}"),
            importance.output_change[i]
        );
    }
}

fn effect_json(effect: AblationEffect) -> ResultJson {
    ResultJson::Heads {
        heads: effect
            .ablation
            .heads()
            .iter()
            .map(|&(l, h)| [l, h])
            .collect(),
        delta_loss: effect.delta_loss,
        output_change: effect.output_change,
        loss: effect.loss,
        ablated_loss: effect.ablated_loss,
        token_change: effect.token_change,
    }
}

fn importance_json(importance: &HeadImportance) -> ResultJson {
    let rows = |grid: &[f64]| grid.chunks(importance.heads).map(<[f64]>::to_vec).collect();
    ResultJson::Importance {
        head_importance_delta_loss: importance.delta_loss.as_deref().map(rows),
        head_importance_output_change: rows(&importance.output_change),
    }
}
