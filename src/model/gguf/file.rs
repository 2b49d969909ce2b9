//! A GGUF file's header — metadata and the table of tensors, read without
//! touching the tensor data — and its tensors, read one at a time as the
//! file stores them. Every failure names the file and the problem: not a
//! GGUF file, truncated, a tensor type headscope does not read.
//!
//! The header is read here, not by candle's `gguf_file`, because candle
//! refuses a whole file at the first tensor type it does not know, and
//! llama.cpp's IQ4_NL and IQ4_XS, which headscope reads, are such types;
//! reading the table ourselves also lets a refusal name the tensor. The
//! format (GGUF v2 and v3; v1's 32-bit lengths too) is small: the bytes
//! `GGUF`, a version, the tensor and key counts, the key/value pairs, the
//! tensor infos (name, dimensions innermost first, ggml type id, offset),
//! then the tensor data from the next multiple of `general.alignment`
//! (32 by default). Metadata values are candle's [`Value`], so the config
//! and the tokenizer read them as before.

use anyhow::{anyhow, bail, Context};
use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::GgmlDType;
use candle_core::Shape;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A tensor's type as the file stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorType {
    /// A type candle reads: the floats, the legacy blocks, the K-quants.
    Candle(GgmlDType),
    /// ggml's 4-bit non-linear blocks of 32 values (type 20).
    Iq4Nl,
    /// ggml's 4-bit non-linear super-blocks of 256 values with 6-bit
    /// scales (type 23).
    Iq4Xs,
    /// Any other ggml type id.
    Other(u32),
}

/// The tensor types headscope reads: every type llama.cpp's quantizer
/// writes for the mixes people download (Q4_K_M's Q5_0 and Q8_0 for rows
/// that are not a multiple of 256, the IQ4 files), each dequantized as
/// ggml and gguf-py dequantize it.
pub const SUPPORTED_TYPES: [TensorType; 15] = [
    TensorType::Candle(GgmlDType::F32),
    TensorType::Candle(GgmlDType::F16),
    TensorType::Candle(GgmlDType::BF16),
    TensorType::Candle(GgmlDType::Q8_0),
    TensorType::Candle(GgmlDType::Q4_0),
    TensorType::Candle(GgmlDType::Q4_1),
    TensorType::Candle(GgmlDType::Q5_0),
    TensorType::Candle(GgmlDType::Q5_1),
    TensorType::Candle(GgmlDType::Q2K),
    TensorType::Candle(GgmlDType::Q3K),
    TensorType::Candle(GgmlDType::Q4K),
    TensorType::Candle(GgmlDType::Q5K),
    TensorType::Candle(GgmlDType::Q6K),
    TensorType::Iq4Nl,
    TensorType::Iq4Xs,
];

impl TensorType {
    /// The type of ggml's type id.
    pub fn from_id(id: u32) -> Self {
        let candle = match id {
            0 => GgmlDType::F32,
            1 => GgmlDType::F16,
            2 => GgmlDType::Q4_0,
            3 => GgmlDType::Q4_1,
            6 => GgmlDType::Q5_0,
            7 => GgmlDType::Q5_1,
            8 => GgmlDType::Q8_0,
            9 => GgmlDType::Q8_1,
            10 => GgmlDType::Q2K,
            11 => GgmlDType::Q3K,
            12 => GgmlDType::Q4K,
            13 => GgmlDType::Q5K,
            14 => GgmlDType::Q6K,
            15 => GgmlDType::Q8K,
            20 => return Self::Iq4Nl,
            23 => return Self::Iq4Xs,
            30 => GgmlDType::BF16,
            other => return Self::Other(other),
        };
        Self::Candle(candle)
    }

