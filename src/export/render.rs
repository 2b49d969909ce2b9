//! A [`Scene`] written as a file: SVG as it is, PDF through usvg and
//! svg2pdf (text kept as text, the fonts embedded as subsets), PNG drawn by
//! resvg at [`PNG_DPI`]. The fonts are egui's, carried by the binary, so a
//! figure looks the same on every machine and needs no installed font.

use super::scene::Scene;
use crate::atomic_file::{write_atomically, WriteError};
use image::RgbImage;
use resvg::{tiny_skia, usvg};
use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// The resolution of PNG figures: print quality.
pub const PNG_DPI: f32 = 300.0;

/// A figure's file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FigureFormat {
    Png,
    Svg,
    Pdf,
}

impl FigureFormat {
    pub const ALL: [FigureFormat; 3] = [FigureFormat::Png, FigureFormat::Svg, FigureFormat::Pdf];

    pub fn extension(self) -> &'static str {
        match self {
            FigureFormat::Png => "png",
            FigureFormat::Svg => "svg",
            FigureFormat::Pdf => "pdf",
        }
    }

    /// "PNG", "SVG", "PDF".
    pub fn name(self) -> &'static str {
        match self {
            FigureFormat::Png => "PNG",
            FigureFormat::Svg => "SVG",
            FigureFormat::Pdf => "PDF",
        }
    }

    /// The format a file name asks for by its extension, if any.
    pub fn of_path(path: &Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?;
        Self::ALL
            .into_iter()
            .find(|f| f.extension().eq_ignore_ascii_case(extension))
    }
}

/// egui's fonts, loaded once.
fn fonts() -> Arc<usvg::fontdb::Database> {
    static FONTS: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = usvg::fontdb::Database::new();
            for font in [
                epaint_default_fonts::UBUNTU_LIGHT,
                epaint_default_fonts::HACK_REGULAR,
            ] {
                db.load_font_data(font.to_vec());
            }
            db.set_sans_serif_family("Ubuntu");
            db.set_monospace_family("Hack");
            Arc::new(db)
        })
        .clone()
}

/// The scene read back as usvg's tree (what PDF and PNG are made from).
fn tree(scene: &Scene) -> Result<usvg::Tree, RenderError> {
    let options = usvg::Options {
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    Ok(usvg::Tree::from_str(&scene.to_svg(), &options)?)
}

/// The scene as a PDF document of the figure's size, text as text.
pub fn scene_pdf(scene: &Scene) -> Result<Vec<u8>, RenderError> {
    let tree = tree(scene)?;
    // usvg reads the SVG's points at 96 dpi; the page gets them back.
    svg2pdf::to_pdf(
        &tree,
        svg2pdf::ConversionOptions::default(),
        svg2pdf::PageOptions { dpi: 96.0 },
    )
    .map_err(|e| RenderError::Pdf(e.to_string()))
}

/// The scene drawn on white at `dpi`.
pub fn scene_png(scene: &Scene, dpi: f32) -> Result<RgbImage, RenderError> {
    let tree = tree(scene)?;
    let scale = dpi / 96.0;
    let size = tree.size();
    let (width, height) = (
        (size.width() * scale).ceil() as u32,
        (size.height() * scale).ceil() as u32,
    );
    let mut pixmap =
        tiny_skia::Pixmap::new(width, height).ok_or(RenderError::TooLarge { width, height })?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    // Opaque on white: the premultiplied pixels are the colours.
    let rgb = pixmap
        .pixels()
        .iter()
        .flat_map(|p| [p.red(), p.green(), p.blue()])
        .collect();
    RgbImage::from_raw(width, height, rgb).ok_or(RenderError::Empty)
}

/// Why a scene could not be drawn as PDF or PNG.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Svg(#[from] usvg::Error),
    #[error("{0}")]
    Pdf(String),
    #[error("a {width}×{height} image is too large")]
    TooLarge { width: u32, height: u32 },
    #[error("the image is empty")]
    Empty,
}

/// Writes the scene to `path` as `format` (PNG at [`PNG_DPI`]), atomically.
pub fn save_scene(scene: &Scene, format: FigureFormat, path: &Path) -> Result<(), WriteError> {
    let failed = |error: String| WriteError::Io {
        path: path.to_path_buf(),
        error: io::Error::new(io::ErrorKind::InvalidData, error),
    };
    if !(scene.width > 0.0 && scene.height > 0.0) {
        return Err(failed("the figure is empty".into()));
    }
    match format {
        FigureFormat::Svg => {
            let svg = scene.to_svg();
            write_atomically(path, |w| w.write_all(svg.as_bytes()))
        }
        FigureFormat::Pdf => {
            let pdf = scene_pdf(scene).map_err(|e| failed(e.to_string()))?;
            write_atomically(path, |w| w.write_all(&pdf))
        }
        FigureFormat::Png => {
            let img = scene_png(scene, PNG_DPI).map_err(|e| failed(e.to_string()))?;
            super::formats::save_png(&img, path)
        }
    }
}
