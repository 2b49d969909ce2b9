//! Writing a file so that readers see either the old file or the complete
//! new one, never half of it: every export, the app's Save text as… and its
//! autosave go through [`write_atomically`].
//!
//! A failure is a [`WriteError`] that names the path and says why in words
//! for the person who chose it (a missing folder, a file in the way, a full
//! disk).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Why a file could not be written, in words for the person who chose
/// the path.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot write {}: folder {} does not exist", .path.display(), .folder.display())]
    MissingFolder { path: PathBuf, folder: PathBuf },
    #[error("cannot write {}: {} is a file, not a folder", .path.display(), .file.display())]
    NotAFolder { path: PathBuf, file: PathBuf },
    #[error("cannot write {}: it is a directory", .path.display())]
    IsDirectory { path: PathBuf },
    #[error("cannot write {}: permission denied", .path.display())]
    PermissionDenied { path: PathBuf },
    #[error("cannot write {}: {}", .path.display(), describe(.error))]
    Io { path: PathBuf, error: io::Error },
}

impl WriteError {
    /// The path the export was meant for.
    pub fn path(&self) -> &Path {
        match self {
            WriteError::MissingFolder { path, .. }
            | WriteError::NotAFolder { path, .. }
            | WriteError::IsDirectory { path }
            | WriteError::PermissionDenied { path }
            | WriteError::Io { path, .. } => path,
        }
    }

    fn from_io(path: &Path, error: io::Error) -> Self {
        let path = path.to_path_buf();
        match error.kind() {
            io::ErrorKind::PermissionDenied => WriteError::PermissionDenied { path },
            io::ErrorKind::IsADirectory => WriteError::IsDirectory { path },
            _ => WriteError::Io { path, error },
        }
    }
}

fn describe(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::StorageFull => "the disk is full".into(),
        io::ErrorKind::ReadOnlyFilesystem => "the file system is read-only".into(),
        io::ErrorKind::QuotaExceeded => "the disk quota is exceeded".into(),
        io::ErrorKind::FileTooLarge => "the file is too large for this file system".into(),
        _ => error.to_string(),
    }
}

/// The folder a file goes in; "" (a bare file name) is the current folder.
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks that `path` could be created: not a directory, in a folder that
/// exists. Names the first ancestor that is a file, if any.
fn check_target(path: &Path) -> Result<(), WriteError> {
    let owned = || path.to_path_buf();
    if path.as_os_str().is_empty() {
        return Err(WriteError::Io {
            path: owned(),
            error: io::Error::new(io::ErrorKind::InvalidInput, "the path is empty"),
        });
    }
    if fs::metadata(path).is_ok_and(|m| m.is_dir()) || path.file_name().is_none() {
        return Err(WriteError::IsDirectory { path: owned() });
    }
    let folder = folder_of(path);
    match fs::metadata(folder) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(WriteError::NotAFolder {
            path: owned(),
            file: folder.to_path_buf(),
        }),
        Err(_) => {
            // Either something up the chain is a file, or it is missing.
            let file = folder
                .ancestors()
                .skip(1)
                .find(|a| !a.as_os_str().is_empty() && fs::metadata(a).is_ok_and(|m| !m.is_dir()));
            Err(match file {
                Some(file) => WriteError::NotAFolder {
                    path: owned(),
                    file: file.to_path_buf(),
                },
                None => WriteError::MissingFolder {
                    path: owned(),
                    folder: folder.to_path_buf(),
                },
            })
        }
    }
}

/// Creates a fresh hidden temporary file next to `target`.
fn create_temp(target: &Path) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let folder = folder_of(target);
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = folder.join(format!(".{name}.{}-{n}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            // A leftover from a crashed run with our pid: try the next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1_000_000 => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Writes a file so that readers see either the old file or the complete
/// new one, never half of it: `write` fills a temporary file in the same
/// folder, which is flushed to disk and then renamed over `path`. If
/// anything fails the temporary file is removed and a previous file at
/// `path` is left untouched. A symbolic link at `path` is written through,
/// not replaced.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), WriteError> {
    check_target(path)?;
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = match is_link {
        true => fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        false => path.to_path_buf(),
    };
    let (temp, file) = create_temp(&target).map_err(|e| WriteError::from_io(path, e))?;
    let result = (|| {
        let mut writer = BufWriter::new(file);
        write(&mut writer)?;
        let file = writer.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, &target)
    })();
    if let Err(error) = result {
        let _ = fs::remove_file(&temp);
        return Err(WriteError::from_io(path, error));
    }
    Ok(())
}

/// Saves `text` (CSV, JSON, ...) as UTF-8 at `path`, atomically.
pub fn save_text(text: &str, path: &Path) -> Result<(), WriteError> {
    write_atomically(path, |w| w.write_all(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_file_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("out.txt");
        save_text("first", &path).expect("write");
        save_text("second", &path).expect("write");
        assert_eq!(fs::read_to_string(&path).expect("read"), "second");
        assert_eq!(fs::read_dir(dir.path()).expect("list").count(), 1);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("out.txt");
        save_text("old", &path).expect("write");
        let error = write_atomically(&path, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("the writer failed"))
        })
        .expect_err("the write fails");
        assert_eq!(error.path(), path);
        assert_eq!(fs::read_to_string(&path).expect("read"), "old");
        assert_eq!(fs::read_dir(dir.path()).expect("list").count(), 1);
    }
}
