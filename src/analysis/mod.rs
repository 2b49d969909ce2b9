//! The study's figures (ANALYSIS.md §3–§5), computed from one forward pass.
//!
//! For every head, the candidate pairs are the unordered pairs `i < j` of
//! content tokens, enumerated in `(i, j)` order. A selection rule picks the
//! pairs whose context similarity S (optionally transformed, see
//! [`SimilarityVariant`]) is highest, and the per-head figures describe those
//! pairs: how far apart they are, whether they share a sentence, whether they
//! are the same word, whether one token dominates them. Layers pool their
//! heads' pairs and add the attention-based figures (separator attention,
//! segmentation accuracy); the document adds the chance baseline and the
//! layer-to-layer correlation of the head-averaged similarity.
//!
//! With the default [`AnalysisOptions`] the numbers reproduce
//! `shared/reference/ref_analysis.py` (`analyse`): the top-q selection
//! compares the same `f32` values with the same tie rule as numpy's
//! `lexsort`, and the head-averaged attention behind the segmentation
//! accuracy is summed in `f32` like numpy's `mean(axis=0)`.
//!
//! Every figure that can be undefined (no pairs, no content token, zero
//! variance; segmentation for a causal model, whose input says it is one:
//! [`TokenSequence::causal`]) is an `Option`, serialised as JSON `null`; no
//! NaN ever leaves this module. The module is pure: std and serde only, no GUI, no tensors.

//!
//! The parts: [`options`] (what the user chooses), [`figures`] (what is
//! reported), pair selection, the similarity variants, the one pass over
//! each head's attention, segmentation and the layer correlation grid;
//! this file runs them over every layer and head.

mod attention;
mod correlation;
pub mod figures;
pub mod options;
mod segmentation;
mod selection;
mod similarity;

use crate::captures::{Captures, HeadId};
use crate::tokens::TokenSequence;

use attention::attention_pass;
use correlation::{correlation_matrix, unit_profile};
use segmentation::segmentation;
use selection::{key_index, rank_key, top_fraction, top_k_per_row};
use similarity::{Moments, Transform};

use figures::focus_counts;
pub use figures::{Analysis, AttentionStats, Category, HeadFigures, LayerFigures};
pub use options::{AnalysisOptions, Selection, SimilarityVariant};
pub use segmentation::{choose_separator, SeparatorChoice, SEGMENTATION_TIE};
pub use selection::top_fraction_count;
pub use similarity::transformed_similarity;

/// Computes every figure of ANALYSIS.md §3–§5 for one input whose
/// captures keep every P and S ([`Captures::stores_squares`]); a pass that
/// does not keep them analyses each layer as it goes ([`LayerAnalyser`]).
///
/// Panics if the token sequence and the captures disagree on T or the
/// capture buffers do not have their documented shapes (a programming error).
pub fn analyze(tokens: &TokenSequence, captures: &Captures, options: &AnalysisOptions) -> Analysis {
    let t = captures.tokens;
    let (layers, heads) = (captures.layers, captures.heads);
    assert_eq!(
        captures.attentions.len(),
        layers * heads * t * t,
        "attentions must be L×H×T×T"
    );
    assert_eq!(
        captures.similarity.len(),
        layers * heads * t * t,
        "similarity must be L×H×T×T"
    );
    assert_eq!(tokens.len(), t, "token sequence and captures disagree on T");
    let analyser = LayerAnalyser::new(tokens, options, layers);
    let doc = &analyser.doc;
    let square = heads * t * t;
    let layer_squares = |l: usize| LayerSquares {
        attention: &captures.attentions[l * square..(l + 1) * square],
        similarity: &captures.similarity[l * square..(l + 1) * square],
        heads,
    };

    // Layers are independent; workers take them in turn.
    let layers = crate::threads::map_indices(layers, 8, |l| {
        analyse_layer(doc, layer_squares(l), l, &mut Scratch::default())
    });
    let mut analyser = analyser;
    analyser.layers = layers.into_iter().map(Some).collect();
    analyser.finish()
}

/// One layer's P and S, each H×T×T row-major.
#[derive(Clone, Copy)]
pub struct LayerSquares<'a> {
    pub attention: &'a [f32],
    pub similarity: &'a [f32],
    pub heads: usize,
}

