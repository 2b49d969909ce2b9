//! A long array of `f32` written once, in pieces, and read back a piece at
//! a time: held in memory when small, else in an unnamed scratch file on
//! disk, so that what a long pass keeps for the views alone does not take
//! the process's memory.
//!
//! Every head's queries at 32,768 tokens on a 24-layer × 14-head model
//! are 2.8 GB, and so are their outputs O, read back one head at a time
//! (8 MB) when a view recomputes that head's P or S. The file is made with no name in headscope's cache
//! folder (not `/tmp`, which may be memory) and vanishes with the process;
//! the operating system's page cache keeps it in memory while there is
//! room, outside the process's own.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Arrays larger than this go to disk (where a scratch file can be made),
/// unless `$HEADSCOPE_SCRATCH_FROM_MB` says otherwise ([`goes_to_disk`]).
pub const ON_DISK_FROM_BYTES: usize = 256 << 20;

/// Whether an array of `len` values goes to disk: past
/// `$HEADSCOPE_SCRATCH_FROM_MB` megabytes where set (0: every long pass's),
/// else past [`ON_DISK_FROM_BYTES`]. The one rule for [`VectorStore::zeros`]
/// and for what a pass is counted to keep in memory.
pub fn goes_to_disk(len: usize) -> bool {
    let from_bytes = std::env::var("HEADSCOPE_SCRATCH_FROM_MB")
        .ok()
        .and_then(|mb| mb.trim().parse::<usize>().ok())
        .map_or(ON_DISK_FROM_BYTES, |mb| mb.saturating_mul(1 << 20));
    len.saturating_mul(4) > from_bytes
}

/// The array, `len` values.
#[derive(Debug, Clone, Default)]
pub struct VectorStore {
    len: usize,
    memory: Vec<f32>,
    /// Where the values are when not in `memory`.
    file: Option<Arc<Mutex<File>>>,
}

impl VectorStore {
    /// `len` zeros: in memory unless [`goes_to_disk`], else in a scratch
    /// file in `folder` (or in memory if none can be made there).
    pub fn zeros(len: usize, folder: &Path) -> Self {
        if goes_to_disk(len) {
            if let Some(file) = scratch_file(folder, len) {
                return Self {
                    len,
                    memory: Vec::new(),
                    file: Some(Arc::new(Mutex::new(file))),
                };
            }
        }
        Self::from(vec![0.0; len])
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the values are in a scratch file rather than in memory.
    pub fn is_on_disk(&self) -> bool {
        self.file.is_some()
    }

    /// The values themselves where they are in memory; else the store.
    pub fn into_memory(self) -> Result<Vec<f32>, Self> {
        match self.file {
            None => Ok(self.memory),
            Some(_) => Err(self),
        }
    }

    /// Writes `values` from index `at`. Panics past the end or when the
    /// disk refuses the write (it was sized when made).
    pub fn write(&mut self, at: usize, values: &[f32]) {
        assert!(at + values.len() <= self.len, "a write past the end");
        match &self.file {
            None => self.memory[at..at + values.len()].copy_from_slice(values),
            Some(file) => {
                let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
                file.seek(SeekFrom::Start(at as u64 * 4))
                    .and_then(|_| file.write_all(bytemuck::cast_slice(values)))
                    .expect("the scratch file takes what it was sized for");
            }
        }
    }

    /// The values at `range`. Panics past the end or when the disk fails.
    pub fn read(&self, range: Range<usize>) -> Cow<'_, [f32]> {
        assert!(range.end <= self.len, "a read past the end");
        match &self.file {
            None => Cow::Borrowed(&self.memory[range]),
            Some(file) => {
                let mut values = vec![0.0f32; range.len()];
                let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
                file.seek(SeekFrom::Start(range.start as u64 * 4))
                    .and_then(|_| file.read_exact(bytemuck::cast_slice_mut(&mut values)))
                    .expect("the scratch file gives back what was written");
                Cow::Owned(values)
            }
        }
    }
}

impl From<Vec<f32>> for VectorStore {
    fn from(values: Vec<f32>) -> Self {
        Self {
            len: values.len(),
            memory: values,
            file: None,
        }
    }
}

/// Equal values (a store on disk is equal only to itself).
impl PartialEq for VectorStore {
    fn eq(&self, other: &Self) -> bool {
        match (&self.file, &other.file) {
            (None, None) => self.memory == other.memory,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// An unnamed file of `len` zero floats in `folder`, `None` where it cannot
/// be made (no folder, no room).
fn scratch_file(folder: &Path, len: usize) -> Option<File> {
    std::fs::create_dir_all(folder).ok()?;
    let file = tempfile::tempfile_in(folder).ok()?;
    file.set_len(len as u64 * 4).ok()?;
    Some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_on_disk_gives_back_what_was_written() {
        let folder = tempfile::tempdir().unwrap();
        let len = ON_DISK_FROM_BYTES / 4 + 1000;
        let mut store = VectorStore::zeros(len, folder.path());
        assert!(store.is_on_disk());
        let piece: Vec<f32> = (0..5000).map(|i| i as f32 * 0.5 - 7.0).collect();
        store.write(len - 5000, &piece);
        store.write(3, &piece[..10]);
        assert_eq!(store.read(len - 5000..len).as_ref(), &piece[..]);
        assert_eq!(store.read(0..13).as_ref()[3..], piece[..10]);
        assert_eq!(store.read(0..3).as_ref(), &[0.0; 3]);
        // A small one stays in memory.
        let mut small = VectorStore::zeros(10, folder.path());
        assert!(!small.is_on_disk());
        small.write(2, &[1.0, 2.0]);
        assert_eq!(small.read(1..4).as_ref(), &[0.0, 1.0, 2.0]);
        assert_eq!(small.into_memory().unwrap()[..4], [0.0, 0.0, 1.0, 2.0]);
        assert!(store.into_memory().is_err());
    }
}
