//! CPU kernels for the encoder's forward pass, on plain row-major `f32`
//! slices, each running on the calling thread (the encoder shares the work
//! out between its threads, see `encoder.rs`): dense layers and the per-head
//! products through the `gemm` crate, and the element-wise steps (softmax,
//! GELU, LayerNorm) with AVX-512 versions picked at run time over portable
//! scalar fallbacks.
//!
//! Why not candle's CPU ops (profile of BERT-base at 512 tokens, 2 threads):
//! candle drove gemm's AVX2 kernels (44% of the time) at half the AVX-512
//! peak, its softmax and GELU call scalar `expf`/`erff` per element (12 and
//! 13 ms a layer against 0.2 and 0.05 here), every op allocates a fresh
//! tensor (page faults were over 10% of the run) and synchronises its
//! threads. Here the weights are laid out once for gemm, buffers live for
//! the whole pass, and P and O are written straight into the capture.

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
/// which the encoder avoids by giving each thread its own rows.
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
/// Why: gemm otherwise repacks the weight on every call, and with the rows
/// split between threads each repacks all of it for only its rows (18% of a
/// MiniLM pass at 128 tokens). A panel is already in the layout gemm's
/// micro-kernel reads, so [`dense`] hands it over panel by panel with gemm's
/// packing turned off ([`disable_weight_packing`]): 150 against 125 GFLOP/s
/// a core at 64 rows, the same at 256.
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

/// Tells gemm not to repack a left operand that is already laid out for its
/// micro-kernel (column-major panels whose height is a multiple of the
/// vector width, as [`pack_weight`] makes them) however many columns the
/// product has. The setting is process-wide and only ever raised here;
/// operands that are not so laid out (strided views) are still packed.
pub fn disable_weight_packing() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        gemm::set_lhs_packing_threshold_single_thread(usize::MAX);
        gemm::set_lhs_packing_threshold_multi_thread(usize::MAX);
    });
}

/// `out = x·W + bias (+ residual)` for a dense layer with `packed` from
/// [`pack_weight`] and `bias.len()` outputs.
pub fn dense(x: &[f32], packed: &[f32], bias: &[f32], residual: Option<&[f32]>, out: &mut [f32]) {
    let outputs = bias.len();
    let panels = outputs.div_ceil(PANEL);
    let inputs = packed.len().checked_div(panels * PANEL).unwrap_or(0);
    let rows = x.len().checked_div(inputs).unwrap_or(0);
    assert_eq!(packed.len(), panels * inputs * PANEL);
    assert_eq!(x.len(), rows * inputs);
    assert_eq!(out.len(), rows * outputs);
    // Seed the output with the bias (and the residual) so that gemm adds the
    // product onto it: no separate pass over the result afterwards.
    match residual {
        Some(residual) => {
            assert_eq!(residual.len(), out.len());
            for (row, res) in out.chunks_mut(outputs).zip(residual.chunks(outputs)) {
                for ((o, r), b) in row.iter_mut().zip(res).zip(bias) {
                    *o = r + b;
                }
            }
        }
        None => {
            for row in out.chunks_mut(outputs) {
                row.copy_from_slice(bias);
            }
        }
    }
    if rows == 0 || inputs == 0 {
        return;
    }
    let x = MatRef::new(x, rows, inputs);
    for (index, panel) in packed.chunks(inputs * PANEL).enumerate() {
        let first = index * PANEL;
        let width = PANEL.min(outputs - first);
        let dst = MatMut::strided(&mut out[first..], rows, width, outputs);
        matmul(
            dst,
            x,
            MatRef::strided(panel, inputs, width, PANEL, 1),
            true,
            1.0,
        );
    }
}

/// `x = LayerNorm(x)` over rows of `gamma.len()` values, in place, the way
/// PyTorch computes it: biased variance of the centred values.
pub fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = gamma.len();
    assert_eq!(beta.len(), width);
    for row in x.chunks_mut(width.max(1)) {
        let mean = row.iter().sum::<f32>() / width as f32;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
        let inverse = 1.0 / (variance + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * inverse * g + b;
        }
    }
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

