//! CPU kernels for the encoder's forward pass, on plain row-major `f32`
//! slices, each running on the calling thread (the encoder shares the work
//! out between its threads, see `encoder.rs`): products through the `gemm`
//! crate (weights packed once at load), and the element-wise steps
//! (softmax, GELU, LayerNorm) with AVX-512 versions picked at run time over
//! portable scalar fallbacks.
//!
//! Why not candle's CPU ops (profile of BERT-base at 512 tokens, 2 threads):
//! candle drove gemm's AVX2 kernels (44% of the time) at half the AVX-512
//! peak, its softmax and GELU call scalar `expf`/`erff` per element (12 and
//! 13 ms a layer against 0.2 and 0.05 here), every op allocates a fresh
//! tensor (page faults were over 10% of the run) and synchronises its
//! threads. Here gemm runs its AVX-512 kernels (the crate's `x86-v4`
//! feature), buffers live for the whole pass, and P, O and S are written
//! straight into the capture.

use std::ops::Range;

/// A read-only matrix view: element (i, j) is `data[i * row_stride + j * col_stride]`.
#[derive(Clone, Copy)]
pub struct MatRef<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<'a> MatRef<'a> {
    /// A contiguous row-major `rows × cols` matrix.
    pub fn new(data: &'a [f32], rows: usize, cols: usize) -> Self {
        Self::strided(data, rows, cols, cols, 1)
    }

    /// Panics unless every element lies inside `data`: the bounds check
    /// that makes the raw-pointer call into gemm sound.
    pub fn strided(
        data: &'a [f32],
        rows: usize,
        cols: usize,
        row_stride: usize,
        col_stride: usize,
    ) -> Self {
        assert!(
            rows == 0
                || cols == 0
                || (rows - 1) * row_stride + (cols - 1) * col_stride < data.len(),
            "matrix view {rows}×{cols} (strides {row_stride}, {col_stride}) outside a slice of {}",
            data.len()
        );
        Self {
            data,
            rows,
            cols,
            row_stride,
            col_stride,
        }
    }

    /// The transpose, as a view of the same values.
    pub fn t(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }
}

/// A matrix view to write: rows of `cols` values, `row_stride` apart.
pub struct MatMut<'a> {
    data: &'a mut [f32],
    rows: usize,
    cols: usize,
    row_stride: usize,
}

impl<'a> MatMut<'a> {
    /// A contiguous row-major `rows × cols` matrix.
    pub fn new(data: &'a mut [f32], rows: usize, cols: usize) -> Self {
        assert_eq!(data.len(), rows * cols, "destination has the wrong size");
        Self::strided(data, rows, cols, cols)
    }

    /// Panics unless every element lies inside `data` and rows do not overlap.
    pub fn strided(data: &'a mut [f32], rows: usize, cols: usize, row_stride: usize) -> Self {
        assert!(
            rows == 0
                || cols == 0
                || (cols <= row_stride && (rows - 1) * row_stride + cols <= data.len()),
            "destination {rows}×{cols} (row stride {row_stride}) outside a slice of {}",
            data.len()
        );
        Self {
            data,
            rows,
            cols,
            row_stride,
        }
    }
}

/// `dst = scale · lhs·rhs`, or `dst += scale · lhs·rhs` with `accumulate`.
/// Single-threaded: gemm's own threading costs a fork and join per product,
/// which the encoder avoids by giving each thread its own share of a layer.
pub fn matmul(dst: MatMut, lhs: MatRef, rhs: MatRef, accumulate: bool, scale: f32) {
    let (m, k, n) = (lhs.rows, lhs.cols, rhs.cols);
    assert_eq!(rhs.rows, k, "inner dimensions differ");
    assert_eq!(
        (dst.rows, dst.cols),
        (m, n),
        "destination has the wrong shape"
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for row in dst.data.chunks_mut(dst.row_stride).take(m) {
                row[..n].fill(0.0);
            }
        }
        return;
    }
    // SAFETY: `MatRef::strided` checked that every element of both operands
    // lies inside its slice, and `MatMut::strided` that the m rows of n
    // values, `row_stride` apart, lie inside `dst.data`, which nothing else
    // borrows (it is `&mut`); gemm reads and writes only those elements.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.data.as_mut_ptr(),
            1,
            dst.row_stride as isize,
            accumulate,
            lhs.data.as_ptr(),
            lhs.col_stride as isize,
            lhs.row_stride as isize,
            rhs.data.as_ptr(),
            rhs.col_stride as isize,
            rhs.row_stride as isize,
            1.0,
            scale,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// Columns per panel of a packed dense weight: four AVX-512 vectors, a
