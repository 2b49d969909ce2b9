//! The study's figures (ANALYSIS.md §3–§5), computed from one forward pass.
//!
//! For every head, the candidate pairs are the unordered pairs `i < j` of
//! content tokens, enumerated in `(i, j)` order. A selection rule picks the
//! pairs whose context similarity S (optionally transformed, see
//! [`SimilarityVariant`]) is highest, and the per-head figures describe those
//! pairs: how far apart they are, whether they share a sentence, whether they
//! are the same word, whether one token dominates them. Pairs whose S lies
//! within float noise of the last place tie and share it, each weighted by
//! its share, so every pair figure is a weighted mean. Layers pool their
//! heads' pairs and add the attention-based figures (separator attention,
//! segmentation accuracy, the own-separator share); the document adds the
//! chance baseline and the layer-to-layer correlation of the head-averaged
//! similarity.
//!
//! With the default [`AnalysisOptions`] the numbers reproduce
//! `shared/reference/ref_analysis.py` (`analyse`): the tie rule compares
//! the same `f32` values, widened to f64, and the head-averaged attention
//! behind the segmentation accuracy is summed in `f32` like numpy's
//! `mean(axis=0)`.
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

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::captures::{Captures, HeadId, HeadSimilarity};
use crate::tokens::TokenSequence;

use crate::kernels::widest::widest;
use attention::{AttentionFigures, AttentionRows};
use correlation::{correlation_matrix, ProfileTerms};
use segmentation::{segmentation, HeadSeparators, LayerSeparators, SeparatorColumns};
use selection::{key_index, largest_magnitude, rank_key, top_k_per_row, Candidates};
use similarity::{for_each_row_from_diagonal, MomentSums, Moments, TransformKind};

use figures::focus_counts;
pub use figures::{
    Analysis, AttentionStats, Category, HeadFigures, LayerFigures, Role, SelectedPairs, TieShare,
    ROLE_FLOOR, ROLE_MARGIN,
};
pub use options::{AnalysisOptions, Selection, SimilarityVariant};
pub use segmentation::{choose_separator, SeparatorChoice, SeparatorTokens, SEGMENTATION_TIE};
pub use selection::{top_fraction_count, TIE_BAND};
pub use similarity::{transformed_similarity, SimilarityTransform};

/// Computes every figure of ANALYSIS.md §3–§5 for one input whose
/// captures keep every P and S ([`Captures::stores_squares`]); a pass that
/// does not keep them analyses each layer as it goes ([`LayerAnalyser`]).
/// Captures without P (empty `attentions`: a capture file of head outputs
/// alone) give `None` for every figure made from P.
///
/// Panics if the token sequence and the captures disagree on T or the
/// capture buffers do not have their documented shapes (a programming error).
pub fn analyze(tokens: &TokenSequence, captures: &Captures, options: &AnalysisOptions) -> Analysis {
    LayerAnalyser::new(tokens, options, captures.layers).analyse_captures(captures)
}

/// One layer's P and S, each H×T×T row-major, and its heads' value norms
/// (H×T, ANALYSIS.md §9); `attention` is empty when the input has no P,
/// `value_norms` when it has none.
#[derive(Clone, Copy)]
pub struct LayerSquares<'a> {
    pub attention: &'a [f32],
    /// Each head's row entropies of P as the pass made them (H×T), or
    /// empty: the analysis computes them from P.
    pub attention_entropy: &'a [f32],
    pub similarity: &'a [f32],
    pub value_norms: &'a [f32],
    pub heads: usize,
}

impl<'a> LayerSquares<'a> {
    fn head(values: &'a [f32], heads: usize, h: usize) -> &'a [f32] {
        let size = values.len() / heads.max(1);
        &values[h * size..(h + 1) * size]
    }

    /// Head `h`'s T×T attention (empty without P).
    pub fn head_attention(&self, h: usize) -> &'a [f32] {
        Self::head(self.attention, self.heads, h)
    }

    /// Whether the layer came with its attention P.
    pub fn has_attention(&self) -> bool {
        self.attention.len() == self.similarity.len()
    }

    /// Head `h`'s row entropies of P (T), empty where the pass did not
    /// make them.
    pub fn head_attention_entropy(&self, h: usize) -> &'a [f32] {
        if self.attention_entropy.is_empty() {
            &[]
        } else {
            Self::head(self.attention_entropy, self.heads, h)
        }
    }

    /// Head `h`'s value norms (T), empty without them.
    pub fn head_value_norms(&self, h: usize) -> &'a [f32] {
        if self.value_norms.is_empty() {
            &[]
        } else {
            Self::head(self.value_norms, self.heads, h)
        }
    }

    /// Head `h`'s T×T similarity.
    pub fn head_similarity(&self, h: usize) -> &'a [f32] {
        Self::head(self.similarity, self.heads, h)
    }
}

/// The figures of one layer and what the correlation grid needs of its
/// heads.
struct AnalysedLayer {
    figures: LayerFigures,
    terms: Vec<ProfileTerms>,
    /// The layer's profile for the correlation grid, where its heads' S′
    /// passed through here whole ([`LayerProfile`]).
    profile: Option<Vec<f64>>,
}