    /// llama.cpp's name of the type.
    pub fn name(self) -> String {
        let name = match self {
            Self::Candle(dtype) => match dtype {
                GgmlDType::F32 => "F32",
                GgmlDType::F16 => "F16",
                GgmlDType::BF16 => "BF16",
                GgmlDType::Q4_0 => "Q4_0",
                GgmlDType::Q4_1 => "Q4_1",
                GgmlDType::Q5_0 => "Q5_0",
                GgmlDType::Q5_1 => "Q5_1",
                GgmlDType::Q8_0 => "Q8_0",
                GgmlDType::Q8_1 => "Q8_1",
                GgmlDType::Q2K => "Q2_K",
                GgmlDType::Q3K => "Q3_K",
                GgmlDType::Q4K => "Q4_K",
                GgmlDType::Q5K => "Q5_K",
                GgmlDType::Q6K => "Q6_K",
                GgmlDType::Q8K => "Q8_K",
            },
            Self::Iq4Nl => "IQ4_NL",
            Self::Iq4Xs => "IQ4_XS",
            Self::Other(id) => {
                return match unknown_type_name(id) {
                    Some(name) => format!("{name} (ggml type {id})"),
                    None => format!("ggml type {id}, unknown to ggml"),
                }
            }
        };
        name.to_string()
    }

    /// Values per block and bytes per block, for a type headscope reads.
    fn layout(self) -> Option<(usize, usize)> {
        match self {
            Self::Candle(dtype) => Some((dtype.block_size(), dtype.type_size())),
            Self::Iq4Nl => Some((32, 18)),
            Self::Iq4Xs => Some((256, 136)),
            Self::Other(_) => None,
        }
    }

    pub fn is_supported(self) -> bool {
        SUPPORTED_TYPES.contains(&self)
    }
}

/// ggml's names of the type ids headscope does not read and candle does
/// not know, for the message that refuses them.
fn unknown_type_name(id: u32) -> Option<&'static str> {
    Some(match id {
        4 | 5 => "Q4_2/Q4_3, removed from ggml",
        16 => "IQ2_XXS",
        17 => "IQ2_XS",
        18 => "IQ3_XXS",
        19 => "IQ1_S",
        21 => "IQ3_S",
        22 => "IQ2_S",
        24 => "I8",
        25 => "I16",
        26 => "I32",
        27 => "I64",
        28 => "F64",
        29 => "IQ1_M",
        34 => "TQ1_0",
        35 => "TQ2_0",
        39 => "MXFP4",
        _ => return None,
    })
}

/// One tensor's entry in the file's table.
#[derive(Clone, Debug)]
pub struct TensorInfo {
    pub dtype: TensorType,
    /// Outermost dimension first, as Hugging Face's (rows × columns for a
    /// matrix); the file lists them innermost first.
    pub shape: Shape,
    /// From the start of the tensor data.
    pub offset: u64,
}

/// A file's header.
#[derive(Debug)]
pub struct Content {
    pub version: u32,
    pub metadata: HashMap<String, Value>,
    pub tensor_infos: HashMap<String, TensorInfo>,
    /// Where the tensor data starts, in bytes from the file's start.
    pub tensor_data_offset: u64,
}

/// One tensor's bytes as the file stores them: rows of whole blocks (or of
/// values, for the float types).
#[derive(Clone, Debug)]
pub struct RawTensor {
    pub dtype: TensorType,
    pub shape: Shape,
    pub data: Vec<u8>,
}

impl RawTensor {
    /// Its rows: the outermost dimension (1 for a vector).
    pub fn rows(&self) -> usize {
        match self.shape.dims() {
            [] | [_] => 1,
            dims => dims[0],
        }
    }

    /// The same tensor with its rows reordered: row `r` of the result is
    /// row `order[r]` of this one. Rows are whole blocks, so this moves
    /// bytes and changes no value.
    pub fn reorder_rows(&self, order: &[usize]) -> Self {
        let row_bytes = self.data.len() / self.rows();
        let mut data = Vec::with_capacity(self.data.len());
        for &row in order {
            data.extend_from_slice(&self.data[row * row_bytes..(row + 1) * row_bytes]);
        }
        Self {
            dtype: self.dtype,
            shape: self.shape.clone(),
            data,
        }
    }
}

// As llama.cpp's reader (GGUF_MAX_DIMS and its caps on lengths), so that a
// damaged length is refused before it is allocated.
const MAX_DIMS: u32 = 4;
const MAX_LENGTH: u64 = 1 << 30;
const MAX_DEPTH: usize = 8;
const DEFAULT_ALIGNMENT: u64 = 32;

