//! A head's map at any zoom (`headscope::head_map`) against the full
//! matrix it stands for: on a causal decoder (grouped-query Llama) and a
//! bidirectional encoder (ModernBERT) past two of the attention core's
//! row blocks, P, N′ and S in three variants, from captures that kept
//! every P and S and from captures that recompute them (with O in memory
//! or, as past 256 MB, in a scratch file on disk): a cell-level tile holds
//! the matrix's own entries (the same bits, masked cells NaN), every block
//! of every level holds the max and the mean of its cells, and the
//! overview is the same at 1 and 2 threads. The thumbnails a recomputing
//! pass makes as it goes (of P, and of S in each variant) hold the same.
//!
//! The test sets `$HEADSCOPE_SCRATCH_FROM_MB` for one run: it is this
//! binary's only test, so no other reads the variable meanwhile.

mod common;

use common::*;
use headscope::analysis::{transformed_similarity, SimilarityVariant};
use headscope::analysis::{Analysis, AnalysisOptions};
use headscope::captures::{CaptureMode, Captures, HeadId};
use headscope::head_map::{
    self, BlockReduction, Blocks, HeadMatrix, MapMatrix, MapOverview, OverviewSize, PassThumbnails,
};
use headscope::pipeline::Kept;

/// The full T × T matrix as the views drew it before maps: NaN above a
/// causal model's diagonal.
fn full_matrix(captures: &Captures, head: HeadId, matrix: MapMatrix, causal: bool) -> Vec<f32> {
    let t = captures.tokens;
    let mut values = match matrix {
        MapMatrix::Attention => captures.attention(head).into_owned(),
        MapMatrix::ValueWeighted => captures.value_weighted_attention(head).unwrap(),
        MapMatrix::Similarity(SimilarityVariant::Raw) => captures.similarity(head).into_owned(),
        MapMatrix::Similarity(variant) => {
            transformed_similarity(&captures.similarity(head), t, variant)
        }
    };
    if causal {
        for (i, row) in values.chunks_mut(t).enumerate() {
            row[i + 1..].fill(f32::NAN);
        }
    }
    values
}

/// The max and mean of the cells of block (r, c) of level `level`, from
/// the full matrix.
fn block_of(full: &[f32], t: usize, level: u32, r: usize, c: usize) -> (f32, f32) {
    let size = 1usize << level;
    let mut cells = Vec::new();
    for i in r * size..((r + 1) * size).min(t) {
        for j in c * size..((c + 1) * size).min(t) {
            let v = full[i * t + j];
            if !v.is_nan() {
                cells.push(v);
            }
        }
    }
    if cells.is_empty() {
        return (f32::NAN, f32::NAN);
    }
    let max = cells.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mean = cells.iter().map(|&v| f64::from(v)).sum::<f64>() / cells.len() as f64;
    (max, mean as f32)
}

fn assert_blocks_reduce(blocks: &Blocks, full: &[f32], t: usize, what: &str) {
    for r in 0..blocks.rows {
        for c in 0..blocks.columns {
            let (max, mean) = block_of(
                full,
                t,
                blocks.level,
                blocks.first_row + r,
                blocks.first_column + c,
            );
            let (got_max, got_mean) = (
                blocks.value(BlockReduction::Max, r, c),
                blocks.value(BlockReduction::Mean, r, c),
            );
            let at = format!(
                "{what} level {} block ({}, {})",
                blocks.level,
                blocks.first_row + r,
                blocks.first_column + c
            );
            assert_eq!(
                got_max.to_bits(),
                max.to_bits(),
                "{at}: max {got_max} vs {max}"
            );
            if mean.is_nan() {
                assert!(got_mean.is_nan(), "{at}: mean {got_mean} of masked cells");
            } else {
                let tolerance = 1e-6 * mean.abs().max(1e-3);
                assert!(
                    (got_mean - mean).abs() <= tolerance,
                    "{at}: mean {got_mean} vs {mean}"
                );
            }
        }
    }
}

