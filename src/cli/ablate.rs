//! `headscope ablate`: does a head matter (ANALYSIS.md §9)? Runs a text
//! with a set of heads ablated (`--heads 3.4,5.1`, zero or mean) and says
//! how the model's output moved against the same text without: the mean
//! change of the next-token loss (a causal decoder) and of the last hidden
//! states; or, with `--importance`, that effect of each head alone, the
//! L × H `head_importance` grid, its strongest heads printed; over several
//! texts, each head's mean with its 95% interval (the corpus statistics of
//! every other figure). `--json` writes every position's figures, `--csv`
//! the importance grid.

use super::analyze::ProbeArg;
use super::args::{InputArgs, LimitArgs};
use super::running::{
    check_writable, load_model, read_text, report_window, stop_on_ctrl_c, write_json,
};
use crate::corpus_stats::{Aggregate, Bounds, Summary};
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
    /// Write the importance grid as CSV (layer, head, figure, mean, std, ci95_lo, ci95_hi, n), - for stdout.
    #[arg(long, value_name = "OUT", requires = "importance")]
    pub(crate) csv: Option<PathBuf>,
    /// Text file, or - for standard input; several with --importance: each head's mean over them, with its 95% interval.
    #[arg(required_unless_present = "probe", conflicts_with = "probe")]
    pub(crate) files: Vec<PathBuf>,
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
    if args.files.len() > 1 && !args.ablation.importance {
        bail!("several texts need --importance (each head's mean effect over them)");
    }
    if [&args.json, &args.csv]
        .iter()
        .all(|out| out.as_deref().is_some_and(|p| p.as_os_str() == "-"))
    {
        bail!("only one of --json and --csv can go to standard output");
    }
    for out in [&args.json, &args.csv].into_iter().flatten() {
        check_writable(out)?;
    }
    if args.files.len() > 1 {
        return importance_over_texts(&args);
    }
    let file = args.files.first();
    let text = file.map(|f| read_text(f)).transpose()?;
    let model = load_model(&args.model)?;
    let stop = stop_on_ctrl_c("an ablation");
    let cancelled = || stop.load(Ordering::Relaxed);
    let start = Instant::now();
    let what = match file {
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
    if let Some(path) = &args.csv {
        let grids = ImportanceGrids::of_texts([&report]);
        write_text(path, &grids.to_csv())?;
    }
    Ok(())
}

/// `--importance` over several texts: each text's grid, then each head's
/// mean over the texts with its 95% interval.
fn importance_over_texts(args: &AblateArgs) -> anyhow::Result<()> {
    let texts = (args.files.iter())
        .map(|file| read_text(file))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let model = load_model(&args.model)?;
    let stop = stop_on_ctrl_c("an ablation");
    let cancelled = || stop.load(Ordering::Relaxed);
    let start = Instant::now();
    let mut reports = Vec::with_capacity(texts.len());
    for (k, (file, text)) in args.files.iter().zip(&texts).enumerate() {
        let what = file.display().to_string();
        eprintln!("headscope: text {} of {}: {what}", k + 1, texts.len());
        let report = ablation_report(&model, Some(text), &args.ablation, &what, false, &cancelled)?;
        reports.push(report);
    }
    let tokens: usize = reports.iter().map(|r| r.input_ids.len()).sum();
    eprintln!(
        "headscope: {} texts, {tokens} tokens in {:.1} s",
        reports.len(),
        start.elapsed().as_secs_f64()
    );
    let grids = ImportanceGrids::of_texts(&reports);
    grids.print(AblationMode::from(args.ablation.mode));
    if let Some(path) = &args.json {
        let json = ImportanceOverTexts {
            model: model.name.clone(),
            mode: AblationMode::from(args.ablation.mode).name(),
            files: args.files.iter().map(|f| f.display().to_string()).collect(),
            head_importance_delta_loss: grids.delta_loss.as_ref().map(|g| grids.rows(g)),
            head_importance_output_change: grids.rows(&grids.output_change),
            texts: reports,
        };
        write_json(path, &json)?;
    }
    if let Some(path) = &args.csv {
        write_text(path, &grids.to_csv())?;
    }
    Ok(())
}

/// What `--json` writes for several texts.
#[derive(Serialize)]
struct ImportanceOverTexts {
    model: String,
    mode: &'static str,
    files: Vec<String>,
    /// L rows of H: each head's delta_loss over the texts (mean, std, ci95, n).
    head_importance_delta_loss: Option<Vec<Vec<Summary>>>,
    head_importance_output_change: Vec<Vec<Summary>>,
    /// Each text's own report, in the order given.
    texts: Vec<AblationJson>,
}

