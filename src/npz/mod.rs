//! NumPy `.npy` arrays in `.npz` archives, written for `numpy.load` and read
//! from numpy's own `savez`/`savez_compressed` output (ANALYSIS.md §6).
//!
//! Only what headscope exchanges is supported: little-endian float32 and
//! int64 arrays in C order (float64 and int32 are read and converted). The
//! writer borrows its arrays ([`NpyView`]) because captures can be 150 MB
//! and should not be copied just to be saved; it stores arrays
//! uncompressed, as `numpy.savez` does, since attention floats barely
//! compress (about 15 %) while deflating 150 MB takes around ten seconds.
//! Archives are written through [`crate::export::write_atomically`];
//! numpy 2.4's `numpy.load` reads them back identical to numpy's own
//! `savez_compressed` output of the same arrays (checked by hand).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::captures::{Captures, HeadId};
use std::borrow::Cow;

mod npy;
use crate::export::{write_atomically, ExportError};
use npy::{npy_header, read_npy, write_values};

/// An array read from an `.npz`, row-major (C order).
#[derive(Debug, Clone, PartialEq)]
pub enum NpyArray {
    F32 { shape: Vec<usize>, data: Vec<f32> },
    I64 { shape: Vec<usize>, data: Vec<i64> },
}

impl NpyArray {
    pub fn shape(&self) -> &[usize] {
        match self {
            NpyArray::F32 { shape, .. } | NpyArray::I64 { shape, .. } => shape,
        }
    }

    /// The values if this is a float array.
    pub fn as_f32(&self) -> Option<&[f32]> {
        match self {
            NpyArray::F32 { data, .. } => Some(data),
            NpyArray::I64 { .. } => None,
        }
    }

    /// The values if this is an integer array.
    pub fn as_i64(&self) -> Option<&[i64]> {
        match self {
            NpyArray::I64 { data, .. } => Some(data),
            NpyArray::F32 { .. } => None,
        }
    }

    /// A borrowed view for [`write_npz`].
    pub fn view(&self) -> NpyView<'_> {
        match self {
            NpyArray::F32 { shape, data } => NpyView::F32 {
                shape: shape.clone(),
                data,
            },
            NpyArray::I64 { shape, data } => NpyView::I64 {
                shape: shape.clone(),
                data,
            },
        }
    }
}

/// An array to write, borrowing its values.
pub enum NpyView<'a> {
    F32 {
        shape: Vec<usize>,
        data: &'a [f32],
    },
    I64 {
        shape: Vec<usize>,
        data: &'a [i64],
    },
    /// Float32 values made one part at a time, in order, each `part_len`
    /// long (one head's P when the captures recompute it: the whole array
    /// never exists in memory).
    F32Parts {
        shape: Vec<usize>,
        parts: usize,
        part_len: usize,
        part: &'a dyn Fn(usize) -> Cow<'a, [f32]>,
    },
}

impl NpyView<'_> {
    pub fn shape(&self) -> &[usize] {
        match self {
            NpyView::F32 { shape, .. }
            | NpyView::I64 { shape, .. }
            | NpyView::F32Parts { shape, .. } => shape,
        }
    }

    fn len(&self) -> usize {
        match self {
            NpyView::F32 { data, .. } => data.len(),
            NpyView::I64 { data, .. } => data.len(),
            NpyView::F32Parts {
                parts, part_len, ..
            } => parts * part_len,
        }
    }

    fn descr(&self) -> &'static str {
        match self {
            NpyView::F32 { .. } | NpyView::F32Parts { .. } => "<f4",
            NpyView::I64 { .. } => "<i8",
        }
    }

    fn item_size(&self) -> usize {
        match self {
            NpyView::F32 { .. } | NpyView::F32Parts { .. } => 4,
            NpyView::I64 { .. } => 8,
        }
    }
}

