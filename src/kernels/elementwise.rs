//! The element-wise steps of the forward pass: bias and residual seeding,
//! LayerNorm, activations and softmax, with AVX-512 and AVX2 versions
//! picked at run time over portable scalar fallbacks (without a vector
//! version, softmax and the activations call the scalar `expf` per value:
//! an AVX2-only CPU would pay that on every layer).

/// Sets every row of `out` to `bias`, the seed onto which a product accumulates.
pub fn seed_rows(out: &mut [f32], bias: &[f32]) {
    for row in out.chunks_mut(bias.len().max(1)) {
        row.copy_from_slice(bias);
    }
}

/// A norm over rows of `gamma.len()` values.
#[derive(Clone, Copy)]
pub enum RowNorm<'a> {
    /// LayerNorm as PyTorch computes it: biased variance of the centred
    /// values; `beta` absent where the family's norm has no bias.
    Layer {
        gamma: &'a [f32],
        beta: Option<&'a [f32]>,
        eps: f32,
    },
    /// RMSNorm as transformers' `LlamaRMSNorm`: `x · (mean(x²) + eps)^-½ · γ`.
    Rms { gamma: &'a [f32], eps: f32 },
}

impl RowNorm<'_> {
    fn width(&self) -> usize {
        match self {
            Self::Layer { gamma, .. } | Self::Rms { gamma, .. } => gamma.len(),
        }
    }

    #[inline(always)]
    fn apply(&self, row: &mut [f32]) {
        match *self {
            Self::Layer { gamma, beta, eps } => {
                let width = row.len() as f32;
                let mean = sum_by(row, |v| v) / width;
                let variance = sum_by(row, |v| (v - mean) * (v - mean)) / width;
                let inverse = 1.0 / (variance + eps).sqrt();
                match beta {
                    Some(beta) => {
                        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
                            *v = (*v - mean) * inverse * g + b;
                        }
                    }
                    None => {
                        for (v, g) in row.iter_mut().zip(gamma) {
                            *v = (*v - mean) * inverse * g;
                        }
                    }
                }
            }
            Self::Rms { gamma, eps } => {
                let mean_square = sum_by(row, |v| v * v) / row.len() as f32;
                let inverse = 1.0 / (mean_square + eps).sqrt();
                for (v, g) in row.iter_mut().zip(gamma) {
                    *v = g * (*v * inverse);
                }
            }
        }
    }
}

/// `x = norm(x)`, row by row, in place.
pub fn normalise_rows(x: &mut [f32], norm: RowNorm) {
    for row in x.chunks_mut(norm.width().max(1)) {
        norm.apply(row);
    }
}