/// Each head's importance over one or more texts, layer-major.
struct ImportanceGrids {
    heads: usize,
    /// `None` unless every text has a next-token loss (a causal decoder).
    delta_loss: Option<Vec<Summary>>,
    output_change: Vec<Summary>,
}

impl ImportanceGrids {
    /// From the reports of `--importance` runs on the same model.
    fn of_texts<'a>(reports: impl IntoIterator<Item = &'a AblationJson>) -> Self {
        let mut heads = 0;
        let mut delta_loss: Option<Vec<Aggregate>> = None;
        let mut output_change: Vec<Aggregate> = Vec::new();
        let mut every_text_has_loss = true;
        for report in reports {
            let ResultJson::Importance {
                head_importance_delta_loss: delta,
                head_importance_output_change: change,
            } = &report.result
            else {
                continue;
            };
            heads = change.first().map_or(0, Vec::len);
            let add = |aggregates: &mut Vec<Aggregate>, rows: &[Vec<f64>]| {
                let values = rows.iter().flatten();
                aggregates.resize(values.clone().count(), Aggregate::default());
                for (aggregate, &v) in aggregates.iter_mut().zip(values) {
                    aggregate.push(Some(v));
                }
            };
            add(&mut output_change, change);
            match delta {
                Some(rows) => add(delta_loss.get_or_insert_with(Vec::new), rows),
                None => every_text_has_loss = false,
            }
        }
        // 1 − cos is never negative; a change of the loss can be.
        let summaries = |aggregates: &[Aggregate], bounds: Bounds| {
            (aggregates.iter())
                .map(|a| a.summary_within(bounds))
                .collect()
        };
        Self {
            heads,
            delta_loss: delta_loss
                .filter(|_| every_text_has_loss)
                .map(|d| summaries(&d, Bounds::Unbounded)),
            output_change: summaries(&output_change, Bounds::NonNegative),
        }
    }

    fn rows(&self, grid: &[Summary]) -> Vec<Vec<Summary>> {
        grid.chunks(self.heads.max(1))
            .map(<[Summary]>::to_vec)
            .collect()
    }

    /// The ten heads whose ablation moves the output most on average.
    fn print(&self, mode: AblationMode) {
        let (grid, what) = match &self.delta_loss {
            Some(delta) => (delta, "delta_loss"),
            None => (&self.output_change, "output_change"),
        };
        let mean = |s: &Summary| s.mean.unwrap_or(f64::NEG_INFINITY);
        let mut order: Vec<usize> = (0..grid.len()).collect();
        order.sort_by(|&a, &b| mean(&grid[b]).total_cmp(&mean(&grid[a])).then(a.cmp(&b)));
        println!(
            "head_importance ({} ablation, each head alone), mean over {} texts with its 95% interval, by {what}:",
            mode.name(),
            grid.first().map_or(0, |s| s.n)
        );
        println!("{:>6} {:>32} {:>32}", "head", "delta_loss", "output_change");
        let shown = |s: &Summary| match (s.mean, s.ci95) {
            (Some(m), Some([lo, hi])) => format!("{m:+.5} [{lo:+.5}, {hi:+.5}]"),
            (Some(m), None) => format!("{m:+.5}"),
            _ => "-".to_string(),
        };
        for &i in order.iter().take(10) {
            let (l, h) = (i / self.heads.max(1), i % self.heads.max(1));
            let delta = self
                .delta_loss
                .as_ref()
                .map_or("-".to_string(), |d| shown(&d[i]));
            println!(
                "{:>6} {delta:>32} {:>32}",
                format!("{l}.{h}"),
                shown(&self.output_change[i])
            );
        }
    }

    /// `layer,head,figure,mean,std,ci95_lo,ci95_hi,n`, as the corpus
    /// report's CSV: a row per head and figure.
    fn to_csv(&self) -> String {
        let mut out = String::from("layer,head,figure,mean,std,ci95_lo,ci95_hi,n\n");
        let cell = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        let figures = [
            ("delta_loss", self.delta_loss.as_deref()),
            ("output_change", Some(&self.output_change[..])),
        ];
        for i in 0..self.output_change.len() {
            let (l, h) = (i / self.heads.max(1), i % self.heads.max(1));
            for (name, grid) in figures {
                let Some(s) = grid.map(|g| g[i]) else {
                    continue;
                };
                out.push_str(&format!(
                    "{l},{h},{name},{},{},{},{},{}\n",
                    cell(s.mean),
                    cell(s.std),
                    cell(s.ci95.map(|c| c[0])),
                    cell(s.ci95.map(|c| c[1])),
                    s.n
                ));
            }
        }
        out
    }
}

/// `text` to `path`, or to standard output for -.
fn write_text(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        print!("{text}");
        Ok(())
    } else {
        Ok(crate::export::save_text(text, path)?)
    }
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
