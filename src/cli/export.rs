//! `headscope export`: a head's heatmap (bare matrix or labelled figure),
//! the grid of every head, or a head's matrix as CSV. Figures are written
//! as PNG, SVG and/or PDF from one description, sized for a paper
//! (`--width column|page`, `--font-size`).

use super::args::TextArgs;
use super::running::check_writable;
use anyhow::{anyhow, bail};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// The printed width of a figure (`--width`).
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum WidthArg {
    /// One column of a two-column paper, 3.3 in.
    Column,
    /// A page's text width, 7 in.
    Page,
}

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    pub(crate) text: TextArgs,
    /// Layer, 0-based.
    #[arg(long, required_unless_present = "grid")]
    pub(crate) layer: Option<usize>,
    /// Head, 0-based.
    #[arg(long, required_unless_present = "grid")]
    pub(crate) head: Option<usize>,
    /// Export attention probabilities instead of the similarity.
    #[arg(long)]
    pub(crate) attention: bool,
    /// A figure with token labels, title and colour bar instead of the bare matrix.
    #[arg(long)]
    pub(crate) labels: bool,
    /// Every head of every layer in one labelled image.
    #[arg(long)]
    pub(crate) grid: bool,
    /// Pixels per cell of the bare matrix's PNG (default: enough for 512 pixels).
    #[arg(long)]
    pub(crate) scale: Option<u32>,
    /// The printed width of a figure: a paper's column (3.3 in) or page (7 in).
    #[arg(long, value_enum, default_value_t = WidthArg::Page)]
    pub(crate) width: WidthArg,
    /// The size of a figure's text in points (8 to 10).
    #[arg(long, default_value_t = 9.0)]
    pub(crate) font_size: f32,
    /// Colour map.
    #[arg(long, default_value = "viridis")]
    pub(crate) colormap: String,
    /// Which values span the colours: `percentiles` (1st to 99th; beyond
    /// take the end colours) or `full` (min to max).
    #[arg(long, default_value = "percentiles")]
    pub(crate) range: String,
    /// Keep a causal model's first token (its attention sink) in the
    /// colour range; by default it is left out.
    #[arg(long)]
    pub(crate) with_first_token: bool,
    /// Colour attention by log₁₀ P (with --attention).
    #[arg(long)]
    pub(crate) log: bool,
    /// Write the image here (PNG; a figure at 300 dpi).
    #[arg(long)]
    pub(crate) png: Option<PathBuf>,
    /// Write the figure here as SVG (text as text).
    #[arg(long)]
    pub(crate) svg: Option<PathBuf>,
    /// Write the figure here as PDF (text as text, fonts embedded).
    #[arg(long)]
    pub(crate) pdf: Option<PathBuf>,
    /// Write the matrix with token headers here.
    #[arg(long)]
    pub(crate) csv: Option<PathBuf>,
}

