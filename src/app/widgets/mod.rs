//! The app's widget kit: the pieces every view draws with, none of which
//! knows a view, the app or a file dialog.
//!
//! - [`heatmap`]: matrices to pictures (colour images, thumbnails, the
//!   colour bar), the same colour maps as the exported PNGs;
//! - [`head_grid`]: one grid of a model's heads (layers × heads), used by
//!   the Heads tab, the Separators view, the corpus window and Compare;
//! - [`plots`]: titled figures with "Save PNG / SVG / PDF…", per-layer curves and
//!   their legends;
//! - [`table`]: fixed-column tables with sortable headers and readable
//!   rows;
//! - [`token_text`]: a text drawn as token chips that can be picked;
//! - [`zoom_map`]: a head's heatmap at any zoom, from tiles made off the
//!   UI thread;
//! - [`progress`]: a slow stage's progress bar, time left and Cancel;
//! - [`busy`]: the spinner, redrawn a few times a second;
//! - [`pane`]: panels that give the accessibility tree their rect;
//! - [`format`]: how figures, categories and sizes read on screen.

pub mod busy;
pub mod format;
pub mod head_grid;
pub mod heatmap;
pub mod pane;
pub mod plots;
pub mod progress;
pub mod table;
pub mod token_text;
pub mod zoom_map;
