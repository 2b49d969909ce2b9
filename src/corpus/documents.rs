//! The vocabulary of a corpus's documents, shared by the format dispatcher
//! ([`super::sources`]) and the readers of each format
//! ([`super::parquet_source`]): which fields hold a record's text and id,
//! where a document is in its file, a document's text once read, and why a
//! file gave none.

use crate::textfile::TextFileError;
use serde::{Deserialize, Serialize};

/// The field (JSON Lines) or column (Parquet) holding the text, by default.
pub const DEFAULT_TEXT_FIELD: &str = "text";
/// The field or column naming each record, by default.
pub const DEFAULT_ID_FIELD: &str = "id";

/// Which fields of a record are the text and its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceOptions {
    pub text_field: String,
    pub id_field: String,
}

impl Default for SourceOptions {
    fn default() -> Self {
        Self {
            text_field: DEFAULT_TEXT_FIELD.into(),
            id_field: DEFAULT_ID_FIELD.into(),
        }
    }
}

/// Where a document is in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Locator {
    /// The whole file.
    Whole,
    /// A line of a JSON Lines file, counting from 1.
    Line(u64),
    /// A row of a Parquet file, counting from 0.
    Row(u64),
}

/// One document of the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocumentRef {
    /// Index into [`CorpusPlan::sources`](super::CorpusPlan::sources).
    pub source: usize,
    pub locator: Locator,
    /// Its size: bytes on disk for a file, of the line for JSON Lines, an
    /// even share of the row group's text bytes for Parquet.
    pub bytes: u64,
}

/// One document's text, ready to analyse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentText {
    /// Its id in the report (see the module docs).
    pub id: String,
    pub text: String,
    /// Set when the text was not UTF-8 and was read as Latin-1.
    pub warning: Option<String>,
}

/// The reason text of a file that gave no text, without its path (the
/// report lists the path beside it).
pub(crate) fn skip_reason(error: &TextFileError) -> String {
    match error {
        TextFileError::Unreadable { reason, .. } => reason.clone(),
        TextFileError::Binary { .. } => "binary file, not text".into(),
        TextFileError::Empty { .. } => "empty or blank".into(),
    }
}