/// Where the end of a sub-layer normalises ([`sum_rows`]).
#[derive(Clone, Copy)]
pub enum SumNorm<'a> {
    /// No norm: a pre-norm layer normalises before its sub-layers.
    None,
    /// `norm(residual + sublayer)`: the BERT-like encoders.
    AfterResidual(RowNorm<'a>),
    /// `residual + norm(sublayer)`: Gemma 2 and 3's norms after each
    /// sub-layer, OLMo 2's.
    OnSublayer(RowNorm<'a>),
}

/// `out = residual + bias + Σ partials`, row by row, normalised where
/// `norm` says: the end of a sub-layer whose projection was split into
/// partial sums by input. `bias` may be empty (none).
pub fn sum_rows(
    out: &mut [f32],
    partials: &[&[f32]],
    bias: &[f32],
    residual: &[f32],
    norm: SumNorm,
) {
    assert_eq!(residual.len(), out.len());
    assert!(partials.iter().all(|p| p.len() == out.len()));
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has AVX-512F (checked at run time just above).
        unsafe { avx512::sum_rows(out, partials, bias, residual, norm) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU has AVX2 and FMA (checked at run time just above).
        unsafe { avx2::sum_rows(out, partials, bias, residual, norm) };
        return;
    }
    sum_rows_body(out, partials, bias, residual, norm);
}

/// The body of [`sum_rows`], plain Rust that the compiler vectorises;
/// `avx512::sum_rows` compiles it again with 16-lane vectors.
#[inline(always)]
fn sum_rows_body(
    out: &mut [f32],
    partials: &[&[f32]],
    bias: &[f32],
    residual: &[f32],
    norm: SumNorm,
) {
    let width = match norm {
        SumNorm::None => bias.len(),
        SumNorm::AfterResidual(norm) | SumNorm::OnSublayer(norm) => norm.width(),
    };
    let width = if width == 0 { out.len() } else { width };
    assert!(bias.is_empty() || bias.len() == width);
    for (index, (row, res)) in out
        .chunks_mut(width.max(1))
        .zip(residual.chunks(width.max(1)))
        .enumerate()
    {
        let on_sublayer = matches!(norm, SumNorm::OnSublayer(_));
        if on_sublayer {
            row.fill(0.0);
        } else {
            row.copy_from_slice(res);
        }
        if !bias.is_empty() {
            for (o, b) in row.iter_mut().zip(bias) {
                *o += b;
            }
        }
        for partial in partials {
            for (o, p) in row.iter_mut().zip(&partial[index * width..][..width]) {
                *o += p;
            }
        }
        match norm {
            SumNorm::None => {}
            SumNorm::AfterResidual(norm) => norm.apply(row),
            SumNorm::OnSublayer(norm) => {
                norm.apply(row);
                for (o, r) in row.iter_mut().zip(res) {
                    *o += r;
                }
            }
        }
    }
}

/// `Σ f(v)` in 16 interleaved partial sums, which the compiler keeps in
/// vector registers (a single running sum is a serial dependency chain).
#[inline(always)]
fn sum_by(row: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut partial = [0.0f32; 16];
    let chunks = row.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().map(|&v| f(v)).sum();
    for chunk in chunks {
        for (p, &v) in partial.iter_mut().zip(chunk) {
            *p += f(v);
        }
    }
    partial.iter().sum::<f32>() + tail
}

/// The feed-forward activations, as Hugging Face names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `gelu`: `0.5·x·(1 + erf(x/√2))`, the exact GELU.
    Gelu,
    /// `gelu_new`, `gelu_pytorch_tanh`, `gelu_fast`:
    /// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
    GeluTanh,
    Relu,
    /// `silu` (`swish`): `x·σ(x)`, the gate of SwiGLU.
    Silu,
}

impl Activation {
    /// The activation a config's `hidden_act` names.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "gelu" => Self::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Self::GeluTanh,
            "relu" => Self::Relu,
            "silu" | "swish" => Self::Silu,
            _ => return None,
        })
    }
}

/// `x = act(x + bias)` row by row (rows of `bias.len()` values), in place:
/// the bias of the product before, added in the activation's own pass.
pub fn activate(x: &mut [f32], bias: &[f32], act: Activation) {
    if bias.is_empty() {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        for row in x.chunks_mut(bias.len()) {
            // SAFETY: the CPU has AVX-512F (checked at run time just above).
            unsafe { avx512::activate(row, bias, act) };
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        for row in x.chunks_mut(bias.len()) {
            // SAFETY: the CPU has AVX2 and FMA (checked at run time just above).
            unsafe { avx2::activate(row, bias, act) };
        }
        return;
    }
    let f = match act {
        Activation::Gelu => scalar::gelu_erf,
        Activation::GeluTanh => scalar::gelu_tanh,
        Activation::Relu => |v: f32| v.max(0.0),
        Activation::Silu => scalar::silu,
    };
    for row in x.chunks_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v = f(*v + b);
        }
    }
}

/// Softmax of one row, in place, and the row's entropy −Σ p ln p (nats),
/// made from the scores as the softmax reads them: with x the scores less
/// their largest, ln Σ e^x − Σ e^x·x / Σ e^x, two sums of non-negative
/// terms (no cancellation) for one more product per entry, where −Σ p ln p
/// over the finished row costs a logarithm per entry.
pub fn softmax_entropy(row: &mut [f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has AVX-512F (checked at run time just above).
        return unsafe { avx512::softmax(row) };
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU has AVX2 and FMA (checked at run time just above).
        return unsafe { avx2::softmax(row) };
    }
    scalar::softmax(row)
}