impl<'a> LayerSquares<'a> {
    fn head(values: &'a [f32], heads: usize, h: usize) -> &'a [f32] {
        let size = values.len() / heads.max(1);
        &values[h * size..(h + 1) * size]
    }

    /// Head `h`'s T×T attention.
    pub fn head_attention(&self, h: usize) -> &'a [f32] {
        Self::head(self.attention, self.heads, h)
    }

    /// Head `h`'s T×T similarity.
    pub fn head_similarity(&self, h: usize) -> &'a [f32] {
        Self::head(self.similarity, self.heads, h)
    }
}

/// The figures of one layer and its unit profile for the correlation grid.
struct AnalysedLayer {
    figures: LayerFigures,
    profile: Option<Vec<f32>>,
}

/// The analysis one layer at a time, for a pass that hands each layer's P
/// and S over and then frees them: [`LayerAnalyser::add_layer`] for every
/// layer, then [`LayerAnalyser::finish`]. Gives what [`analyze`] gives.
pub struct LayerAnalyser<'a> {
    doc: Document<'a>,
    layers: Vec<Option<AnalysedLayer>>,
    scratch: Scratch,
}

impl<'a> LayerAnalyser<'a> {
    /// Panics if the token sequence is inconsistent (a programming error).
    pub fn new(tokens: &'a TokenSequence, options: &'a AnalysisOptions, layers: usize) -> Self {
        let t = tokens.len();
        assert_eq!(
            tokens.token_texts.len(),
            t,
            "token texts must cover every position"
        );
        assert_eq!(
            tokens.special.len(),
            t,
            "special flags must cover every position"
        );
        assert_eq!(
            tokens.sentence_ids.len(),
            t,
            "sentence ids must cover every position"
        );
        let doc = Document::new(tokens, options);
        assert!(
            doc.pairs.len() <= u32::MAX as usize,
            "too many candidate pairs"
        );
        Self {
            doc,
            layers: (0..layers).map(|_| None).collect(),
            scratch: Scratch::default(),
        }
    }

    /// Analyses layer `layer` from its P and S.
    pub fn add_layer(&mut self, layer: usize, squares: LayerSquares) {
        let t = self.doc.t;
        assert_eq!(
            squares.attention.len(),
            squares.heads * t * t,
            "attentions must be H×T×T"
        );
        assert_eq!(
            squares.similarity.len(),
            squares.heads * t * t,
            "similarity must be H×T×T"
        );
        self.layers[layer] = Some(analyse_layer(&self.doc, squares, layer, &mut self.scratch));
    }

    /// Every figure; panics unless every layer was added.
    pub fn finish(self) -> Analysis {
        let doc = self.doc;
        let selected_per_head = match doc.options.selection {
            Selection::TopFraction { q } => Some(top_fraction_count(q, doc.pairs.len())),
            _ => None,
        };
        let baseline = fraction(
            doc.pairs
                .iter()
                .filter(|&&(i, j)| doc.same_sentence(i as usize, j as usize))
                .count(),
            doc.pairs.len(),
        );
        let mut layer_figures = Vec::with_capacity(self.layers.len());
        let mut profiles = Vec::with_capacity(self.layers.len());
        for layer in self.layers {
            let layer = layer.expect("every layer analysed");
            layer_figures.push(layer.figures);
            profiles.push(layer.profile);
        }
        Analysis {
            tokens: doc.t,
            content_tokens: doc.content.len(),
            pairs: doc.pairs.len(),
            selected_per_head,
            baseline_same_sentence_fraction: baseline,
            input_ids: doc.tokens.input_ids.clone(),
            sentences_analysed: 0,
            sentences_left_out: 0,
            tokens_left_out: 0,
            layers: layer_figures,
            layer_correlation: correlation_matrix(profiles),
        }
    }
}

/// What every head of the input shares: positions, candidate pairs, options.
struct Document<'a> {
    tokens: &'a TokenSequence,
    options: &'a AnalysisOptions,
    t: usize,
    content: Vec<usize>,
    /// The content positions as maximal runs of consecutive positions.
    content_runs: Vec<std::ops::Range<usize>>,
    /// Candidate pairs (i, j) as positions, in pair order.
    pairs: Vec<(u32, u32)>,
    separators: Vec<usize>,
    cls: Vec<usize>,
    punctuation: Vec<usize>,
}

