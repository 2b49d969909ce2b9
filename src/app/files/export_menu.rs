//! File → Export: the current head (bare matrix or labelled figure), the
//! grid of every head, and the numbers of the current analysis (JSON, NPZ,
//! CSV), through the same exporters as `headscope export`, so a figure
//! saved here (PNG, SVG or PDF, at the size File → Export → Figure size
//! sets) is the command line's.
//!
//! The save dialog runs off the UI thread (rfd); the platform dialog asks
//! before overwriting. Writing is atomic (temp file, then rename) and every
//! error comes back as a message for the window's banner.

use crate::analysis::transformed_similarity;
use crate::app::settings::{MatrixKind, Settings};
use crate::app::widgets::heatmap::{self, ViewKey};
use crate::captures::HeadId;
use crate::colormap::ValueRange;
use crate::export::{self, FigureFormat, GridRange};
use crate::pipeline::RunOutput;
use std::path::Path;

/// What the user asked to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    /// The current head's matrix, T × T equal cells.
    HeadImage,
    /// The current head as a figure with token labels, title and colour bar.
    HeadFigure,
    /// Every head of every layer in one labelled image.
    GridImage,
    /// The current head's matrix with token headers.
    HeadCsv,
    /// The figures of ANALYSIS.md §6.
    AnalysisJson,
    /// Input ids, attentions, head outputs and similarity.
    CapturesNpz,
}

impl ExportKind {
    pub const ALL: [ExportKind; 6] = [
        ExportKind::HeadImage,
        ExportKind::HeadFigure,
        ExportKind::GridImage,
        ExportKind::HeadCsv,
        ExportKind::AnalysisJson,
        ExportKind::CapturesNpz,
    ];

    /// The menu entry.
    pub fn label(self) -> &'static str {
        match self {
            ExportKind::HeadImage => "Head heatmap (bare matrix)",
            ExportKind::HeadFigure => "Head figure (labelled)",
            ExportKind::GridImage => "Grid of all heads",
            ExportKind::HeadCsv => "Head matrix (CSV)…",
            ExportKind::AnalysisJson => "Analysis figures (JSON)…",
            ExportKind::CapturesNpz => "Attentions, head outputs, similarity (NPZ)…",
        }
    }

    /// Whether this is a figure, saved as PNG, SVG or PDF (the menu offers
    /// each; the file's extension chooses).
    pub fn is_figure(self) -> bool {
        matches!(
            self,
            ExportKind::HeadImage | ExportKind::HeadFigure | ExportKind::GridImage
        )
    }

    /// The extension of the file (PNG for a figure; see [`Self::is_figure`]).
    pub fn extension(self) -> &'static str {
        match self {
            ExportKind::HeadImage | ExportKind::HeadFigure | ExportKind::GridImage => "png",
            ExportKind::HeadCsv => "csv",
            ExportKind::AnalysisJson => "json",
            ExportKind::CapturesNpz => "npz",
        }
    }

    /// A file name to offer in the save dialog, ending in `extension`.
    pub fn suggested_name(self, head: HeadId, settings: &Settings, extension: &str) -> String {
        let what = match settings.matrix {
            MatrixKind::ValueWeighted => "value-weighted",
            kind => kind.name(),
        };
        let stem = match self {
            ExportKind::HeadImage | ExportKind::HeadCsv => {
                format!("L{}H{}-{what}", head.layer, head.head)
            }
            ExportKind::HeadFigure => format!("L{}H{}-{what}-figure", head.layer, head.head),
            ExportKind::GridImage => format!("grid-{what}"),
            ExportKind::AnalysisJson => "analysis".into(),
            ExportKind::CapturesNpz => "captures".into(),
        };
        format!("{stem}.{extension}")
    }
}

/// The matrix the screen shows for `head`: attention P, or the similarity in
/// the variant the analysis ranks pairs by.
fn shown_matrix(output: &RunOutput, head: HeadId, settings: &Settings) -> Vec<f32> {
    let captures = &output.captures;
    match settings.matrix {
        MatrixKind::Attention => captures.attention(head).into_owned(),
        MatrixKind::ValueWeighted => captures.value_weighted_attention(head).unwrap_or_default(),
        MatrixKind::Similarity => transformed_similarity(
            &captures.similarity(head),
            captures.tokens,
            settings.similarity,
        ),
    }
}