/// The header reader: the file, its size and the version's length width.
struct HeaderReader<'a, R> {
    reader: &'a mut R,
    size: u64,
    version: u32,
}

impl<R: Read + Seek> HeaderReader<'_, R> {
    fn bytes<const N: usize>(&mut self) -> anyhow::Result<[u8; N]> {
        let mut bytes = [0u8; N];
        self.reader
            .read_exact(&mut bytes)
            .context("the file ends inside its header")?;
        Ok(bytes)
    }

    fn u32(&mut self) -> anyhow::Result<u32> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }

    fn u64(&mut self) -> anyhow::Result<u64> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }

    /// A length or count: 32 bits in GGUF v1, 64 after.
    fn length(&mut self) -> anyhow::Result<u64> {
        if self.version == 1 {
            self.u32().map(u64::from)
        } else {
            self.u64()
        }
    }

    /// A length that must fit in what is left of the file, `unit` bytes an
    /// item at least.
    fn bounded_length(&mut self, unit: u64, what: &str) -> anyhow::Result<u64> {
        let length = self.length()?;
        let left = self.size.saturating_sub(self.reader.stream_position()?);
        if length > MAX_LENGTH || length.saturating_mul(unit) > left {
            bail!("{what} of length {length} does not fit in the {left} bytes left");
        }
        Ok(length)
    }

    fn string(&mut self) -> anyhow::Result<String> {
        let length = self.bounded_length(1, "a string")?;
        let mut bytes = vec![0u8; length as usize];
        self.reader
            .read_exact(&mut bytes)
            .context("the file ends inside its header")?;
        // Some writers end strings with NULs, and not all are valid UTF-8
        // (candle reads them the same way).
        while bytes.last() == Some(&0) {
            bytes.pop();
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn value(&mut self, value_type: u32, depth: usize) -> anyhow::Result<Value> {
        Ok(match value_type {
            0 => Value::U8(u8::from_le_bytes(self.bytes()?)),
            1 => Value::I8(i8::from_le_bytes(self.bytes()?)),
            2 => Value::U16(u16::from_le_bytes(self.bytes()?)),
            3 => Value::I16(i16::from_le_bytes(self.bytes()?)),
            4 => Value::U32(self.u32()?),
            5 => Value::I32(i32::from_le_bytes(self.bytes()?)),
            6 => Value::F32(f32::from_le_bytes(self.bytes()?)),
            7 => match self.bytes::<1>()?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                other => bail!("a boolean holds {other}"),
            },
            8 => Value::String(self.string()?),
            9 => {
                if depth >= MAX_DEPTH {
                    bail!("arrays nest deeper than {MAX_DEPTH}");
                }
                let item_type = self.u32()?;
                let length = self.bounded_length(1, "an array")?;
                let items = (0..length)
                    .map(|_| self.value(item_type, depth + 1))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                Value::Array(items)
            }
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.bytes()?)),
            12 => Value::F64(f64::from_le_bytes(self.bytes()?)),
            other => bail!("a metadata value has the unknown type {other}"),
        })
    }
}

