//! Reading the user's text files: UTF-8 as is, Latin-1 with a warning,
//! binary files and empty texts refused with a message naming the file.

use std::io::Read;
use std::path::Path;

/// A text read from disk or standard input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    pub text: String,
    /// Set when the file was not UTF-8 and was read as Latin-1.
    pub warning: Option<String>,
}

/// Why a file gave no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextFileError {
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path} is a binary file, not text")]
    Binary { path: String },
    #[error("{path} is empty or blank: there is nothing to analyse")]
    Empty { path: String },
}

/// Reads `path`, or standard input for `-`.
pub fn read_text_file(path: &Path) -> Result<TextFile, TextFileError> {
    let name = display_name(path);
    let unreadable = |e: std::io::Error| TextFileError::Unreadable {
        path: name.clone(),
        reason: describe_io_error(&e),
    };
    let bytes = if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
        bytes
    } else {
        if path.is_dir() {
            return Err(TextFileError::Unreadable {
                path: name,
                reason: "it is a folder, not a file".into(),
            });
        }
        std::fs::read(path).map_err(unreadable)?
    };
    decode_text(&bytes, &name)
}

/// Decodes bytes as UTF-8, falling back to Latin-1; refuses binary data.
pub fn decode_text(bytes: &[u8], name: &str) -> Result<TextFile, TextFileError> {
    if looks_binary(bytes) {
        return Err(TextFileError::Binary { path: name.into() });
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let (text, warning) = match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_string(), None),
        Err(_) => (
            bytes.iter().map(|&b| b as char).collect::<String>(),
            Some(format!(
                "{name} is not UTF-8: read it as Latin-1 (ISO 8859-1); check accented letters"
            )),
        ),
    };
    if text.trim().is_empty() {
        return Err(TextFileError::Empty { path: name.into() });
    }
    Ok(TextFile { text, warning })
}

/// NUL bytes, or many control characters, in the first 8 KiB.
fn looks_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(8192)];
    if head.contains(&0) {
        return true;
    }
    let control = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c))
        .count();
    control * 10 > head.len().max(1)
}

fn display_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard input".into()
    } else {
        path.display().to_string()
    }
}

/// Plain words for the I/O errors users meet.
pub fn describe_io_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}
