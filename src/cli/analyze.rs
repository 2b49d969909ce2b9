//! `headscope analyze`: the figures of every layer and head of one text, as
//! a table on stdout, or JSON and NPZ files (ANALYSIS.md §6).

use super::args::TextArgs;
use super::running::check_writable;
use crate::model::Model;
use crate::pipeline::RunOutput;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(crate) struct AnalyzeArgs {
    #[command(flatten)]
    pub(crate) text: TextArgs,
    /// Write the figures as JSON (ANALYSIS.md §6) to this file, - for stdout.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Write input ids, attentions, head outputs and similarity as NPZ.
    #[arg(long)]
    pub(crate) npz: Option<PathBuf>,
}

pub(crate) fn analyze(args: AnalyzeArgs) -> anyhow::Result<()> {
    // Check output paths before the model runs, so a typo costs nothing.
    for path in [&args.json, &args.npz].into_iter().flatten() {
        check_writable(path)?;
    }
    let (model, output) = args.text.run()?;
    if let Some(path) = &args.npz {
        crate::npz::write_captures_npz(path, &output.input.tokens.input_ids, &output.captures)?;
    }
    match &args.json {
        Some(path) => {
            let json = serde_json::to_string_pretty(&output.report())?;
            if path.as_os_str() == "-" {
                println!("{json}");
            } else {
                crate::export::save_text(&json, path)?;
            }
        }
        None => print_table(&model, &output),
    }
    Ok(())
}

pub(crate) fn fmt(value: Option<f64>, digits: usize) -> String {
    value.map_or("—".into(), |v| format!("{v:.digits$}"))
}

/// The readable per-layer table printed when no --json is given.
pub(crate) fn print_table(model: &Model, output: &RunOutput) {
    let a = &output.analysis;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{} · {} tokens ({} content, {} sentences) · {} pairs, {} selected per head · {:.0} ms",
        model.name,
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
        "{:>5} {:>9} {:>13} {:>9} {:>11} {:>12} {:>9} {:>16} {:>9}  categories (repetition/focus/local/mixed)",
        "layer", "distance", "same-sentence", "sep-attn", "focus-uniq", "segmentation", "undecided", "own-sep (chance)", "sink-attn"
    );
    for (index, layer) in a.layers.iter().enumerate() {
        let mut counts = [0usize; 4];
        for head in &layer.heads {
            if let Some(category) = head.category {
                counts[category as usize] += 1;
            }
        }
        let _ = writeln!(
            out,
            "{:>5} {:>9} {:>13} {:>9} {:>11} {:>12} {:>9} {:>16} {:>9}  {}/{}/{}/{}",
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
            counts[0],
            counts[1],
            counts[2],
            counts[3]
        );
    }
}