/// The analysis one layer at a time, for a pass that hands each layer's P
/// and S over and then frees them: [`LayerAnalyser::add_layer`] for every
/// layer, then [`LayerAnalyser::finish`]. Gives what [`analyze`] gives.
///
/// A pass that makes heads on several threads can hand each head over as
/// soon as it is made ([`LayerAnalyser::add_head`], on any thread, while
/// the head is still in that core's cache); `add_layer` then analyses only
/// the heads it was not given and adds them all up in head order, so the
/// figures do not depend on which thread analysed which head.
pub struct LayerAnalyser<'a> {
    doc: Document<'a>,
    layers: Mutex<Vec<Option<AnalysedLayer>>>,
    /// Per layer, per head: the heads given before their layer.
    given: Mutex<Vec<Vec<Option<HeadPart>>>>,
    /// Per layer, the given heads' attention on the separators so far.
    separators: Mutex<Vec<LayerSeparators>>,
    /// Per layer, per head: the passes over P made as the model made it,
    /// for [`LayerAnalyser::analyse_captures`] (which then reads only S).
    attention_given: Mutex<Vec<Vec<Option<AttentionFigures>>>>,
    /// Buffers of the threads that analyse heads, reused.
    scratch: Mutex<Vec<Scratch>>,
    /// Buffers a head's S′ is kept in until its layer's profile is made
    /// ([`LayerProfile`]), reused by whichever thread analyses the next
    /// head: each page of a new one faults the first time it is written.
    spare_values: Mutex<Vec<Vec<f32>>>,
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
            doc.pair_count <= u32::MAX as usize,
            "too many candidate pairs"
        );
        Self {
            doc,
            layers: Mutex::new((0..layers).map(|_| None).collect()),
            given: Mutex::new((0..layers).map(|_| Vec::new()).collect()),
            separators: Mutex::new((0..layers).map(|_| LayerSeparators::default()).collect()),
            attention_given: Mutex::new((0..layers).map(|_| Vec::new()).collect()),
            scratch: Mutex::new(Vec::new()),
            spare_values: Mutex::new(Vec::new()),
        }
    }

    /// The number of tokens analysed.
    pub fn tokens(&self) -> usize {
        self.doc.t
    }

    /// Begins the analysis of a head whose keys write `value_norms` (T, or
    /// empty: no `_vw` figures), before [`LayerAnalyser::add_layer`] is
    /// called for its layer: its P is then handed over a block of rows at
    /// a time ([`HeadAnalysis::attention_rows`]), and its S at the end
    /// ([`HeadAnalysis::finish`]), so that neither need be held whole.
    pub fn begin_head(&self, value_norms: &[f32]) -> HeadAnalysis<'_, 'a> {
        assert!(
            value_norms.is_empty() || value_norms.len() == self.doc.t,
            "value norms must be T"
        );
        HeadAnalysis {
            analyser: self,
            rows: AttentionRows::new(&self.doc, value_norms),
        }
    }

    /// Analyses head `head` of layer `layer` from its P (or none) and S in
    /// `squares`, before [`LayerAnalyser::add_layer`] is called for its
    /// layer.
    fn analyse_stored_head(&self, (layer, head): (usize, usize), squares: LayerSquares) {
        let given = lock(&self.attention_given)[layer]
            .get_mut(head)
            .and_then(Option::take);
        let (attention, similarity) = match given {
            Some(attention) => (
                Some(attention),
                HeadSimilarity::Stored(squares.head_similarity(head)),
            ),
            None => stored_head(&self.doc, &squares, head),
        };
        self.give_head((layer, head), attention, similarity, None);
    }

    /// Analyses a head and keeps its part until its layer is added.
    fn give_head(
        &self,
        (layer, head): (usize, usize),
        attention: Option<AttentionFigures>,
        similarity: HeadSimilarity,
        triangles: Option<&mut dyn SimilarityTriangles>,
    ) {
        let mut scratch = lock(&self.scratch).pop().unwrap_or_default();
        if scratch.spare_values.is_empty() {
            scratch.spare_values.extend(lock(&self.spare_values).pop());
        }
        let mut part = analyse_head(&self.doc, attention, similarity, triangles, &mut scratch);
        lock(&self.scratch).push(scratch);
        if let Some(separators) = part.separators.take() {
            lock(&self.separators)[layer].add(head, separators);
        }
        keep_for_head(&mut lock(&self.given)[layer], head, part);
    }

    /// Analyses layer `layer` from its P (or none) and S: the heads not
    /// given to [`LayerAnalyser::add_head`], then the layer's figures.
    pub fn add_layer(&self, layer: usize, squares: LayerSquares) {
        let t = self.doc.t;
        assert!(
            squares.has_attention() || squares.attention.is_empty(),
            "attentions must be H×T×T or absent"
        );
        let mut given = std::mem::take(&mut lock(&self.given)[layer]);
        // Without S (and P) where every head was given as it was made.
        let all_given = given.len() == squares.heads && given.iter().all(Option::is_some);
        assert!(
            squares.similarity.len() == squares.heads * t * t
                || (all_given && squares.similarity.is_empty() && squares.attention.is_empty()),
            "similarity must be H×T×T"
        );
        let separators = std::mem::take(&mut lock(&self.separators)[layer]);
        let mut scratch = lock(&self.scratch).pop().unwrap_or_default();
        let analysed = analyse_layer(&self.doc, squares, &mut scratch, &mut given, separators);
        lock(&self.spare_values).append(&mut scratch.spare_values);
        lock(&self.scratch).push(scratch);
        lock(&self.layers)[layer] = Some(analysed);
    }

    /// Every figure from captures that keep every P and S, as [`analyze`]
    /// gives them: the heads whose passes over P were made as the model
    /// made them ([`HeadAnalysis::finish_attention`]) are not read again.
    pub fn analyse_captures(self, captures: &Captures) -> Analysis {
        let t = captures.tokens;
        let (layers, heads) = (captures.layers, captures.heads);
        let has_attention = captures.attentions.len() == layers * heads * t * t;
        let has_norms = has_attention && captures.value_norms.len() == layers * heads * t;
        let has_entropy = has_attention && captures.attention_entropy.len() == layers * heads * t;
        assert!(
            has_attention || captures.attentions.is_empty(),
            "attentions must be L×H×T×T or absent"
        );
        assert_eq!(
            captures.similarity.len(),
            layers * heads * t * t,
            "similarity must be L×H×T×T"
        );
        assert_eq!(self.doc.t, t, "token sequence and captures disagree on T");
        let square = heads * t * t;
        let layer_squares = |l: usize| LayerSquares {
            attention: if has_attention {
                &captures.attentions[l * square..(l + 1) * square]
            } else {
                &[]
            },
            attention_entropy: if has_entropy {
                &captures.attention_entropy[l * heads * t..(l + 1) * heads * t]
            } else {
                &[]
            },
            similarity: &captures.similarity[l * square..(l + 1) * square],
            value_norms: if has_norms {
                &captures.value_norms[l * heads * t..(l + 1) * heads * t]
            } else {
                &[]
            },
            heads,
        };

        // Heads are independent: workers take them in turn, layer by layer,
        // and the one that ends a layer's last head adds the layer up (in head
        // order, whichever worker made each). Taken a layer at a time, the
        // workers waited on the slowest layer's (six layers on two cores).
        let heads_done: Vec<AtomicUsize> = (0..layers).map(|_| AtomicUsize::new(0)).collect();
        crate::threads::map_indices(layers * heads, 8, |task| {
            let (l, h) = (task / heads, task % heads);
            let squares = layer_squares(l);
            self.analyse_stored_head((l, h), squares);
            if heads_done[l].fetch_add(1, Ordering::AcqRel) + 1 == heads {
                self.add_layer(l, squares);
            }
        });
        self.finish(captures)
    }

    /// Every figure, the layer correlation grid from the heads' S in
    /// `captures` (made again from O where they hold it); panics unless
    /// every layer was added.
    pub fn finish(self, captures: &Captures) -> Analysis {
        let doc = self.doc;
        let selected_per_head = match doc.options.selection {
            Selection::TopFraction { q } => Some(top_fraction_count(q, doc.pair_count)),
            _ => None,
        };
        let baseline = fraction(doc.same_sentence_pairs(), doc.pair_count);
        let layers = self.layers.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut layer_figures = Vec::with_capacity(layers.len());
        let mut terms = Vec::with_capacity(layers.len());
        let mut profiles = Vec::with_capacity(layers.len());
        for layer in layers {
            let layer = layer.expect("every layer analysed");
            layer_figures.push(layer.figures);
            terms.push(layer.terms);
            profiles.push(layer.profile);
        }
        // Every layer's profile, or the grid makes them from the heads' S.
        let profiles: Option<Vec<Vec<f64>>> = profiles.into_iter().collect();
        let layer_correlation = correlation_matrix(&doc, &terms, profiles.as_deref(), captures);
        Analysis {
            tokens: doc.t,
            content_tokens: doc.content.len(),
            pairs: doc.pair_count,
            selected_per_head,
            baseline_same_sentence_fraction: baseline,
            input_ids: doc.tokens.input_ids.clone(),
            sentences_analysed: 0,
            sentences_left_out: 0,
            tokens_left_out: 0,
            layers: layer_figures,
            layer_correlation,
            options: doc.options.clone(),
        }
    }
}

/// One head's selected pairs, every one, made again from its S as the
/// analysis made them (the same pairs in the same order) for a head whose
/// figures kept only their number ([`SelectedPairs::is_kept`]): a view
/// shows one head's. As slow as that head's part of the analysis (about
/// a second at 32,768 tokens): run it off the UI thread.
pub fn head_selected_pairs(
    tokens: &TokenSequence,
    captures: &Captures,
    options: &AnalysisOptions,
    head: HeadId,
) -> SelectedPairs {
    let mut doc = Document::new(tokens, options);
    doc.pairs_kept_at_most = usize::MAX;
    captures.with_head_similarity(head, |similarity| {
        analyse_head(&doc, None, similarity, None, &mut Scratch::default())
            .figures
            .selected_pairs
    })
}

/// Sees each row i of a matrix the analysis makes, `(i, row)`, in order.
pub type RowSink<'a> = &'a mut dyn FnMut(usize, &[f32]);

/// One head's analysis under way ([`LayerAnalyser::begin_head`]).
pub struct HeadAnalysis<'s, 'a> {
    analyser: &'s LayerAnalyser<'a>,
    rows: AttentionRows,
}

impl HeadAnalysis<'_, '_> {
    /// Whether it makes the head's N′ (it has every key's value norm).
    pub fn weighs_values(&self) -> bool {
        self.rows.weighs_values()
    }

    /// Adds rows `first`, … of the head's P (each T wide), in order, with
    /// their entropies as the pass made them (or none: made from P here);
    /// `weighted_rows` sees each row of N′ the analysis makes from them
    /// (where the head has its value norms: T of them).
    pub fn attention_rows(
        &mut self,
        first: usize,
        attention: (&[f32], &[f32]),
        weighted_rows: Option<RowSink<'_>>,
    ) {
        let doc = &self.analyser.doc;
        add_attention_rows(&mut self.rows, doc, first, attention, weighted_rows);
    }

    /// Analyses the head, head `head` of layer `layer`, from its S, once
    /// every row of its P was added; `triangles` sees its S'.
    pub fn finish(
        self,
        (layer, head): (usize, usize),
        similarity: HeadSimilarity,
        triangles: Option<&mut dyn SimilarityTriangles>,
    ) {
        let analyser = self.analyser;
        let attention = self.rows.finish(&analyser.doc);
        analyser.give_head((layer, head), Some(attention), similarity, triangles);
    }

