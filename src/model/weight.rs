//! Weights in the precision their checkpoint stores them.
//!
//! A [`Weight`] is a matrix (or an embedding table) as the checkpoint holds
//! it: float32 is used as it is; bfloat16 and float16 stay two bytes a
//! parameter and are widened to float32 where the forward pass reaches
//! them — a projection's matrix just before its product ([`Weight::widen`]),
//! an embedding table's rows of the input's tokens ([`Weight::rows`]), a
//! tile of a packed matrix inside the CPU kernels — and dropped after. The
//! widening is exact and the math stays float32, so the figures are those
//! of the same checkpoint widened at load, bit for bit, in half the memory:
//! a Llama-3-8B-shaped bfloat16 checkpoint takes 15 GB, not 30. A GGUF
//! file's quantized blocks are one more variant, dequantized by the same
//! `widen` ([`super::gguf::quantized`]).
//!
//! [`WeightBuilder`] is the loaders' view of a checkpoint's tensors (as
//! candle's `VarBuilder`, a path into them): `get` gives a small tensor —
//! a norm, a bias, a position table — in float32, `weight` a matrix as
//! stored, handed over: the builder lets go of it, so that a loader that
//! packs a matrix for the CPU kernels never holds the checkpoint's copy
//! beside its own (the model's size at the peak of a load, not twice it).

use super::gguf::quantized::QuantizedWeight;
use crate::kernels::StoredValues;
use candle_core::{CpuStorage, DType, Device, Result, Shape, Storage, StorageRef, Tensor};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// A weight in its checkpoint's precision.
#[derive(Clone, Debug)]
pub enum Weight {
    /// float32, used as it is.
    F32(Tensor),
    /// bfloat16 or float16, widened exactly to float32 when used.
    Half(Tensor),
    /// GGUF blocks, dequantized to float32 when used.
    Quantized(QuantizedWeight),
}

impl Weight {
    /// A tensor as read: half-precision ones are kept, float32 ones used as
    /// they are, any other type (float64, integers) converted to float32.
    pub fn new(tensor: Tensor) -> Result<Self> {
        Ok(match tensor.dtype() {
            DType::F32 => Self::F32(tensor),
            DType::BF16 | DType::F16 => Self::Half(tensor),
            _ => Self::F32(tensor.to_dtype(DType::F32)?),
        })
    }

    /// The tensor as stored; `None` for quantized blocks.
    pub fn stored(&self) -> Option<&Tensor> {
        match self {
            Self::F32(tensor) | Self::Half(tensor) => Some(tensor),
            Self::Quantized(_) => None,
        }
    }

    /// The weight in float32: the one place a stored weight becomes the
    /// float32 the pass computes with (a float32 weight is shared, not copied).
    pub fn widen(&self) -> Result<Tensor> {
        match self {
            Self::F32(tensor) => Ok(tensor.clone()),
            Self::Half(tensor) => match HostWeight::of(self) {
                Ok(host) => host.widen(tensor.shape()),
                Err(_) => tensor.to_dtype(DType::F32),
            },
            Self::Quantized(blocks) => blocks.dequantize(),
        }
    }

    /// Rows `ids` of an embedding table, in float32: only those rows are
    /// widened. `ids` may have any shape; the result has one more dimension,
    /// the table's width (as candle's `Embedding`).
    pub fn rows(&self, ids: &Tensor) -> Result<Tensor> {
        let table = match self {
            Self::F32(tensor) | Self::Half(tensor) => tensor,
            Self::Quantized(blocks) => return blocks.rows(ids),
        };
        let width = table.dim(1)?;
        let mut dims = ids.dims().to_vec();
        dims.push(width);
        let rows = table.index_select(&ids.flatten_all()?, 0)?;
        Self::new(rows)?.widen()?.reshape(dims)
    }