impl Content {
    /// Reads a header from `reader`'s start; the error says what is wrong
    /// (the caller names the file).
    pub fn read<R: Read + Seek>(reader: &mut R) -> anyhow::Result<Self> {
        let size = reader.seek(SeekFrom::End(0))?;
        reader.seek(SeekFrom::Start(0))?;
        let mut header = HeaderReader {
            reader,
            size,
            version: 0,
        };
        if &header.bytes::<4>()? != b"GGUF" {
            bail!("not GGUF");
        }
        let version = header.u32()?;
        if !(1..=3).contains(&version) {
            bail!("GGUF version {version} is not one headscope reads (1 to 3)");
        }
        header.version = version;
        let tensor_count = header.bounded_length(8, "the tensor table")?;
        let key_count = header.bounded_length(8, "the metadata")?;
        let mut metadata = HashMap::new();
        for _ in 0..key_count {
            let key = header.string()?;
            let value_type = header.u32()?;
            let value = header
                .value(value_type, 0)
                .with_context(|| format!("metadata {key}"))?;
            metadata.insert(key, value);
        }
        let mut tensor_infos = HashMap::new();
        for _ in 0..tensor_count {
            let name = header.string()?;
            let dimensions = header.u32()?;
            if dimensions > MAX_DIMS {
                bail!("tensor {name} has {dimensions} dimensions (ggml has at most {MAX_DIMS})");
            }
            let mut dims = (0..dimensions)
                .map(|_| header.length().map(|d| d as usize))
                .collect::<anyhow::Result<Vec<_>>>()?;
            dims.reverse();
            let dtype = TensorType::from_id(header.u32()?);
            let offset = header.u64()?;
            tensor_infos.insert(
                name,
                TensorInfo {
                    dtype,
                    shape: Shape::from(dims),
                    offset,
                },
            );
        }
        let alignment = match metadata.get("general.alignment") {
            Some(Value::U8(v)) => u64::from(*v),
            Some(Value::U16(v)) => u64::from(*v),
            Some(Value::U32(v)) => u64::from(*v),
            Some(Value::U64(v)) => *v,
            Some(Value::I32(v)) => u64::try_from(*v).unwrap_or(0),
            _ => DEFAULT_ALIGNMENT,
        };
        if alignment == 0 {
            bail!("general.alignment is 0");
        }
        let position = header.reader.stream_position()?;
        Ok(Self {
            version,
            metadata,
            tensor_infos,
            tensor_data_offset: position.div_ceil(alignment) * alignment,
        })
    }
}

/// An open GGUF file and its header.
pub struct GgufFile {
    pub path: PathBuf,
    pub content: Content,
    reader: BufReader<File>,
}