    /// Keeps the head's passes over P, once every row was added, for
    /// [`LayerAnalyser::analyse_captures`], which analyses its S later, from
    /// the captures: a pass that keeps every P and S hands each block of
    /// rows over while it is in the cache, and the analysis does not read
    /// P (a third of the bytes it reads) from memory again.
    pub fn finish_attention(self, (layer, head): (usize, usize)) {
        let attention = self.rows.finish(&self.analyser.doc);
        keep_for_head(
            &mut lock(&self.analyser.attention_given)[layer],
            head,
            attention,
        );
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
    /// The number of candidate pairs.
    pair_count: usize,
    separators: Vec<usize>,
    cls: Vec<usize>,
    punctuation: Vec<usize>,
    /// Position → index among the content tokens (`u32::MAX` elsewhere).
    content_index: Vec<u32>,
    /// The content positions ordered by token id, then position.
    content_by_id: Vec<usize>,
    /// Per position, the last earlier position with the same token id
    /// ([`NO_OCCURRENCE`] where none): following it from i visits every
    /// earlier occurrence of token i, newest first, in O(occurrences) for
    /// the role scores of ANALYSIS.md §9.
    earlier_occurrence: Vec<u32>,
    /// A head keeps its selected pairs up to this many, else their number
    /// ([`SelectedPairs::KEPT_AT_MOST`]).
    pairs_kept_at_most: usize,
}

/// No earlier occurrence of a position's token.
const NO_OCCURRENCE: u32 = u32::MAX;

impl<'a> Document<'a> {
    fn new(tokens: &'a TokenSequence, options: &'a AnalysisOptions) -> Self {
        let content = tokens.content_positions();
        let c = content.len();
        let mut content_runs: Vec<std::ops::Range<usize>> = Vec::new();
        for &i in &content {
            match content_runs.last_mut() {
                Some(run) if run.end == i => run.end = i + 1,
                _ => content_runs.push(i..i + 1),
            }
        }
        let mut content_index = vec![u32::MAX; tokens.len()];
        for (c, &i) in content.iter().enumerate() {
            content_index[i] = c as u32;
        }
        let mut content_by_id = content.clone();
        content_by_id.sort_by_key(|&i| (tokens.input_ids[i], i));
        let mut last_seen_at = std::collections::HashMap::new();
        let earlier_occurrence = (0..tokens.len())
            .map(|i| {
                last_seen_at
                    .insert(tokens.input_ids[i], i as u32)
                    .unwrap_or(NO_OCCURRENCE)
            })
            .collect();
        Self {
            tokens,
            options,
            t: tokens.len(),
            pair_count: c * c.saturating_sub(1) / 2,
            content_runs,
            content_index,
            content_by_id,
            earlier_occurrence,
            pairs_kept_at_most: SelectedPairs::KEPT_AT_MOST,
            separators: tokens.separator_positions(),
            cls: tokens.cls_positions(),
            punctuation: (0..tokens.len())
                .filter(|&i| tokens.is_punctuation(i))
                .collect(),
            content,
        }
    }

    /// The index among the candidates of the pair of content positions i, j.
    fn pair_index(&self, i: usize, j: usize) -> usize {
        let (a, b) = (
            self.content_index[i.min(j)] as usize,
            self.content_index[i.max(j)] as usize,
        );
        self.content_pair_index(a, b)
    }

    /// The index among the candidates of the pair of content indices a < b.
    fn content_pair_index(&self, a: usize, b: usize) -> usize {
        self.row_start(a) + (b - a - 1)
    }

    /// The index of the first candidate pair of content index a: the
    /// earlier rows hold c − 1, c − 2, … pairs.
    #[inline(always)]
    fn row_start(&self, a: usize) -> usize {
        a * self.content.len() - a * (a + 1) / 2
    }

    /// Candidate pair `p` as positions (i, j). Its row is the root of the
    /// quadratic [`Document::row_start`], set right by a step where the
    /// square root rounds: a binary search over the rows' starts was a
    /// chain of dependent loads, a tenth of the selected pairs' cost.
    #[inline(always)]
    fn pair(&self, p: usize) -> (u32, u32) {
        let c = self.content.len();
        let width = (2 * c) as f64 - 1.0;
        let root = ((width * width - 8.0 * p as f64).max(0.0)).sqrt();
        let mut a = (((width - root) / 2.0) as usize).min(c.saturating_sub(1));
        while a > 0 && self.row_start(a) > p {
            a -= 1;
        }
        while a + 1 < c && self.row_start(a + 1) <= p {
            a += 1;
        }
        let b = a + 1 + (p - self.row_start(a));
        (self.content[a] as u32, self.content[b] as u32)
    }

    /// Candidate pairs as positions, asked for in pair order: a step
    /// from the last one's row, not a square root each.
    fn pair_walk(&self) -> PairWalk<'_> {
        PairWalk {
            doc: self,
            row: 0,
            next_row_start: self.row_start(1.min(self.content.len())),
        }
    }

    /// Every candidate pair as positions, in pair order.
    fn pairs(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let content = &self.content;
        (0..content.len()).flat_map(move |a| {
            content[a + 1..]
                .iter()
                .map(move |&j| (content[a] as u32, j as u32))
        })
    }

    /// The candidate pairs within one sentence: n(n − 1)/2 for each
    /// sentence id that n content tokens hold (as [`Document::same_sentence`]
    /// counts them, pair by pair).
    fn same_sentence_pairs(&self) -> usize {
        let mut ids: Vec<Option<usize>> = (self.content.iter())
            .map(|&i| self.tokens.sentence_ids[i])
            .collect();
        ids.sort_unstable();
        (ids.chunk_by(|a, b| a == b))
            .map(|same| same.len() * (same.len() - 1) / 2)
            .sum()
    }

    fn same_sentence(&self, i: usize, j: usize) -> bool {
        // Option equality, like the reference's integer ids (−1 for none).
        self.tokens.sentence_ids[i] == self.tokens.sentence_ids[j]
    }
}

/// [`Document::pair`] for pairs asked for in pair order
/// ([`Document::pair_walk`]).
struct PairWalk<'d> {
    doc: &'d Document<'d>,
    /// The content index of the last pair's row, and where the next row
    /// starts.
    row: usize,
    next_row_start: usize,
}

impl PairWalk<'_> {
    /// Candidate pair `p` as positions (i, j); panics in debug builds if
    /// `p` comes before the last pair's row.
    #[inline(always)]
    fn pair(&mut self, p: usize) -> (u32, u32) {
        let doc = self.doc;
        debug_assert!(p >= doc.row_start(self.row), "pairs must come in order");
        while p >= self.next_row_start {
            self.row += 1;
            self.next_row_start = doc.row_start(self.row + 1);
        }
        let (a, b) = (self.row, self.row + 1 + (p - doc.row_start(self.row)));
        (doc.content[a] as u32, doc.content[b] as u32)
    }
}

/// Per-worker buffers reused from head to head.
#[derive(Default)]
struct Scratch {
    /// A head's candidates S' (every one, or the strongest).
    candidates: Candidates,
    /// A block of rows of S, where it is made from O.
    block: Vec<f32>,
    keys: Vec<u64>,
    /// One row of S' (a row's candidates; top-k per row).
    row: Vec<f32>,
    /// Top-k per row: each candidate's weight (N).
    pair_weights: Vec<f64>,
    /// Per position: the weight of the selected pairs it ends, and of those
    /// whose two tokens have its id (counted at the first) (T each).
    endpoint_weight: Vec<f64>,
    repeat_weight: Vec<f64>,
    /// Buffers for the candidates' values, while a layer's profile keeps
    /// those of its heads ([`LayerProfile`]).
    spare_values: Vec<Vec<f32>>,
}

/// One head's figures and what it adds to its layer's sums, kept apart
/// until the layer adds its heads up in head order ([`LayerSums::add`]).
struct HeadPart {
    figures: HeadFigures,
    /// What the correlation grid needs to make the head's z-scores again.
    terms: ProfileTerms,
    /// The selected pairs' weight by distance (T).
    histogram: Vec<f64>,
    pooled: PooledPairs,
    /// Its attention on the separators (`None` without P), for its
    /// layer's [`LayerSeparators`].
    separators: Option<HeadSeparators>,
    /// What it adds to its layer's profile.
    profile: ProfileShare,
}

/// What a head adds to its layer's profile ([`LayerProfile`]).
enum ProfileShare {
    /// Its S′, every candidate in pair order, and the moments that
    /// z-score it.
    Values(Vec<f32>, Moments),
    /// Nothing: the head is constant.
    Nothing,
    /// Its S′ was not kept whole: the grid makes the layer's profile from S.
    Unknown,
}

/// A layer's sums over its heads, added to in head order: the same sums
/// whatever thread made each head.
struct LayerSums {
    heads: Vec<HeadFigures>,
    terms: Vec<ProfileTerms>,
    histogram: Vec<f64>,
    pooled: PooledPairs,
}

impl LayerSums {
    fn new(doc: &Document, heads: usize) -> Self {
        Self {
            heads: Vec::with_capacity(heads),
            terms: Vec::with_capacity(heads),
            histogram: vec![0.0; doc.t],
            pooled: PooledPairs::default(),
        }
    }

    /// Adds the next head's part.
    #[inline(always)]
    fn add(&mut self, part: HeadPart) {
        for (acc, w) in self.histogram.iter_mut().zip(&part.histogram) {
            *acc += w;
        }
        self.pooled.weight += part.pooled.weight;
        self.pooled.distance += part.pooled.distance;
        self.pooled.same += part.pooled.same;
        self.heads.push(part.figures);
        self.terms.push(part.terms);
    }
}

