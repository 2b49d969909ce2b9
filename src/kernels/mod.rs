//! CPU kernels for the tuned CPU pass both stacks run (the BERT-like
//! encoders and the pre-norm stack of the decoders and ModernBERT), on
//! plain row-major `f32` slices, each running on the calling thread (the
//! pass shares the work out between its threads, see
//! `model/cpu_pass.rs`): products through the `gemm`
//! crate (weights packed once at load, in the checkpoint's precision:
//! half-precision panels are widened a tile at a time; weights kept in
//! blocks along their rows, llama.cpp's quantized ones, a panel's rows
//! widened as it is reached), and the element-wise steps
//! (softmax, GELU, LayerNorm) with AVX-512 versions picked at run time over
//! portable scalar fallbacks; and on them [`attention`], the one place a
//! head's P, O and S are made.
//!
//! Why not candle's CPU ops (profile of BERT-base at 512 tokens, 2 threads):
//! candle drove gemm's AVX2 kernels (44% of the time) at half the AVX-512
//! peak, its softmax and GELU call scalar `expf`/`erff` per element (12 and
//! 13 ms a layer against 0.2 and 0.05 here), every op allocates a fresh
//! tensor (page faults were over 10% of the run) and synchronises its
//! threads. Here gemm runs its AVX-512 kernels (the crate's `x86-v4`
//! feature), buffers live for the whole pass, and P, O and S are written
//! straight into the capture.

pub mod attention;
mod elementwise;
pub(crate) mod widest;