impl<'a> Document<'a> {
    fn new(tokens: &'a TokenSequence, options: &'a AnalysisOptions) -> Self {
        let content = tokens.content_positions();
        let mut pairs = Vec::with_capacity(content.len() * content.len().saturating_sub(1) / 2);
        for (a, &i) in content.iter().enumerate() {
            pairs.extend(content[a + 1..].iter().map(|&j| (i as u32, j as u32)));
        }
        let mut content_runs: Vec<std::ops::Range<usize>> = Vec::new();
        for &i in &content {
            match content_runs.last_mut() {
                Some(run) if run.end == i => run.end = i + 1,
                _ => content_runs.push(i..i + 1),
            }
        }
        Self {
            tokens,
            options,
            t: tokens.len(),
            pairs,
            content_runs,
            separators: tokens.separator_positions(),
            cls: tokens.cls_positions(),
            punctuation: (0..tokens.len())
                .filter(|&i| tokens.is_punctuation(i))
                .collect(),
            content,
        }
    }

    fn same_sentence(&self, i: usize, j: usize) -> bool {
        // Option equality, like the reference's integer ids (−1 for none).
        self.tokens.sentence_ids[i] == self.tokens.sentence_ids[j]
    }
}

/// Per-worker buffers reused from head to head (N values each).
#[derive(Default)]
struct Scratch {
    values: Vec<f32>,
    keys: Vec<u64>,
    /// One row of S' (top-k per row).
    row: Vec<f32>,
}

fn analyse_layer(
    doc: &Document,
    squares: LayerSquares,
    layer: usize,
    scratch: &mut Scratch,
) -> AnalysedLayer {
    let n = doc.pairs.len();
    let mut profile = vec![0.0f64; n];
    let mut heads = Vec::with_capacity(squares.heads);
    let mut histogram = vec![0u64; doc.t];
    let (mut pooled, mut pooled_distance, mut pooled_same) = (0usize, 0usize, 0usize);
    // Σ over heads of P[i, s] for content rows i and separator columns s.
    let mut separator_sums = vec![0.0f32; doc.content.len() * doc.separators.len()];
    for h in 0..squares.heads {
        let id = HeadId::new(layer, h);
        let figures = analyse_head(
            doc,
            squares.head_attention(h),
            squares.head_similarity(h),
            id,
            scratch,
            &mut profile,
            &mut separator_sums,
        );
        for &(i, j) in &figures.selected_pairs {
            histogram[j - i] += 1;
            pooled += 1;
            pooled_distance += j - i;
            pooled_same += usize::from(doc.same_sentence(i, j));
        }
        heads.push(figures);
    }

    // Means over every head of a per-head attention figure.
    let head_mean = |figure: fn(&HeadFigures) -> Option<f64>| {
        if doc.content.is_empty() || heads.is_empty() {
            return None;
        }
        let sum: f64 = heads.iter().filter_map(figure).sum();
        finite(sum / heads.len() as f64)
    };
    let separator_attention = head_mean(|h| h.separator_attention);
    let sink_attention = head_mean(|h| h.sink_attention);
    // Among the heads that have a focus token (all of them whenever the rule
    // selects at least one pair per head, as the default always does).
    let (distinct_focus, with_focus) = focus_counts(&heads);

    let segmentation = segmentation(doc, &separator_sums, squares.heads);

    let figures = LayerFigures {
        mean_distance: fraction(pooled_distance, pooled),
        same_sentence_fraction: fraction(pooled_same, pooled),
        separator_attention,
        focus_uniqueness: fraction(distinct_focus, with_focus),
        segmentation_accuracy: segmentation.map(|s| s.accuracy),
        segmentation_undecided: segmentation.map(|s| s.undecided),
        sink_attention,
        distance_histogram: histogram,
        heads,
    };
    let profile = (n >= 2 && squares.heads > 0)
        .then_some(profile)
        .and_then(unit_profile);
    AnalysedLayer { figures, profile }
}