fn check_head(captures: &Captures, head: HeadId, matrix: MapMatrix, causal: bool, what: &str) {
    let t = captures.tokens;
    let full = full_matrix(captures, head, matrix, causal);
    let map = HeadMatrix::new(captures, head, matrix, causal);
    // Cells: an unaligned rectangle crossing a row block and the diagonal.
    let (rows, columns) = (100..t - 3, 37..t - 90);
    let mut cells = Vec::new();
    map.read(captures, rows.clone(), columns.clone(), &mut cells);
    for (i, row) in rows.clone().zip(cells.chunks_exact(columns.len())) {
        for (j, &v) in columns.clone().zip(row) {
            assert_eq!(
                v.to_bits(),
                full[i * t + j].to_bits(),
                "{what}: cell ({i}, {j})"
            );
        }
    }
    assert_eq!(
        map.value(captures, t - 1, 5).to_bits(),
        full[(t - 1) * t + 5].to_bits(),
        "{what}"
    );
    // A level-0 tile is the cells; level-2 and level-5 tiles their blocks.
    let tile = head_map::tile(captures, &map, 0, 120..200, 3..70);
    assert_blocks_reduce(&tile, &full, t, what);
    for (level, rows, columns) in [(2, 10..70, 5..40), (5, 0..100, 0..100)] {
        let tile = head_map::tile(captures, &map, level, rows, columns);
        assert!(tile.rows.min(tile.columns) > 0, "{what}");
        assert_blocks_reduce(&tile, &full, t, what);
    }
    // The overview: every level from the one that fits 40 blocks, the same
    // bits at 1 and 2 threads, and the sample at its cells.
    let size = OverviewSize {
        blocks: 40,
        sample: head_map::SAMPLE_SIDE,
    };
    let overview_at =
        |threads| head_map::overview(captures, &map, size, threads, &|| false, &|| {}).unwrap();
    let (one, two) = (overview_at(1), overview_at(2));
    let mut level = one.base;
    while let Some(blocks) = one.level(level) {
        assert_eq!(Some(blocks), two.level(level), "{what}: threads");
        if blocks.rows == 1 && blocks.columns == 1 {
            break;
        }
        level += 1;
    }
    assert_overview(&one, &full, t, size, what);
}

/// `overview` of the matrix `full` holds every level from the one that
/// fits its size up to one block, and its sample.
fn assert_overview(overview: &MapOverview, full: &[f32], t: usize, size: OverviewSize, what: &str) {
    assert_eq!(
        overview.base,
        head_map::level_within(t, size.blocks),
        "{what}"
    );
    let mut level = overview.base;
    while let Some(blocks) = overview.level(level) {
        assert_blocks_reduce(blocks, full, t, what);
        level += 1;
    }
    assert_sample(&overview.sample, overview.sample_side, full, t, size, what);
}

/// `sample` holds the cells (i, j) of `full` with i and j multiples of the
/// step that makes at most `size.sample` a side.
fn assert_sample(
    sample: &[f32],
    sample_side: usize,
    full: &[f32],
    t: usize,
    size: OverviewSize,
    what: &str,
) {
    let step = t.div_ceil(size.sample);
    assert_eq!(sample_side, t.div_ceil(step), "{what}");
    assert_eq!(sample.len(), sample_side * sample_side, "{what}");
    for (k, &v) in sample.iter().enumerate() {
        let (i, j) = (k / sample_side * step, k % sample_side * step);
        assert_eq!(
            v.to_bits(),
            full[i * t + j].to_bits(),
            "{what}: sample ({i}, {j})"
        );
    }
}

/// The thumbnails the pass made of P, N′ and S in `variant`, against the
/// full matrices of `captures` (block means, sampled cells); none of
/// another variant.
fn check_pass_thumbnails(
    captures: &Captures,
    thumbnails: &PassThumbnails,
    variant: SimilarityVariant,
    causal: bool,
    what: &str,
) {
    assert!(thumbnails.is_complete(), "{what}");
    let t = captures.tokens;
    let size = OverviewSize::THUMBNAIL;
    let base = head_map::level_within(t, size.blocks);
    let other = match variant {
        SimilarityVariant::Raw => SimilarityVariant::Cosine,
        _ => SimilarityVariant::Raw,
    };
    for head in [HeadId::new(0, 0), HeadId::new(captures.layers - 1, 1)] {
        for matrix in [
            MapMatrix::Attention,
            MapMatrix::ValueWeighted,
            MapMatrix::Similarity(variant),
        ] {
            let made = thumbnails.get(head, matrix).unwrap();
            let full = full_matrix(captures, head, matrix, causal);
            let what = format!("{what} {head} {matrix:?}: the pass's thumbnail");
            assert_eq!(made.side, head_map::level_side(t, base), "{what}");
            for (k, &got) in made.means.iter().enumerate() {
                let (r, c) = (k / made.side, k % made.side);
                let (_, mean) = block_of(&full, t, base, r, c);
                let close = (got - mean).abs() <= 1e-6 * mean.abs().max(1e-3);
                assert!(close || mean.is_nan() && got.is_nan(), "{what} ({r}, {c})");
            }
            assert_sample(&made.sample, made.sample_side, &full, t, size, &what);
        }
        let other = MapMatrix::Similarity(other);
        assert!(thumbnails.get(head, other).is_none(), "{what} {other:?}");
    }
}