widest! {
    /// Analyses a layer's heads in order, those in `given` (indexed by head)
    /// already analysed, and adds them up.
    fn analyse_layer(
        doc: &Document,
        squares: LayerSquares,
        scratch: &mut Scratch,
        given: &mut [Option<HeadPart>],
        separators: LayerSeparators,
    ) -> AnalysedLayer = analyse_layer_body;
}

/// `separators` holds the given heads' attention on the separators
/// already (they are added as they come, not kept with their parts).
#[inline(always)]
fn analyse_layer_body(
    doc: &Document,
    squares: LayerSquares,
    scratch: &mut Scratch,
    given: &mut [Option<HeadPart>],
    mut separators: LayerSeparators,
) -> AnalysedLayer {
    let mut sums = LayerSums::new(doc, squares.heads);
    let mut profile = LayerProfile::new(doc, &scratch.candidates);
    for h in 0..squares.heads {
        // Not `unwrap_or_else`: a closure would not be compiled for the
        // caller's vectors (see `widest`).
        let mut part = match given.get_mut(h).and_then(Option::take) {
            None => {
                let (attention, similarity) = stored_head(doc, &squares, h);
                analyse_head_body(doc, attention, similarity, None, scratch)
            }
            Some(part) => part,
        };
        let share = std::mem::replace(&mut part.profile, ProfileShare::Unknown);
        profile.add(share, scratch);
        if let Some(head) = part.separators.take() {
            separators.add(h, head);
        }
        sums.add(part);
    }
    let LayerSums {
        heads,
        terms,
        histogram,
        pooled,
    } = sums;
    let (separator_sums, separator_sums_vw) = separators.finish(squares.heads);

    // Means over every head of a per-head attention figure.
    let head_mean = |figure: fn(&HeadFigures) -> Option<f64>| {
        if doc.content.is_empty() || heads.is_empty() || !squares.has_attention() {
            return None;
        }
        let sum: f64 = heads.iter().filter_map(figure).sum();
        finite(sum / heads.len() as f64)
    };
    let separator_attention = head_mean(|h| h.separator_attention);
    let sink_attention = head_mean(|h| h.sink_attention);
    // The value-weighted twins, where every head has its value norms.
    let weighted = squares.has_attention()
        && squares.value_norms.len() == squares.heads * doc.t
        && separator_sums_vw.is_some();
    let head_mean_vw = |figure: fn(&HeadFigures) -> Option<f64>| {
        if weighted {
            head_mean(figure)
        } else {
            None
        }
    };
    // Among the heads that have a focus token (all of them whenever the rule
    // selects at least one pair per head, as the default always does).
    let (distinct_focus, with_focus) = focus_counts(&heads);

    let segmentation_of = |has: bool, sums: &Option<SeparatorColumns>| {
        let sums = sums.as_ref().filter(|_| has)?;
        segmentation(doc, &sums.columns, squares.heads)
    };
    let segmentation_vw = segmentation_of(weighted, &separator_sums_vw);
    let segmentation = segmentation_of(squares.has_attention(), &separator_sums);
    let tokens_of = |has: bool, sums: &Option<SeparatorColumns>| {
        let sums = sums.as_ref().filter(|_| has)?;
        Some(SeparatorTokens::new(doc, sums, squares.heads))
    };

    let figures = LayerFigures {
        mean_distance: ratio(pooled.distance, pooled.weight),
        same_sentence_fraction: ratio(pooled.same, pooled.weight),
        separator_attention,
        focus_uniqueness: fraction(distinct_focus, with_focus),
        segmentation_accuracy: segmentation.map(|s| s.accuracy),
        segmentation_undecided: segmentation.map(|s| s.undecided),
        segmentation_share: segmentation.and_then(|s| s.share),
        segmentation_share_chance: segmentation.map(|s| s.share_chance),
        sink_attention,
        separator_attention_vw: head_mean_vw(|h| h.separator_attention_vw),
        segmentation_accuracy_vw: segmentation_vw.map(|s| s.accuracy),
        segmentation_undecided_vw: segmentation_vw.map(|s| s.undecided),
        segmentation_share_vw: segmentation_vw.and_then(|s| s.share),
        sink_attention_vw: head_mean_vw(|h| h.sink_attention_vw),
        distance_histogram: histogram,
        separator_tokens: tokens_of(squares.has_attention(), &separator_sums),
        separator_tokens_vw: tokens_of(weighted, &separator_sums_vw),
        heads,
    };
    AnalysedLayer {
        figures,
        terms,
        profile: profile.finish(scratch),
    }
}

/// Head `h`'s passes over its P in `squares` (`None` without P), and its
/// S there.
#[inline(always)]
fn stored_head<'s>(
    doc: &Document,
    squares: &LayerSquares<'s>,
    h: usize,
) -> (Option<AttentionFigures>, HeadSimilarity<'s>) {
    // Not `then`: a closure would not be compiled for the caller's vectors
    // (see `widest`).
    let attention = if squares.has_attention() {
        let mut rows = AttentionRows::new(doc, squares.head_value_norms(h));
        let attention = (squares.head_attention(h), squares.head_attention_entropy(h));
        add_attention_rows(&mut rows, doc, 0, attention, None);
        Some(rows.finish(doc))
    } else {
        None
    };
    (
        attention,
        HeadSimilarity::Stored(squares.head_similarity(h)),
    )
}

/// A layer's profile for the correlation grid (ANALYSIS.md §5): per
/// candidate pair, in pair order, the sum over its heads of their z-scored
/// S′, from the S′ each head's candidates kept whole (up to
/// [`Candidates::keeps_whole_from_start`]'s count, 1 MB a head). The grid
/// then multiplies the profiles and does not read every head's S again;
/// the same sums, in the same order, as when it makes them from S. Dropped
/// where a head's S′ was not kept whole (a longer input).
///
/// Each head's S′ is kept until the layer's end and the sums are made then,
/// sixteen pairs at a time over every head, the sixteen sums held in
/// registers: added head by head as each ended, the 1 MB of sums went
/// through memory once a head (a tenth of the figures).
struct LayerProfile {
    /// Each head's S′ and the moments that z-score it, in head order;
    /// `None` once a head's S′ was not kept whole.
    heads: Option<Vec<(Vec<f32>, Moments)>>,
    pairs: usize,
}

impl LayerProfile {
    /// Ready for a layer whose heads' analyses keep their candidates in
    /// `candidates`.
    fn new(doc: &Document, candidates: &Candidates) -> Self {
        let whole = candidates.keeps_whole_from_start(doc.pair_count);
        Self {
            heads: whole.then(Vec::new),
            pairs: doc.pair_count,
        }
    }

    /// Adds the next head's share; what it no longer needs goes to
    /// `scratch`'s spare buffers.
    fn add(&mut self, share: ProfileShare, scratch: &mut Scratch) {
        match (share, &mut self.heads) {
            (ProfileShare::Values(values, moments), Some(heads)) => {
                heads.push((values, moments));
            }
            (ProfileShare::Values(values, _), None) => scratch.spare_values.push(values),
            (ProfileShare::Nothing, _) => {}
            (ProfileShare::Unknown, _) => {
                if let Some(heads) = self.heads.take() {
                    scratch
                        .spare_values
                        .extend(heads.into_iter().map(|(values, _)| values));
                }
            }
        }
    }

    /// The sums, the kept S′ given back to `scratch`'s spares.
    #[inline(always)]
    fn finish(self, scratch: &mut Scratch) -> Option<Vec<f64>> {
        let heads = self.heads?;
        let n = self.pairs;
        let terms: Vec<(&[f32], f64, f64)> = (heads.iter())
            .map(|(values, moments)| (&values[..n], moments.mean, 1.0 / moments.std))
            .collect();
        // Each line's sums start at 0 and add the heads in head order, as
        // when the sums are made from S.
        const LINE: usize = 16;
        let add_heads = |sums: &mut [f64], at: usize| {
            let len = sums.len();
            for &(values, mean, scale) in &terms {
                for (x, &v) in sums.iter_mut().zip(&values[at..at + len]) {
                    *x += (f64::from(v) - mean) * scale;
                }
            }
        };
        let mut sums = Vec::with_capacity(n);
        for at in (0..n - n % LINE).step_by(LINE) {
            let mut line = [0.0; LINE];
            add_heads(&mut line, at);
            sums.extend_from_slice(&line);
        }
        let mut rest = vec![0.0; n % LINE];
        add_heads(&mut rest, n - n % LINE);
        sums.extend_from_slice(&rest);
        scratch
            .spare_values
            .extend(heads.into_iter().map(|(values, _)| values));
        Some(sums)
    }
}

