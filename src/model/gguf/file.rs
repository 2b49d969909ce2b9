//! A GGUF file's header — metadata and the table of tensors, read by
//! candle's `gguf_file` without touching the tensor data — and its
//! tensors, read one at a time. Every failure names the file and the
//! problem: not a GGUF file, truncated, a tensor type headscope does not
//! read.

use anyhow::{anyhow, bail, Context};
use candle_core::quantized::gguf_file::{Content, TensorInfo, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Device;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// The tensor types headscope reads: the float types and the block types
/// both candle and transformers' GGUF loader dequantize.
pub const SUPPORTED_TYPES: [GgmlDType; 9] = [
    GgmlDType::F32,
    GgmlDType::F16,
    GgmlDType::BF16,
    GgmlDType::Q8_0,
    GgmlDType::Q4_0,
    GgmlDType::Q4_1,
    GgmlDType::Q4K,
    GgmlDType::Q5K,
    GgmlDType::Q6K,
];

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
        let content = Content::read(&mut reader).map_err(|e| header_error(path, &e))?;
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
            let dtype = self.content.tensor_infos[name].ggml_dtype;
            if !SUPPORTED_TYPES.contains(&dtype) {
                bail!(
                    "{}: tensor {name} is stored as {}, which headscope does not read (it reads {})",
                    self.path.display(),
                    type_name(dtype),
                    supported_names()
                );
            }
        }
        Ok(())
    }

    /// Reads one tensor's blocks (or values) onto `device`.
    pub fn read_tensor(&mut self, name: &str, device: &Device) -> anyhow::Result<QTensor> {
        self.content
            .tensor(&mut self.reader, name, device)
            .map_err(|e| {
                anyhow!(
                    "{} is truncated or damaged: tensor {name}: {}",
                    self.path.display(),
                    super::super::without_backtrace(&e)
                )
            })
    }
}

/// llama.cpp's name of a tensor type.
pub fn type_name(dtype: GgmlDType) -> &'static str {
    match dtype {
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
    }
}

fn supported_names() -> String {
    SUPPORTED_TYPES
        .iter()
        .map(|&dtype| type_name(dtype))
        .collect::<Vec<_>>()
        .join(", ")
}

/// ggml's names of the type ids candle does not know (the i-quants and
/// others), for the message that refuses them.
fn unknown_type_name(id: u32) -> Option<&'static str> {
    Some(match id {
        4 | 5 => "Q4_2/Q4_3 (removed from ggml)",
        16 => "IQ2_XXS",
        17 => "IQ2_XS",
        18 => "IQ3_XXS",
        19 => "IQ1_S",
        20 => "IQ4_NL",
        21 => "IQ3_S",
        22 => "IQ2_S",
        23 => "IQ4_XS",
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

/// candle's header error as one line naming the file and the problem.
fn header_error(path: &Path, error: &candle_core::Error) -> anyhow::Error {
    let text = super::super::without_backtrace(error);
    if text.contains("unknown magic") {
        return anyhow!(
            "{} is not a GGUF file (it does not start with the bytes GGUF)",
            path.display()
        );
    }
    if let Some(id) = text
        .strip_prefix("unknown dtype for tensor ")
        .and_then(|id| id.trim().parse::<u32>().ok())
    {
        let name = unknown_type_name(id).unwrap_or("unknown to ggml");
        return anyhow!(
            "{}: a tensor is stored as ggml type {id} ({name}), which headscope does not read (it reads {})",
            path.display(),
            supported_names()
        );
    }
    anyhow!(
        "{} is truncated or damaged (its GGUF header cannot be read): {text}",
        path.display()
    )
}
