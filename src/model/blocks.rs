//! The blocks both stacks are built of, each with `cpu()`: a view of its
//! parameters as slices for the CPU pass ([`super::cpu_pass`]). A dense
//! projection packed once at load for the CPU kernels, in the checkpoint's
//! precision; the norms (LayerNorm with or without a bias, RMSNorm) in
//! float32.

use super::gguf::quantized::QuantizedWeight;
use super::stack::HostValues;
use super::weight::{HostWeight, Weight, WeightBuilder};
use crate::kernels::{self, RowNorm};
use candle_core::{DType, Module, Result, Tensor, WithDType};
use candle_nn::{LayerNorm, RmsNorm};

/// A dense layer `x·Wᵀ + b` (the bias where the checkpoint has one). On the
/// CPU the weight is packed once at load for the kernels
/// ([`kernels::pack_weight`]: panels of 64 columns of Wᵀ, shape panels ×
/// inputs × 64), in the checkpoint's precision, and multiplied there by
/// the CPU pass or, outside it, by [`Dense::forward`]; elsewhere it is kept
/// transposed (inputs × outputs, contiguous), which candle's matmul takes
/// without a per-call transpose, and widened for each product. Quantized
/// blocks are kept as the file has them (outputs × inputs): the CPU pass
/// widens a panel's rows of them as it reaches them
/// ([`kernels::RowBlocks`]), candle's ops dequantize them for each product.
pub(in crate::model) struct Dense {
    weight: Weight,
    bias: Option<Tensor>,
    inputs: usize,
    outputs: usize,
    layout: DenseLayout,
}

/// How a [`Dense`] keeps its weight.
#[derive(Clone, Copy, PartialEq)]
enum DenseLayout {
    /// Packed for the CPU kernels.
    Packed,
    /// Wᵀ, inputs × outputs.
    Transposed,
    /// W as stored, outputs × inputs (quantized blocks).
    AsStored,
}

/// A contiguous `inputs × outputs` matrix packed by [`kernels::pack_weight`],
/// in its own precision.
fn pack<T: WithDType + Default>(
    weight_t: &Tensor,
    inputs: usize,
    outputs: usize,
) -> Result<Tensor> {
    let values = weight_t.flatten_all()?.to_vec1::<T>()?;
    let packed = kernels::pack_weight(&values, inputs, outputs);
    let panels = outputs.div_ceil(kernels::PANEL);
    Tensor::from_vec(packed, (panels, inputs, kernels::PANEL), weight_t.device())
}

impl Dense {
    /// A `torch.nn.Linear` (`weight` outputs × inputs), with a `bias` or not.
    pub(in crate::model) fn load(
        vb: WeightBuilder,
        inputs: usize,
        outputs: usize,
        bias: bool,
    ) -> Result<Self> {
        let weight = vb.weight((outputs, inputs), "weight")?;
        let bias = bias.then(|| vb.get(outputs, "bias")).transpose()?;
        Self::new(&weight, bias.as_ref())
    }

    /// From a checkpoint's `outputs × inputs` weight.
    pub(in crate::model) fn new(weight: &Weight, bias: Option<&Tensor>) -> Result<Self> {
        let (outputs, inputs) = weight.dims2()?;
        if matches!(weight, Weight::Quantized(_)) {
            return Ok(Self {
                weight: weight.clone(),
                bias: bias.cloned(),
                inputs,
                outputs,
                layout: DenseLayout::AsStored,
            });
        }
        let weight_t = weight.map(|w| w.t()?.contiguous())?;
        if !weight.device().is_cpu() {
            return Ok(Self {
                weight: weight_t,
                bias: bias.cloned(),
                inputs,
                outputs,
                layout: DenseLayout::Transposed,
            });
        }
        let packed = weight_t.map(|w| match w.dtype() {
            DType::BF16 => pack::<half::bf16>(w, inputs, outputs),
            DType::F16 => pack::<half::f16>(w, inputs, outputs),
            _ => pack::<f32>(w, inputs, outputs),
        })?;
        Ok(Self {
            weight: packed,
            bias: bias.cloned(),
            inputs,
            outputs,
            layout: DenseLayout::Packed,
        })
    }

