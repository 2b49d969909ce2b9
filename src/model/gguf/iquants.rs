//! llama.cpp's 4-bit non-linear blocks, IQ4_NL and IQ4_XS, which candle
//! does not know: kept as the file's bytes and dequantized here, with the
//! arithmetic of ggml's `dequantize_row_iq4_nl` / `dequantize_row_iq4_xs`
//! and gguf-py's `IQ4_NL` / `IQ4_XS` (which transformers' GGUF loader
//! calls): each 4-bit index picks one of 16 fixed levels, multiplied in
//! float32 by the block's float16 scale (IQ4_NL, 32 values a block) or by
//! that scale times a 6-bit sub-scale less 32 (IQ4_XS, 256 values a
//! super-block of eight 32-value blocks).

use half::f16;
use std::ops::Range;

/// ggml's `kvalues_iq4nl`: the 16 levels a 4-bit index picks.
const LEVELS: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// Which of the two layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Iq4Nl,
    Iq4Xs,
}

impl Layout {
    /// Values per block.
    pub fn block_values(self) -> usize {
        match self {
            Self::Iq4Nl => 32,
            Self::Iq4Xs => 256,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            Self::Iq4Nl => 18,
            Self::Iq4Xs => 136,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Iq4Nl => "IQ4_NL",
            Self::Iq4Xs => "IQ4_XS",
        }
    }
}

/// A rows × columns matrix of IQ4 blocks, each row whole blocks.
#[derive(Debug)]
pub struct NonLinearBlocks {
    pub layout: Layout,
    pub rows: usize,
    pub columns: usize,
    data: Vec<u8>,
}

impl NonLinearBlocks {
    /// `data`: the file's bytes of the matrix; `None` if they are not
    /// rows × columns of whole blocks.
    pub fn new(layout: Layout, rows: usize, columns: usize, data: Vec<u8>) -> Option<Self> {
        let whole = columns.is_multiple_of(layout.block_values())
            && data.len() == rows * columns / layout.block_values() * layout.block_bytes();
        whole.then_some(Self {
            layout,
            rows,
            columns,
            data,
        })
    }

    fn row_bytes(&self) -> usize {
        self.columns / self.layout.block_values() * self.layout.block_bytes()
    }

    /// Row `row` dequantized into `out` (`columns` long).
    pub fn dequantize_row(&self, row: usize, out: &mut [f32]) {
        let blocks = self.columns / self.layout.block_values();
        self.dequantize_blocks(row, 0..blocks, out);
    }

    /// Blocks `blocks` of row `row` (each `block_values()` values) into `out`.
    pub fn dequantize_blocks(&self, row: usize, blocks: Range<usize>, out: &mut [f32]) {
        let (values, size) = (self.layout.block_values(), self.layout.block_bytes());
        let start = row * self.row_bytes();
        let bytes = &self.data[start + blocks.start * size..start + blocks.end * size];
        for (block, out) in bytes.chunks_exact(size).zip(out.chunks_exact_mut(values)) {
            match self.layout {
                Layout::Iq4Nl => dequantize_iq4_nl(block, out),
                Layout::Iq4Xs => dequantize_iq4_xs(block, out),
            }
        }
    }

    /// Every value, row after row.
    pub fn dequantize(&self) -> Vec<f32> {
        let mut out = vec![0f32; self.rows * self.columns];
        for (row, values) in out.chunks_exact_mut(self.columns.max(1)).enumerate() {
            self.dequantize_row(row, values);
        }
        out
    }
}

/// 32 values of one half-nibble-packed group: indices `qs[j] & 15` are
/// values j, `qs[j] >> 4` values j + 16, each `scale × level`.
fn dequantize_group(scale: f32, qs: &[u8], out: &mut [f32]) {
    let (low, high) = out.split_at_mut(16);
    for ((&q, low), high) in qs.iter().zip(low).zip(high) {
        *low = scale * f32::from(LEVELS[usize::from(q & 0x0F)]);
        *high = scale * f32::from(LEVELS[usize::from(q >> 4)]);
    }
}

/// IQ4_NL: `d` (float16), then 16 bytes of indices.
fn dequantize_iq4_nl(block: &[u8], out: &mut [f32]) {
    let d = f16::from_le_bytes([block[0], block[1]]).to_f32();
    dequantize_group(d, &block[2..18], out);
}

/// IQ4_XS: `d` (float16), the sub-scales' high 2 bits (u16, 2 a block),
/// their low 4 bits (4 bytes, a nibble a block), then 8 × 16 bytes of
/// indices.
fn dequantize_iq4_xs(block: &[u8], out: &mut [f32]) {
    let d = f16::from_le_bytes([block[0], block[1]]).to_f32();
    let scales_high = u16::from_le_bytes([block[2], block[3]]);
    let scales_low = &block[4..8];
    let qs = &block[8..136];
    for (ib, out) in out.chunks_exact_mut(32).enumerate() {
        let low = (scales_low[ib / 2] >> (4 * (ib % 2))) & 0x0F;
        let high = ((scales_high >> (2 * ib)) & 3) as u8;
        let sub_scale = i32::from(low | (high << 4)) - 32;
        let scale = d * sub_scale as f32;
        dequantize_group(scale, &qs[16 * ib..16 * ib + 16], out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-made block: d = 0.5, indices 0..15 then 15..0.
    #[test]
    fn iq4_nl_picks_the_levels() {
        let mut block = vec![0u8; 18];
        block[..2].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
        for j in 0..16 {
            block[2 + j] = (j as u8) | ((15 - j as u8) << 4);
        }
        let blocks = NonLinearBlocks::new(Layout::Iq4Nl, 1, 32, block).unwrap();
        let values = blocks.dequantize();
        assert_eq!(values[0], -63.5);
        assert_eq!(values[15], 56.5);
        assert_eq!(values[16], 56.5);
        assert_eq!(values[31], -63.5);
    }

    /// Sub-scale of block 3: low nibble 5 (high nibble of byte 1), high
    /// bits 2 (bits 6..8 of the u16): 5 | 32 = 37, less 32 = 5.
    #[test]
    fn iq4_xs_sub_scales() {
        let mut block = vec![0u8; 136];
        block[..2].copy_from_slice(&f16::from_f32(0.25).to_le_bytes());
        block[2..4].copy_from_slice(&(2u16 << 6).to_le_bytes());
        block[4 + 1] = 5 << 4;
        block[8 + 16 * 3] = 8; // level 1
        let blocks = NonLinearBlocks::new(Layout::Iq4Xs, 1, 256, block).unwrap();
        let values = blocks.dequantize();
        assert_eq!(values[96], 0.25 * 5.0);
        // Block 0's sub-scale is 0 - 32, its index 0 level -127.
        assert_eq!(values[0], 0.25 * -32.0 * -127.0);
    }
}
