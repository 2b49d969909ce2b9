//! Finding the files of a corpus: the text files named, and those found in
//! the folders named, sorted and de-duplicated so that a run reads the same
//! files in the same order on every machine.

use super::report::SkippedFile;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A text file to analyse and its size on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundFile {
    pub path: PathBuf,
    pub bytes: u64,
}

/// The files a corpus run will read, and the paths that could not be searched.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileList {
    /// Sorted by path, each file once.
    pub files: Vec<FoundFile>,
    /// Named paths that do not exist, folders that could not be listed.
    pub skipped: Vec<SkippedFile>,
}

/// Why a corpus run could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorpusError {
    #[error("no paths given: name text files or folders holding .txt files")]
    NoPaths,
    #[error("no .txt file found in {searched}{}", problems(.skipped))]
    NoTextFiles {
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

fn is_txt(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("txt"))
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".into(),
        _ => crate::textfile::describe_io_error(e),
    }
}

/// Every `.txt` file (any case) under the folders among `paths`, searched
/// recursively (symbolic links followed, each folder visited once), plus the
/// files named directly whatever their extension. Sorted and de-duplicated
/// so that a run is the same on every machine. Fails only when nothing is
/// found.
pub fn find_text_files(paths: &[PathBuf]) -> Result<FileList, CorpusError> {
    if paths.is_empty() {
        return Err(CorpusError::NoPaths);
    }
    let mut list = FileList::default();
    let mut visited = HashSet::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => walk(path, &mut visited, &mut list),
            Ok(m) => list.files.push(FoundFile {
                path: path.clone(),
                bytes: m.len(),
            }),
            Err(e) => list.skipped.push(SkippedFile {
                path: path.display().to_string(),
                reason: io_reason(&e),
            }),
        }
    }
    list.files.sort_by(|a, b| a.path.cmp(&b.path));
    // The same file reached twice (named and inside a named folder, or
    // through a link) is analysed once.
    let mut seen = HashSet::new();
    list.files
        .retain(|f| seen.insert(std::fs::canonicalize(&f.path).unwrap_or_else(|_| f.path.clone())));
    if list.files.is_empty() {
        let searched = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(CorpusError::NoTextFiles {
            searched,
            skipped: list.skipped,
        });
    }
    Ok(list)
}

fn walk(folder: &Path, visited: &mut HashSet<PathBuf>, list: &mut FileList) {
    let canonical = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf());
    if !visited.insert(canonical) {
        return; // a link loop, or a folder named twice
    }
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) => {
            list.skipped.push(SkippedFile {
                path: folder.display().to_string(),
                reason: format!("cannot list the folder: {}", io_reason(&e)),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => walk(&path, visited, list),
            Ok(m) if is_txt(&path) => list.files.push(FoundFile {
                path,
                bytes: m.len(),
            }),
            Ok(_) => {}
            // A dangling link named .txt is worth reporting; other names are not ours.
            Err(e) if is_txt(&path) => list.skipped.push(SkippedFile {
                path: path.display().to_string(),
                reason: io_reason(&e),
            }),
            Err(_) => {}
        }
    }
}