    pub(in crate::model) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let product = match self.layout {
            DenseLayout::Packed => self.packed_product(x)?,
            DenseLayout::Transposed => x.matmul(&self.weight.widen()?)?,
            DenseLayout::AsStored => x.matmul(&self.weight.widen()?.t()?)?,
        };
        match &self.bias {
            Some(bias) => product.broadcast_add(bias),
            None => Ok(product),
        }
    }

    /// x·Wᵀ (x: … × inputs) by the packed kernels, the output columns
    /// shared out among the threads of the process's budget, whole panels
    /// each: the weight is read where it lies, in its own precision (candle's
    /// product would first need the panels side by side again, a copy of the
    /// whole matrix per call — what the layers off the CPU pass, a cached
    /// generation step and the language-model head call it for).
    fn packed_product(&self, x: &Tensor) -> Result<Tensor> {
        let dense = self.cpu()?;
        let mut dims = x.dims().to_vec();
        let inputs = dims.pop().unwrap_or(0);
        let rows = dims.iter().product::<usize>();
        let values = x.flatten_all()?.to_vec1::<f32>()?;
        let panels = self.outputs.div_ceil(kernels::PANEL);
        let pieces = crate::threads::total().clamp(1, panels.max(1));
        let ranges: Vec<_> = crate::model::team::split_evenly(panels, pieces)
            .into_iter()
            .map(|range| {
                range.start * kernels::PANEL..(range.end * kernels::PANEL).min(self.outputs)
            })
            .collect();
        let parts = crate::threads::map_indices(ranges.len(), ranges.len(), |piece| {
            let columns = ranges[piece].clone();
            let mut out = vec![0.0; rows * columns.len()];
            let x = kernels::MatRef::new(&values, rows, inputs);
            dense
                .weight()
                .product(x, 0..inputs, columns, &mut out, false);
            out
        });
        let mut product = vec![0.0; rows * self.outputs];
        for (range, part) in ranges.iter().zip(&parts) {
            let width = range.len();
            for (row, values) in part.chunks(width.max(1)).enumerate() {
                product[row * self.outputs + range.start..][..width].copy_from_slice(values);
            }
        }
        dims.push(self.outputs);
        Tensor::from_vec(product, dims, x.device())
    }

    /// Per head of `heads` heads of `head_dim` inputs each, the Gram
    /// matrix of its rows of this projection (the rows its inputs
    /// multiply, x·W form): H × d × d, for value weighting
    /// ([`kernels::attention::value_norms`]). Read from the weight as kept:
    /// a packed one through the kernels' product with an identity block,
    /// any other widened once.
    pub(in crate::model) fn head_grams(&self, heads: usize, head_dim: usize) -> Result<Vec<f32>> {
        let (d, outputs) = (head_dim, self.outputs);
        let mut rows = vec![0.0f32; d * outputs];
        let mut grams = vec![0.0f32; heads * d * d];
        let widened = match self.layout {
            DenseLayout::Packed => None,
            // Inputs × outputs, row-major.
            DenseLayout::Transposed => Some(self.weight.widen()?),
            DenseLayout::AsStored => Some(self.weight.widen()?.t()?.contiguous()?),
        };
        let widened = widened
            .map(|w| w.flatten_all()?.to_vec1::<f32>())
            .transpose()?;
        let dense = match self.layout {
            DenseLayout::Packed => Some(self.cpu()?),
            _ => None,
        };
        let mut identity = vec![0.0f32; d * d];
        identity
            .iter_mut()
            .step_by(d + 1)
            .for_each(|one| *one = 1.0);
        for (head, gram) in grams.chunks_exact_mut(d * d).enumerate() {
            let inputs = head * d..(head + 1) * d;
            match (&dense, &widened) {
                (Some(dense), _) => dense.weight().product(
                    kernels::MatRef::new(&identity, d, d),
                    inputs,
                    0..outputs,
                    &mut rows,
                    false,
                ),
                (None, Some(values)) => {
                    rows.copy_from_slice(&values[inputs.start * outputs..inputs.end * outputs])
                }
                (None, None) => unreachable!("a weight not packed is widened"),
            }
            kernels::attention::value_gram(&rows, d, gram);
        }
        Ok(grams)
    }

    pub(in crate::model) fn cpu(&self) -> Result<DenseCpu<'_>> {
        let values = match (self.layout, &self.weight) {
            (DenseLayout::Packed, weight) => DenseValues::Packed(HostWeight::of(weight)?),
            (DenseLayout::AsStored, Weight::Quantized(blocks)) if blocks.device().is_cpu() => {
                DenseValues::Rows(blocks)
            }
            _ => {
                return Err(candle_core::Error::Msg(
                    "dense weight not on the CPU for its kernels".into(),
                ))
            }
        };
        Ok(DenseCpu {
            values,
            bias: self.bias.as_ref().map(HostValues::of).transpose()?,
            inputs: self.inputs,
            outputs: self.outputs,
        })
    }
}

/// The Gram matrices of an attention's heads in its output projection
/// ([`Dense::head_grams`], H × d × d), made at the first pass that needs
/// them and kept: a few milliseconds a layer, once per model.
#[derive(Default)]
pub(in crate::model) struct HeadGrams(std::sync::OnceLock<Vec<f32>>);