/// The entropy of a softmax row from Σ e^x and Σ e^x·x over it (x ≤ 0:
/// the scores less their largest), in f64; 0 where it is not finite (a row
/// of NaN scores), as −Σ p ln p passes NaN entries over.
fn entropy_of_sums(sum: f32, weighted: f32) -> f32 {
    let (sum, weighted) = (f64::from(sum), f64::from(weighted));
    let entropy = sum.ln() - weighted / sum;
    if entropy.is_finite() {
        entropy.max(0.0) as f32
    } else {
        0.0
    }
}

/// The product e^x·x adds to a row's second sum: x below the smallest
/// exponent `exp` takes (e^x is then 0 or the smallest denormal) is
/// raised to it, so that a lane past the row's end (x = −∞) adds 0, not
/// NaN.
const LOWEST_EXPONENT: f32 = -104.0;

/// Values of [`exp_sum`] added in f32 before their sum joins the total in
/// f64.
const EXP_SUM_BLOCK: usize = 1024;

/// The largest value m of `row` and Σ e^(v − m) over it (the terms in f32,
/// a block of [`EXP_SUM_BLOCK`] at a time, the blocks added in f64): a
/// softmax's normaliser, as a next-token loss needs it for a vocabulary
/// of logits.
pub fn exp_sum(row: &[f32]) -> (f32, f64) {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has AVX-512F (checked at run time just above).
        return unsafe { avx512::exp_sum(row) };
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU has AVX2 and FMA (checked at run time just above).
        return unsafe { avx2::exp_sum(row) };
    }
    scalar::exp_sum(row)
}

/// Whether the AVX-512 element-wise kernels can run (std caches the
/// answer); never without the `avx512` feature. The analysis's loops ask
/// the same (`analysis::widest`).
pub(crate) fn has_avx512() -> bool {
    #[cfg(all(target_arch = "x86_64", feature = "avx512"))]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(all(target_arch = "x86_64", feature = "avx512")))]
    {
        false
    }
}

/// Whether the AVX2 element-wise kernels can run: AVX2 and FMA, as every
/// x86-64 CPU of the last decade has.
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Constants shared by the scalar and vector versions, so that both compute
/// the same functions.
mod consts {
    /// Cody–Waite split of ln 2 (Cephes): `n·LN2_HI` is exact for |n| < 2⁹.
    pub const LN2_HI: f32 = 0.693_359_4;
    pub const LN2_LO: f32 = -2.121_944_4e-4;
    /// Abramowitz & Stegun 7.1.26, the erf PyTorch's vectorised GELU uses:
    /// `erf(x) = 1 − t·(a1 + t·(a2 + …))·exp(−x²)`, `t = 1/(1 + p·x)` for
    /// x ≥ 0, absolute error below 1.5e-7.
    pub const ERF_P: f32 = 0.327_591_1;
    pub const ERF_A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_7,
        -1.453_152_1,
        1.061_405_4,
    ];
    /// √(2/π) and the cubic coefficient of the tanh GELU.
    pub const GELU_TANH_C: f32 = 0.797_884_6;
    pub const GELU_TANH_K: f32 = 0.044_715;
    /// e^r's Taylor coefficients after r⁷'s (1/7!), highest first.
    pub const TAYLOR_EXP: [f32; 7] = [
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ];
}

/// Portable versions, for CPUs without AVX-512.
pub(super) mod scalar {
    use super::consts::*;

    pub fn exp_sum(row: &[f32]) -> (f32, f64) {
        let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        let sum = (row.chunks(super::EXP_SUM_BLOCK))
            .map(|block| f64::from(block.iter().map(|&v| (v - max).exp()).sum::<f32>()))
            .sum();
        (max, sum)
    }

    /// [`super::softmax_entropy`].
    pub fn softmax(row: &mut [f32]) -> f32 {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let (mut sum, mut weighted) = (0.0, 0.0);
        for v in row.iter_mut() {
            let x = *v - max;
            *v = x.exp();
            sum += *v;
            weighted += *v * x.max(super::LOWEST_EXPONENT);
        }
        let inverse = 1.0 / sum;
        row.iter_mut().for_each(|v| *v *= inverse);
        super::entropy_of_sums(sum, weighted)
    }

