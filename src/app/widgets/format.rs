//! How figures, categories and sizes read on screen, the same in every
//! view: a figure with its decimals or "—" when undefined, each head
//! category's and role's short name and colour, the colour of highlighted
//! heads.

use crate::analysis::{Category, Role};
use egui::Color32;

/// A figure with `decimals` digits, or "—" when undefined.
pub fn figure(value: Option<f64>, decimals: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "—".into(),
    }
}

/// Short name and colour of a head's category.
pub fn category_style(category: Option<Category>) -> (&'static str, Color32) {
    match category {
        Some(Category::Repetition) => ("repetition", Color32::from_rgb(255, 170, 60)),
        Some(Category::Focus) => ("focus", Color32::from_rgb(235, 110, 200)),
        Some(Category::Local) => ("local", Color32::from_rgb(110, 210, 120)),
        Some(Category::Mixed) => ("mixed", Color32::from_gray(170)),
        None => ("no pairs", Color32::from_gray(130)),
    }
}

/// Short name and colour of a head's role (ANALYSIS.md §9); `None`: a head
/// without attention (a capture of O alone).
pub fn role_style(role: Option<Role>) -> (&'static str, Color32) {
    match role {
        Some(Role::PreviousToken) => ("previous token", Color32::from_rgb(110, 210, 120)),
        Some(Role::DuplicateToken) => ("duplicate token", Color32::from_rgb(255, 170, 60)),
        Some(Role::Induction) => ("induction", Color32::from_rgb(235, 110, 200)),
        Some(Role::Sink) => ("sink", Color32::from_rgb(120, 170, 255)),
        Some(Role::Separator) => ("separator", Color32::from_rgb(80, 210, 210)),
        Some(Role::SelfAttention) => ("self", Color32::from_rgb(230, 220, 90)),
        Some(Role::Mixed) => ("mixed", Color32::from_gray(170)),
        None => ("no attention", Color32::from_gray(130)),
    }
}

/// A role's name in a few letters, for captions under small thumbnails.
pub fn role_short_name(role: Option<Role>) -> &'static str {
    match role {
        Some(Role::PreviousToken) => "prev",
        Some(Role::DuplicateToken) => "dup",
        Some(Role::Induction) => "ind",
        Some(Role::Sink) => "sink",
        Some(Role::Separator) => "sep",
        Some(Role::SelfAttention) => "self",
        Some(Role::Mixed) => "mix",
        None => "—",
    }
}

/// The colour of highlighted heads (a grid's outline, a legend's entry).
pub const HIGHLIGHT: Color32 = Color32::from_rgb(255, 200, 40);

/// "1.2 MB", "340 KB", "12 bytes".
pub fn human_bytes(bytes: u64) -> String {
    const KB: f64 = 1000.0;
    let b = bytes as f64;
    if b >= KB * KB * KB {
        format!("{:.1} GB", b / (KB * KB * KB))
    } else if b >= KB * KB {
        format!("{:.1} MB", b / (KB * KB))
    } else if b >= KB {
        format!("{:.0} KB", b / KB)
    } else {
        format!("{bytes} bytes")
    }
}