impl HeadGrams {
    pub(in crate::model) fn of(
        &self,
        output: &Dense,
        heads: usize,
        head_dim: usize,
    ) -> Result<&[f32]> {
        if let Some(grams) = self.0.get() {
            return Ok(grams);
        }
        let grams = output.head_grams(heads, head_dim)?;
        Ok(self.0.get_or_init(|| grams))
    }
}

pub(in crate::model) struct DenseCpu<'a> {
    values: DenseValues<'a>,
    bias: Option<HostValues<'a>>,
    inputs: usize,
    outputs: usize,
}

/// Where a [`DenseCpu`]'s weight lies.
enum DenseValues<'a> {
    /// Packed panels.
    Packed(HostWeight<'a>),
    /// Quantized blocks, W as stored.
    Rows(&'a QuantizedWeight),
}

impl DenseCpu<'_> {
    pub(in crate::model) fn weight(&self) -> kernels::Packed<'_> {
        match &self.values {
            DenseValues::Packed(packed) => {
                kernels::Packed::new(packed.get(), self.inputs, self.outputs)
            }
            DenseValues::Rows(blocks) => kernels::Packed::rows(*blocks, self.inputs, self.outputs),
        }
    }

    /// The bias, empty where the projection has none.
    pub(in crate::model) fn bias(&self) -> &[f32] {
        self.bias.as_ref().map_or(&[], HostValues::get)
    }

    pub(in crate::model) fn outputs(&self) -> usize {
        self.outputs
    }
}

/// A norm of the hidden states: a LayerNorm (with a bias or without), or
/// an RMSNorm.
pub(in crate::model) enum Norm {
    Layer(LayerNorm),
    Rms(RmsNorm),
}

impl Norm {
    pub(in crate::model) fn is_rms(&self) -> bool {
        matches!(self, Self::Rms(_))
    }

    /// A LayerNorm of `size`, with `bias` or without.
    pub(in crate::model) fn layer(
        vb: WeightBuilder,
        size: usize,
        eps: f64,
        bias: bool,
    ) -> Result<Self> {
        let weight = vb.get(size, "weight")?;
        Ok(Self::Layer(if bias {
            LayerNorm::new(weight, vb.get(size, "bias")?, eps)
        } else {
            LayerNorm::new_no_bias(weight, eps)
        }))
    }

    pub(in crate::model) fn rms(vb: WeightBuilder, size: usize, eps: f64) -> Result<Self> {
        Ok(Self::Rms(RmsNorm::new(vb.get(size, "weight")?, eps)))
    }

    /// Gemma's RMSNorm, which scales by 1 + w: the sum made once at load.
    pub(in crate::model) fn rms_plus_one(vb: WeightBuilder, size: usize, eps: f64) -> Result<Self> {
        Ok(Self::Rms(RmsNorm::new(
            (vb.get(size, "weight")? + 1.0)?,
            eps,
        )))
    }

    pub(in crate::model) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Self::Layer(norm) => norm.forward(x),
            Self::Rms(norm) => norm.forward(x),
        }
    }

    pub(in crate::model) fn cpu(&self) -> Result<NormCpu<'_>> {
        Ok(match self {
            Self::Layer(norm) => NormCpu::Layer {
                gamma: HostValues::of(norm.weight())?,
                beta: norm.bias().map(HostValues::of).transpose()?,
                eps: norm.eps() as f32,
            },
            Self::Rms(norm) => NormCpu::Rms {
                gamma: HostValues::of(norm.weight())?,
                eps: norm.eps() as f32,
            },
        })
    }
}

/// A [`Norm`]'s parameters as slices.
pub(in crate::model) enum NormCpu<'a> {
    Layer {
        gamma: HostValues<'a>,
        beta: Option<HostValues<'a>>,
        eps: f32,
    },
    Rms {
        gamma: HostValues<'a>,
        eps: f32,
    },
}

impl NormCpu<'_> {
    pub(in crate::model) fn row_norm(&self) -> RowNorm<'_> {
        match self {
            Self::Layer { gamma, beta, eps } => RowNorm::Layer {
                gamma: gamma.get(),
                beta: beta.as_ref().map(HostValues::get),
                eps: *eps,
            },
            Self::Rms { gamma, eps } => RowNorm::Rms {
                gamma: gamma.get(),
                eps: *eps,
            },
        }
    }

    pub(in crate::model) fn forward(&self, x: &mut [f32]) {
        kernels::normalise_rows(x, self.row_norm());
    }

    /// An RMSNorm's γ and ε (`None` for a LayerNorm).
    pub(in crate::model) fn rms(&self) -> Option<(&[f32], f32)> {
        match self {
            Self::Rms { gamma, eps } => Some((gamma.get(), *eps)),
            Self::Layer { .. } => None,
        }
    }
}