    pub fn erf(x: f32) -> f32 {
        let a = x.abs();
        let t = 1.0 / (1.0 + ERF_P * a);
        let poly = ERF_A.iter().rev().fold(0.0, |acc, &c| acc * t + c) * t;
        (1.0 - poly * (-a * a).exp()).copysign(x)
    }

    pub fn gelu_erf(x: f32) -> f32 {
        0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
    }

    pub fn gelu_tanh(x: f32) -> f32 {
        0.5 * x * (1.0 + (GELU_TANH_C * (x + GELU_TANH_K * x * x * x)).tanh())
    }

    pub fn silu(x: f32) -> f32 {
        x / (1.0 + (-x).exp())
    }
}

/// The vector kernels, written once: each instruction set's module below
/// defines its lanes (`V`, `LANES`), `load`/`store` of a chunk of at most
/// `LANES` values, the arithmetic (`add`, `mul`, `fmadd`, … under those
/// names), `exp`'s range reduction (where the two differ) and the
/// reductions, then instantiates these bodies with its `target_feature`.
#[cfg(target_arch = "x86_64")]
macro_rules! vector_kernels {
    ($feature:literal) => {
        /// The same A&S erf as `scalar::erf`.
        #[inline]
        #[target_feature(enable = $feature)]
        fn erf(x: V) -> V {
            let a = abs(x);
            let one = splat(1.0);
            let t = div(one, fmadd(splat(ERF_P), a, one));
            let mut poly = splat(ERF_A[4]);
            for c in [ERF_A[3], ERF_A[2], ERF_A[1], ERF_A[0]] {
                poly = fmadd(poly, t, splat(c));
            }
            poly = mul(poly, t);
            let e = exp(sub(splat(0.0), mul(a, a)));
            // y ≥ 0: give it x's sign.
            with_sign_of(fnmadd(poly, e, one), x)
        }

        /// [`super::softmax_entropy`] in this module's lanes.
        #[target_feature(enable = $feature)]
        pub fn softmax(row: &mut [f32]) -> f32 {
            // Four running maxima: one would make every step wait for the last.
            let mut maxima = [splat(f32::NEG_INFINITY); 4];
            for (i, chunk) in row.chunks(LANES).enumerate() {
                maxima[i % 4] = max(maxima[i % 4], load(chunk, f32::NEG_INFINITY));
            }
            let top = max(max(maxima[0], maxima[1]), max(maxima[2], maxima[3]));
            let top = splat(reduce_max(top));
            let (mut sum, mut weighted) = (splat(0.0), splat(0.0));
            let lowest = splat(super::LOWEST_EXPONENT);
            for chunk in row.chunks_mut(LANES) {
                let x = sub(load(chunk, f32::NEG_INFINITY), top);
                let e = exp(x);
                store(chunk, e);
                sum = add_first(sum, e, chunk.len());
                weighted = add_first(weighted, mul(e, max(x, lowest)), chunk.len());
            }
            let sum = reduce_add(sum);
            let inverse = splat(1.0 / sum);
            for chunk in row.chunks_mut(LANES) {
                store(chunk, mul(load(chunk, 0.0), inverse));
            }
            super::entropy_of_sums(sum, reduce_add(weighted))
        }

        /// [`super::exp_sum`] in this module's lanes.
        #[target_feature(enable = $feature)]
        pub fn exp_sum(row: &[f32]) -> (f32, f64) {
            let mut maxima = [splat(f32::NEG_INFINITY); 4];
            for (i, chunk) in row.chunks(LANES).enumerate() {
                maxima[i % 4] = max(maxima[i % 4], load(chunk, f32::NEG_INFINITY));
            }
            let top = reduce_max(max(max(maxima[0], maxima[1]), max(maxima[2], maxima[3])));
            let mut total = 0.0f64;
            for block in row.chunks(super::EXP_SUM_BLOCK) {
                let mut sum = splat(0.0);
                for chunk in block.chunks(LANES) {
                    let e = exp(sub(load(chunk, f32::NEG_INFINITY), splat(top)));
                    sum = add_first(sum, e, chunk.len());
                }
                total += f64::from(reduce_add(sum));
            }
            (top, total)
        }

        #[target_feature(enable = $feature)]
        pub fn activate(values: &mut [f32], bias: &[f32], act: Activation) {
            let half = splat(0.5);
            let one = splat(1.0);
            for (chunk, bias) in values.chunks_mut(LANES).zip(bias.chunks(LANES)) {
                let x = add(load(chunk, 0.0), load(bias, 0.0));
                let y = match act {
                    Activation::Gelu => {
                        let e = erf(mul(x, splat(std::f32::consts::FRAC_1_SQRT_2)));
                        mul(mul(half, x), add(one, e))
                    }
                    Activation::GeluTanh => {
                        // tanh(u) = 1 − 2/(e^{2u} + 1); 1 + tanh(u) = 2 − 2/(e^{2u} + 1).
                        let x3 = mul(mul(x, x), x);
                        let u = mul(splat(GELU_TANH_C), fmadd(splat(GELU_TANH_K), x3, x));
                        let e = exp(add(u, u));
                        let two = splat(2.0);
                        let t = sub(two, div(two, add(e, one)));
                        mul(mul(half, x), t)
                    }
                    Activation::Relu => max(x, splat(0.0)),
                    Activation::Silu => {
                        let e = exp(sub(splat(0.0), x));
                        div(x, add(one, e))
                    }
                };
                store(chunk, y);
            }
        }

        /// [`super::sum_rows`] compiled with this module's instruction set.
        #[target_feature(enable = $feature)]
        pub fn sum_rows(
            out: &mut [f32],
            partials: &[&[f32]],
            bias: &[f32],
            residual: &[f32],
            norm: super::SumNorm,
        ) {
            super::sum_rows_body(out, partials, bias, residual, norm);
        }

        /// e^r for r = x − n·ln 2, by the degree-7 Taylor polynomial.
        #[inline]
        #[target_feature(enable = $feature)]
        fn exp_reduced(x: V, n: V) -> V {
            let r = fnmadd(n, splat(LN2_HI), x);
            let r = fnmadd(n, splat(LN2_LO), r);
            TAYLOR_EXP
                .iter()
                .fold(splat(1.0 / 5040.0), |p, &c| fmadd(p, r, splat(c)))
        }
    };
}