    /// The same weight rearranged by `f` (a transpose, a slice: exact in
    /// any precision), still as stored (quantized blocks dequantized).
    pub fn map(&self, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Self> {
        match self.stored() {
            Some(tensor) => Self::new(f(tensor)?),
            None => Self::new(f(&self.widen()?)?),
        }
    }

    /// Weights of the same width stacked along their first dimension, in
    /// their common precision (float32 when they differ); quantized blocks
    /// stay quantized, each part in its own block type.
    pub fn cat(weights: &[&Weight]) -> Result<Self> {
        let quantized: Vec<&QuantizedWeight> = weights
            .iter()
            .filter_map(|w| match w {
                Self::Quantized(blocks) => Some(blocks),
                _ => None,
            })
            .collect();
        if quantized.len() == weights.len() {
            return Ok(Self::Quantized(QuantizedWeight::stack(&quantized)?));
        }
        let dtype = weights[0].stored().map(Tensor::dtype);
        let same = dtype.is_some()
            && weights
                .iter()
                .all(|w| w.stored().map(Tensor::dtype) == dtype);
        let tensors = if same {
            weights.iter().filter_map(|w| w.stored().cloned()).collect()
        } else {
            weights
                .iter()
                .map(|w| w.widen())
                .collect::<Result<Vec<_>>>()?
        };
        Self::new(Tensor::cat(&tensors, 0)?)
    }

    pub fn dims2(&self) -> Result<(usize, usize)> {
        match self {
            Self::F32(tensor) | Self::Half(tensor) => tensor.dims2(),
            Self::Quantized(blocks) => blocks.shape().dims2(),
        }
    }

    pub fn device(&self) -> &Device {
        match self {
            Self::F32(tensor) | Self::Half(tensor) => tensor.device(),
            Self::Quantized(blocks) => blocks.device(),
        }
    }
}

/// A weight's values on the CPU in the checkpoint's precision, borrowed
/// while this lives (for the CPU kernels).
pub struct HostWeight<'a> {
    storage: StorageRef<'a>,
    range: Range<usize>,
}

impl<'a> HostWeight<'a> {
    /// An error unless the weight is contiguous on the CPU.
    pub fn of(weight: &'a Weight) -> Result<Self> {
        let tensor = weight.stored().ok_or_else(|| {
            candle_core::Error::Msg("the CPU forward pass takes no quantized weights".into())
        })?;
        let (storage, layout) = tensor.storage_and_layout();
        let (start, end) = layout
            .contiguous_offsets()
            .ok_or_else(|| candle_core::Error::Msg("weight is not contiguous".into()))?;
        if !matches!(
            &*storage,
            Storage::Cpu(CpuStorage::F32(_) | CpuStorage::BF16(_) | CpuStorage::F16(_))
        ) {
            return Err(candle_core::Error::Msg(
                "the CPU forward pass needs float32, bfloat16 or float16 weights on the CPU".into(),
            ));
        }
        Ok(Self {
            storage,
            range: start..end,
        })
    }

    pub fn get(&self) -> StoredValues<'_> {
        let range = self.range.clone();
        match &*self.storage {
            Storage::Cpu(CpuStorage::F32(values)) => StoredValues::F32(&values[range]),
            Storage::Cpu(CpuStorage::BF16(values)) => StoredValues::Bf16(&values[range]),
            Storage::Cpu(CpuStorage::F16(values)) => StoredValues::F16(&values[range]),
            _ => unreachable!("HostWeight::of accepts only these"),
        }
    }

    /// Every value in float32, as a CPU tensor of `shape`, widened on the
    /// threads of the process's budget: a projection of Llama-3-8B is 58M
    /// values, and one thread alone would leave the other core idle.
    fn widen(&self, shape: &Shape) -> Result<Tensor> {
        let values = self.get();
        let mut out = vec![0f32; values.len()];
        let lease = crate::threads::lease(values.len().div_ceil(1 << 20));
        let chunk = values.len().div_ceil(lease.threads()).max(1);
        std::thread::scope(|scope| {
            for (index, out) in out.chunks_mut(chunk).enumerate() {
                let start = index * chunk;
                scope.spawn(move || values.widen_into(start..start + out.len(), out));
            }
        });
        Tensor::from_vec(out, shape, &Device::Cpu)
    }
}