pub use elementwise::*;
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
        // Checked: a wrapped product would pass the bound and let the unsafe
        // kernels read outside the slice.
        let last = (rows.saturating_sub(1))
            .checked_mul(row_stride)
            .zip(cols.saturating_sub(1).checked_mul(col_stride))
            .and_then(|(a, b)| a.checked_add(b));
        assert!(
            rows == 0 || cols == 0 || last.is_some_and(|last| last < data.len()),
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
        let end = (rows.saturating_sub(1))
            .checked_mul(row_stride)
            .and_then(|a| a.checked_add(cols));
        assert!(
            rows == 0
                || cols == 0
                || (cols <= row_stride && end.is_some_and(|end| end <= data.len())),
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
///
/// Packing only moves values, so a half-precision weight is packed as it is
/// stored ([`StoredValues`]).
pub fn pack_weight<T: Copy + Default>(weight_t: &[T], inputs: usize, outputs: usize) -> Vec<T> {
    assert_eq!(weight_t.len(), inputs * outputs);
    let panels = outputs.div_ceil(PANEL);
    let mut packed = vec![T::default(); panels * inputs * PANEL];
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

/// Weight values as a checkpoint stores them: float32, read in place, or
/// bfloat16 or float16, widened (exactly) where they are read.
#[derive(Clone, Copy)]
pub enum StoredValues<'a> {
    F32(&'a [f32]),
    Bf16(&'a [half::bf16]),
    F16(&'a [half::f16]),
}

impl StoredValues<'_> {
    pub fn len(&self) -> usize {
        match self {
            Self::F32(values) => values.len(),
            Self::Bf16(values) => values.len(),
            Self::F16(values) => values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values `range`, in float32, into `out` (of the range's length).
    pub fn widen_into(&self, range: Range<usize>, out: &mut [f32]) {
        use half::slice::HalfFloatSliceExt;
        match self {
            Self::F32(values) => out.copy_from_slice(&values[range]),
            Self::Bf16(values) => values[range].convert_to_f32_slice(out),
            Self::F16(values) => values[range].convert_to_f32_slice(out),
        }
    }
}

/// A weight W kept as a checkpoint stores it (outputs × inputs), in
/// blocks along each row that are widened a row's segment at a time:
/// llama.cpp's quantized blocks. Widening must give the values of the
/// model the products compute (ggml's dequantization).
pub trait RowBlocks: Sync {
    /// Row `row`'s values `inputs`, in float32, into `out`.
    fn widen_row(&self, row: usize, inputs: Range<usize>, out: &mut [f32]);
}

/// Where a [`Packed`] weight's values lie.
#[derive(Clone, Copy)]
enum PanelSource<'a> {
    /// Packed by [`pack_weight`].
    Panels(StoredValues<'a>),
    /// In row blocks: a panel's 64 rows of W widened when it is reached.
    Rows(&'a dyn RowBlocks),
}

thread_local! {
    /// A half-precision panel's rows, or a row-blocked panel's rows of W,
    /// widened for one product (at most inputs × 64 values: 0.8 MB for
    /// BERT-base's down projection).
    static TILE: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A dense weight the kernels multiply panel by panel, `inputs × outputs`:
/// packed by [`pack_weight`], or kept in row blocks ([`RowBlocks`]).
#[derive(Clone, Copy)]
pub struct Packed<'a> {
    data: PanelSource<'a>,
    inputs: usize,
    outputs: usize,
}

impl<'a> Packed<'a> {
    pub fn new(data: StoredValues<'a>, inputs: usize, outputs: usize) -> Self {
        assert_eq!(
            data.len(),
            outputs.div_ceil(PANEL) * inputs * PANEL,
            "packed weight of the wrong size"
        );
        Self {
            data: PanelSource::Panels(data),
            inputs,
            outputs,
        }
    }

    /// W (outputs × inputs) in row blocks, multiplied as its transpose.
    pub fn rows(blocks: &'a dyn RowBlocks, inputs: usize, outputs: usize) -> Self {
        Self {
            data: PanelSource::Rows(blocks),
            inputs,
            outputs,
        }
    }

    /// `out = x·W[inputs, columns]`, or `out +=` with `accumulate`: the
    /// block of the weight's rows `inputs` and columns `columns`, so that a
    /// thread can take some output columns, or some inputs for a partial sum.
    /// `x` has `inputs.len()` columns; `out` is contiguous `x.rows ×
    /// columns.len()`. A half-precision weight is widened panel by panel,
    /// only the rows `inputs` of it, into a tile the thread keeps; a
    /// row-blocked one a panel's columns (rows of W) at a time, the same way.
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
            // This panel's rows `inputs`, all 64 columns.
            let start = panel * self.inputs * PANEL + inputs.start * PANEL;
            let span = start..start + inputs.len() * PANEL;
            let dst = MatMut::strided(&mut out[column - columns.start..], rows, count, width);
            let multiply = |block: MatRef| matmul(dst, x, block, accumulate, 1.0);
            match self.data {
                PanelSource::Panels(StoredValues::F32(values)) => {
                    multiply(panel_block(&values[span], offset, inputs.len(), count))
                }
                PanelSource::Panels(half) => TILE.with_borrow_mut(|tile| {
                    tile.resize(span.len(), 0.0);
                    half.widen_into(span, tile);
                    multiply(panel_block(tile, offset, inputs.len(), count));
                }),
                PanelSource::Rows(blocks) => TILE.with_borrow_mut(|tile| {
                    // The panel's rows of W side by side (count × inputs):
                    // the block is their transpose, which gemm packs.
                    let length = inputs.len();
                    tile.resize(count * length, 0.0);
                    for (row, out) in tile.chunks_exact_mut(length.max(1)).enumerate() {
                        blocks.widen_row(column + row, inputs.clone(), out);
                    }
                    multiply(MatRef::strided(tile, length, count, 1, length));
                }),
            }
            column += count;
        }
    }
}

/// `count` columns from `offset` of a packed panel's `rows` rows.
fn panel_block(values: &[f32], offset: usize, rows: usize, count: usize) -> MatRef<'_> {
    MatRef::strided(&values[offset..], rows, count, PANEL, 1)
}

/// How many rows ahead a reader of a matrix in short pieces asks for the
/// next ones ([`prefetch`]): more was not faster.
pub const PREFETCH_ROWS: usize = 4;

/// Asks the CPU to bring `values` into its caches ahead of a read: a
/// hint, which changes no result. For rows read a short piece at a time
/// from a large matrix (a head's S from its diagonal on, a causal row of
/// P up to its query, a tile's block of S), where the hardware's
/// prefetchers stop at each 4 KB page and a piece waits for memory at its
/// start.
#[inline(always)]
pub fn prefetch(values: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        const LINE: usize = 16;
        for at in (0..values.len()).step_by(LINE) {
            // SAFETY: a prefetch never faults, and the address lies in `values`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(values.as_ptr().add(at).cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}

#[cfg(test)]
mod tests {
    use super::elementwise::scalar;
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
        activate(&mut ys, &[0.0], Activation::Gelu);
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
    fn silu_matches_double_precision() {
        let xs = grid();
        let mut ys = xs.clone();
        activate(&mut ys, &[0.0], Activation::Silu);
        for (&x, &y) in xs.iter().zip(&ys) {
            let x64 = x as f64;
            let exact = x64 / (1.0 + (-x64).exp());
            assert!(
                (y as f64 - exact).abs() <= 4e-7 * x64.abs().max(1.0),
                "silu({x}) = {y}, exact {exact}"
            );
        }
    }

    #[test]
    fn gelu_tanh_matches_the_formula() {
        let xs = grid();
        let mut ys = xs.clone();
        activate(&mut ys, &[0.0], Activation::GeluTanh);
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

    /// A vocabulary's normaliser, on the widest path and the portable one:
    /// rows of every length around the lanes and the blocks, with a
    /// row's largest value anywhere.
    #[test]
    fn exp_sum_matches_double_precision() {
        for width in [1, 7, 16, 33, 1023, 1024, 1025, 49_152] {
            let row: Vec<f32> = (0..width)
                .map(|i| ((i * 7_919 % 1_013) as f32 - 500.0) * 0.031)
                .collect();
            let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            let exact: f64 = row
                .iter()
                .map(|&v| (f64::from(v) - f64::from(max)).exp())
                .sum();
            for (top, sum) in [exp_sum(&row), scalar::exp_sum(&row)] {
                assert_eq!(top, max, "width {width}");
                assert!(
                    (sum - exact).abs() <= 2e-6 * exact,
                    "width {width}: {sum} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn softmax_matches_double_precision() {
        for width in [1, 5, 16, 17, 100, 512] {
            let row: Vec<f32> = (0..width)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.37)
                .collect();
            let mut fast = row.clone();
            let fast_entropy = softmax_entropy(&mut fast);
            let mut portable = row.clone();
            let portable_entropy = scalar::softmax(&mut portable);
            let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
            let sum: f64 = row.iter().map(|&v| (v as f64 - max).exp()).sum();
            let entropy: f64 = row
                .iter()
                .map(|&v| {
                    let p = (v as f64 - max).exp() / sum;
                    if p > 0.0 {
                        -p * p.ln()
                    } else {
                        0.0
                    }
                })
                .sum();
            for value in [fast_entropy, portable_entropy] {
                assert!(
                    (value as f64 - entropy).abs() <= 1e-6 * entropy + 1e-7,
                    "entropy {value} vs {entropy} at {width}"
                );
            }
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

    /// In every precision a weight is stored in: the values (halves) are
    /// exact in bfloat16 and float16 too, so the products are the same.
    #[test]
    fn packed_products_match_the_definition() {
        for (rows, inputs, outputs) in [(3, 5, 7), (2, 4, 64), (5, 70, 130), (0, 3, 3)] {
            let x: Vec<f32> = (0..rows * inputs).map(|v| (v % 7) as f32 - 3.0).collect();
            let w: Vec<f32> = (0..inputs * outputs)
                .map(|v| (v % 5) as f32 * 0.5)
                .collect();
            let packed = pack_weight(&w, inputs, outputs);
            let bf16: Vec<half::bf16> = w.iter().map(|&v| half::bf16::from_f32(v)).collect();
            let f16: Vec<half::f16> = w.iter().map(|&v| half::f16::from_f32(v)).collect();
            let (packed_bf16, packed_f16) = (
                pack_weight(&bf16, inputs, outputs),
                pack_weight(&f16, inputs, outputs),
            );
            for stored in [
                StoredValues::F32(&packed),
                StoredValues::Bf16(&packed_bf16),
                StoredValues::F16(&packed_f16),
            ] {
                check_packed_product(Packed::new(stored, inputs, outputs), &x, &w, rows);
            }
        }
    }

    /// W kept as its rows, widened a segment at a time.
    struct Rows<'a> {
        w_t: &'a [f32],
        outputs: usize,
    }

    impl RowBlocks for Rows<'_> {
        fn widen_row(&self, row: usize, inputs: Range<usize>, out: &mut [f32]) {
            for (value, input) in out.iter_mut().zip(inputs) {
                *value = self.w_t[input * self.outputs + row];
            }
        }
    }

    #[test]
    fn row_blocked_products_match_the_definition() {
        for (rows, inputs, outputs) in [(3, 5, 7), (2, 4, 64), (5, 70, 130), (0, 3, 3)] {
            let x: Vec<f32> = (0..rows * inputs).map(|v| (v % 7) as f32 - 3.0).collect();
            let w: Vec<f32> = (0..inputs * outputs)
                .map(|v| (v % 5) as f32 * 0.5)
                .collect();
            let blocks = Rows { w_t: &w, outputs };
            check_packed_product(Packed::rows(&blocks, inputs, outputs), &x, &w, rows);
        }
    }

    fn check_packed_product(weight: Packed, x: &[f32], w: &[f32], rows: usize) {
        let (inputs, outputs) = (weight.inputs, weight.outputs);
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

    #[test]
    #[should_panic(expected = "outside a slice")]
    fn views_are_bounds_checked() {
        let a = vec![0.0; 5];
        MatRef::strided(&a, 2, 3, 3, 1);
    }

    #[test]
    #[should_panic(expected = "outside a slice")]
    fn strides_that_overflow_are_refused() {
        let a = vec![0.0; 5];
        // (rows − 1)·row_stride wraps to 0 without checked arithmetic.
        MatRef::strided(&a, 3, 1, usize::MAX / 2 + 1, 1);
    }

    #[test]
    #[should_panic(expected = "outside a slice")]
    fn destinations_that_overflow_are_refused() {
        let mut a = vec![0.0; 5];
        MatMut::strided(&mut a, 3, 1, usize::MAX / 2 + 1);
    }
}