pub(crate) fn export(args: ExportArgs) -> anyhow::Result<()> {
    use crate::analysis::transformed_similarity;
    use crate::captures::HeadId;
    use crate::colormap::{ColorMap, ColourScale, RangeRule};
    use crate::export::{self as exp, FigureFormat, FigureStyle, GridRange, PaperWidth};
    let figures: Vec<(FigureFormat, &PathBuf)> = [
        (FigureFormat::Png, &args.png),
        (FigureFormat::Svg, &args.svg),
        (FigureFormat::Pdf, &args.pdf),
    ]
    .into_iter()
    .filter_map(|(format, path)| path.as_ref().map(|p| (format, p)))
    .collect();
    if figures.is_empty() && args.csv.is_none() {
        bail!("nothing to write: give --png, --svg or --pdf OUT and/or --csv OUT");
    }
    let style = FigureStyle {
        width: match args.width {
            WidthArg::Column => PaperWidth::Column,
            WidthArg::Page => PaperWidth::Page,
        },
        font_size: args.font_size,
    };
    if !FigureStyle::FONT_SIZES.contains(&args.font_size) {
        bail!(
            "--font-size {}: give 8 to 10 (points, as in a paper)",
            args.font_size
        );
    }
    if args.grid && args.csv.is_some() {
        bail!("--csv writes one head's matrix: give --layer and --head instead of --grid");
    }
    let map = ColorMap::all()
        .into_iter()
        .find(|m| m.name().eq_ignore_ascii_case(&args.colormap))
        .ok_or_else(|| {
            let names: Vec<&str> = ColorMap::all().iter().map(|m| m.name()).collect();
            anyhow!(
                "--colormap {}: not one of {}",
                args.colormap,
                names.join(", ")
            )
        })?;
    let rule: RangeRule = args
        .range
        .parse()
        .map_err(|e: String| anyhow!("--range {}: {e}", args.range))?;
    if args.log && !args.attention {
        bail!("--log colours attention: give --attention too (a similarity can be negative)");
    }
    if args.scale == Some(0) {
        bail!("--scale must be at least 1");
    }
    for path in [&args.png, &args.svg, &args.pdf, &args.csv]
        .into_iter()
        .flatten()
    {
        check_writable(path)?;
    }
    let (model, output) = args.text.run()?;
    let options = args.text.input.analysis.options()?;
    let captures = &output.captures;
    let tokens = captures.tokens;
    // Figures are read: their labels are readable (`·the`); the CSV is
    // data and keeps the tokenizer's texts (`Ġthe`), as the JSON does.
    let raw_labels = &output.input.tokens.token_texts;
    let colour_scale = ColourScale {
        rule,
        without_first_token: !args.with_first_token && output.input.tokens.causal,
        log: args.log,
    };
    let what = match (args.attention, args.log) {
        (true, true) => "attention (log₁₀)",
        (true, false) => "attention",
        _ => "similarity",
    };
    // The matrix shown is the one the analysis ranks pairs by.
    let data = |id: HeadId| -> Vec<f32> {
        if args.attention {
            captures.attention(id).into_owned()
        } else {
            transformed_similarity(&captures.similarity(id), tokens, options.similarity)
        }
    };
    // As the figures colour it (log₁₀ on a log scale).
    let matrix = |id: HeadId| colour_scale.coloured(&data(id));
    if args.grid {
        let panels: Vec<(String, Vec<f32>)> = captures
            .head_ids()
            .map(|id| {
                let category = output.analysis.layers[id.layer].heads[id.head]
                    .category
                    .map_or("—".to_string(), |c| c.to_string());
                (format!("L{} H{} {category}", id.layer, id.head), matrix(id))
            })
            .collect();
        let scene = exp::grid_figure(
            &panels,
            tokens,
            captures.heads,
            map,
            GridRange::PerPanel(colour_scale),
            style,
        );
        for (format, path) in figures {
            exp::save_scene(&scene, format, path)?;
        }
        return Ok(());
    }
    let (layer, head) = (args.layer.unwrap_or(0), args.head.unwrap_or(0));
    if layer >= captures.layers {
        bail!(
            "--layer {layer} is out of range: {} has layers 0 to {}",
            model.name,
            captures.layers - 1
        );
    }
    if head >= captures.heads {
        bail!(
            "--head {head} is out of range: {} has heads 0 to {}",
            model.name,
            captures.heads - 1
        );
    }
    let values = matrix(HeadId::new(layer, head));
    let range = colour_scale.range(map, &values, tokens);
    let scene = if args.labels {
        let title = format!("{} · layer {layer} head {head} · {what}", model.name);
        let labels = output.input.tokens.readable_tokens().texts;
        exp::labelled_figure(&values, tokens, &labels, &title, map, range, style)
    } else {
        exp::bare_figure(&values, tokens, map, range, style)
    };
    for (format, path) in figures {
        if format == FigureFormat::Png && !args.labels {
            // The bare matrix's PNG is exact: T × T cells of --scale pixels.
            let scale = args.scale.unwrap_or_else(|| exp::default_scale(tokens));
            exp::save_png(
                &exp::heatmap_image(&values, tokens, map, range, scale),
                path,
            )?;
        } else {
            exp::save_scene(&scene, format, path)?;
        }
    }
    if let Some(path) = &args.csv {
        // The numbers themselves, not their colours' log.
        let values = data(HeadId::new(layer, head));
        exp::save_text(&exp::matrix_csv(&values, tokens, raw_labels), path)?;
    }
    Ok(())
}