/// multiple of every gemm micro-kernel's row count.
pub const PANEL: usize = 64;

/// A dense layer's `inputs × outputs` weight (transposed from the
/// checkpoint's `outputs × inputs`) packed once at load as ⌈outputs/64⌉
/// panels of 64 columns, each `inputs × 64` row-major, the last zero-padded.
///
/// Why: gemm otherwise repacks the weight block of every call (18% of a
/// MiniLM pass at 128 tokens). A panel is already in the layout gemm's
/// micro-kernel reads, so [`Packed::product`] hands it over panel by panel
/// with gemm's repacking turned off ([`disable_weight_packing`]): 150
/// against 125 GFLOP/s a core at 64 rows, about the same at 256 and more.
pub fn pack_weight(weight_t: &[f32], inputs: usize, outputs: usize) -> Vec<f32> {
    assert_eq!(weight_t.len(), inputs * outputs);
    let panels = outputs.div_ceil(PANEL);
    let mut packed = vec![0.0; panels * inputs * PANEL];
    if inputs == 0 {
        return packed;
    }
    for (index, panel) in packed.chunks_mut(inputs * PANEL).enumerate() {
        let first = index * PANEL;
        let width = PANEL.min(outputs - first);
        for (row, dst) in panel.chunks_mut(PANEL).enumerate() {
            dst[..width].copy_from_slice(&weight_t[row * outputs + first..][..width]);
        }
    }
    packed
}

/// Tells gemm not to repack a left operand (in its terms) whose columns
/// are contiguous, however many columns the product has: the packed weight
/// panels, and the per-head operands, which the encoder keeps contiguous
/// too (`T × d`). Operands read through a stride are still packed. The
/// setting is process-wide and only ever raised, here.
pub fn disable_weight_packing() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        gemm::set_lhs_packing_threshold_single_thread(usize::MAX);
        gemm::set_lhs_packing_threshold_multi_thread(usize::MAX);
    });
}

/// A weight packed by [`pack_weight`], `inputs × outputs`.
#[derive(Clone, Copy)]
pub struct Packed<'a> {
    data: &'a [f32],
    inputs: usize,
    outputs: usize,
}

impl<'a> Packed<'a> {
    pub fn new(data: &'a [f32], inputs: usize, outputs: usize) -> Self {
        assert_eq!(
            data.len(),
            outputs.div_ceil(PANEL) * inputs * PANEL,
            "packed weight of the wrong size"
        );
        Self {
            data,
            inputs,
            outputs,
        }
    }

    /// `out = x·W[inputs, columns]`, or `out +=` with `accumulate`: the
    /// block of the weight's rows `inputs` and columns `columns`, so that a
    /// thread can take some output columns, or some inputs for a partial sum.
    /// `x` has `inputs.len()` columns; `out` is contiguous `x.rows ×
    /// columns.len()`.
    pub fn product(
        &self,
        x: MatRef,
        inputs: Range<usize>,
        columns: Range<usize>,
        out: &mut [f32],
        accumulate: bool,
    ) {
        assert!(inputs.end <= self.inputs && columns.end <= self.outputs);
        assert_eq!(x.cols, inputs.len(), "input width differs");
        let (rows, width) = (x.rows, columns.len());
        assert_eq!(out.len(), rows * width, "destination has the wrong size");
        if rows == 0 {
            return;
        }
        let mut column = columns.start;
        while column < columns.end {
            let panel = column / PANEL;
            let offset = column % PANEL;
            let count = (PANEL - offset).min(columns.end - column);
            let values = &self.data[panel * self.inputs * PANEL..][..self.inputs * PANEL];
            let block = MatRef::strided(
                &values[inputs.start * PANEL + offset..],
                inputs.len(),
                count,
                PANEL,
                1,
            );
            let dst = MatMut::strided(&mut out[column - columns.start..], rows, count, width);
            matmul(dst, x, block, accumulate, 1.0);
            column += count;
        }
    }
}