/// Weighted sums over the selected pairs of every head of a layer.
#[derive(Default)]
struct PooledPairs {
    weight: f64,
    distance: f64,
    same: f64,
}

widest! {
    /// Adds rows `first`, … of a head's P, and where the pass made them
    /// their entropies (else empty), to its passes.
    fn add_attention_rows(
        rows: &mut AttentionRows,
        doc: &Document,
        first: usize,
        attention: (&[f32], &[f32]),
        weighted_rows: Option<RowSink<'_>>,
    ) -> () = add_attention_rows_body;
}

#[inline(always)]
fn add_attention_rows_body(
    rows: &mut AttentionRows,
    doc: &Document,
    first: usize,
    (attention, entropies): (&[f32], &[f32]),
    weighted_rows: Option<RowSink<'_>>,
) {
    rows.add_rows(doc, first, attention, entropies, weighted_rows);
}

/// Sees a head's S' (S after the analysis's variant) as the analysis
/// reads it, every row from the diagonal on, so that a long pass can keep
/// a picture of the head without making S again (the map's thumbnails).
/// S is symmetric, and each row from the diagonal on is also the column
/// from the diagonal down.
pub trait SimilarityTriangles {
    /// Whether it wants each row from the diagonal on too, not only the
    /// column (a bidirectional model's map shows both triangles).
    fn wants_rows(&self) -> bool;

    /// S'[r, i] for r = i, …, T − 1 (`column`) and, where wanted, S'[i, r]
    /// for the same r (`row`), for i = 0, 1, … in order.
    fn add(&mut self, i: usize, column: &[f32], row: Option<&[f32]>);
}

/// Hands `take` each content row's candidates S' in pair order, a row at a
/// time (in `row`): the content positions after it, the rest of its own
/// run, then every later run. `triangles` sees every row of S'.
#[inline(always)]
fn candidate_rows(
    doc: &Document,
    similarity: HeadSimilarity,
    transform: &TransformKind,
    block: &mut Vec<f32>,
    row: &mut Vec<f32>,
    triangles: Option<&mut dyn SimilarityTriangles>,
    mut take: impl FnMut(&[f32]),
) {
    grown_candidate_rows(
        doc,
        similarity,
        transform,
        block,
        (row, false),
        triangles,
        #[inline(always)]
        |row, _| take(row),
    );
}

/// [`candidate_rows`], each row written into `row` in place of the last,
/// or with `grow` after it: `row` then holds every candidate so far, and
/// `take` is handed the whole of it with where the new row starts.
#[inline(always)]
fn grown_candidate_rows(
    doc: &Document,
    similarity: HeadSimilarity,
    transform: &TransformKind,
    block: &mut Vec<f32>,
    (row, grow): (&mut Vec<f32>, bool),
    mut triangles: Option<&mut dyn SimilarityTriangles>,
    mut take: impl FnMut(&[f32], usize),
) {
    let (mut column, mut whole_row) = (Vec::new(), Vec::new());
    // Inlined into the caller's vectors (a closure is compiled apart).
    for_each_row_from_diagonal(
        similarity,
        doc.t,
        block,
        #[inline(always)]
        |i, s, first| {
            if let Some(triangles) = triangles.as_deref_mut() {
                let from_diagonal = &s[i - first..];
                column.clear();
                transform.extend_column(i, i..doc.t, from_diagonal, &mut column);
                let whole_row = triangles.wants_rows().then(|| {
                    whole_row.clear();
                    transform.extend(i, i..doc.t, from_diagonal, &mut whole_row);
                    whole_row.as_slice()
                });
                triangles.add(i, &column, whole_row);
            }
            if doc.content_index[i] == u32::MAX {
                return;
            }
            let own = doc.content_runs.partition_point(|run| run.end <= i);
            let rest = i + 1..doc.content_runs[own].end;
            let at =
                |columns: &std::ops::Range<usize>| &s[columns.start - first..columns.end - first];
            if !grow {
                row.clear();
            }
            let start = row.len();
            transform.extend(i, rest.clone(), at(&rest), row);
            for later in &doc.content_runs[own + 1..] {
                transform.extend(i, later.clone(), at(later), row);
            }
            take(row, start);
        },
    );
}

widest! {
    /// One head's figures and its part of its layer's sums.
    fn analyse_head(
        doc: &Document,
        attention: Option<AttentionFigures>,
        similarity: HeadSimilarity,
        triangles: Option<&mut dyn SimilarityTriangles>,
        scratch: &mut Scratch,
    ) -> HeadPart = analyse_head_body;
}

/// One head's figures from its S and, where given, its passes over P (and
/// N′); `triangles` sees S' as the first pass over it reads it.
#[inline(always)]
fn analyse_head_body(
    doc: &Document,
    attention: Option<AttentionFigures>,
    similarity: HeadSimilarity,
    triangles: Option<&mut dyn SimilarityTriangles>,
    scratch: &mut Scratch,
) -> HeadPart {
    let t = doc.t;
    let mut block = std::mem::take(&mut scratch.block);
    let transform = TransformKind::new(similarity, t, doc.options.similarity, &mut block);

    let top_fraction_k = match doc.options.selection {
        Selection::TopFraction { q } => Some(top_fraction_count(q, doc.pair_count)),
        _ => None,
    };
    let mut candidates = std::mem::take(&mut scratch.candidates);
    let mut row = std::mem::take(&mut scratch.row);
    let mut sums = MomentSums::default();
    // A head of few candidates keeps every one: letting go of the weakest
    // as they come costs more there than selecting once.
    let strongest = top_fraction_k.filter(|_| !candidates.keeps_whole_from_start(doc.pair_count));
    candidates.begin(strongest, doc.pair_count);
    if strongest.is_some() {
        candidate_rows(
            doc,
            similarity,
            &transform,
            &mut block,
            &mut row,
            triangles,
            #[inline(always)]
            |row| {
                sums.add(row);
                candidates.add(row);
            },
        );
    } else {
        // Every candidate is kept: each row is written where it is kept,
        // and its moments and largest |S'| read there while it is in the
        // cache, not copied through a row and a chunk.
        candidates.fill_every_one(
            #[inline(always)]
            |values| {
                let mut largest = 0.0f32;
                grown_candidate_rows(
                    doc,
                    similarity,
                    &transform,
                    &mut block,
                    (values, true),
                    triangles,
                    #[inline(always)]
                    |values, start| {
                        largest = largest.max(largest_magnitude(&values[start..]));
                        sums.add_grown(values, false);
                    },
                );
                sums.add_grown(values, true);
                largest
            },
        );
    }
    let moments = sums.moments();

    let mut histogram = vec![0.0; t];
    let mut pairs = WeightedPairs::new(doc, scratch, &mut histogram);
    let mut ties = None;
    // The number of selected pairs where they are not listed.
    let mut counted_only = None;
    let selected: Vec<(u32, u32)> = match doc.options.selection {
        Selection::TopFraction { .. } => {
            let k = top_fraction_k.unwrap_or(0);
            let keys = &mut pairs.scratch.keys;
            let keep_best = k <= doc.pairs_kept_at_most;
            let mut kept_best =
                (!candidates.counted()).then(|| candidates.strongest(k, keys, keep_best));
            if let Some((_, _, Some(rule))) = &kept_best {
                if !candidates.keeps_every_weighted(rule) {
                    // A candidate let go might tie: every one, taken again
                    // (counted, past what a thread may keep).
                    if candidates.may_keep_whole(doc.pair_count) {
                        candidates.begin(None, doc.pair_count);
                    } else {
                        candidates.begin_counting(k, doc.pair_count);
                    }
                    candidate_rows(
                        doc,
                        similarity,
                        &transform,
                        &mut block,
                        &mut row,
                        None,
                        #[inline(always)]
                        |row| candidates.add(row),
                    );
                    kept_best =
                        (!candidates.counted()).then(|| candidates.strongest(k, keys, keep_best));
                }
            }
            match kept_best {
                Some((found, best, rule)) => {
                    if let Some(rule) = rule {
                        // Most candidates weigh 0: one f32 comparison passes them over.
                        let lowest = rule.lowest_weighted();
                        let mut walk = doc.pair_walk();
                        candidates.for_each_at_least(
                            lowest,
                            #[inline(always)]
                            |at, v| {
                                let pair = walk.pair(candidates.pair_index(at));
                                pairs.add(pair, rule.weight(v))
                            },
                        );
                        ties = Some(rule.share);
                    }
                    if !keep_best {
                        counted_only = Some(found);
                    }
                    best.into_iter()
                        .map(|at| doc.pair(candidates.pair_index(at)))
                        .collect()
                }
                None => {
                    let (best, rule) = candidates.select_counted(
                        k,
                        keep_best,
                        |take| {
                            candidate_rows(
                                doc, similarity, &transform, &mut block, &mut row, None, take,
                            )
                        },
                        |pair, weight| pairs.add(doc.pair(pair), weight),
                    );
                    ties = rule.map(|rule| rule.share);
                    best.map_or_else(
                        || {
                            counted_only = Some(k);
                            Vec::new()
                        },
                        |best| best.into_iter().map(|pair| doc.pair(pair)).collect(),
                    )
                }
            }
        }
        Selection::AboveMean { z } => match moments {
            Some(m) => {
                let threshold = m.mean + z * m.std;
                let keys = &mut pairs.scratch.keys;
                keys.clear();
                keys.extend(
                    candidates
                        .values
                        .iter()
                        .enumerate()
                        .filter(|&(_, &v)| f64::from(v) > threshold)
                        .map(|(p, &v)| rank_key(v, p)),
                );
                keys.sort_unstable();
                let chosen: Vec<(u32, u32)> =
                    keys.iter().map(|&key| doc.pair(key_index(key))).collect();
                for &pair in &chosen {
                    pairs.add(pair, 1.0);
                }
                chosen
            }
            None => Vec::new(),
        },
        Selection::TopKPerRow { k } => {
            let chosen = top_k_per_row(doc, (&transform, similarity), k, pairs.scratch, &mut block);
            let weights = std::mem::take(&mut pairs.scratch.pair_weights);
            for (pair, &w) in doc.pairs().zip(&weights) {
                pairs.add(pair, w);
            }
            pairs.scratch.pair_weights = weights;
            chosen
        }
    };
    let mut pooled = PooledPairs::default();
    let mut figures = pairs.finish(&mut pooled);
    figures.ties = ties;
    let mut separators = None;
    if let Some(attention) = attention {
        figures.attention_stats = Some(attention.plain.stats);
        let f = &mut figures;
        (
            f.separator_attention,
            f.sink_attention,
            f.previous_token_score,
            f.duplicate_token_score,
            f.induction_score,
            f.self_score,
            f.role,
        ) = attention.plain.head_figures();
        if let Some(pass) = &attention.weighted {
            (
                f.separator_attention_vw,
                f.sink_attention_vw,
                f.previous_token_score_vw,
                f.duplicate_token_score_vw,
                f.induction_score_vw,
                f.self_score_vw,
                f.role_vw,
            ) = pass.head_figures();
        }
        separators = Some(attention.separators);
    }
    figures.selected_pairs = if let Some(count) = counted_only {
        SelectedPairs::counted(count)
    } else if selected.len() <= doc.pairs_kept_at_most {
        selected.into_iter().collect()
    } else {
        SelectedPairs::counted(selected.len())
    };
    // Its S′ for its layer's profile, where every candidate was kept (a
    // spare buffer left in its place for the next head).
    let terms = ProfileTerms { transform, moments };
    let kept = candidates.keeps_whole_from_start(doc.pair_count)
        && candidates.every_one(doc.pair_count).is_some();
    let profile = match terms.z_scores() {
        _ if !kept => ProfileShare::Unknown,
        None => ProfileShare::Nothing,
        Some(moments) => {
            let spare = scratch.spare_values.pop().unwrap_or_default();
            ProfileShare::Values(candidates.swap_values(spare), moments)
        }
    };
    scratch.candidates = candidates;
    scratch.row = row;
    scratch.block = block;
    HeadPart {
        figures,
        terms,
        histogram,
        pooled,
        separators,
        profile,
    }
}

