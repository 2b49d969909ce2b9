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
//! dequantized model. On the tuned CPU pass a weight is read as
//! [`RowBlocks`]: the blocks of a panel's rows dequantized as the product
//! reaches them, by the same functions.

use super::file::{RawTensor, TensorType};
use super::iquants::{Layout, NonLinearBlocks};
use crate::kernels::RowBlocks;
use candle_core::quantized::k_quants::{self, GgmlType};
use candle_core::quantized::{ggml_file::qtensor_from_ggml, GgmlDType, QTensor};
use candle_core::{DType, Device, Result, Tensor};
use std::ops::Range;
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

    /// Rows × columns (a vector is one row).
    fn dims(&self) -> (usize, usize) {
        match self {
            Self::Candle(blocks) => {
                let dims = blocks.shape().dims();
                let columns = dims.last().copied().unwrap_or(1);
                (blocks.shape().elem_count() / columns.max(1), columns)
            }
            Self::NonLinear(blocks) => (blocks.rows, blocks.columns),
        }
    }

    /// Values per block.
    fn block_values(&self) -> usize {
        match self {
            Self::Candle(blocks) => blocks.dtype().block_size(),
            Self::NonLinear(blocks) => blocks.layout.block_values(),
        }
    }

    /// Blocks `blocks` of row `row` into `out`, whole blocks.
    fn dequantize_blocks(&self, row: usize, blocks: Range<usize>, out: &mut [f32]) {
        match self {
            Self::Candle(tensor) => {
                let dtype = tensor.dtype();
                let per_row = self.dims().1 / dtype.block_size();
                let size = dtype.type_size();
                let data = tensor
                    .data()
                    .expect("a CPU tensor's blocks are borrowed, not copied");
                let start = (row * per_row + blocks.start) * size;
                widen_blocks(dtype, &data[start..start + blocks.len() * size], out);
            }
            Self::NonLinear(table) => table.dequantize_blocks(row, blocks, out),
        }
    }
}

/// Whole blocks of `dtype` (bytes as candle keeps them) in float32, by
/// candle's dequantization of that type (ggml's).
fn widen_blocks(dtype: GgmlDType, bytes: &[u8], out: &mut [f32]) {
    fn widen<T: GgmlType>(bytes: &[u8], out: &mut [f32]) {
        let size = std::mem::size_of::<T>();
        assert!(
            bytes.len().is_multiple_of(size)
                && bytes.as_ptr().align_offset(std::mem::align_of::<T>()) == 0,
            "blocks out of place"
        );
        // SAFETY: the bytes are a run of candle's own `Vec<T>` of blocks
        // (`QTensor::data` borrows it on the CPU), whole and aligned
        // (checked just above); the block types are plain `repr(C)` data.
        let blocks =
            unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size) };
        T::to_float(blocks, out);
    }
    match dtype {
        GgmlDType::F32 => widen::<f32>(bytes, out),
        GgmlDType::F16 => widen::<half::f16>(bytes, out),
        GgmlDType::BF16 => widen::<half::bf16>(bytes, out),
        GgmlDType::Q4_0 => widen::<k_quants::BlockQ4_0>(bytes, out),
        GgmlDType::Q4_1 => widen::<k_quants::BlockQ4_1>(bytes, out),
        GgmlDType::Q5_0 => widen::<k_quants::BlockQ5_0>(bytes, out),
        GgmlDType::Q5_1 => widen::<k_quants::BlockQ5_1>(bytes, out),
        GgmlDType::Q8_0 => widen::<k_quants::BlockQ8_0>(bytes, out),
        GgmlDType::Q8_1 => widen::<k_quants::BlockQ8_1>(bytes, out),
        GgmlDType::Q2K => widen::<k_quants::BlockQ2K>(bytes, out),
        GgmlDType::Q3K => widen::<k_quants::BlockQ3K>(bytes, out),
        GgmlDType::Q4K => widen::<k_quants::BlockQ4K>(bytes, out),
        GgmlDType::Q5K => widen::<k_quants::BlockQ5K>(bytes, out),
        GgmlDType::Q6K => widen::<k_quants::BlockQ6K>(bytes, out),
        GgmlDType::Q8K => widen::<k_quants::BlockQ8K>(bytes, out),
    }
}

thread_local! {
    /// The whole blocks around a row segment that does not start or end
    /// at a block's edge (a thread's share of a partial sum's inputs).
    static BLOCKS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The tuned CPU pass reads a quantized weight (on the CPU) a row segment
/// at a time: the blocks that hold it, dequantized.
impl RowBlocks for QuantizedWeight {
    fn widen_row(&self, row: usize, inputs: Range<usize>, out: &mut [f32]) {
        let mut row = row;
        for part in &self.parts {
            let rows = part.dims().0;
            if row >= rows {
                row -= rows;
                continue;
            }
            let size = part.block_values();
            let blocks = inputs.start / size..inputs.end.div_ceil(size);
            if inputs.start.is_multiple_of(size) && inputs.end.is_multiple_of(size) {
                part.dequantize_blocks(row, blocks, out);
            } else {
                BLOCKS.with_borrow_mut(|whole| {
                    whole.resize(blocks.len() * size, 0.0);
                    part.dequantize_blocks(row, blocks.clone(), whole);
                    let skip = inputs.start - blocks.start * size;
                    out.copy_from_slice(&whole[skip..skip + inputs.len()]);
                });
            }
            return;
        }
        panic!(
            "row past a quantized weight's {} rows",
            self.shape.dims()[0]
        );
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
