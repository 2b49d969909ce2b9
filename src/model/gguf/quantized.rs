//! A matrix kept as llama.cpp's quantized blocks (Q8_0, Q4_0, Q4_1, Q4_K,
//! Q5_K, Q6_K), dequantized to float32 by candle only where the forward
//! pass reaches it — a projection just before its product, an embedding
//! table's rows of the input's tokens — and dropped after, so memory holds
//! the file's 4.5–8.5 bits a weight, not 32. Dequantizing is the same
//! float32 arithmetic as gguf-py's `dequantize`, which transformers' GGUF
//! loader calls: the figures are those of transformers on the dequantized
//! model.

use candle_core::quantized::{QStorage, QTensor};
use candle_core::{Device, Result, Tensor};
use std::borrow::Cow;
use std::sync::Arc;

/// Quantized blocks, rows × columns, each row a whole number of blocks:
/// one tensor of the file, or several of the same width stacked by rows
/// (a fused query-key-value projection), each in its own block type.
#[derive(Clone)]
pub struct QuantizedWeight {
    parts: Vec<Arc<QTensor>>,
    shape: candle_core::Shape,
    device: Device,
}

impl std::fmt::Debug for QuantizedWeight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "QuantizedWeight({:?}, {:?})",
            self.parts.iter().map(|p| p.dtype()).collect::<Vec<_>>(),
            self.shape()
        )
    }
}

impl QuantizedWeight {
    pub fn new(blocks: QTensor) -> Self {
        Self {
            device: blocks.device(),
            shape: blocks.shape().clone(),
            parts: vec![Arc::new(blocks)],
        }
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
        match parts.as_slice() {
            [one] => Ok(one.clone()),
            _ => Tensor::cat(&parts, 0),
        }
    }

    /// Rows `ids` (any shape) in float32, only those rows dequantized; the
    /// result has one more dimension, the width.
    pub fn rows(&self, ids: &Tensor) -> Result<Tensor> {
        match self.parts.as_slice() {
            [table] => table.embedding(ids),
            _ => Err(candle_core::Error::Msg(
                "a stacked quantized weight is no embedding table".into(),
            )),
        }
    }
}

/// `blocks` (read on the CPU) on `device`.
pub fn onto(blocks: QTensor, device: &Device) -> Result<QTensor> {
    if device.is_cpu() {
        return Ok(blocks);
    }
    let storage = QStorage::from_data(blocks.data()?, device, blocks.dtype())?;
    QTensor::new(storage, blocks.shape().clone())
}

/// `blocks` with its rows reordered: row `r` of the result is row
/// `order[r]` of `blocks`. Rows are whole blocks, so this moves bytes and
/// changes no value.
pub fn reorder_rows(blocks: &QTensor, order: &[usize]) -> Result<QTensor> {
    let rows = blocks.shape().dims()[0];
    let data = blocks.data()?;
    let row_bytes = data.len() / rows;
    let mut out = Vec::with_capacity(data.len());
    for &row in order {
        out.extend_from_slice(&data[row * row_bytes..(row + 1) * row_bytes]);
    }
    let storage = QStorage::from_data(Cow::Owned(out), &blocks.device(), blocks.dtype())?;
    QTensor::new(storage, blocks.shape().clone())
}