/// Keeps `value` as head `head`'s among a layer's heads given so far (in
/// any order, so the slots grow as heads come).
fn keep_for_head<T>(heads: &mut Vec<Option<T>>, head: usize, value: T) {
    if heads.len() <= head {
        heads.resize_with(head + 1, || None);
    }
    heads[head] = Some(value);
}

/// The lock's data, whether or not a thread panicked while holding it (the
/// data is whole between the statements that change it).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The per-head figures of ANALYSIS.md §4 that depend only on the selected
/// pairs, as weighted means (§3): each pair adds with its weight.
struct WeightedPairs<'a> {
    doc: &'a Document<'a>,
    scratch: &'a mut Scratch,
    histogram: &'a mut [f64],
    weight: f64,
    distance: f64,
    same: f64,
    repeated: f64,
    local: f64,
}

impl<'a> WeightedPairs<'a> {
    fn new(doc: &'a Document<'a>, scratch: &'a mut Scratch, histogram: &'a mut [f64]) -> Self {
        for buffer in [&mut scratch.endpoint_weight, &mut scratch.repeat_weight] {
            buffer.clear();
            buffer.resize(doc.t, 0.0);
        }
        Self {
            doc,
            scratch,
            histogram,
            weight: 0.0,
            distance: 0.0,
            same: 0.0,
            repeated: 0.0,
            local: 0.0,
        }
    }

    #[inline(always)]
    fn add(&mut self, (i, j): (u32, u32), w: f64) {
        if w <= 0.0 {
            return;
        }
        let (i, j) = (i as usize, j as usize);
        let ids = &self.doc.tokens.input_ids;
        let d = j - i;
        let same = self.doc.same_sentence(i, j);
        self.weight += w;
        self.distance += w * d as f64;
        self.histogram[d] += w;
        if same {
            self.same += w;
            if d <= self.doc.options.local_window {
                self.local += w;
            }
        }
        self.scratch.endpoint_weight[i] += w;
        self.scratch.endpoint_weight[j] += w;
        if ids[i] == ids[j] {
            self.repeated += w;
            self.scratch.repeat_weight[i] += w;
        }
    }

    #[inline(always)]
    fn finish(self, pooled: &mut PooledPairs) -> HeadFigures {
        pooled.weight += self.weight;
        pooled.distance += self.distance;
        pooled.same += self.same;
        if self.weight <= 0.0 {
            return HeadFigures::default();
        }
        let doc = self.doc;
        let ids = &doc.tokens.input_ids;
        // Endpoint weight and weight of same-id pairs, per token id (the
        // content positions grouped by id, ascending).
        let mut by_id: Vec<(u32, f64, f64)> = Vec::new();
        for &p in &doc.content_by_id {
            let (endpoint, repeat) = (
                self.scratch.endpoint_weight[p],
                self.scratch.repeat_weight[p],
            );
            match by_id.last_mut() {
                Some(last) if last.0 == ids[p] => {
                    last.1 += endpoint;
                    last.2 += repeat;
                }
                _ => by_id.push((ids[p], endpoint, repeat)),
            }
        }
        let largest = by_id.iter().map(|g| g.1).fold(0.0, f64::max);
        // The smallest id within 1e-9 of the largest endpoint weight.
        let &(focus, endpoint, repeat) = by_id
            .iter()
            .find(|g| g.1 >= largest - FOCUS_TIE)
            .expect("a selected pair has endpoints");
        // Pairs touching the focus id: its endpoint weight counts a pair of
        // two focus tokens twice. (Summed in another order than the total,
        // so it may pass it by a rounding.)
        let focused = (endpoint - repeat).clamp(0.0, self.weight);

        let share = |x: f64| ratio(x, self.weight);
        let repetition_fraction = share(self.repeated);
        let focus_share = share(focused);
        let local_fraction = share(self.local);
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
            mean_distance: share(self.distance),
            same_sentence_fraction: share(self.same),
            repetition_fraction,
            focus_token_id: Some(focus),
            focus_token: doc.tokens.text_of(focus).map(str::to_owned),
            focus_share,
            local_fraction,
            category: Some(category),
            ..HeadFigures::default()
        }
    }
}

/// Endpoint weights this close to the largest tie for the focus token.
const FOCUS_TIE: f64 = 1e-9;

fn ratio(x: f64, total: f64) -> Option<f64> {
    (total > 0.0).then(|| x / total)
}