/// What went wrong reading or writing an `.npz`, naming the file (and the
/// array, where one is at fault).
#[derive(Debug, thiserror::Error)]
pub enum NpzError {
    /// The file itself could not be written.
    #[error(transparent)]
    Write(#[from] ExportError),
    /// The arrays given to the writer are inconsistent.
    #[error("cannot write {}: {reason}", .path.display())]
    Invalid { path: PathBuf, reason: String },
    /// The file could not be read or is not what was expected.
    #[error("cannot read {}: {reason}", .path.display())]
    Read { path: PathBuf, reason: String },
}

fn invalid(path: &Path, reason: impl Into<String>) -> NpzError {
    NpzError::Invalid {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn unreadable(path: &Path, reason: impl Into<String>) -> NpzError {
    NpzError::Read {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn shape_text(shape: &[usize]) -> String {
    if shape.is_empty() {
        return "() (a scalar)".into();
    }
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    dims.join("×")
}

// ---------------------------------------------------------------------------
// Writing
/// Writes `arrays` as `<name>.npy` members of an `.npz` at `path`,
/// atomically, for `numpy.load(path)[name]`. Names must be unique and
/// each shape must match its number of values.
pub fn write_npz(path: &Path, arrays: &[(&str, NpyView<'_>)]) -> Result<(), NpzError> {
    for (k, (name, array)) in arrays.iter().enumerate() {
        if name.is_empty() {
            return Err(invalid(path, "an array has an empty name"));
        }
        if arrays[..k].iter().any(|(other, _)| other == name) {
            return Err(invalid(path, format!("two arrays are named '{name}'")));
        }
        let expected = array
            .shape()
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d));
        if expected != Some(array.len()) {
            return Err(invalid(
                path,
                format!(
                    "array '{name}' has shape {} but {} values",
                    shape_text(array.shape()),
                    array.len()
                ),
            ));
        }
    }
    write_atomically(path, |w| {
        // The atomic writer is not seekable; the zip crate's streaming mode
        // writes sizes after each member instead, which numpy reads fine.
        let mut zip = zip::ZipWriter::new_stream(w);
        for (name, array) in arrays {
            let header = npy_header(array.descr(), array.shape());
            let bytes = header.len() as u64 + (array.len() * array.item_size()) as u64;
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored)
                // Streaming cannot go back to add zip64 fields later.
                .large_file(bytes >= u64::from(u32::MAX));
            zip.start_file(format!("{name}.npy"), options)
                .map_err(io::Error::other)?;
            zip.write_all(&header)?;
            match array {
                NpyView::F32 { data, .. } => write_values(&mut zip, data, f32::to_le_bytes)?,
                NpyView::I64 { data, .. } => write_values(&mut zip, data, i64::to_le_bytes)?,
                NpyView::F32Parts {
                    parts,
                    part_len,
                    part,
                    ..
                } => {
                    for index in 0..*parts {
                        let values = part(index);
                        if values.len() != *part_len {
                            return Err(io::Error::other(format!(
                                "array '{name}': part {index} has {} values, not {part_len}",
                                values.len()
                            )));
                        }
                        write_values(&mut zip, &values, f32::to_le_bytes)?;
                    }
                }
            }
        }
        zip.finish().map_err(io::Error::other)?;
        Ok(())
    })?;
    Ok(())
}

/// Writes the captures with the keys of ANALYSIS.md §6: `input_ids`
/// (int64, T), `attentions` (float32, L×H×T×T), `heads` (float32,
/// L×H×T×d), `similarity` (float32, L×H×T×T) and `value_norms` (float32,
/// L×H×T, §9); without P (a capture file of head outputs alone) no
/// `attentions`, without value norms no `value_norms`.
pub fn write_captures_npz(
    path: &Path,
    input_ids: &[u32],
    captures: &Captures,
) -> Result<(), NpzError> {
    let (l, h, t, d) = (
        captures.layers,
        captures.heads,
        captures.tokens,
        captures.head_dim,
    );
    if input_ids.len() != t {
        return Err(invalid(
            path,
            format!("{} input ids for captures of {t} tokens", input_ids.len()),
        ));
    }
    let ids: Vec<i64> = input_ids.iter().map(|&id| i64::from(id)).collect();
    let heads: Vec<HeadId> = captures.head_ids().collect();
    let attention = |index: usize| captures.attention(heads[index]);
    let similarity = |index: usize| captures.similarity(heads[index]);
    let head_output = |index: usize| captures.head_output(heads[index]);
    let squares = |data, part| squares_view(captures, data, part);
    let mut arrays = vec![
        (
            "input_ids",
            NpyView::I64 {
                shape: vec![t],
                data: &ids,
            },
        ),
        ("attentions", squares(&captures.attentions, &attention)),
        (
            "heads",
            // A head at a time: a long pass keeps O on disk.
            NpyView::F32Parts {
                shape: vec![l, h, t, d],
                parts: l * h,
                part_len: t * d,
                part: &head_output,
            },
        ),
        ("similarity", squares(&captures.similarity, &similarity)),
    ];
    if captures.value_norms.len() == l * h * t {
        let norms = NpyView::F32 {
            shape: vec![l, h, t],
            data: &captures.value_norms,
        };
        arrays.push(("value_norms", norms));
    }
    // Captures read from a file of head outputs alone have no P to write.
    if captures.stores_squares() && captures.attentions.len() != l * h * t * t {
        arrays.remove(1);
    }
    write_npz(path, &arrays)
}

/// The L×H×T×T array of P or S: the kept buffer, or (when the captures
/// recompute them) one head at a time.
fn squares_view<'v>(
    captures: &Captures,
    data: &'v [f32],
    part: &'v dyn Fn(usize) -> Cow<'v, [f32]>,
) -> NpyView<'v> {
    let (l, h, t) = (captures.layers, captures.heads, captures.tokens);
    if captures.stores_squares() {
        NpyView::F32 {
            shape: vec![l, h, t, t],
            data,
        }
    } else {
        NpyView::F32Parts {
            shape: vec![l, h, t, t],
            parts: l * h,
            part_len: t * t,
            part,
        }
    }
}

// ---------------------------------------------------------------------------
// Reading

/// Reads every `.npy` member of an `.npz` (numpy's `savez` or
/// `savez_compressed`, or ours), keyed by name without `.npy`, as numpy
/// does; other members are skipped. Float64 becomes float32 and int32
/// becomes int64; other dtypes, big-endian data and Fortran order are
/// refused with a message naming the array.
pub fn read_npz(path: &Path) -> Result<BTreeMap<String, NpyArray>, NpzError> {
    let file = File::open(path).map_err(|e| {
        unreadable(
            path,
            match e.kind() {
                io::ErrorKind::NotFound => "the file does not exist".to_string(),
                io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                _ => e.to_string(),
            },
        )
    })?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(unreadable(path, "it is a directory"));
    }
    let mut archive = zip::ZipArchive::new(BufReader::new(file))
        .map_err(|e| unreadable(path, format!("not an .npz (zip) file ({e})")))?;
    let mut arrays = BTreeMap::new();
    for index in 0..archive.len() {
        let mut member = archive
            .by_index(index)
            .map_err(|e| unreadable(path, format!("damaged archive ({e})")))?;
        let name = member
            .name()
            .map_err(|e| unreadable(path, format!("damaged archive ({e})")))?
            .to_string();
        let Some(key) = name.strip_suffix(".npy").map(str::to_string) else {
            continue;
        };
        if member.is_dir() {
            continue;
        }
        let size = member.size();
        let array = read_npy(&mut member, size)
            .map_err(|reason| unreadable(path, format!("array '{key}' {reason}")))?;
        arrays.insert(key, array);
    }
    Ok(arrays)
}

/// Reads the file written by [`write_captures_npz`] (or numpy with the
/// same keys and shapes) back into input ids and captures.
pub fn read_captures_npz(path: &Path) -> Result<(Vec<u32>, Captures), NpzError> {
    let mut arrays = read_npz(path)?;
    let mut take = |key: &str| {
        arrays
            .remove(key)
            .ok_or_else(|| unreadable(path, format!("array '{key}' is missing")))
    };
    let ids = take("input_ids")?;
    let attentions = take("attentions")?;
    let heads = take("heads")?;
    let similarity = take("similarity")?;
    // Optional: a file written before value weighting, or by numpy
    // without it, has none.
    let value_norms = arrays.remove("value_norms");
    let wrong = |key: &str, array: &NpyArray, wanted: &str| {
        unreadable(
            path,
            format!(
                "array '{key}' has shape {}, expected {wanted}",
                shape_text(array.shape())
            ),
        )
    };
    let (l, h, t) = match attentions.shape() {
        &[l, h, t, t2] if t == t2 => (l, h, t),
        _ => return Err(wrong("attentions", &attentions, "L×H×T×T")),
    };
    let d = match heads.shape() {
        &[l2, h2, t2, d] if (l2, h2, t2) == (l, h, t) => d,
        _ => return Err(wrong("heads", &heads, &format!("{l}×{h}×{t}×d"))),
    };
    if similarity.shape() != attentions.shape() {
        return Err(wrong(
            "similarity",
            &similarity,
            &format!("{l}×{h}×{t}×{t}"),
        ));
    }
    if let Some(norms) = value_norms.as_ref().filter(|n| n.shape() != [l, h, t]) {
        return Err(wrong("value_norms", norms, &format!("{l}×{h}×{t}")));
    }
    if ids.shape() != [t] {
        return Err(wrong("input_ids", &ids, &t.to_string()));
    }
    let input_ids = match ids {
        NpyArray::I64 { data, .. } => data
            .iter()
            .map(|&id| u32::try_from(id))
            .collect::<Result<Vec<u32>, _>>()
            .map_err(|_| unreadable(path, "array 'input_ids' holds ids outside 0..2³²"))?,
        NpyArray::F32 { .. } => {
            return Err(unreadable(
                path,
                "array 'input_ids' holds floats, not integer ids",
            ))
        }
    };
    let floats = |key: &str, array: NpyArray| match array {
        NpyArray::F32 { data, .. } => Ok(data),
        NpyArray::I64 { .. } => Err(unreadable(
            path,
            format!("array '{key}' holds integers, not floats"),
        )),
    };
    let captures = Captures {
        recompute: None,
        layers: l,
        heads: h,
        tokens: t,
        head_dim: d,
        attentions: floats("attentions", attentions)?,
        attention_entropy: Vec::new(),
        head_outputs: floats("heads", heads)?,
        similarity: floats("similarity", similarity)?,
        value_norms: value_norms
            .map(|norms| floats("value_norms", norms))
            .transpose()?
            .unwrap_or_default(),
        residuals: Vec::new(),
    };
    Ok((input_ids, captures))
}

#[cfg(test)]
mod tests {
    use super::npy::parse_header;
    use super::*;

