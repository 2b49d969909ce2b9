//! Reading a checkpoint's tensors from `model.safetensors`, or from the
//! shards a `model.safetensors.index.json` lists, one tensor at a time.
//!
//! Why not candle's `safetensors::load`: it reads the whole file into memory
//! and then copies every tensor out of it, so loading peaks at twice the
//! weights (4 GB for a 0.5B-parameter model in float32). Here each tensor
//! is read straight into the buffer that becomes the tensor, in its own
//! precision: float32, or bfloat16 and float16, which the forward pass
//! widens where it reaches them ([`super::weight`]).

use anyhow::{anyhow, bail, Context};
use candle_core::{DType, Device, Tensor};
use half::slice::HalfFloatSliceExt;
use safetensors::tensor::Metadata;
use safetensors::Dtype;
use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The weights file of a single-file checkpoint.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The index of a sharded checkpoint, naming the file of every tensor.
pub const INDEX_FILE: &str = "model.safetensors.index.json";

/// The weight files of the checkpoint in `folder`: `model.safetensors`, or
/// the shards its index lists; `None` when there is neither.
pub fn weight_files(folder: &Path) -> anyhow::Result<Option<Vec<PathBuf>>> {
    let single = folder.join(WEIGHTS_FILE);
    if single.is_file() {
        return Ok(Some(vec![single]));
    }
    let index_path = folder.join(INDEX_FILE);
    if !index_path.is_file() {
        return Ok(None);
    }
    #[derive(serde::Deserialize)]
    struct Index {
        weight_map: HashMap<String, String>,
    }
    let text = std::fs::read_to_string(&index_path)
        .with_context(|| format!("cannot read {}", index_path.display()))?;
    let index: Index = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "{} is not a safetensors index (a JSON object with a weight_map): {e}",
            index_path.display()
        )
    })?;
    let shards: BTreeSet<&String> = index.weight_map.values().collect();
    if shards.is_empty() {
        bail!("{} lists no weight files", index_path.display());
    }
    let mut files = Vec::with_capacity(shards.len());
    for shard in shards {
        if shard.contains('/') || shard.contains('\\') || shard.starts_with('.') {
            bail!(
                "{} names the shard {shard}, which is not a file of the same folder",
                index_path.display()
            );
        }
        let path = folder.join(shard);
        if !path.is_file() {
            bail!(
                "{} lists the shard {shard}, which is missing from {}",
                index_path.display(),
                folder.display()
            );
        }
        files.push(path);
    }
    Ok(Some(files))
}

/// Every tensor of one safetensors file on `device`, keyed by its name in
/// the file: float32, bfloat16 and float16 as stored, float64 as float32,
/// integer tensors as they are.
pub fn read_tensors(path: &Path, device: &Device) -> anyhow::Result<HashMap<String, Tensor>> {
    read_tensors_where(path, device, &|_| true)
}

/// [`read_tensors`] of the tensors whose names `keep` keeps: the others
/// are never read (a decoder's LM head, for a study that does not need it).
pub fn read_tensors_where(
    path: &Path,
    device: &Device,
    keep: &dyn Fn(&str) -> bool,
) -> anyhow::Result<HashMap<String, Tensor>> {
    let corrupt = |why: String| {
        anyhow!(
            "{} is truncated or corrupt (not a readable safetensors file): {why}",
            path.display()
        )
    };
    let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let file_len = file.metadata()?.len();
    let mut prefix = [0u8; 8];
    file.read_exact(&mut prefix)
        .map_err(|_| corrupt("shorter than its header".into()))?;
    let header_len = u64::from_le_bytes(prefix);
    if header_len > 100 << 20 || 8 + header_len > file_len {
        return Err(corrupt(format!("a header of {header_len} bytes")));
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header)
        .map_err(|e| corrupt(e.to_string()))?;
    let metadata: Metadata =
        serde_json::from_slice(&header).map_err(|e| corrupt(format!("its header: {e}")))?;
    let data_start = 8 + header_len;
    if data_start + metadata.data_len() as u64 != file_len {
        return Err(corrupt(format!(
            "the header describes {} bytes of data, the file holds {}",
            metadata.data_len(),
            file_len - data_start
        )));
    }
    let mut tensors = HashMap::new();
    for (name, info) in metadata.tensors() {
        if !keep(&name) {
            continue;
        }
        let (begin, end) = info.data_offsets;
        let count: usize = info.shape.iter().product();
        if end.checked_sub(begin) != Some(count * info.dtype.bitsize() / 8) {
            return Err(corrupt(format!(
                "tensor {name} has the wrong number of bytes"
            )));
        }
        file.seek(SeekFrom::Start(data_start + begin as u64))?;
        let mut read = |bytes: &mut [u8]| -> anyhow::Result<()> {
            file.read_exact(bytes).map_err(|e| corrupt(e.to_string()))
        };
        let shape = info.shape.as_slice();
        let tensor = match info.dtype {
            Dtype::F32 => {
                let mut values = vec![0f32; count];
                read(bytemuck::cast_slice_mut(&mut values))?;
                Tensor::from_vec(values, shape, &Device::Cpu)?
            }
            // Half precision stays as it is (see `super::weight`).
            Dtype::F16 => {
                let mut values = vec![half::f16::ZERO; count];
                read(bytemuck::cast_slice_mut(values.reinterpret_cast_mut()))?;
                Tensor::from_vec(values, shape, &Device::Cpu)?
            }
            Dtype::BF16 => {
                let mut values = vec![half::bf16::ZERO; count];
                read(bytemuck::cast_slice_mut(values.reinterpret_cast_mut()))?;
                Tensor::from_vec(values, shape, &Device::Cpu)?
            }
            Dtype::F64 => {
                let mut values = vec![0f64; count];
                read(bytemuck::cast_slice_mut(&mut values))?;
                let narrowed: Vec<f32> = values.iter().map(|&v| v as f32).collect();
                Tensor::from_vec(narrowed, shape, &Device::Cpu)?
            }
            Dtype::I64 => {
                let mut values = vec![0i64; count];
                read(bytemuck::cast_slice_mut(&mut values))?;
                Tensor::from_vec(values, shape, &Device::Cpu)?
            }
            other => {
                // Other integer and 8-bit float types: read the raw bytes
                // and let candle convert what it supports.
                let mut bytes = vec![0u8; end - begin];
                read(&mut bytes)?;
                let dtype = candle_dtype(other).ok_or_else(|| {
                    anyhow!(
                        "{}: tensor {name} has the type {other:?}, which headscope does not read",
                        path.display()
                    )
                })?;
                let tensor = Tensor::from_raw_buffer(&bytes, dtype, shape, &Device::Cpu)?;
                if dtype.is_float() {
                    tensor.to_dtype(DType::F32)?
                } else {
                    tensor
                }
            }
        };
        tensors.insert(name, tensor.to_device(device)?);
    }
    Ok(tensors)
}

fn candle_dtype(dtype: Dtype) -> Option<DType> {
    Some(match dtype {
        Dtype::U8 => DType::U8,
        Dtype::U32 => DType::U32,
        Dtype::I64 => DType::I64,
        _ => return None,
    })
}