fn fraction(count: usize, total: usize) -> Option<f64> {
    (total > 0).then(|| count as f64 / total as f64)
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[CLS]`-less text of `t` tokens in sentences of 37, each closed by a
    /// separator (id 2), a comma every 5th token, words repeating.
    fn tokens(t: usize, causal: bool) -> TokenSequence {
        let mut seq = TokenSequence {
            sep_id: 2,
            cls_id: 1,
            causal,
            ..TokenSequence::default()
        };
        for i in 0..t {
            let (id, text) = match i {
                0 => (1, "[CLS]".to_owned()),
                _ if i % 37 == 36 => (2, "[SEP]".to_owned()),
                _ if i % 5 == 4 => (3, ",".to_owned()),
                _ => (10 + (i * 7 % 23) as u32, format!("w{}", i * 7 % 23)),
            };
            seq.special.push(id <= 2 && !causal);
            seq.sentence_ids.push((i > 0).then_some(i / 37));
            seq.input_ids.push(id);
            seq.token_texts.push(text);
            seq.offsets.push(None);
        }
        seq
    }

    /// P (rows summing to 1, 0 past the query for a causal model) and S for
    /// `heads` heads, from a fixed generator; the last head's S is flat to
    /// float noise, as a sink head's is.
    fn squares(t: usize, heads: usize, causal: bool) -> (Vec<f32>, Vec<f32>) {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let (mut attention, mut similarity) = (Vec::new(), Vec::new());
        for h in 0..heads {
            for i in 0..t {
                let seen = if causal { i + 1 } else { t };
                let row: Vec<f32> = (0..t)
                    .map(|j| if j < seen { next().powi(4) } else { 0.0 })
                    .collect();
                let sum: f32 = row.iter().sum();
                attention.extend(row.iter().map(|p| p / sum));
                similarity.extend((0..t).map(|_| {
                    if h + 1 == heads {
                        3.0 + next() * 1e-6
                    } else {
                        next() * 4.0 - 1.0
                    }
                }));
            }
        }
        (attention, similarity)
    }

    /// A layer's figures and moments as text: Debug prints the shortest
    /// text that reads back to the same float, so equal texts are equal
    /// bits.
    fn layer_text(layer: &AnalysedLayer) -> String {
        let moments: Vec<_> = (layer.terms.iter())
            .map(|terms| terms.moments.map(|m| (m.mean, m.std)))
            .collect();
        format!("{:?} {moments:?}", layer.figures)
    }

    /// Every candidate index names the pair the pair order puts there,
    /// from 2 content positions to many.
    #[test]
    fn each_pair_index_finds_its_pair() {
        let options = AnalysisOptions::default();
        for t in [3, 4, 5, 40, 75, 400, 2_000] {
            let tokens = tokens(t, false);
            let doc = Document::new(&tokens, &options);
            let (mut walk, mut skipping) = (doc.pair_walk(), doc.pair_walk());
            for (p, pair) in doc.pairs().enumerate() {
                assert_eq!(doc.pair(p), pair, "T {t}, pair {p}");
                assert_eq!(walk.pair(p), pair, "walked, T {t}, pair {p}");
                if p % 37 == 0 {
                    assert_eq!(skipping.pair(p), pair, "skipped to, T {t}, pair {p}");
                }
                assert_eq!(doc.pair_index(pair.0 as usize, pair.1 as usize), p);
            }
        }
    }

    #[test]
    fn same_sentence_pairs_are_counted_as_pair_by_pair() {
        let options = AnalysisOptions::default();
        for (t, causal) in [(3, false), (40, false), (75, true), (400, false)] {
            let tokens = tokens(t, causal);
            let doc = Document::new(&tokens, &options);
            let pair_by_pair = (doc.pairs())
                .filter(|&(i, j)| doc.same_sentence(i as usize, j as usize))
                .count();
            assert!(pair_by_pair > 0 || t < 5, "T {t}: no pair in one sentence");
            assert_eq!(doc.same_sentence_pairs(), pair_by_pair, "T {t}");
        }
    }

    /// A flat head counted instead of kept whole (as past what a thread
    /// keeps, at long inputs) has the figures of one kept whole, to the
    /// bit, its pairs listed or only counted.
    #[test]
    fn counted_candidates_give_the_figures_of_kept_ones() {
        // 79,800 candidates: past the first letting go (65,536).
        let (t, heads) = (400, 3);
        for causal in [false, true] {
            let tokens = tokens(t, causal);
            let (attention, similarity) = squares(t, heads, causal);
            let value_norms = vec![1.0; heads * t];
            let squares = LayerSquares {
                attention: &attention,
                attention_entropy: &[],
                similarity: &similarity,
                value_norms: &value_norms,
                heads,
            };
            for (similarity, pairs_kept_at_most) in [
                (SimilarityVariant::Raw, SelectedPairs::KEPT_AT_MOST),
                (SimilarityVariant::Cosine, 10),
            ] {
                let options = AnalysisOptions {
                    similarity,
                    ..AnalysisOptions::default()
                };
                let mut doc = Document::new(&tokens, &options);
                doc.pairs_kept_at_most = pairs_kept_at_most;
                let layer = |scratch: &mut Scratch| {
                    analyse_layer(&doc, squares, scratch, &mut [], Default::default())
                };
                let kept = layer(&mut Scratch::default());
                let mut counting = Scratch {
                    candidates: Candidates::keeping_whole_at_most(0),
                    ..Scratch::default()
                };
                let counted = layer(&mut counting);
                // The last head, the flat one, was counted.
                assert!(counting.candidates.counted());
                assert_eq!(layer_text(&kept), layer_text(&counted), "{options:?}");
                let flat = &counted.figures.heads[heads - 1];
                assert_eq!(flat.selected_pairs.is_kept(), pairs_kept_at_most > 10);
                assert!(flat.ties.is_some_and(|ties| ties.tied > 70_000));
            }
        }
    }

    /// The figures compiled for the CPU's widest vectors (`widest!`) are
    /// those of the plain code to the bit, for every rule and variant. (The
    /// vectors differ only in an optimised build: `cargo test --release`.)
    #[test]
    fn every_instruction_set_gives_the_same_bits() {
        let (t, heads) = (300, 3);
        for causal in [false, true] {
            let tokens = tokens(t, causal);
            let (attention, similarity) = squares(t, heads, causal);
            let value_norms: Vec<f32> = (0..heads * t).map(|k| (k % 17) as f32 * 0.3).collect();
            let squares = LayerSquares {
                attention: &attention,
                attention_entropy: &[],
                similarity: &similarity,
                value_norms: &value_norms,
                heads,
            };
            for (selection, similarity) in [
                (Selection::default(), SimilarityVariant::Raw),
                (Selection::AboveMean { z: 2.0 }, SimilarityVariant::Cosine),
                (Selection::TopKPerRow { k: 2 }, SimilarityVariant::ZScore),
                (Selection::default(), SimilarityVariant::RowOverDiagonal),
            ] {
                let options = AnalysisOptions {
                    selection,
                    similarity,
                    ..AnalysisOptions::default()
                };
                let doc = Document::new(&tokens, &options);
                let widest = analyse_layer(
                    &doc,
                    squares,
                    &mut Scratch::default(),
                    &mut [],
                    Default::default(),
                );
                let plain = analyse_layer_body(
                    &doc,
                    squares,
                    &mut Scratch::default(),
                    &mut [],
                    Default::default(),
                );
                assert_eq!(
                    layer_text(&widest),
                    layer_text(&plain),
                    "{options:?}, causal {causal}"
                );
                assert!(widest.figures.heads[0].mean_distance.is_some());
                assert!(widest.figures.heads[0].sink_attention_vw.is_some());
            }
        }
    }

    /// A head that selects more pairs than it keeps keeps their number, and
    /// `head_selected_pairs` makes them again: the same ranking whose first
    /// pairs a head that kept fewer holds (the rank order is total), and
    /// every pair of a head that kept them all.
    #[test]
    fn pairs_not_kept_are_made_again() {
        let t = 800;
        let tokens = tokens(t, false);
        let (attention, similarity) = squares(t, 2, false);
        let captures = Captures {
            layers: 1,
            heads: 2,
            tokens: t,
            attentions: attention,
            similarity,
            ..Captures::default()
        };
        let with = |q: f64| AnalysisOptions {
            selection: Selection::TopFraction { q },
            ..AnalysisOptions::default()
        };
        let (few, many) = (with(0.4), with(0.95));
        let kept = analyze(&tokens, &captures, &few);
        let counted = analyze(&tokens, &captures, &many);
        assert_eq!(counted.options, many);
        for h in 0..2 {
            let head = HeadId::new(0, h);
            let kept_pairs = &kept.head(head).unwrap().selected_pairs;
            let counted_pairs = &counted.head(head).unwrap().selected_pairs;
            assert!(kept_pairs.is_kept() && !counted_pairs.is_kept());
            assert!(counted_pairs.len() > SelectedPairs::KEPT_AT_MOST);
            assert_eq!(counted_pairs.iter().count(), 0);
            let made = head_selected_pairs(&tokens, &captures, &many, head);
            assert!(made.is_kept());
            assert_eq!(made.len(), counted_pairs.len());
            let first: Vec<_> = made.iter().take(kept_pairs.len()).collect();
            assert_eq!(*kept_pairs, first, "head {h}");
            let again = head_selected_pairs(&tokens, &captures, &few, head);
            assert_eq!(again, *kept_pairs, "head {h}");
        }
    }

    /// `[CLS] A B C A B [SEP]` with ids 1, 10, 11, 12, 10, 11, 2.
    fn repeated_tokens(causal: bool) -> TokenSequence {
        let ids = [1, 10, 11, 12, 10, 11, 2];
        TokenSequence {
            input_ids: ids.to_vec(),
            token_texts: ids.iter().map(|id| format!("t{id}")).collect(),
            special: ids.iter().map(|&id| id <= 2).collect(),
            sentence_ids: ids.iter().map(|&id| (id != 1).then_some(0)).collect(),
            offsets: vec![None; ids.len()],
            sep_id: 2,
            cls_id: 1,
            causal,
            ..TokenSequence::default()
        }
    }

    /// A T×T attention whose row i is `row(i)`: a list of (key, weight).
    fn attention_of(t: usize, row: impl Fn(usize) -> Vec<(usize, f32)>) -> Vec<f32> {
        let mut p = vec![0.0f32; t * t];
        for i in 0..t {
            for (j, w) in row(i) {
                p[i * t + j] += w;
            }
        }
        p
    }

    /// Hand-built heads whose role scores are known exactly (ANALYSIS.md
    /// §9): an induction head, a previous-token head, a duplicate-token
    /// head, a uniform head and one whose two largest scores tie.
    #[test]
    fn role_scores_of_hand_built_heads() {
        let tokens = repeated_tokens(false);
        let t = tokens.len();
        // The earlier occurrence of rows 4 and 5 is at 1 and 2; the token
        // after it at 2 and 3.
        let induction = attention_of(t, |i| match i {
            4 => vec![(2, 1.0)],
            5 => vec![(3, 1.0)],
            _ => vec![(0, 1.0)],
        });
        let previous = attention_of(t, |i| vec![(i.saturating_sub(1), 1.0)]);
        let duplicate = attention_of(t, |i| match i {
            4 => vec![(1, 0.75), (6, 0.25)],
            5 => vec![(2, 0.75), (6, 0.25)],
            _ => vec![(i, 1.0)],
        });
        let uniform = attention_of(t, |_| (0..t).map(|j| (j, 1.0 / t as f32)).collect());
        let tied = attention_of(t, |i| vec![(i, 0.5), (0, 0.5)]);
        let heads = [induction, previous, duplicate, uniform, tied];
        let attention: Vec<f32> = heads.concat();
        let similarity = vec![0.5f32; attention.len()];
        let options = AnalysisOptions::default();
        let doc = Document::new(&tokens, &options);
        let squares = LayerSquares {
            attention: &attention,
            attention_entropy: &[],
            similarity: &similarity,
            value_norms: &[],
            heads: heads.len(),
        };
        let layer = analyse_layer(
            &doc,
            squares,
            &mut Scratch::default(),
            &mut [],
            Default::default(),
        );
        let scores = |h: usize| {
            let f = &layer.figures.heads[h];
            (
                [
                    f.previous_token_score,
                    f.duplicate_token_score,
                    f.induction_score,
                    f.self_score,
                    f.sink_attention,
                    f.separator_attention,
                ],
                f.role,
            )
        };
        let close = |a: [Option<f64>; 6], b: [f64; 6]| {
            a.iter()
                .zip(b)
                .all(|(a, b)| a.is_some_and(|a| (a - b).abs() < 1e-6))
        };
        // Content rows 1..=5; previous-token rows 2..=5; duplicate and
        // induction rows 4 and 5.
        let expected = [
            ([0.0, 0.0, 1.0, 0.0, 0.6, 0.0], Role::Induction),
            ([1.0, 0.0, 0.0, 0.0, 0.2, 0.0], Role::PreviousToken),
            ([0.0, 0.75, 0.0, 0.6, 0.0, 0.1], Role::DuplicateToken),
            (
                [
                    1.0 / 7.0,
                    1.0 / 7.0,
                    1.0 / 7.0,
                    1.0 / 7.0,
                    1.0 / 7.0,
                    1.0 / 7.0,
                ],
                Role::Mixed,
            ),
            ([0.0, 0.0, 0.0, 0.5, 0.5, 0.0], Role::Mixed),
        ];
        for (h, (values, role)) in expected.into_iter().enumerate() {
            let (ours, our_role) = scores(h);
            assert!(close(ours, values), "head {h}: {ours:?} vs {values:?}");
            assert_eq!(our_role, Some(role), "head {h}");
        }

        // Without a repeated token, duplicate and induction are undefined
        // (and compete with nothing); without P, every score is.
        let mut distinct = tokens.clone();
        distinct.input_ids = vec![1, 10, 11, 12, 13, 14, 2];
        let doc = Document::new(&distinct, &options);
        let layer = analyse_layer(
            &doc,
            squares,
            &mut Scratch::default(),
            &mut [],
            Default::default(),
        );
        let f = &layer.figures.heads[1];
        assert_eq!((f.duplicate_token_score, f.induction_score), (None, None));
        assert_eq!(f.role, Some(Role::PreviousToken));
        let without_p = LayerSquares {
            attention: &[],
            ..squares
        };
        let layer = analyse_layer(
            &doc,
            without_p,
            &mut Scratch::default(),
            &mut [],
            Default::default(),
        );
        let f = &layer.figures.heads[0];
        assert_eq!((f.self_score, f.role), (None, None));
    }

    /// Value weighting (ANALYSIS.md §9): a head that puts 0.6 of each row
    /// on the first position and 0.4 on the previous token is a sink by P;
    /// when the first position's value writes a tenth of what the others
    /// write, N′ gives the previous token 0.4 / 0.46 of each row, and the
    /// head is a previous-token head. Equal norms change nothing; without
    /// norms there are no `_vw` figures.
    #[test]
    fn value_weighting_moves_a_quiet_sink() {
        let tokens = repeated_tokens(true);
        let t = tokens.len();
        let head = attention_of(t, |i| match i {
            0 => vec![(0, 1.0)],
            1 => vec![(0, 1.0)],
            _ => vec![(0, 0.6), (i - 1, 0.4)],
        });
        let similarity = vec![0.5f32; t * t];
        let options = AnalysisOptions::default();
        let doc = Document::new(&tokens, &options);
        let figures = |norms: &[f32]| {
            let squares = LayerSquares {
                attention: &head,
                attention_entropy: &[],
                similarity: &similarity,
                value_norms: norms,
                heads: 1,
            };
            analyse_layer(
                &doc,
                squares,
                &mut Scratch::default(),
                &mut [],
                Default::default(),
            )
            .figures
        };
        let mut quiet_sink = vec![1.0f32; t];
        quiet_sink[0] = 0.1;
        let layer = figures(&quiet_sink);
        let f = &layer.heads[0];
        // Content rows 1..=5: row 1 sees only the sink (1 in N′ too).
        let previous_vw = 0.4 / (0.06 + 0.4);
        let (sink, sink_vw) = (
            (1.0 + 4.0 * 0.6) / 5.0,
            (1.0 + 4.0 * (1.0 - previous_vw)) / 5.0,
        );
        assert!((f.sink_attention.unwrap() - sink).abs() < 1e-6);
        assert!((f.sink_attention_vw.unwrap() - sink_vw).abs() < 1e-6);
        assert!((f.previous_token_score_vw.unwrap() - previous_vw).abs() < 1e-6);
        assert_eq!(
            (f.role, f.role_vw),
            (Some(Role::Sink), Some(Role::PreviousToken))
        );
        assert_eq!(layer.sink_attention_vw, f.sink_attention_vw);

        let even = figures(&vec![2.5; t]);
        let f = &even.heads[0];
        assert!((f.sink_attention_vw.unwrap() - f.sink_attention.unwrap()).abs() < 1e-6);
        assert_eq!(f.role_vw, f.role);
        assert!(
            (even.separator_attention_vw.unwrap() - even.separator_attention.unwrap()).abs() < 1e-6
        );

        let plain = figures(&[]);
        assert_eq!(
            (plain.heads[0].sink_attention_vw, plain.heads[0].role_vw),
            (None, None)
        );
        assert_eq!(plain.sink_attention_vw, None);
    }

    /// The role rule: at least 0.4, and 0.1 above the second.
    #[test]
    fn role_needs_its_floor_and_margin() {
        // Every role but `Mixed`, in `Role::ALL`'s order.
        let role = |scores: [f64; 6]| {
            Role::of_scores(std::array::from_fn(|k| (Role::ALL[k], Some(scores[k])))).unwrap()
        };
        assert_eq!(role([0.0, 0.0, 0.5, 0.3, 0.0, 0.0]), Role::Induction);
        assert_eq!(role([0.0, 0.0, 0.5, 0.45, 0.0, 0.0]), Role::Mixed);
        assert_eq!(role([0.39, 0.0, 0.0, 0.0, 0.0, 0.0]), Role::Mixed);
        assert_eq!(role([0.0, 0.0, 0.0, 0.0, 0.9, 0.1]), Role::Separator);
        assert_eq!(role([0.0, 0.0, 0.0, 0.0, 0.1, 0.9]), Role::SelfAttention);
        assert_eq!(Role::of_scores([(Role::Sink, None); 6]), None);
        assert_eq!(
            serde_json::to_string(&Role::SelfAttention).unwrap(),
            "\"self\""
        );
    }
}
