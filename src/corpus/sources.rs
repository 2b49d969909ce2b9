//! The documents of a corpus and where they are: the files found under the
//! paths given, each expanded into its documents, in an order every machine
//! finds alike; and reading one document's text.
//!
//! A corpus is given as files and folders. Folders are searched recursively
//! (symbolic links followed, each folder once) for the formats below; a file
//! named directly is taken whatever its extension (read as text unless its
//! name says otherwise). The files are sorted by path and de-duplicated.
//!
//! | file                         | documents                                   | id            |
//! |------------------------------|---------------------------------------------|---------------|
//! | `.txt`, `.md`                | the whole file                              | its path      |
//! | `.txt.gz`, `.md.gz`          | the whole file, decompressed                | its path      |
//! | `.jsonl`, `.ndjson` (`.gz`)  | one per non-blank line: a JSON object whose `--text-field` (default `text`) is the text | its `--id-field` (default `id`) when it has one, else `PATH:LINE` |
//! | `.parquet`                   | one per row: the `--text-field` column      | the `--id-field` column when there is one, else `PATH[ROW]` (rows from 0) |
//!
//! Finding the documents reads no text: a text file's size comes from the
//! file system, a JSON Lines file is scanned for its line lengths, and a
//! Parquet file's rows are sized from its metadata (the text column's
//! uncompressed bytes of each row group, spread evenly over its rows). Those
//! sizes balance the shards ([`super::shard`]) and weigh the progress bar.
//! A file that cannot be read as its format says (a damaged Parquet file, a
//! Parquet file without the text column) is listed as skipped with the
//! reason, once, and the rest of the corpus goes on; so is a JSON Lines line
//! that is not an object with the text field, when it is read.

use super::documents::{skip_reason, DocumentRef, DocumentText, Locator, SourceOptions};
use super::report::SkippedFile;
use crate::textfile::{decode_text, describe_io_error, TextFile, TextFileError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// How a file holds its documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceFormat {
    /// One text, UTF-8 (or Latin-1, with a warning).
    Text,
    /// One text, gzip-compressed.
    GzipText,
    /// One JSON object per line.
    JsonLines,
    /// JSON Lines, gzip-compressed.
    GzipJsonLines,
    /// One row per document.
    Parquet,
}

impl SourceFormat {
    /// The format a file's name says; `None` for names a folder search
    /// leaves alone.
    fn of_name(path: &Path) -> Option<Self> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        let (stem, gzip) = match name.strip_suffix(".gz") {
            Some(stem) => (stem, true),
            None => (name.as_str(), false),
        };
        let extension = Path::new(stem).extension()?.to_str()?;
        Some(match (extension, gzip) {
            ("txt" | "md", false) => Self::Text,
            ("txt" | "md", true) => Self::GzipText,
            ("jsonl" | "ndjson", false) => Self::JsonLines,
            ("jsonl" | "ndjson", true) => Self::GzipJsonLines,
            ("parquet", false) => Self::Parquet,
            _ => return None,
        })
    }

    /// The format of a file named directly: its name's, else a text
    /// (compressed when the name ends in `.gz`).
    fn of_named_file(path: &Path) -> Self {
        Self::of_name(path).unwrap_or_else(|| {
            let gzip = path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
            if gzip {
                Self::GzipText
            } else {
                Self::Text
            }
        })
    }

    fn is_gzip(self) -> bool {
        matches!(self, Self::GzipText | Self::GzipJsonLines)
    }
}

/// A file of the corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: PathBuf,
    pub format: SourceFormat,
    /// Size on disk.
    pub bytes: u64,
}

/// Every document of a corpus, in the order every run reads them, and the
/// files that could not be searched or read as their format says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CorpusPlan {
    pub sources: Vec<SourceFile>,
    pub documents: Vec<DocumentRef>,
    /// Named paths that do not exist, folders that could not be listed,
    /// files that are not what their name says.
    pub problems: Vec<SkippedFile>,
    pub options: SourceOptions,
}

impl CorpusPlan {
    /// Bytes of all documents.
    pub fn bytes(&self) -> u64 {
        self.documents.iter().map(|d| d.bytes).sum()
    }

    /// The sizes of the documents, in order (what shards are cut by).
    pub fn sizes(&self) -> Vec<u64> {
        self.documents.iter().map(|d| d.bytes).collect()
    }

    /// The path of a document's file.
    pub fn path_of(&self, document: &DocumentRef) -> &Path {
        &self.sources[document.source].path
    }

    /// A document's name when it has no id of its own: the file's path,
    /// `PATH:LINE` for a JSON Lines record, `PATH[ROW]` for a Parquet row.
    pub fn default_id(&self, document: &DocumentRef) -> String {
        let path = self.path_of(document).display();
        match document.locator {
            Locator::Whole => path.to_string(),
            Locator::Line(line) => format!("{path}:{line}"),
            Locator::Row(row) => format!("{path}[{row}]"),
        }
    }