/// Writes `kind` for the shown result to `path`, a figure in the format
/// its extension names (PNG when it names none); the error is a sentence.
pub fn write_export(
    kind: ExportKind,
    output: &RunOutput,
    head: HeadId,
    settings: &Settings,
    model_name: &str,
    path: &Path,
) -> Result<(), String> {
    let captures = &output.captures;
    let attention_asked = settings.matrix.is_attention()
        && matches!(
            kind,
            ExportKind::HeadImage | ExportKind::HeadFigure | ExportKind::GridImage
        );
    if attention_asked && !captures.has_attention() {
        return Err(format!(
            "No attention to export: {}",
            crate::capture_file::NO_ATTENTION
        ));
    }
    if settings.matrix == MatrixKind::ValueWeighted && !captures.has_value_norms() {
        return Err("No value-weighted attention to export: the result has no value norms".into());
    }
    let tokens = captures.tokens;
    // Figures are read: their labels are readable (`·the`); the CSV is
    // data and keeps the tokenizer's texts (`Ġthe`), as the JSON does.
    let raw_labels = &output.input.tokens.token_texts;
    let map = settings.colormap;
    let what = settings.matrix.name();
    // Coloured as on screen (the scale's rule, its log₁₀ of attention).
    let scale = heatmap::colour_scale(output, &ViewKey::new(0, settings));
    let what = if scale.log {
        format!("{what} (log₁₀)")
    } else {
        what.to_string()
    };
    let format = FigureFormat::of_path(path).unwrap_or(FigureFormat::Png);
    let style = settings.figure_style;
    let save =
        |scene: &export::Scene| export::save_scene(scene, format, path).map_err(|e| e.to_string());
    match kind {
        ExportKind::HeadImage => {
            let (values, range) =
                heatmap::picture(map, scale, &shown_matrix(output, head, settings), tokens);
            if format == FigureFormat::Png {
                // Exactly T × T cells.
                let scale = export::default_scale(tokens);
                let image = export::heatmap_image(&values, tokens, map, range, scale);
                export::save_png(&image, path).map_err(|e| e.to_string())
            } else {
                save(&export::bare_figure(&values, tokens, map, range, style))
            }
        }
        ExportKind::HeadFigure => {
            let (values, range) =
                heatmap::picture(map, scale, &shown_matrix(output, head, settings), tokens);
            let title = format!(
                "{model_name} · layer {} head {} · {what}",
                head.layer, head.head
            );
            let labels = output.input.tokens.readable_tokens().texts;
            save(&export::labelled_figure(
                &values, tokens, &labels, &title, map, range, style,
            ))
        }
        ExportKind::GridImage => {
            let panels: Vec<(String, Vec<f32>)> = captures
                .head_ids()
                .map(|id| {
                    let category = output
                        .analysis
                        .layers
                        .get(id.layer)
                        .and_then(|l| l.heads.get(id.head))
                        .and_then(|h| h.category)
                        .map_or("—".to_string(), |c| c.to_string());
                    (
                        format!("L{} H{} {category}", id.layer, id.head),
                        scale.coloured(&shown_matrix(output, id, settings)),
                    )
                })
                .collect();
            let ranges = if settings.shared_scale {
                // The range holding every panel's, as the grid on screen.
                let each: Vec<ValueRange> = panels
                    .iter()
                    .map(|(_, values)| scale.range(map, values, tokens))
                    .collect();
                GridRange::Shared(heatmap::union(&each))
            } else {
                GridRange::PerPanel(scale)
            };
            save(&export::grid_figure(
                &panels,
                tokens,
                captures.heads,
                map,
                ranges,
                style,
            ))
        }
        ExportKind::HeadCsv => {
            let values = shown_matrix(output, head, settings);
            export::save_text(&export::matrix_csv(&values, tokens, raw_labels), path)
                .map_err(|e| e.to_string())
        }
        ExportKind::AnalysisJson => {
            let json = serde_json::to_string_pretty(&output.analysis).map_err(|e| e.to_string())?;
            export::save_text(&json, path).map_err(|e| e.to_string())
        }
        ExportKind::CapturesNpz => {
            crate::npz::write_captures_npz(path, &output.input.tokens.input_ids, captures)
                .map_err(|e| e.to_string())
        }
    }
}