    #[test]
    fn header_is_aligned_and_parses_back() {
        for shape in [vec![], vec![65], vec![6, 12, 65, 65]] {
            let header = npy_header("<f4", &shape);
            assert_eq!(header.len() % 64, 0);
            assert_eq!(*header.last().unwrap(), b'\n');
            let text = std::str::from_utf8(&header[10..]).unwrap();
            assert_eq!(
                parse_header(text).unwrap(),
                ("<f4".to_string(), false, shape)
            );
        }
    }

    #[test]
    fn parses_numpy_header_variants() {
        let (d, f, s) =
            parse_header("{'descr': '<i8', 'fortran_order': True, 'shape': (3L, 4L), }    \n")
                .unwrap();
        assert_eq!((d.as_str(), f, s), ("<i8", true, vec![3, 4]));
        assert!(
            parse_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }")
                .unwrap_err()
                .contains("structured")
        );
        assert!(parse_header("{'descr': '<f4'").is_err());
    }

    #[test]
    fn refuses_unsupported_arrays_in_words() {
        let npy = |descr: &str, fortran: bool| {
            let mut bytes = npy_header(descr, &[2, 2]);
            if fortran {
                // Same length, so the alignment padding still fits.
                let at = bytes.windows(5).position(|w| w == b"False").unwrap();
                bytes[at..at + 5].copy_from_slice(b"True ");
            }
            bytes.extend_from_slice(&[0; 32]);
            bytes
        };
        let read = |bytes: Vec<u8>| read_npy(&mut bytes.as_slice(), bytes.len() as u64);
        assert!(read(npy(">f4", false)).unwrap_err().contains("big-endian"));
        assert!(read(npy("<u2", false)).unwrap_err().contains("'<u2'"));
        assert!(read(npy("<f4", true)).unwrap_err().contains("Fortran"));
        let mut short = npy("<f8", false);
        short.truncate(short.len() - 1);
        assert!(read(short).unwrap_err().contains("truncated"));
        assert_eq!(
            read(npy("<i4", false)).unwrap(),
            NpyArray::I64 {
                shape: vec![2, 2],
                data: vec![0; 4]
            }
        );
    }
}