/// Sets every row of `out` to `bias`, the seed onto which a product accumulates.
pub fn seed_rows(out: &mut [f32], bias: &[f32]) {
    for row in out.chunks_mut(bias.len().max(1)) {
        row.copy_from_slice(bias);
    }
}

/// `out = LayerNorm(residual + bias + Σ partials)`, row by row: the end of a
/// BERT sub-layer whose projection was split into partial sums by input.
pub fn sum_layer_norm(
    out: &mut [f32],
    partials: &[&[f32]],
    bias: &[f32],
    residual: &[f32],
    norm: (&[f32], &[f32], f32),
) {
    assert_eq!(residual.len(), out.len());
    assert!(partials.iter().all(|p| p.len() == out.len()));
    assert!(norm.0.len() == bias.len() && norm.1.len() == bias.len());
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has AVX-512F (checked at run time just above).
        unsafe { avx512::sum_layer_norm(out, partials, bias, residual, norm) };
        return;
    }
    sum_layer_norm_body(out, partials, bias, residual, norm);
}

/// The body of [`sum_layer_norm`], plain Rust that the compiler vectorises;
/// `avx512::sum_layer_norm` compiles it again with 16-lane vectors.
#[inline(always)]
fn sum_layer_norm_body(
    out: &mut [f32],
    partials: &[&[f32]],
    bias: &[f32],
    residual: &[f32],
    (gamma, beta, eps): (&[f32], &[f32], f32),
) {
    let width = bias.len().max(1);
    for (index, (row, res)) in out
        .chunks_mut(width)
        .zip(residual.chunks(width))
        .enumerate()
    {
        for ((o, r), b) in row.iter_mut().zip(res).zip(bias) {
            *o = r + b;
        }
        for partial in partials {
            for (o, p) in row.iter_mut().zip(&partial[index * width..][..width]) {
                *o += p;
            }
        }
        normalise(row, gamma, beta, eps);
    }
}

/// `x = LayerNorm(x)` over rows of `gamma.len()` values, in place.
pub fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    assert_eq!(beta.len(), gamma.len());
    for row in x.chunks_mut(gamma.len().max(1)) {
        normalise(row, gamma, beta, eps);
    }
}

/// One row's LayerNorm the way PyTorch computes it: biased variance of the
/// centred values.
#[inline(always)]
fn normalise(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = row.len() as f32;
    let mean = sum_by(row, |v| v) / width;
    let variance = sum_by(row, |v| (v - mean) * (v - mean)) / width;
    let inverse = 1.0 / (variance + eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *v = (*v - mean) * inverse * g + b;
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

/// The feed-forward activations Hugging Face names `gelu`, `gelu_new` and `relu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// `0.5·x·(1 + erf(x/√2))`, the exact GELU.
    GeluErf,
    /// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
    GeluTanh,
    Relu,
}

/// `x = act(x + bias)` row by row (rows of `bias.len()` values), in place:
/// the bias of the product before, added in the activation's own pass.
pub fn activate(x: &mut [f32], bias: &[f32], act: Act) {
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
    let f = match act {
        Act::GeluErf => scalar::gelu_erf,
        Act::GeluTanh => scalar::gelu_tanh,
        Act::Relu => |v: f32| v.max(0.0),
    };
    for row in x.chunks_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v = f(*v + b);
        }
    }
}

/// Softmax of each row of `width` values, in place.
pub fn softmax_rows(x: &mut [f32], width: usize) {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        for row in x.chunks_mut(width) {
            // SAFETY: the CPU has AVX-512F (checked at run time just above).
            unsafe { avx512::softmax(row) };
        }
        return;
    }
    for row in x.chunks_mut(width) {
        scalar::softmax(row);
    }
}