/// A run of the model on `tokens` that keeps its thumbnails where it
/// recomputes P and S.
fn analyse(
    model: &headscope::model::Model,
    tokens: &headscope::tokens::TokenSequence,
    mode: CaptureMode,
    options: &AnalysisOptions,
) -> (Captures, Analysis, PassThumbnails) {
    let mut captures = Captures::default();
    let kept = Kept {
        residuals: false,
        thumbnails: true,
    };
    let (analysis, thumbnails, _) = headscope::pipeline::capture_and_analyze(
        model,
        tokens,
        mode,
        kept,
        options,
        &mut captures,
        &|| false,
    )
    .unwrap();
    (captures, analysis, thumbnails)
}

#[test]
fn maps_at_every_zoom_hold_the_full_matrix() {
    for (name, causal) in [("llama", true), ("modernbert", false)] {
        let (_dir, model, tokens) = long_family_input(name);
        let mut in_memory: Option<(Captures, String)> = None;
        for (mode, on_disk) in [
            (CaptureMode::Stored, false),
            (CaptureMode::Recomputed, false),
            (CaptureMode::Recomputed, true),
        ] {
            if on_disk {
                std::env::set_var("HEADSCOPE_SCRATCH_FROM_MB", "0");
            }
            let options = AnalysisOptions::default();
            let (captures, analysis, thumbnails) = analyse(&model, &tokens, mode, &options);
            std::env::remove_var("HEADSCOPE_SCRATCH_FROM_MB");
            // Thumbnails come from a pass that keeps no P nor S, in the
            // analysis's variant (the others: a pass each, below).
            if mode == CaptureMode::Stored {
                assert!(!thumbnails.is_complete(), "{name}: stored");
            } else {
                let what = format!("{name} on disk {on_disk}");
                check_pass_thumbnails(&captures, &thumbnails, options.similarity, causal, &what);
            }
            assert_eq!(
                captures.stores_squares(),
                mode == CaptureMode::Stored,
                "{name}"
            );
            assert_eq!(captures.has_outputs_on_disk(), on_disk, "{name}");
            // O read back from disk, and the figures made from it (the
            // layer correlation grid reads it back whole), are those of
            // the run that kept O in memory.
            let figures = serde_json::to_string(&analysis).unwrap();
            if mode == CaptureMode::Recomputed && !on_disk {
                in_memory = Some((captures.clone(), figures.clone()));
                for variant in [
                    SimilarityVariant::Cosine,
                    SimilarityVariant::RowOverDiagonal,
                    SimilarityVariant::ZScore,
                ] {
                    let options = AnalysisOptions {
                        similarity: variant,
                        ..AnalysisOptions::default()
                    };
                    let (captures, _, thumbnails) = analyse(&model, &tokens, mode, &options);
                    let what = format!("{name} {variant:?}");
                    check_pass_thumbnails(&captures, &thumbnails, variant, causal, &what);
                }
            }
            if on_disk {
                let (kept, kept_figures) = in_memory.as_ref().unwrap();
                assert_eq!(&figures, kept_figures, "{name}: the figures");
                for id in kept.head_ids() {
                    assert_eq!(
                        captures.head_output(id),
                        kept.head_output(id),
                        "{name} {id}"
                    );
                }
            }
            let head = HeadId::new(captures.layers - 1, captures.heads - 1);
            for matrix in [
                MapMatrix::Attention,
                MapMatrix::ValueWeighted,
                MapMatrix::Similarity(SimilarityVariant::Raw),
                MapMatrix::Similarity(SimilarityVariant::Cosine),
                MapMatrix::Similarity(SimilarityVariant::ZScore),
            ] {
                check_head(
                    &captures,
                    head,
                    matrix,
                    causal,
                    &format!("{name} {mode:?} on disk {on_disk} {matrix:?}"),
                );
            }
        }
    }
}