/// A path into a checkpoint's tensors, as the loaders read them (the
/// counterpart of candle's `VarBuilder`, which hands out every tensor in
/// one type).
#[derive(Clone)]
pub struct WeightBuilder {
    tensors: Arc<Mutex<HashMap<String, Tensor>>>,
    /// A GGUF file's quantized matrices, by the same names.
    quantized: Arc<Mutex<HashMap<String, QuantizedWeight>>>,
    path: Vec<String>,
    device: Device,
}

impl WeightBuilder {
    /// The tensors as read (any precision), by name, on `device`.
    pub fn new(tensors: HashMap<String, Tensor>, device: &Device) -> Self {
        Self::with_quantized(tensors, HashMap::new(), device)
    }

    /// As [`WeightBuilder::new`], with quantized matrices besides.
    pub fn with_quantized(
        tensors: HashMap<String, Tensor>,
        quantized: HashMap<String, QuantizedWeight>,
        device: &Device,
    ) -> Self {
        Self {
            tensors: Arc::new(Mutex::new(tensors)),
            quantized: Arc::new(Mutex::new(quantized)),
            path: Vec::new(),
            device: device.clone(),
        }
    }

    /// The builder below `prefix` (`vb.pp("layers.0")`).
    pub fn pp(&self, prefix: impl ToString) -> Self {
        let mut path = self.path.clone();
        path.push(prefix.to_string());
        Self {
            path,
            ..self.clone()
        }
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    fn name(&self, tensor: &str) -> String {
        let mut parts = self.path.clone();
        parts.push(tensor.to_string());
        parts.join(".")
    }

    pub fn contains_tensor(&self, tensor: &str) -> bool {
        let name = self.name(tensor);
        lock(&self.tensors).contains_key(&name) || lock(&self.quantized).contains_key(&name)
    }

    /// The tensor `name` below this path, checked against `shape`, as
    /// stored, and with `take` no longer held by the builder; with candle's
    /// errors for a missing tensor or another shape.
    fn stored(&self, shape: impl Into<Shape>, name: &str, take: bool) -> Result<Weight> {
        let (path, shape) = (self.name(name), shape.into());
        let mut quantized = lock(&self.quantized);
        let mut tensors = lock(&self.tensors);
        let stored_shape = if let Some(blocks) = quantized.get(&path) {
            blocks.shape().clone()
        } else {
            tensors
                .get(&path)
                .ok_or_else(|| candle_core::Error::CannotFindTensor { path: path.clone() }.bt())?
                .shape()
                .clone()
        };
        if stored_shape != shape {
            Err(candle_core::Error::UnexpectedShape {
                msg: format!("shape mismatch for {path}"),
                expected: shape,
                got: stored_shape,
            }
            .bt())?
        }
        if let Some(blocks) = quantized.get(&path) {
            let blocks = if take {
                quantized.remove(&path).expect("found just above")
            } else {
                blocks.clone()
            };
            return Ok(Weight::Quantized(blocks));
        }
        let tensor = if take {
            tensors.remove(&path).expect("found just above")
        } else {
            tensors[&path].clone()
        };
        drop(tensors);
        Weight::new(tensor.to_device(&self.device)?)
    }

    /// A small tensor (a norm, a bias, a position table) in float32.
    pub fn get(&self, shape: impl Into<Shape>, name: &str) -> Result<Tensor> {
        self.stored(shape, name, false)?.widen()
    }

    /// A weight matrix or embedding table in its stored precision, handed
    /// over (a second call for it finds none).
    pub fn weight(&self, shape: impl Into<Shape>, name: &str) -> Result<Weight> {
        self.stored(shape, name, true)
    }
}

/// A builder's map, whatever a thread that panicked holding it left.
fn lock<T>(map: &Mutex<HashMap<String, T>>) -> std::sync::MutexGuard<'_, HashMap<String, T>> {
    map.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Half-precision values widen exactly, and a table's rows come out as
    /// the rows of the widened table.
    #[test]
    fn widening_is_exact_and_rows_match_the_widened_table() {
        let values: Vec<f32> = (0..24).map(|i| (i as f32 - 11.5) * 0.37).collect();
        let table = Tensor::from_vec(values, (6, 4), &Device::Cpu).unwrap();
        let ids = Tensor::new(&[[5u32, 0], [2, 2]], &Device::Cpu).unwrap();
        for dtype in [DType::F32, DType::BF16, DType::F16] {
            let stored = table.to_dtype(dtype).unwrap();
            let weight = Weight::new(stored.clone()).unwrap();
            assert_eq!(matches!(weight, Weight::Half(_)), dtype != DType::F32);
            let widened = weight.widen().unwrap();
            assert_eq!(widened.dtype(), DType::F32);
            // Each value is its stored bits widened (as the half crate does).
            let flat = stored.flatten_all().unwrap();
            let exact: Vec<f32> = match dtype {
                DType::BF16 => flat
                    .to_vec1::<half::bf16>()
                    .unwrap()
                    .iter()
                    .map(|v| v.to_f32())
                    .collect(),
                DType::F16 => flat
                    .to_vec1::<half::f16>()
                    .unwrap()
                    .iter()
                    .map(|v| v.to_f32())
                    .collect(),
                _ => flat.to_vec1::<f32>().unwrap(),
            };
            assert_eq!(
                widened.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                exact
            );
            let rows = weight.rows(&ids).unwrap();
            assert_eq!(rows.dims(), [2, 2, 4]);
            let expected = widened
                .index_select(&ids.flatten_all().unwrap(), 0)
                .unwrap()
                .reshape((2, 2, 4))
                .unwrap();
            assert_eq!(
                rows.to_vec3::<f32>().unwrap(),
                expected.to_vec3::<f32>().unwrap()
            );
        }
    }

