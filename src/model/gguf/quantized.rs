//! A matrix kept as llama.cpp's quantized blocks, dequantized to float32
//! only where the forward pass reaches it — a projection just before its
//! product, an embedding table's rows of the input's tokens — and dropped
//! after, so memory holds the file's 2.6–8.5 bits a weight, not 32.
//!
//! Blocks candle knows (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K,
//! Q5_K, Q6_K) are candle's `QTensor`s, dequantized by candle; the IQ4
//! blocks it does not know (IQ4_NL, IQ4_XS) are ours
//! ([`super::iquants`]). Either way dequantizing is the same float32
//! arithmetic as ggml's and gguf-py's `dequantize`, which transformers'
//! GGUF loader calls, bit for bit (`tests/gguf.rs` checks every type on
//! random blocks): the figures are those of transformers on the
//! dequantized model.

use super::file::{RawTensor, TensorType};
use super::iquants::{Layout, NonLinearBlocks};
use candle_core::quantized::{ggml_file::qtensor_from_ggml, QTensor};
use candle_core::{DType, Device, Result, Tensor};
use std::sync::Arc;

/// One stored matrix: candle's blocks or ours.
#[derive(Clone)]
enum Part {
    Candle(Arc<QTensor>),
    NonLinear(Arc<NonLinearBlocks>),
}

impl Part {
    fn type_name(&self) -> String {
        match self {
            Self::Candle(blocks) => TensorType::Candle(blocks.dtype()).name(),
            Self::NonLinear(blocks) => blocks.layout.name().to_string(),
        }
    }

    fn dequantize(&self, device: &Device) -> Result<Tensor> {
        match self {
            Self::Candle(blocks) => blocks.dequantize(device),
            Self::NonLinear(blocks) => {
                Tensor::from_vec(blocks.dequantize(), (blocks.rows, blocks.columns), device)
            }
        }
    }
}

/// Quantized blocks, rows × columns, each row a whole number of blocks:
/// one tensor of the file, or several of the same width stacked by rows
/// (a fused query-key-value projection), each in its own block type.
#[derive(Clone)]
pub struct QuantizedWeight {
    parts: Vec<Part>,
    shape: candle_core::Shape,
    device: Device,
}

impl std::fmt::Debug for QuantizedWeight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "QuantizedWeight({:?}, {:?})",
            self.parts.iter().map(Part::type_name).collect::<Vec<_>>(),
            self.shape()
        )
    }
}

impl QuantizedWeight {
    pub fn new(blocks: QTensor) -> Self {
        Self {
            device: blocks.device(),
            shape: blocks.shape().clone(),
            parts: vec![Part::Candle(Arc::new(blocks))],
        }
    }

    /// A file's quantized matrix (or vector), kept quantized: candle's
    /// types on `device`, IQ4 blocks in host memory (dequantized there and
    /// the float32 moved to `device`).
    pub fn from_raw(raw: RawTensor, device: &Device) -> Result<Self> {
        let layout = match raw.dtype {
            TensorType::Candle(dtype) => {
                let blocks =
                    qtensor_from_ggml(dtype, &raw.data, raw.shape.dims().to_vec(), device)?;
                return Ok(Self::new(blocks));
            }
            TensorType::Iq4Nl => Layout::Iq4Nl,
            TensorType::Iq4Xs => Layout::Iq4Xs,
            TensorType::Other(_) => {
                return Err(candle_core::Error::Msg(format!(
                    "{} blocks are not read",
                    raw.dtype.name()
                )))
            }
        };
        let rows = raw.rows();
        let columns = raw.shape.elem_count() / rows.max(1);
        let blocks = NonLinearBlocks::new(layout, rows, columns, raw.data).ok_or_else(|| {
            candle_core::Error::Msg(format!(
                "{} rows of {columns} are not whole blocks",
                layout.name()
            ))
        })?;
        Ok(Self {
            parts: vec![Part::NonLinear(Arc::new(blocks))],
            shape: raw.shape,
            device: device.clone(),
        })
    }

    /// `weights` (each rows × the same columns) stacked by rows, each part
    /// still quantized.
    pub fn stack(weights: &[&QuantizedWeight]) -> Result<Self> {
        let (rows, columns) = weights.iter().try_fold((0, None), |(rows, columns), w| {
            let (r, c) = w.shape.dims2()?;
            match columns {
                Some(columns) if columns != c => Err(candle_core::Error::Msg(format!(
                    "quantized weights of widths {columns} and {c} cannot be stacked"
                ))),
                _ => Ok((rows + r, Some(c))),
            }
        })?;
        Ok(Self {
            parts: weights
                .iter()
                .flat_map(|w| w.parts.iter().cloned())
                .collect(),
            shape: (rows, columns.unwrap_or(0)).into(),
            device: weights[0].device.clone(),
        })
    }

    pub fn shape(&self) -> &candle_core::Shape {
        &self.shape
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Every value, in float32.
    pub fn dequantize(&self) -> Result<Tensor> {
        let parts = self
            .parts
            .iter()
            .map(|part| part.dequantize(&self.device))
            .collect::<Result<Vec<_>>>()?;
        let whole = match parts.as_slice() {
            [one] => one.clone(),
            _ => Tensor::cat(&parts, 0)?,
        };
        // A vector (a norm stored quantized) keeps its one dimension.
        whole.reshape(self.shape.clone())
    }

    /// Rows `ids` (any shape) in float32, only those rows dequantized; the
    /// result has one more dimension, the width.
    pub fn rows(&self, ids: &Tensor) -> Result<Tensor> {
        match self.parts.as_slice() {
            [Part::Candle(table)] => table.embedding(ids),
            [Part::NonLinear(table)] => {
                let wanted = ids.flatten_all()?.to_dtype(DType::U32)?.to_vec1::<u32>()?;
                let width = table.columns;
                let mut values = vec![0f32; wanted.len() * width];
                for (&row, out) in wanted.iter().zip(values.chunks_exact_mut(width.max(1))) {
                    let row = row as usize;
                    if row >= table.rows {
                        return Err(candle_core::Error::Msg(format!(
                            "token id {row} is past the embedding table's {} rows",
                            table.rows
                        )));
                    }
                    table.dequantize_row(row, out);
                }
                let mut dims = ids.dims().to_vec();
                dims.push(width);
                Tensor::from_vec(values, dims, &self.device)
            }
            _ => Err(candle_core::Error::Msg(
                "a stacked quantized weight is no embedding table".into(),
            )),
        }
    }
}
