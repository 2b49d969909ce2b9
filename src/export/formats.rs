//! Exported files: a matrix as CSV and an image as PNG, each written
//! atomically (through [`crate::atomic_file`]).

use super::figures::label_of;
use crate::atomic_file::{write_atomically, WriteError as ExportError};
use image::{ImageEncoder, RgbImage};
use std::io;
use std::path::Path;

/// The matrix as CSV: a header of token labels (first cell empty), then one
/// row per token starting with its label. Labels are quoted when they hold
/// a comma, quote, line break or outer space (`,` and `"` are real BERT
/// tokens); values are written with the shortest text that parses back to
/// the same f32. Missing labels fall back to position numbers.
pub fn matrix_csv(matrix: &[f32], tokens: usize, labels: &[String]) -> String {
    let mut out = String::new();
    for j in 0..tokens {
        out.push(',');
        out.push_str(&csv_field(&label_of(labels, j)));
    }
    out.push('\n');
    for i in 0..tokens {
        out.push_str(&csv_field(&label_of(labels, i)));
        for j in 0..tokens {
            let v = matrix.get(i * tokens + j).copied().unwrap_or(f32::NAN);
            out.push(',');
            // Rust's f32 Display is the shortest round-tripping decimal.
            out.push_str(&v.to_string());
        }
        out.push('\n');
    }
    out
}

fn csv_field(text: &str) -> String {
    let needs_quotes = text.contains([',', '"', '\n', '\r'])
        || text.starts_with(char::is_whitespace)
        || text.ends_with(char::is_whitespace);
    if needs_quotes {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Saves `img` as an RGB PNG at `path`, atomically.
pub fn save_png(img: &RgbImage, path: &Path) -> Result<(), ExportError> {
    if img.width() == 0 || img.height() == 0 {
        return Err(ExportError::Io {
            path: path.to_path_buf(),
            error: io::Error::new(io::ErrorKind::InvalidInput, "the image is empty"),
        });
    }
    write_atomically(path, |w| {
        image::codecs::png::PngEncoder::new(w)
            .write_image(
                img.as_raw(),
                img.width(),
                img.height(),
                image::ExtendedColorType::Rgb8,
            )
            .map_err(io::Error::other)
    })
}
