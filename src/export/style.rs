//! The size of an exported figure, chosen for a paper: the width of a
//! column (3.3 in) or of a page (7 in), and the size of its text (8–10 pt).
//! One setting for every figure, kept with the app's settings and given to
//! the CLI as `--width column|page --font-size PT`.

use serde::{Deserialize, Serialize};

/// The printed width of a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum PaperWidth {
    /// One column of a two-column paper, 3.3 in.
    Column,
    /// The text width of a page, 7 in.
    #[default]
    Page,
}

impl PaperWidth {
    pub const ALL: [PaperWidth; 2] = [PaperWidth::Column, PaperWidth::Page];

    /// The width in points (1/72 in).
    pub fn points(self) -> f32 {
        match self {
            PaperWidth::Column => 3.3 * 72.0,
            PaperWidth::Page => 7.0 * 72.0,
        }
    }

    /// "column" or "page" (also the CLI's spelling).
    pub fn name(self) -> &'static str {
        match self {
            PaperWidth::Column => "column",
            PaperWidth::Page => "page",
        }
    }

    /// The width as people say it.
    pub fn label(self) -> &'static str {
        match self {
            PaperWidth::Column => "column (3.3 in)",
            PaperWidth::Page => "page (7 in)",
        }
    }
}

/// A figure's printed size and text size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FigureStyle {
    pub width: PaperWidth,
    /// The size of the text, in points (8–10 for a paper).
    pub font_size: f32,
}

impl FigureStyle {
    /// The text sizes offered.
    pub const FONT_SIZES: std::ops::RangeInclusive<f32> = 8.0..=10.0;

    /// The style with the font size brought into [`Self::FONT_SIZES`].
    pub fn clamped(self) -> Self {
        let font_size = if self.font_size.is_finite() {
            self.font_size
                .clamp(*Self::FONT_SIZES.start(), *Self::FONT_SIZES.end())
        } else {
            Self::default().font_size
        };
        FigureStyle {
            width: self.width,
            font_size,
        }
    }

    /// The figure's width in points.
    pub fn width_points(self) -> f32 {
        self.width.points()
    }
}

impl Default for FigureStyle {
    fn default() -> Self {
        FigureStyle {
            width: PaperWidth::Page,
            font_size: 9.0,
        }
    }
}