/// One head's self-attention over all T tokens, from its contiguous
/// queries, keys and values (each `T × d`): the scaled scores go straight
/// into `attention` (`T × T`) and are softmaxed there, O = P·V into
/// `head_output` (`T × d`) and S = O·Oᵀ into `similarity` (`T × T`).
pub fn attend(
    query: &[f32],
    key: &[f32],
    value: &[f32],
    head_dim: usize,
    attention: &mut [f32],
    head_output: &mut [f32],
    similarity: &mut [f32],
) {
    let tokens = query.len().checked_div(head_dim).unwrap_or(0);
    let scale = 1.0 / (head_dim as f32).sqrt();
    let query = MatRef::new(query, tokens, head_dim);
    let key = MatRef::new(key, tokens, head_dim);
    let value = MatRef::new(value, tokens, head_dim);
    matmul(
        MatMut::new(attention, tokens, tokens),
        query,
        key.t(),
        false,
        scale,
    );
    softmax_rows(attention, tokens);
    let p = MatRef::new(attention, tokens, tokens);
    matmul(
        MatMut::new(head_output, tokens, head_dim),
        p,
        value,
        false,
        1.0,
    );
    let o = MatRef::new(head_output, tokens, head_dim);
    matmul(
        MatMut::new(similarity, tokens, tokens),
        o,
        o.t(),
        false,
        1.0,
    );
}

/// Whether the AVX-512 element-wise kernels can run (std caches the answer).
fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
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
}

/// Portable versions, for CPUs without AVX-512.
mod scalar {
    use super::consts::*;

    pub fn softmax(row: &mut [f32]) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0.0;
        for v in row.iter_mut() {
            *v = (*v - max).exp();
            sum += *v;
        }
        let inverse = 1.0 / sum;
        row.iter_mut().for_each(|v| *v *= inverse);
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
}