/// AVX-512F versions. Every function requires the feature; callers check
/// `has_avx512()` first.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::consts::*;
    use super::Activation;
    use std::arch::x86_64::*;
    // The arithmetic `vector_kernels!` is written in.
    use std::arch::x86_64::{
        _mm512_add_ps as add, _mm512_div_ps as div, _mm512_fmadd_ps as fmadd,
        _mm512_fnmadd_ps as fnmadd, _mm512_max_ps as max, _mm512_mul_ps as mul,
        _mm512_set1_ps as splat, _mm512_sub_ps as sub,
    };

    type V = __m512;
    const LANES: usize = 16;

    vector_kernels!("avx512f");

    fn mask(len: usize) -> __mmask16 {
        if len >= LANES {
            0xFFFF
        } else {
            (1u16 << len) - 1
        }
    }

    /// Up to 16 values; lanes past the end read as `fill`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load(values: &[f32], fill: f32) -> V {
        // SAFETY: the mask enables only lanes below `values.len()` (at most
        // 16), and masked-off lanes are neither read nor able to fault.
        unsafe { _mm512_mask_loadu_ps(_mm512_set1_ps(fill), mask(values.len()), values.as_ptr()) }
    }

    /// Stores the first `values.len()` (at most 16) lanes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store(values: &mut [f32], v: V) {
        // SAFETY: as in `load`, only lanes inside the slice are written.
        unsafe { _mm512_mask_storeu_ps(values.as_mut_ptr(), mask(values.len()), v) }
    }

    /// `sum + e` in the first `len` lanes: `exp` gives the smallest
    /// denormal, not 0, for the −∞ read past a row's end.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn add_first(sum: V, e: V, len: usize) -> V {
        _mm512_mask_add_ps(sum, mask(len), sum, e)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn reduce_max(v: V) -> f32 {
        _mm512_reduce_max_ps(v)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn reduce_add(v: V) -> f32 {
        _mm512_reduce_add_ps(v)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn abs(x: V) -> V {
        _mm512_abs_ps(x)
    }

    /// `y` (≥ 0) with `x`'s sign bit (AVX-512F has no float `and`/`or`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn with_sign_of(y: V, x: V) -> V {
        let sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN));
        _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sign))
    }

    /// e^x to about 1 ulp: x = n·ln2 + r with |r| ≤ ln2/2, e^r by its
    /// degree-7 Taylor polynomial (remainder < 5e-9 relative), 2ⁿ applied by
    /// `scalef`, which underflows gracefully to denormals and 0 where
    /// exponent arithmetic would wrap.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn exp(x: V) -> V {
        let x = _mm512_max_ps(x, _mm512_set1_ps(-104.0));
        let x = _mm512_min_ps(x, _mm512_set1_ps(88.7));
        let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)),
        );
        _mm512_scalef_ps(exp_reduced(x, n), n)
    }
}

