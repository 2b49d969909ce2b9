//! Figures and files for papers, used by the CLI and the app alike: plain
//! heatmaps that hold exactly the matrix, and figures described once as a
//! [`Scene`] ([`scene`]): the labelled heatmap (title, token labels, colour
//! bar) and the grid of every head ([`figures`], their text measured by
//! [`typeset`], sized for a paper by a [`FigureStyle`]), and the app's
//! plots captured from the screen. A scene is written as SVG, PDF or PNG
//! ([`render`]); CSV tables and raster PNGs by [`formats`]. Every file is
//! written through [`crate::atomic_file`] (re-exported here, as before, for
//! the callers of `export`).
//!
//! Pure: nothing here needs a window or a GPU, so the GUI and the CLI
//! produce the same files. Colours come from [`crate::colormap`], the same
//! tables the app draws with; text is in egui's own fonts, embedded in
//! every PDF.

mod figures;
mod formats;
mod render;
pub mod scene;
mod style;
pub mod ticks;
mod typeset;

pub use crate::atomic_file::{save_text, write_atomically, WriteError as ExportError};
pub use figures::{
    bare_figure, default_scale, grid_figure, heatmap_image, labelled_figure, GridRange,
};
pub use formats::{matrix_csv, save_png};
pub use render::{save_scene, scene_pdf, scene_png, FigureFormat, RenderError, PNG_DPI};
pub use scene::Scene;
pub use style::{FigureStyle, PaperWidth};