    /// A digest of everything that decides what a run reads: the text and
    /// id fields, every file (path, format, size) and every document (file,
    /// place, size), and the problems found. Runs that agree on it analyse
    /// the same documents, and so split them into the same shards.
    pub fn fingerprint(&self) -> String {
        let mut hash = Sha256::new();
        let mut line = |text: String| {
            hash.update(text.as_bytes());
            hash.update(b"\n");
        };
        line(format!(
            "fields\t{}\t{}",
            self.options.text_field, self.options.id_field
        ));
        for source in &self.sources {
            line(format!(
                "file\t{}\t{:?}\t{}",
                source.path.display(),
                source.format,
                source.bytes
            ));
        }
        for document in &self.documents {
            line(format!(
                "document\t{}\t{:?}\t{}",
                document.source, document.locator, document.bytes
            ));
        }
        for problem in &self.problems {
            line(format!("problem\t{}\t{}", problem.path, problem.reason));
        }
        hex(&hash.finalize()[..16])
    }
}

/// Lower-case hexadecimal.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a corpus run could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorpusError {
    #[error("no paths given: name text files or folders holding .txt files")]
    NoPaths,
    #[error(
        "no document found in {searched} (looked for .txt, .md, .jsonl and .parquet files, \
         and .gz text){}",
        problems(.skipped)
    )]
    NoDocuments {
        searched: String,
        skipped: Vec<SkippedFile>,
    },
}

fn problems(skipped: &[SkippedFile]) -> String {
    skipped
        .iter()
        .map(|s| format!("; {}: {}", s.path, s.reason))
        .collect()
}

/// [`find_documents`] with the default fields (`text`, `id`).
pub fn find_text_files(paths: &[PathBuf]) -> Result<CorpusPlan, CorpusError> {
    find_documents(paths, &SourceOptions::default())
}

/// Every document under `paths` (see the module docs). Fails only when
/// there is none.
pub fn find_documents(
    paths: &[PathBuf],
    options: &SourceOptions,
) -> Result<CorpusPlan, CorpusError> {
    if paths.is_empty() {
        return Err(CorpusError::NoPaths);
    }
    let mut plan = CorpusPlan {
        options: options.clone(),
        ..Default::default()
    };
    let mut files = Vec::new();
    let mut visited = HashSet::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => walk(path, &mut visited, &mut files, &mut plan.problems),
            Ok(m) => files.push(SourceFile {
                path: path.clone(),
                format: SourceFormat::of_named_file(path),
                bytes: m.len(),
            }),
            Err(e) => plan.problems.push(SkippedFile {
                path: path.display().to_string(),
                reason: io_reason(&e),
            }),
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    // The same file reached twice (named and inside a named folder, or
    // through a link) is read once.
    let mut seen = HashSet::new();
    files
        .retain(|f| seen.insert(std::fs::canonicalize(&f.path).unwrap_or_else(|_| f.path.clone())));
    for file in files {
        let source = plan.sources.len();
        match list_documents(&file, source, options) {
            Ok(documents) => plan.documents.extend(documents),
            Err(reason) => {
                plan.problems.push(SkippedFile {
                    path: file.path.display().to_string(),
                    reason,
                });
                continue;
            }
        }
        plan.sources.push(file);
    }
    if plan.documents.is_empty() {
        let searched = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(CorpusError::NoDocuments {
            searched,
            skipped: plan.problems,
        });
    }
    Ok(plan)
}

fn walk(
    folder: &Path,
    visited: &mut HashSet<PathBuf>,
    files: &mut Vec<SourceFile>,
    problems: &mut Vec<SkippedFile>,
) {
    let canonical = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf());
    if !visited.insert(canonical) {
        return; // a link loop, or a folder named twice
    }
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) => {
            problems.push(SkippedFile {
                path: folder.display().to_string(),
                reason: format!("cannot list the folder: {}", io_reason(&e)),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let format = SourceFormat::of_name(&path);
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => walk(&path, visited, files, problems),
            Ok(m) => {
                if let Some(format) = format {
                    files.push(SourceFile {
                        path,
                        format,
                        bytes: m.len(),
                    });
                }
            }
            // A dangling link with a corpus name is worth reporting; other names are not ours.
            Err(e) if format.is_some() => problems.push(SkippedFile {
                path: path.display().to_string(),
                reason: io_reason(&e),
            }),
            Err(_) => {}
        }
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".into(),
        _ => describe_io_error(e),
    }
}

/// The documents of one file, without reading their text.
fn list_documents(
    file: &SourceFile,
    source: usize,
    options: &SourceOptions,
) -> Result<Vec<DocumentRef>, String> {
    match file.format {
        SourceFormat::Text | SourceFormat::GzipText => Ok(vec![DocumentRef {
            source,
            locator: Locator::Whole,
            bytes: file.bytes,
        }]),
        SourceFormat::JsonLines | SourceFormat::GzipJsonLines => {
            let mut lines = open_lines(&file.path, file.format)?;
            let mut documents = Vec::new();
            let mut buffer = Vec::new();
            let mut number = 0u64;
            loop {
                buffer.clear();
                let read = lines.read_until(b'\n', &mut buffer).map_err(|e| {
                    format!(
                        "cannot read it after line {number}: {}",
                        describe_io_error(&e)
                    )
                })?;
                if read == 0 {
                    break;
                }
                number += 1;
                if !buffer.trim_ascii().is_empty() {
                    documents.push(DocumentRef {
                        source,
                        locator: Locator::Line(number),
                        bytes: read as u64,
                    });
                }
            }
            Ok(documents)
        }
        SourceFormat::Parquet => super::parquet_source::list_rows(&file.path, source, options),
    }
}