/// AVX2 and FMA versions, the same functions as `avx512`'s on 8 lanes, for
/// CPUs without AVX-512 and builds without the `avx512` feature. Every
/// function requires both features; callers check `has_avx2()` first.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::consts::*;
    use super::Activation;
    use std::arch::x86_64::*;
    // The arithmetic `vector_kernels!` is written in.
    use std::arch::x86_64::{
        _mm256_add_ps as add, _mm256_div_ps as div, _mm256_fmadd_ps as fmadd,
        _mm256_fnmadd_ps as fnmadd, _mm256_max_ps as max, _mm256_mul_ps as mul,
        _mm256_set1_ps as splat, _mm256_sub_ps as sub,
    };

    type V = __m256;
    const LANES: usize = 8;

    vector_kernels!("avx2,fma");

    /// Up to 8 values; lanes past the end read as `fill`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn load(values: &[f32], fill: f32) -> V {
        let mut padded = [fill; LANES];
        let values = if values.len() >= LANES {
            &values[..LANES]
        } else {
            padded[..values.len()].copy_from_slice(values);
            &padded[..]
        };
        // SAFETY: `values` holds 8 floats.
        unsafe { _mm256_loadu_ps(values.as_ptr()) }
    }

    /// Stores the first `values.len()` (at most 8) lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn store(values: &mut [f32], v: V) {
        let n = values.len().min(LANES);
        values[..n].copy_from_slice(&lanes(v)[..n]);
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn lanes(v: V) -> [f32; LANES] {
        let mut all = [0.0; LANES];
        // SAFETY: `all` holds 8 floats.
        unsafe { _mm256_storeu_ps(all.as_mut_ptr(), v) };
        all
    }

    /// `sum + e`: lanes past a row's end read −∞, whose `exp` is 0.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn add_first(sum: V, e: V, _len: usize) -> V {
        add(sum, e)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn reduce_max(v: V) -> f32 {
        lanes(v).into_iter().fold(f32::NEG_INFINITY, f32::max)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn reduce_add(v: V) -> f32 {
        lanes(v).into_iter().sum::<f32>()
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn abs(x: V) -> V {
        _mm256_andnot_ps(_mm256_set1_ps(-0.0), x)
    }

    /// `y` (≥ 0) with `x`'s sign bit.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn with_sign_of(y: V, x: V) -> V {
        _mm256_or_ps(y, _mm256_and_ps(x, _mm256_set1_ps(-0.0)))
    }

    /// e^x as `avx512::exp` computes it, 2ⁿ put into the exponent bits:
    /// x is held to [−87, 88] so that n stays a normal exponent, and below
    /// −87.3 (e^x < 1.2e-38) the result is 0.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn exp(x: V) -> V {
        let underflow = _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_set1_ps(-87.3));
        let x = _mm256_max_ps(x, _mm256_set1_ps(-87.0));
        let x = _mm256_min_ps(x, _mm256_set1_ps(88.0));
        let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E)),
        );
        let two_to_n = _mm256_slli_epi32::<23>(_mm256_add_epi32(
            _mm256_cvtps_epi32(n),
            _mm256_set1_epi32(127),
        ));
        let p = exp_reduced(x, n);
        _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(two_to_n)), underflow)
    }
}