fn analyse_head(
    doc: &Document,
    attention: &[f32],
    similarity: &[f32],
    id: HeadId,
    scratch: &mut Scratch,
    profile: &mut [f64],
    separator_sums: &mut [f32],
) -> HeadFigures {
    let t = doc.t;
    let transform = Transform::new(similarity, t, doc.options.similarity);

    let values = &mut scratch.values;
    values.clear();
    // Row i's candidates are the content positions after i: the rest of its
    // own run, then every later run (pair order).
    for (r, run) in doc.content_runs.iter().enumerate() {
        for i in run.clone() {
            transform.extend_row(i, i + 1..run.end, values);
            for later in &doc.content_runs[r + 1..] {
                transform.extend_row(i, later.clone(), values);
            }
        }
    }
    let moments = Moments::of(values);

    // The correlation grid averages per-head z-scores; a constant head has
    // none and adds nothing.
    if let Some(m) = moments.filter(|m| m.std > 0.0) {
        let scale = 1.0 / m.std;
        for (acc, &v) in profile.iter_mut().zip(values.iter()) {
            *acc += (f64::from(v) - m.mean) * scale;
        }
    }

    let selected = match doc.options.selection {
        Selection::TopFraction { q } => top_fraction(
            values,
            top_fraction_count(q, values.len()),
            &mut scratch.keys,
        )
        .into_iter()
        .map(|p| doc.pairs[p])
        .collect(),
        Selection::AboveMean { z } => match moments {
            Some(m) => {
                let threshold = m.mean + z * m.std;
                let keys = &mut scratch.keys;
                keys.clear();
                keys.extend(
                    values
                        .iter()
                        .enumerate()
                        .filter(|&(_, &v)| f64::from(v) > threshold)
                        .map(|(p, &v)| rank_key(v, p)),
                );
                keys.sort_unstable();
                keys.iter().map(|&key| doc.pairs[key_index(key)]).collect()
            }
            None => Vec::new(),
        },
        Selection::TopKPerRow { k } => top_k_per_row(doc, &transform, k, scratch),
    };
    let selected_pairs: Vec<(usize, usize)> = selected
        .into_iter()
        .map(|(i, j)| (i as usize, j as usize))
        .collect();

    let mut figures = pair_figures(doc, &selected_pairs);
    let first_head = id.head == 0;
    let pass = attention_pass(doc, attention, separator_sums, first_head);
    figures.attention_stats = pass.stats;
    figures.separator_attention = pass.separator_attention;
    figures.sink_attention = pass.sink_attention;
    figures.selected_pairs = selected_pairs;
    figures
}

/// The per-head figures of ANALYSIS.md §4 that depend only on the pairs.
fn pair_figures(doc: &Document, pairs: &[(usize, usize)]) -> HeadFigures {
    if pairs.is_empty() {
        return HeadFigures::default();
    }
    let ids = &doc.tokens.input_ids;
    let n = pairs.len();
    let (mut distance, mut same, mut repeated, mut local) = (0usize, 0usize, 0usize, 0usize);
    for &(i, j) in pairs {
        let d = j - i;
        let s = doc.same_sentence(i, j);
        distance += d;
        same += usize::from(s);
        repeated += usize::from(ids[i] == ids[j]);
        local += usize::from(s && d <= doc.options.local_window);
    }

    // Most frequent id among the 2k endpoints; the ascending scan keeps the
    // smallest id on ties.
    let mut ends: Vec<u32> = pairs.iter().flat_map(|&(i, j)| [ids[i], ids[j]]).collect();
    ends.sort_unstable();
    let (mut focus, mut best) = (ends[0], 0usize);
    for run in ends.chunk_by(|a, b| a == b) {
        if run.len() > best {
            (focus, best) = (run[0], run.len());
        }
    }
    let focused = pairs
        .iter()
        .filter(|&&(i, j)| ids[i] == focus || ids[j] == focus)
        .count();

    let repetition_fraction = fraction(repeated, n);
    let focus_share = fraction(focused, n);
    let local_fraction = fraction(local, n);
    let at_least_half = |x: Option<f64>| x.is_some_and(|x| x >= 0.5);
    let category = if at_least_half(repetition_fraction) {
        Category::Repetition
    } else if at_least_half(focus_share) {
        Category::Focus
    } else if at_least_half(local_fraction) {
        Category::Local
    } else {
        Category::Mixed
    };
    HeadFigures {
        mean_distance: fraction(distance, n),
        same_sentence_fraction: fraction(same, n),
        repetition_fraction,
        focus_token_id: Some(focus),
        focus_token: doc.tokens.text_of(focus).map(str::to_owned),
        focus_share,
        local_fraction,
        category: Some(category),
        ..HeadFigures::default()
    }
}

fn fraction(count: usize, total: usize) -> Option<f64> {
    (total > 0).then(|| count as f64 / total as f64)
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}