/// AVX-512F versions. Every function requires the feature; callers check
/// `has_avx512()` first.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::consts::*;
    use super::Act;
    use std::arch::x86_64::*;

    const LANES: usize = 16;

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
    fn load(values: &[f32], fill: f32) -> __m512 {
        // SAFETY: the mask enables only lanes below `values.len()` (at most
        // 16), and masked-off lanes are neither read nor able to fault.
        unsafe { _mm512_mask_loadu_ps(_mm512_set1_ps(fill), mask(values.len()), values.as_ptr()) }
    }

    /// Stores the first `values.len()` (at most 16) lanes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store(values: &mut [f32], v: __m512) {
        // SAFETY: as in `load`, only lanes inside the slice are written.
        unsafe { _mm512_mask_storeu_ps(values.as_mut_ptr(), mask(values.len()), v) }
    }

    /// e^x to about 1 ulp: x = n·ln2 + r with |r| ≤ ln2/2, e^r by its
    /// degree-7 Taylor polynomial (remainder < 5e-9 relative), 2ⁿ applied by
    /// `scalef`, which underflows gracefully to denormals and 0 where
    /// exponent arithmetic would wrap.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn exp(x: __m512) -> __m512 {
        let x = _mm512_max_ps(x, _mm512_set1_ps(-104.0));
        let x = _mm512_min_ps(x, _mm512_set1_ps(88.7));
        let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)),
        );
        let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), x);
        let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
        let mut p = _mm512_set1_ps(1.0 / 5040.0);
        for c in [
            1.0 / 720.0,
            1.0 / 120.0,
            1.0 / 24.0,
            1.0 / 6.0,
            0.5,
            1.0,
            1.0,
        ] {
            p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
        }
        _mm512_scalef_ps(p, n)
    }

    /// The same A&S erf as `scalar::erf`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn erf(x: __m512) -> __m512 {
        let a = _mm512_abs_ps(x);
        let one = _mm512_set1_ps(1.0);
        let t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(ERF_P), a, one));
        let mut poly = _mm512_set1_ps(ERF_A[4]);
        for c in [ERF_A[3], ERF_A[2], ERF_A[1], ERF_A[0]] {
            poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(c));
        }
        poly = _mm512_mul_ps(poly, t);
        let e = exp(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(a, a)));
        let y = _mm512_fnmadd_ps(poly, e, one);
        // y ≥ 0: give it x's sign bit.
        let sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN));
        _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sign))
    }

    #[target_feature(enable = "avx512f")]
    pub fn softmax(row: &mut [f32]) {
        // Four running maxima: one would make every step wait for the last.
        let mut maxima = [_mm512_set1_ps(f32::NEG_INFINITY); 4];
        for (i, chunk) in row.chunks(LANES).enumerate() {
            maxima[i % 4] = _mm512_max_ps(maxima[i % 4], load(chunk, f32::NEG_INFINITY));
        }
        let max = _mm512_max_ps(
            _mm512_max_ps(maxima[0], maxima[1]),
            _mm512_max_ps(maxima[2], maxima[3]),
        );
        let max = _mm512_set1_ps(_mm512_reduce_max_ps(max));
        let mut sum = _mm512_setzero_ps();
        for chunk in row.chunks_mut(LANES) {
            let e = exp(_mm512_sub_ps(load(chunk, 0.0), max));
            store(chunk, e);
            sum = _mm512_mask_add_ps(sum, mask(chunk.len()), sum, e);
        }
        let inverse = _mm512_set1_ps(1.0 / _mm512_reduce_add_ps(sum));
        for chunk in row.chunks_mut(LANES) {
            store(chunk, _mm512_mul_ps(load(chunk, 0.0), inverse));
        }
    }

    #[target_feature(enable = "avx512f")]
    pub fn activate(values: &mut [f32], bias: &[f32], act: Act) {
        let half = _mm512_set1_ps(0.5);
        let one = _mm512_set1_ps(1.0);
        for (chunk, bias) in values.chunks_mut(LANES).zip(bias.chunks(LANES)) {
            let x = _mm512_add_ps(load(chunk, 0.0), load(bias, 0.0));
            let y = match act {
                Act::GeluErf => {
                    let e = erf(_mm512_mul_ps(
                        x,
                        _mm512_set1_ps(std::f32::consts::FRAC_1_SQRT_2),
                    ));
                    _mm512_mul_ps(_mm512_mul_ps(half, x), _mm512_add_ps(one, e))
                }
                Act::GeluTanh => {
                    // tanh(u) = 1 − 2/(e^{2u} + 1); 1 + tanh(u) = 2 − 2/(e^{2u} + 1).
                    let x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
                    let u = _mm512_mul_ps(
                        _mm512_set1_ps(GELU_TANH_C),
                        _mm512_fmadd_ps(_mm512_set1_ps(GELU_TANH_K), x3, x),
                    );
                    let e = exp(_mm512_add_ps(u, u));
                    let two = _mm512_set1_ps(2.0);
                    let t = _mm512_sub_ps(two, _mm512_div_ps(two, _mm512_add_ps(e, one)));
                    _mm512_mul_ps(_mm512_mul_ps(half, x), t)
                }
                Act::Relu => _mm512_max_ps(x, _mm512_setzero_ps()),
            };
            store(chunk, y);
        }
    }

    /// [`super::sum_layer_norm`] compiled with AVX-512 enabled.
    #[target_feature(enable = "avx512f")]
    pub fn sum_layer_norm(
        out: &mut [f32],
        partials: &[&[f32]],
        bias: &[f32],
        residual: &[f32],
        norm: (&[f32], &[f32], f32),
    ) {
        super::sum_layer_norm_body(out, partials, bias, residual, norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf to double precision (Taylor series for |x| < 3, else 1 − tiny).
    fn erf64(x: f64) -> f64 {
        if x.abs() > 6.0 {
            return x.signum();
        }
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        while term.abs() > 1e-17 * sum.abs().max(1e-300) {
            n += 1.0;
            term *= -x * x / n;
            sum += term / (2.0 * n + 1.0);
            if n > 200.0 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    fn grid() -> Vec<f32> {
        (-6000..=6000).map(|i| i as f32 * 0.001).collect()
    }

    #[test]
    fn gelu_erf_matches_double_precision() {
        let xs = grid();
        let mut ys = xs.clone();
        activate(&mut ys, &[0.0], Act::GeluErf);
        for (&x, &y) in xs.iter().zip(&ys) {
            let x64 = x as f64;
            let exact = 0.5 * x64 * (1.0 + erf64(x64 / 2f64.sqrt()));
            assert!(
                (y as f64 - exact).abs() <= 2e-7 * x64.abs().max(1.0),
                "gelu({x}) = {y}, exact {exact}"
            );
            assert!((scalar::gelu_erf(x) as f64 - exact).abs() <= 2e-7 * x64.abs().max(1.0));
        }
    }

    #[test]
    fn gelu_tanh_matches_the_formula() {
        let xs = grid();
        let mut ys = xs.clone();
        activate(&mut ys, &[0.0], Act::GeluTanh);
        for (&x, &y) in xs.iter().zip(&ys) {
            let x64 = x as f64;
            let exact = 0.5
                * x64
                * (1.0
                    + ((2.0 / std::f64::consts::PI).sqrt() * (x64 + 0.044715 * x64.powi(3)))
                        .tanh());
            assert!(
                (y as f64 - exact).abs() <= 4e-7 * x64.abs().max(1.0),
                "{x}: {y} vs {exact}"
            );
        }
    }

    #[test]
    fn softmax_matches_double_precision() {
        for width in [1, 5, 16, 17, 100, 512] {
            let row: Vec<f32> = (0..width)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.37)
                .collect();
            let mut fast = row.clone();
            softmax_rows(&mut fast, width);
            let mut portable = row.clone();
            scalar::softmax(&mut portable);
            let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
            let sum: f64 = row.iter().map(|&v| (v as f64 - max).exp()).sum();
            for ((&v, &p), &q) in row.iter().zip(&fast).zip(&portable) {
                let exact = (v as f64 - max).exp() / sum;
                for value in [p, q] {
                    assert!(
                        (value as f64 - exact).abs() <= 1e-6 * exact + 1e-12,
                        "{value} vs {exact}"
                    );
                }
            }
        }
    }

    #[test]
    fn matmul_handles_strides_and_accumulation() {
        let a: Vec<f32> = (0..6).map(|v| v as f32).collect(); // 2×3
        let b: Vec<f32> = (0..12).map(|v| v as f32 * 0.5).collect(); // 3×4
        let mut c = vec![1.0; 8];
        matmul(
            MatMut::new(&mut c, 2, 4),
            MatRef::new(&a, 2, 3),
            MatRef::new(&b, 3, 4),
            true,
            2.0,
        );
        for i in 0..2 {
            for j in 0..4 {
                let exact: f32 = (0..3).map(|k| a[i * 3 + k] * b[k * 4 + j]).sum();
                assert_eq!(c[i * 4 + j], 1.0 + 2.0 * exact);
            }
        }
        // a·aᵀ through a transposed view.
        let mut s = vec![0.0; 4];
        let view = MatRef::new(&a, 2, 3);
        matmul(MatMut::new(&mut s, 2, 2), view, view.t(), false, 1.0);
        assert_eq!(s, vec![5.0, 14.0, 14.0, 50.0]);
    }

    #[test]
    fn packed_products_match_the_definition() {
        for (rows, inputs, outputs) in [(3, 5, 7), (2, 4, 64), (5, 70, 130), (0, 3, 3)] {
            let x: Vec<f32> = (0..rows * inputs).map(|v| (v % 7) as f32 - 3.0).collect();
            let w: Vec<f32> = (0..inputs * outputs)
                .map(|v| (v % 5) as f32 * 0.5)
                .collect();
            let packed = pack_weight(&w, inputs, outputs);
            let weight = Packed::new(&packed, inputs, outputs);
            // Every block of inputs and columns, accumulated onto a seed.
            for (ins, cols) in [
                (0..inputs, 0..outputs),
                (1..inputs, 3..outputs),
                (0..inputs / 2, 0..1),
            ] {
                let seed: Vec<f32> = (0..cols.len()).map(|v| v as f32).collect();
                let mut out = vec![0.0; rows * cols.len()];
                seed_rows(&mut out, &seed);
                let xs: Vec<f32> = (0..rows)
                    .flat_map(|i| x[i * inputs + ins.start..i * inputs + ins.end].to_vec())
                    .collect();
                weight.product(
                    MatRef::new(&xs, rows, ins.len()),
                    ins.clone(),
                    cols.clone(),
                    &mut out,
                    true,
                );
                for i in 0..rows {
                    for (j, col) in cols.clone().enumerate() {
                        let dot: f32 = ins
                            .clone()
                            .map(|k| x[i * inputs + k] * w[k * outputs + col])
                            .sum();
                        assert_eq!(out[i * cols.len() + j], seed[j] + dot);
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "outside a slice")]
    fn views_are_bounds_checked() {
        let a = vec![0.0; 5];
        MatRef::strided(&a, 2, 3, 3, 1);
    }
}