    /// A large weight is widened in chunks on several threads: every
    /// value lands in its place (an odd length leaves a short last chunk).
    #[test]
    fn large_weights_widen_in_place_on_threads() {
        let values: Vec<f32> = (0..3_000_001).map(|i| (i % 255) as f32 - 127.0).collect();
        let stored = Tensor::from_vec(values.clone(), (3_000_001, 1), &Device::Cpu)
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap();
        let widened = Weight::new(stored).unwrap().widen().unwrap();
        assert_eq!(widened.dims(), [3_000_001, 1]);
        assert_eq!(
            widened.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            values
        );
    }

    /// The builder finds tensors below its path and refuses a wrong shape.
    #[test]
    fn builder_reads_below_its_path() {
        let tensor = Tensor::ones((2, 3), DType::BF16, &Device::Cpu).unwrap();
        let vb = WeightBuilder::new(
            HashMap::from([("layers.0.w.weight".to_string(), tensor)]),
            &Device::Cpu,
        );
        let layer = vb.pp("layers.0").pp("w");
        assert!(layer.contains_tensor("weight"));
        assert_eq!(layer.get((2, 3), "weight").unwrap().dtype(), DType::F32);
        let wrong = layer.weight((3, 2), "weight").unwrap_err().to_string();
        assert!(
            wrong.contains("shape mismatch for layers.0.w.weight"),
            "{wrong}"
        );
        assert_eq!(
            layer
                .weight((2, 3), "weight")
                .unwrap()
                .stored()
                .unwrap()
                .dtype(),
            DType::BF16
        );
        // A matrix is handed over: the builder holds it no longer.
        assert!(!layer.contains_tensor("weight"));
        assert!(vb.pp("layers.1").get(3, "bias").is_err());
    }
}
