//! Figures and files for papers, used by the CLI and the app alike: plain
//! heatmaps that hold exactly the matrix, labelled figures (title, token
//! labels, colour bar), a grid of every head ([`figures`], their text set by
//! [`typeset`]), and CSV tables and PNG files ([`formats`]). Every file is
//! written through [`crate::atomic_file`] (re-exported here, as before, for
//! the callers of `export`).
//!
//! Pure: images are built with `image` and text is drawn with `ab_glyph`
//! using egui's own default fonts, so the GUI and the CLI produce the same
//! files and nothing here needs a window or a GPU. Colours come from
//! [`crate::colormap`], the same tables the app draws with.

mod figures;
mod formats;
mod typeset;

pub use crate::atomic_file::{save_text, write_atomically, WriteError as ExportError};
pub use figures::{default_scale, grid_image, heatmap_image, labelled_heatmap, GridRange};
pub use formats::{matrix_csv, save_png};