impl GgufFile {
    /// Reads the header; tensors are read later, one at a time.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let mut reader = BufReader::new(file);
        let mut magic = [0u8; 4];
        if reader.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
            bail!(
                "{} is not a GGUF file (it does not start with the bytes GGUF)",
                path.display()
            );
        }
        let content = Content::read(&mut reader).map_err(|e| {
            anyhow!(
                "{} is truncated or damaged (its GGUF header cannot be read): {e:#}",
                path.display()
            )
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            content,
            reader,
        })
    }

    /// A metadata value, if the file has it.
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    /// A metadata string the file must have.
    pub fn string(&self, key: &str) -> anyhow::Result<&str> {
        match self.value(key) {
            Some(Value::String(text)) => Ok(text),
            Some(other) => bail!(
                "{}: metadata {key} is {other:?}, not a string",
                self.path.display()
            ),
            None => bail!("{}: the metadata has no {key}", self.path.display()),
        }
    }

    /// A metadata integer (any integer type), if the file has it.
    pub fn integer(&self, key: &str) -> anyhow::Result<Option<u64>> {
        let Some(value) = self.value(key) else {
            return Ok(None);
        };
        let number = match value {
            Value::U8(v) => Some(u64::from(*v)),
            Value::U16(v) => Some(u64::from(*v)),
            Value::U32(v) => Some(u64::from(*v)),
            Value::U64(v) => Some(*v),
            Value::I8(v) => u64::try_from(*v).ok(),
            Value::I16(v) => u64::try_from(*v).ok(),
            Value::I32(v) => u64::try_from(*v).ok(),
            Value::I64(v) => u64::try_from(*v).ok(),
            _ => None,
        };
        number.map(Some).ok_or_else(|| {
            anyhow!(
                "{}: metadata {key} is {value:?}, not a count",
                self.path.display()
            )
        })
    }

    /// A metadata number (float or integer), if the file has it.
    pub fn float(&self, key: &str) -> anyhow::Result<Option<f64>> {
        Ok(match self.value(key) {
            None => None,
            Some(Value::F32(v)) => Some(f64::from(*v)),
            Some(Value::F64(v)) => Some(*v),
            Some(_) => self.integer(key)?.map(|v| v as f64),
        })
    }

    /// A metadata flag, if the file has it.
    pub fn flag(&self, key: &str) -> Option<bool> {
        match self.value(key) {
            Some(Value::Bool(v)) => Some(*v),
            _ => None,
        }
    }

    /// A metadata array of strings, if the file has it.
    pub fn strings(&self, key: &str) -> anyhow::Result<Option<Vec<&str>>> {
        let Some(Value::Array(values)) = self.value(key) else {
            return Ok(None);
        };
        values
            .iter()
            .map(|value| match value {
                Value::String(text) => Ok(text.as_str()),
                other => Err(anyhow!(
                    "{}: metadata {key} holds {other:?}, not strings",
                    self.path.display()
                )),
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .map(Some)
    }

    /// A metadata array of numbers, if the file has it.
    pub fn numbers(&self, key: &str) -> Option<Vec<f64>> {
        let Some(Value::Array(values)) = self.value(key) else {
            return None;
        };
        values
            .iter()
            .map(|value| match value {
                Value::F32(v) => Some(f64::from(*v)),
                Value::F64(v) => Some(*v),
                Value::I32(v) => Some(f64::from(*v)),
                Value::U32(v) => Some(f64::from(*v)),
                Value::I8(v) => Some(f64::from(*v)),
                Value::U8(v) => Some(f64::from(*v)),
                _ => None,
            })
            .collect()
    }

    /// The tensor `name`'s place and type.
    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.content.tensor_infos.get(name)
    }

    /// Refuses the file if any tensor has a type headscope does not read.
    pub fn check_tensor_types(&self) -> anyhow::Result<()> {
        let mut names: Vec<&String> = self.content.tensor_infos.keys().collect();
        names.sort();
        for name in names {
            let dtype = self.content.tensor_infos[name].dtype;
            if !dtype.is_supported() {
                bail!(
                    "{}: tensor {name} is stored as {}, which headscope does not read (it reads {})",
                    self.path.display(),
                    dtype.name(),
                    supported_names()
                );
            }
        }
        Ok(())
    }

    /// Reads one tensor's bytes.
    pub fn read_tensor(&mut self, name: &str) -> anyhow::Result<RawTensor> {
        let path = self.path.display();
        let info = self
            .content
            .tensor_infos
            .get(name)
            .ok_or_else(|| anyhow!("{path} has no tensor {name}"))?;
        let Some((block, block_bytes)) = info.dtype.layout().filter(|_| info.dtype.is_supported())
        else {
            bail!(
                "{path}: tensor {name} is stored as {}, which headscope does not read (it reads {})",
                info.dtype.name(),
                supported_names()
            );
        };
        let columns = info.shape.dims().last().copied().unwrap_or(1);
        if !columns.is_multiple_of(block) {
            bail!(
                "{path} is damaged: tensor {name}'s rows of {columns} are not whole blocks of {} ({block} values)",
                info.dtype.name()
            );
        }
        let bytes = info.shape.elem_count() / block * block_bytes;
        let start = self.content.tensor_data_offset.saturating_add(info.offset);
        let end = start.saturating_add(bytes as u64);
        let size = self.reader.get_ref().metadata()?.len();
        if end > size {
            bail!(
                "{path} is truncated or damaged: tensor {name} needs bytes {start}..{end}, the file has {size}"
            );
        }
        let mut data = vec![0u8; bytes];
        self.reader
            .seek(SeekFrom::Start(start))
            .and_then(|_| self.reader.read_exact(&mut data))
            .with_context(|| format!("{path} is truncated or damaged: tensor {name}"))?;
        Ok(RawTensor {
            dtype: info.dtype,
            shape: info.shape.clone(),
            data,
        })
    }
}

fn supported_names() -> String {
    SUPPORTED_TYPES
        .iter()
        .map(|dtype| dtype.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_ids_are_ggml_s() {
        assert_eq!(TensorType::from_id(20), TensorType::Iq4Nl);
        assert_eq!(TensorType::from_id(23), TensorType::Iq4Xs);
        assert_eq!(TensorType::from_id(30), TensorType::Candle(GgmlDType::BF16));
        assert_eq!(TensorType::from_id(6), TensorType::Candle(GgmlDType::Q5_0));
        assert_eq!(TensorType::from_id(16).name(), "IQ2_XXS (ggml type 16)");
        assert!(!TensorType::from_id(34).is_supported());
        // Candle knows Q8_1 and Q8_K, but no file stores weights in them.
        assert!(!TensorType::from_id(9).is_supported());
        for dtype in SUPPORTED_TYPES {
            assert!(dtype.layout().is_some(), "{}", dtype.name());
        }
    }
}