/// A JSON Lines file as lines, decompressed if need be.
fn open_lines(path: &Path, format: SourceFormat) -> Result<Box<dyn BufRead>, String> {
    let file = File::open(path).map_err(|e| describe_io_error(&e))?;
    Ok(if format.is_gzip() {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)))
    } else {
        Box::new(BufReader::new(file))
    })
}

/// Reads the documents of one file, in order: open it with
/// [`SourceReader::open`], then ask for its documents front to back.
pub enum SourceReader {
    Whole,
    Lines {
        lines: Box<dyn BufRead>,
        /// Lines read so far.
        line: u64,
    },
    Parquet(Box<super::parquet_source::RowReader>),
}

impl SourceReader {
    /// Opens `plan`'s file `source`; the error is the reason its documents
    /// are skipped.
    pub fn open(plan: &CorpusPlan, source: usize) -> Result<Self, String> {
        let file = &plan.sources[source];
        Ok(match file.format {
            SourceFormat::Text | SourceFormat::GzipText => Self::Whole,
            SourceFormat::JsonLines | SourceFormat::GzipJsonLines => Self::Lines {
                lines: open_lines(&file.path, file.format)?,
                line: 0,
            },
            SourceFormat::Parquet => Self::Parquet(Box::new(
                super::parquet_source::RowReader::open(&file.path, &plan.options)?,
            )),
        })
    }

    /// The text of `document` (of this reader's file, after the documents
    /// already read); the error is the reason it is skipped.
    pub fn read(
        &mut self,
        plan: &CorpusPlan,
        document: &DocumentRef,
    ) -> Result<DocumentText, String> {
        let file = &plan.sources[document.source];
        let default_id = plan.default_id(document);
        match (self, document.locator) {
            (Self::Whole, _) => {
                let text = read_whole(&file.path, file.format).map_err(|e| skip_reason(&e))?;
                Ok(DocumentText {
                    id: default_id,
                    text: text.text,
                    warning: text.warning,
                })
            }
            (Self::Lines { lines, line }, Locator::Line(wanted)) => {
                let mut buffer = Vec::new();
                while *line < wanted {
                    buffer.clear();
                    let read = lines.read_until(b'\n', &mut buffer).map_err(|e| {
                        format!("cannot read line {}: {}", *line + 1, describe_io_error(&e))
                    })?;
                    if read == 0 {
                        return Err(format!("the file ends before line {wanted}"));
                    }
                    *line += 1;
                }
                record_text(&buffer, &plan.options, default_id)
            }
            (Self::Parquet(rows), Locator::Row(row)) => rows.read(row, &plan.options, default_id),
            _ => Err("the file changed since it was listed".into()),
        }
    }
}

/// A whole text file, decompressed if need be.
fn read_whole(path: &Path, format: SourceFormat) -> Result<TextFile, TextFileError> {
    let name = path.display().to_string();
    let unreadable = |e: std::io::Error| TextFileError::Unreadable {
        path: name.clone(),
        reason: describe_io_error(&e),
    };
    if format.is_gzip() {
        let mut bytes = Vec::new();
        let file = File::open(path).map_err(unreadable)?;
        flate2::read::MultiGzDecoder::new(file)
            .read_to_end(&mut bytes)
            .map_err(|e| TextFileError::Unreadable {
                path: name.clone(),
                reason: format!("not readable as gzip: {}", describe_io_error(&e)),
            })?;
        decode_text(&bytes, &name)
    } else {
        crate::textfile::read_text_file(path)
    }
}

/// The text and id of one JSON Lines record.
fn record_text(
    line: &[u8],
    options: &SourceOptions,
    default_id: String,
) -> Result<DocumentText, String> {
    let value: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| format!("not a JSON object: {e}"))?;
    let serde_json::Value::Object(record) = value else {
        return Err(format!("not a JSON object but {}", json_kind(&value)));
    };
    let field = &options.text_field;
    let text = match record.get(field) {
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(other) => {
            return Err(format!(
                "its \"{field}\" field is {}, not a string",
                json_kind(other)
            ))
        }
        None => {
            let fields: Vec<&str> = record.keys().map(String::as_str).collect();
            return Err(format!(
                "no \"{field}\" field (it has: {}); name the text field (--text-field, or Text field in the corpus window)",
                if fields.is_empty() {
                    "no fields".to_string()
                } else {
                    fields.join(", ")
                }
            ));
        }
    };
    if text.trim().is_empty() {
        return Err("empty or blank".into());
    }
    let id = match record.get(&options.id_field) {
        Some(serde_json::Value::String(id)) => id.clone(),
        Some(serde_json::Value::Number(id)) => id.to_string(),
        _ => default_id,
    };
    Ok(DocumentText {
        id,
        text,
        warning: None,
    })
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