/// Applies `act` to every value, in place.
pub fn activate(x: &mut [f32], act: Act) {
    if act == Act::Relu {
        x.iter_mut().for_each(|v| *v = v.max(0.0));
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has AVX-512F (checked at run time just above).
        unsafe { avx512::activate(x, act) };
        return;
    }
    let f = match act {
        Act::GeluTanh => scalar::gelu_tanh,
        _ => scalar::gelu_erf,
    };
    x.iter_mut().for_each(|v| *v = f(*v));
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

/// Self-attention for a block of query rows of every head, from the fused
/// projections `qkv` (`T × 3·hidden`: queries, keys, values side by side;
/// the keys and values of all T rows must be there, the queries of the
/// block's rows). Per head, the scaled scores go straight into that head's
/// slice of `attention` (`rows × T`) and are softmaxed there, and O = P·V
/// into its slice of `head_outputs` (`rows × d`); `context`
/// (`rows × hidden`) receives the heads' outputs side by side.
pub fn attend(
    qkv: &[f32],
    tokens: usize,
    head_dim: usize,
    first_row: usize,
    attention: &mut [&mut [f32]],
    head_outputs: &mut [&mut [f32]],
    context: &mut [f32],
) {
    let heads = attention.len();
    let hidden = heads * head_dim;
    let stride = 3 * hidden;
    let rows = context.len() / hidden.max(1);
    assert_eq!(qkv.len(), tokens * stride);
    assert_eq!(head_outputs.len(), heads);
    let scale = 1.0 / (head_dim as f32).sqrt();
    let part = |offset: usize, first: usize, count: usize| {
        MatRef::strided(&qkv[first * stride + offset..], count, head_dim, stride, 1)
    };
    for (head, (p, o)) in attention
        .iter_mut()
        .zip(head_outputs.iter_mut())
        .enumerate()
    {
        let query = part(head * head_dim, first_row, rows);
        let key = part(hidden + head * head_dim, 0, tokens);
        let value = part(2 * hidden + head * head_dim, 0, tokens);
        matmul(MatMut::new(p, rows, tokens), query, key.t(), false, scale);
        softmax_rows(p, tokens);
        matmul(
            MatMut::new(o, rows, head_dim),
            MatRef::new(p, rows, tokens),
            value,
            false,
            1.0,
        );
        for (row, values) in context.chunks_mut(hidden).zip(o.chunks(head_dim)) {
            row[head * head_dim..(head + 1) * head_dim].copy_from_slice(values);
        }
    }
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
        let mut max = _mm512_set1_ps(f32::NEG_INFINITY);
        for chunk in row.chunks(LANES) {
            max = _mm512_max_ps(max, load(chunk, f32::NEG_INFINITY));
        }
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
    pub fn activate(values: &mut [f32], act: Act) {
        let half = _mm512_set1_ps(0.5);
        let one = _mm512_set1_ps(1.0);
        for chunk in values.chunks_mut(LANES) {
            let x = load(chunk, 0.0);
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
        activate(&mut ys, Act::GeluErf);
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
        activate(&mut ys, Act::GeluTanh);
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
            let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
            let sum: f64 = row.iter().map(|&v| (v as f64 - max).exp()).sum();
            for (&v, &p) in row.iter().zip(&fast) {
                let exact = (v as f64 - max).exp() / sum;
                assert!(
                    (p as f64 - exact).abs() <= 1e-6 * exact + 1e-12,
                    "{p} vs {exact}"
                );
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
    fn dense_with_packed_weights_matches_the_definition() {
        for (rows, inputs, outputs) in [(3, 5, 7), (2, 4, 64), (5, 70, 130), (0, 3, 3)] {
            let x: Vec<f32> = (0..rows * inputs).map(|v| (v % 7) as f32 - 3.0).collect();
            let w: Vec<f32> = (0..inputs * outputs)
                .map(|v| (v % 5) as f32 * 0.5)
                .collect();
            let bias: Vec<f32> = (0..outputs).map(|v| v as f32).collect();
            let residual: Vec<f32> = (0..rows * outputs).map(|v| (v % 3) as f32).collect();
            let packed = pack_weight(&w, inputs, outputs);
            let mut out = vec![f32::NAN; rows * outputs];
            dense(&x, &packed, &bias, Some(&residual), &mut out);
            for i in 0..rows {
                for j in 0..outputs {
                    let dot: f32 = (0..inputs)
                        .map(|k| x[i * inputs + k] * w[k * outputs + j])
                        .sum();
                    assert_eq!(
                        out[i * outputs + j],
                        dot + bias[j] + residual[i * outputs + j]
                    );
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
