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
//! variance) is an `Option`, serialised as JSON `null`; no NaN ever leaves
//! this module. The module is pure: std and serde only, no GUI, no tensors.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::captures::{Captures, HeadId};
use crate::tokens::TokenSequence;

/// Which similarity the pair selection ranks (ANALYSIS.md §2).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
#[serde(rename_all = "snake_case")]
pub enum SimilarityVariant {
    /// The raw dot products O·Oᵀ.
    #[default]
    Raw,
    /// S_ij / sqrt(S_ii · S_jj).
    Cosine,
    /// S_ij / S_ii: each row relative to the token's own norm.
    RowOverDiagonal,
    /// (S − mean) / std over all T×T entries of the head.
    ZScore,
}

impl SimilarityVariant {
    /// Every variant, in the order the settings list them.
    pub const ALL: [SimilarityVariant; 4] = [
        SimilarityVariant::Raw,
        SimilarityVariant::Cosine,
        SimilarityVariant::RowOverDiagonal,
        SimilarityVariant::ZScore,
    ];

    /// Short human-readable name.
    pub fn label(self) -> &'static str {
        match self {
            SimilarityVariant::Raw => "raw dot product",
            SimilarityVariant::Cosine => "cosine",
            SimilarityVariant::RowOverDiagonal => "row / diagonal",
            SimilarityVariant::ZScore => "z-score within head",
        }
    }
}

/// How the high-similarity pairs of a head are chosen (ANALYSIS.md §3).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Selection {
    /// The k = max(1, floor(q·N)) candidates with the largest S, ties by pair order.
    TopFraction { q: f64 },
    /// Every candidate with S > mean + z·std (over the head's candidates).
    AboveMean { z: f64 },
    /// Each content token's k most similar content partners (row values
    /// S[i, j], ties by position), as unordered pairs without duplicates.
    TopKPerRow { k: usize },
}

impl Selection {
    pub const DEFAULT_Q: f64 = 0.01;
    pub const DEFAULT_Z: f64 = 3.0;
    pub const DEFAULT_K: usize = 1;
}

impl Default for Selection {
    fn default() -> Self {
        Selection::TopFraction {
            q: Selection::DEFAULT_Q,
        }
    }
}

/// Every user-adjustable choice of the analysis; the defaults are ANALYSIS.md's.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default)]
pub struct AnalysisOptions {
    pub selection: Selection,
    pub similarity: SimilarityVariant,
    /// w: the largest j − i a same-sentence pair may span to count as local.
    pub local_window: usize,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        Self {
            selection: Selection::default(),
            similarity: SimilarityVariant::default(),
            local_window: 4,
        }
    }
}

/// What a head's selected pairs mostly are (ANALYSIS.md §4).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Repetition,
    Focus,
    Local,
    Mixed,
}

impl Category {
    pub const ALL: [Category; 4] = [
        Category::Repetition,
        Category::Focus,
        Category::Local,
        Category::Mixed,
    ];

    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Repetition => "repetition",
            Category::Focus => "focus",
            Category::Local => "local",
            Category::Mixed => "mixed",
        }
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The classic per-head attention statistics of Clark et al. (2019), "What
/// does BERT look at?": each a mean over the query rows of the head's P.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct AttentionStats {
    /// −Σ p ln p (nats), 0·ln 0 = 0.
    pub entropy: f64,
    /// Attention to `[CLS]` keys.
    pub cls: f64,
    /// Attention to `[SEP]` keys.
    pub sep: f64,
    /// Attention to punctuation content tokens.
    pub punctuation: f64,
    /// P[i, i].
    pub self_attention: f64,
    /// P[i, i − 1], over the rows that have a previous token.
    pub previous: f64,
    /// P[i, i + 1], over the rows that have a next token.
    pub next: f64,
}

/// The figures of one head (ANALYSIS.md §4); `None` where undefined.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct HeadFigures {
    pub mean_distance: Option<f64>,
    pub same_sentence_fraction: Option<f64>,
    pub repetition_fraction: Option<f64>,
    pub focus_token_id: Option<u32>,
    /// The focus token's text.
    pub focus_token: Option<String>,
    pub focus_share: Option<f64>,
    pub local_fraction: Option<f64>,
    pub separator_attention: Option<f64>,
    pub category: Option<Category>,
    pub attention_stats: AttentionStats,
    /// The selected pairs as positions `(i, j)`, `i < j`: in rank order
    /// (largest S first) for the top-fraction and above-mean rules, in pair
    /// order for top-k per row. For highlighting; not exported.
    #[serde(skip)]
    pub selected_pairs: Vec<(usize, usize)>,
}

/// The figures of one layer (ANALYSIS.md §5).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct LayerFigures {
    pub mean_distance: Option<f64>,
    pub same_sentence_fraction: Option<f64>,
    pub separator_attention: Option<f64>,
    pub focus_uniqueness: Option<f64>,
    pub segmentation_accuracy: Option<f64>,
    /// Counts of j − i over the pooled selected pairs; index = distance,
    /// length T (index 0 is always 0).
    pub distance_histogram: Vec<u64>,
    pub heads: Vec<HeadFigures>,
}

/// Everything `headscope analyze` reports for one input (ANALYSIS.md §6).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Analysis {
    pub tokens: usize,
    pub content_tokens: usize,
    /// N: candidate pairs per head.
    pub pairs: usize,
    /// k of the top-fraction rule; `None` for the other rules.
    pub selected_per_head: Option<usize>,
    /// Same-sentence share over all candidate pairs: what chance gives.
    pub baseline_same_sentence_fraction: Option<f64>,
    pub input_ids: Vec<u32>,
    /// Filled in by the caller from the input stage; `analyze` leaves 0.
    pub sentences_analysed: usize,
    pub sentences_left_out: usize,
    pub tokens_left_out: usize,
    pub layers: Vec<LayerFigures>,
    /// L×L Pearson correlation of the head-averaged, per-head z-scored S over
    /// the candidate pairs; `None` where undefined.
    pub layer_correlation: Vec<Vec<Option<f64>>>,
}

impl Analysis {
    /// The figures of one head, if the analysis has it.
    pub fn head(&self, id: HeadId) -> Option<&HeadFigures> {
        self.layers.get(id.layer)?.heads.get(id.head)
    }
}

/// k of the top-fraction rule for N candidates: max(1, floor(q·N)), at most
/// N (0 when there is no candidate).
pub fn top_fraction_count(q: f64, candidates: usize) -> usize {
    if candidates == 0 {
        return 0;
    }
    // `as` saturates: a negative or NaN product gives 0, hence k = 1.
    let k = (q * candidates as f64).floor() as usize;
    k.max(1).min(candidates)
}

/// One head's T×T similarity after `variant`. Cosine and row-over-diagonal
/// give 0 where the diagonal makes the denominator zero; z-score gives 0
/// everywhere when the head's S is constant. Non-finite results become 0.
/// Panics unless `raw` holds T×T values.
pub fn transformed_similarity(raw: &[f32], tokens: usize, variant: SimilarityVariant) -> Vec<f32> {
    assert_eq!(raw.len(), tokens * tokens, "similarity must be T×T");
    let transform = Transform::new(raw, tokens, variant);
    let mut out = Vec::with_capacity(raw.len());
    for i in 0..tokens {
        out.extend((0..tokens).map(|j| transform.get(i, j)));
    }
    out
}

/// Computes every figure of ANALYSIS.md §3–§5 for one input.
///
/// Panics if the token sequence and the captures disagree on T or the
/// capture buffers do not have their documented shapes (a programming error).
pub fn analyze(tokens: &TokenSequence, captures: &Captures, options: &AnalysisOptions) -> Analysis {
    let t = captures.tokens;
    let (layers, heads) = (captures.layers, captures.heads);
    assert_eq!(tokens.len(), t, "token sequence and captures disagree on T");
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

    let doc = Document::new(tokens, options);
    assert!(
        doc.pairs.len() <= u32::MAX as usize,
        "too many candidate pairs"
    );

    let selected_per_head = match options.selection {
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

    // Layers are independent; workers take them in turn. Each layer also
    // yields its head-averaged z-scored similarity for the correlation grid.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
        .min(layers)
        .max(1);
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, LayerFigures, Option<Vec<f64>>)> = if threads == 1 {
        (0..layers)
            .map(|l| {
                let (figures, profile) = analyse_layer(&doc, captures, l, &mut Scratch::default());
                (l, figures, profile)
            })
            .collect()
    } else {
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut scratch = Scratch::default();
                        let mut done = Vec::new();
                        loop {
                            let l = next.fetch_add(1, Ordering::Relaxed);
                            if l >= layers {
                                break done;
                            }
                            let (figures, profile) = analyse_layer(&doc, captures, l, &mut scratch);
                            done.push((l, figures, profile));
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("analysis worker panicked"))
                .collect()
        })
    };
    results.sort_by_key(|r| r.0);
    let mut layer_figures = Vec::with_capacity(layers);
    let mut profiles = Vec::with_capacity(layers);
    for (_, figures, profile) in results {
        layer_figures.push(figures);
        profiles.push(profile);
    }

    Analysis {
        tokens: t,
        content_tokens: doc.content.len(),
        pairs: doc.pairs.len(),
        selected_per_head,
        baseline_same_sentence_fraction: baseline,
        input_ids: tokens.input_ids.clone(),
        sentences_analysed: 0,
        sentences_left_out: 0,
        tokens_left_out: 0,
        layers: layer_figures,
        layer_correlation: correlation_matrix(profiles),
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
    captures: &Captures,
    layer: usize,
    scratch: &mut Scratch,
) -> (LayerFigures, Option<Vec<f64>>) {
    let n = doc.pairs.len();
    let mut profile = vec![0.0f64; n];
    let mut heads = Vec::with_capacity(captures.heads);
    let mut histogram = vec![0u64; doc.t];
    let (mut pooled, mut pooled_distance, mut pooled_same) = (0usize, 0usize, 0usize);
    // Σ over heads of P[i, s] for content rows i and separator columns s.
    let mut separator_sums = vec![0.0f32; doc.content.len() * doc.separators.len()];
    for h in 0..captures.heads {
        let id = HeadId::new(layer, h);
        let figures = analyse_head(
            doc,
            captures,
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

    let separator_attention = if doc.content.is_empty() || heads.is_empty() {
        None
    } else {
        let sum: f64 = heads.iter().filter_map(|h| h.separator_attention).sum();
        finite(sum / heads.len() as f64)
    };
    // Among the heads that have a focus token (all of them whenever the rule
    // selects at least one pair per head, as the default always does).
    let mut focus: Vec<u32> = heads.iter().filter_map(|h| h.focus_token_id).collect();
    let with_focus = focus.len();
    focus.sort_unstable();
    focus.dedup();

    let figures = LayerFigures {
        mean_distance: fraction(pooled_distance, pooled),
        same_sentence_fraction: fraction(pooled_same, pooled),
        separator_attention,
        focus_uniqueness: fraction(focus.len(), with_focus),
        segmentation_accuracy: segmentation_accuracy(doc, &separator_sums, captures.heads),
        distance_histogram: histogram,
        heads,
    };
    let profile = (n >= 2 && captures.heads > 0).then_some(profile);
    (figures, profile)
}

fn analyse_head(
    doc: &Document,
    captures: &Captures,
    id: HeadId,
    scratch: &mut Scratch,
    profile: &mut [f64],
    separator_sums: &mut [f32],
) -> HeadFigures {
    let t = doc.t;
    let transform = Transform::new(captures.similarity(id), t, doc.options.similarity);

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
    let (stats, separator_attention) =
        attention_pass(doc, captures.attention(id), separator_sums, first_head);
    figures.attention_stats = stats;
    figures.separator_attention = separator_attention;
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

/// Head-averaged attention (summed in f32 in head order, then divided by H,
/// as numpy's float32 `mean(axis=0)` does); each content token goes to the
/// `[SEP]` it attends to most (the first on ties) and is right when that
/// separator closes its own sentence.
fn segmentation_accuracy(doc: &Document, separator_sums: &[f32], heads: usize) -> Option<f64> {
    let separators = doc.separators.len();
    if doc.content.is_empty() || separators == 0 || heads == 0 {
        return None;
    }
    let h = heads as f32;
    let correct = doc
        .content
        .iter()
        .zip(separator_sums.chunks_exact(separators))
        .filter(|&(&i, sums)| {
            let mut best = 0;
            for (s, &sum) in sums.iter().enumerate().skip(1) {
                if sum / h > sums[best] / h {
                    best = s;
                }
            }
            doc.same_sentence(doc.separators[best], i)
        })
        .count();
    fraction(correct, doc.content.len())
}

/// One pass over a head's attention: the classic statistics, the mean
/// separator attention of the content rows (`None` without content), and
/// the head's share of the layer's separator sums (overwritten by the first
/// head, added to by the others).
fn attention_pass(
    doc: &Document,
    attention: &[f32],
    separator_sums: &mut [f32],
    first_head: bool,
) -> (AttentionStats, Option<f64>) {
    // One logarithm per attention entry (L·H·T² of them) dominates the whole
    // analysis, so the pass gets the CPU's wider vectors where they exist.
    // The result is bit-identical either way: nothing is fused or reordered.
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { attention_pass_avx2(doc, attention, separator_sums, first_head) };
    }
    attention_pass_portable(doc, attention, separator_sums, first_head)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn attention_pass_avx2(
    doc: &Document,
    attention: &[f32],
    separator_sums: &mut [f32],
    first_head: bool,
) -> (AttentionStats, Option<f64>) {
    attention_pass_portable(doc, attention, separator_sums, first_head)
}

#[inline(always)]
fn attention_pass_portable(
    doc: &Document,
    attention: &[f32],
    separator_sums: &mut [f32],
    first_head: bool,
) -> (AttentionStats, Option<f64>) {
    let t = doc.t;
    if t == 0 {
        return (AttentionStats::default(), None);
    }
    let separators = doc.separators.len();
    let mut s = AttentionStats::default();
    let mut content_separator = 0.0;
    let mut sums = separator_sums.chunks_exact_mut(separators.max(1));
    let sum_at = |row: &[f32], at: &[usize]| at.iter().map(|&k| f64::from(row[k])).sum::<f64>();
    // Row by row, so that every lookup hits the row the entropy just read.
    for (i, row) in attention.chunks_exact(t).enumerate() {
        s.entropy += row_entropy(row);
        s.cls += sum_at(row, &doc.cls);
        let separator = sum_at(row, &doc.separators);
        s.sep += separator;
        s.punctuation += sum_at(row, &doc.punctuation);
        s.self_attention += f64::from(row[i]);
        if i >= 1 {
            s.previous += f64::from(row[i - 1]);
        }
        if i + 1 < t {
            s.next += f64::from(row[i + 1]);
        }
        if !doc.tokens.special[i] {
            content_separator += separator;
            if let Some(sums) = sums.next() {
                for (sum, &k) in sums.iter_mut().zip(&doc.separators) {
                    *sum = if first_head { row[k] } else { *sum + row[k] };
                }
            }
        }
    }
    let rows = t as f64;
    let shifted = (t - 1).max(1) as f64;
    let clean = |x: f64| if x.is_finite() { x } else { 0.0 };
    let stats = AttentionStats {
        entropy: clean(s.entropy / rows),
        cls: clean(s.cls / rows),
        sep: clean(s.sep / rows),
        punctuation: clean(s.punctuation / rows),
        self_attention: clean(s.self_attention / rows),
        previous: clean(s.previous / shifted),
        next: clean(s.next / shifted),
    };
    let separator_attention = if doc.content.is_empty() {
        None
    } else {
        finite(content_separator / doc.content.len() as f64)
    };
    (stats, separator_attention)
}

/// −Σ p ln p over one row. Entries below the smallest normal f32 (zero
/// included) contribute nothing (their share is below 1e-36).
#[inline(always)]
fn row_entropy(row: &[f32]) -> f64 {
    // The terms are computed in a plain loop over a block, which vectorises
    // in f32 lanes, and then summed in f64.
    let mut terms = [0.0f32; 64];
    let mut sum = 0.0;
    for block in row.chunks(64) {
        let terms = &mut terms[..block.len()];
        for (term, &p) in terms.iter_mut().zip(block) {
            *term = p_ln_p(p);
        }
        sum += lane_sum(terms, f64::from);
    }
    0.0 - sum
}

/// Σ f(x) with eight independent accumulators: a single running sum is a
/// dependency chain that the compiler may not reorder, eight vectorise.
#[inline(always)]
fn lane_sum(values: &[f32], f: impl Fn(f32) -> f64) -> f64 {
    let mut lanes = [0.0f64; 8];
    let chunks = values.chunks_exact(8);
    let rest: f64 = chunks.remainder().iter().map(|&x| f(x)).sum();
    for chunk in chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane += f(x);
        }
    }
    lanes.iter().sum::<f64>() + rest
}

/// p·ln p in f32, branch-free: Cephes' `logf` (about one ulp), with musl's
/// reduction p = m·2^k, m in [√½, √2). 0 for p below the smallest normal
/// f32 and for NaN.
#[inline(always)]
fn p_ln_p(p: f32) -> f32 {
    let normal = p >= f32::MIN_POSITIVE;
    let x = if normal { p } else { 1.0 };
    let ix = x.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let k = ((ix >> 23) as i32 - 127) as f32;
    let f = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3) - 1.0;
    let z = f * f;
    let poly = ((((((((7.037_683_6e-2 * f - 1.151_461e-1) * f + 1.167_699_84e-1) * f
        - 1.242_014_1e-1)
        * f
        + 1.424_932_3e-1)
        * f
        - 1.666_805_7e-1)
        * f
        + 2.000_071_4e-1)
        * f
        - 2.499_999_4e-1)
        * f
        + 3.333_333e-1)
        * f
        * z;
    // ln 2 split in two as Cephes does: 0.693359375 (355/512, written at f32 precision) is exact.
    let ln = (f + (poly - 2.121_944_4e-4 * k - 0.5 * z)) + 0.693_359_4 * k;
    if normal {
        p * ln
    } else {
        0.0
    }
}

/// One head's similarity as the selection sees it, computed on demand so
/// that no T×T copy is made.
struct Transform<'a> {
    raw: &'a [f32],
    t: usize,
    kind: TransformKind,
}

enum TransformKind {
    Raw,
    /// 1/sqrt(S_ii), or 0 where S_ii is not positive.
    Cosine(Vec<f64>),
    /// S_ii.
    RowOverDiagonal(Vec<f64>),
    /// Mean and std over the head's T×T entries (std 0: everything maps to 0).
    ZScore {
        mean: f64,
        std: f64,
    },
}

impl<'a> Transform<'a> {
    fn new(raw: &'a [f32], t: usize, variant: SimilarityVariant) -> Self {
        let diagonal = || (0..t).map(|i| f64::from(raw[i * t + i]));
        let kind = match variant {
            SimilarityVariant::Raw => TransformKind::Raw,
            SimilarityVariant::Cosine => TransformKind::Cosine(
                diagonal()
                    .map(|d| if d > 0.0 { 1.0 / d.sqrt() } else { 0.0 })
                    .collect(),
            ),
            SimilarityVariant::RowOverDiagonal => {
                TransformKind::RowOverDiagonal(diagonal().collect())
            }
            SimilarityVariant::ZScore => {
                let m = Moments::of(raw).unwrap_or(Moments {
                    mean: 0.0,
                    std: 0.0,
                });
                TransformKind::ZScore {
                    mean: m.mean,
                    std: m.std,
                }
            }
        };
        Self { raw, t, kind }
    }

    fn get(&self, i: usize, j: usize) -> f32 {
        let s = self.raw[i * self.t + j];
        clean(match &self.kind {
            TransformKind::Raw => s,
            TransformKind::Cosine(inv) => cosine(s, inv[i], inv[j]),
            TransformKind::RowOverDiagonal(diag) => over_diagonal(s, diag[i]),
            TransformKind::ZScore { mean, std } => z_score(s, *mean, *std),
        })
    }

    /// Appends S'[i, j] for every j in `columns`: `get` with the variant's
    /// dispatch hoisted out of the loop and contiguous columns copied as
    /// slices, which vectorises.
    fn extend_row(&self, i: usize, columns: std::ops::Range<usize>, out: &mut Vec<f32>) {
        let row = &self.raw[i * self.t..(i + 1) * self.t];
        let values = row[columns.clone()].iter().copied();
        match &self.kind {
            TransformKind::Raw => out.extend(values.map(clean)),
            TransformKind::Cosine(inv) => {
                let a = inv[i];
                out.extend(
                    values
                        .zip(&inv[columns])
                        .map(|(s, &b)| clean(cosine(s, a, b))),
                )
            }
            TransformKind::RowOverDiagonal(diag) => {
                out.extend(values.map(|s| clean(over_diagonal(s, diag[i]))))
            }
            TransformKind::ZScore { mean, std } => {
                out.extend(values.map(|s| clean(z_score(s, *mean, *std))))
            }
        }
    }
}

#[inline(always)]
fn cosine(s: f32, inv_norm_i: f64, inv_norm_j: f64) -> f32 {
    (f64::from(s) * inv_norm_i * inv_norm_j) as f32
}

#[inline(always)]
fn over_diagonal(s: f32, diagonal: f64) -> f32 {
    if diagonal == 0.0 {
        0.0
    } else {
        (f64::from(s) / diagonal) as f32
    }
}

#[inline(always)]
fn z_score(s: f32, mean: f64, std: f64) -> f32 {
    if std > 0.0 {
        ((f64::from(s) - mean) / std) as f32
    } else {
        0.0
    }
}

/// Non-finite similarities (overflow, or NaN from a broken input) count as 0.
#[inline(always)]
fn clean(v: f32) -> f32 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// Mean and population standard deviation, in f64.
#[derive(Clone, Copy)]
struct Moments {
    mean: f64,
    std: f64,
}

impl Moments {
    fn of(values: &[f32]) -> Option<Moments> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = lane_sum(values, f64::from) / n;
        let var = lane_sum(values, |v| (f64::from(v) - mean).powi(2)) / n;
        let std = var.sqrt();
        (mean.is_finite() && std.is_finite()).then_some(Moments { mean, std })
    }
}

/// A u64 whose ascending order is the reference's ranking: larger value
/// first, NaN last, −0 equal to +0, then smaller index first.
#[inline]
fn rank_key(v: f32, index: usize) -> u64 {
    let v = if v == 0.0 { 0.0 } else { v };
    let bits = v.to_bits();
    // Ascending total order of the non-NaN floats, then flipped for descending.
    let ascending = if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    };
    let descending = if v.is_nan() { u32::MAX } else { !ascending };
    (u64::from(descending) << 32) | index as u64
}

#[inline]
fn key_index(key: u64) -> usize {
    (key & 0xffff_ffff) as usize
}

/// Indices of the k best values in rank order: numpy's
/// `np.lexsort((np.arange(n), -v))[:k]`, without sorting all n.
fn top_fraction(values: &[f32], k: usize, keys: &mut Vec<u64>) -> Vec<usize> {
    let k = k.min(values.len());
    if k == 0 {
        return Vec::new();
    }
    keys.clear();
    // A cheap threshold from a strided sample usually leaves only a few times
    // k survivors; every value at least as good as the threshold survives
    // (IEEE comparison: ties and −0/+0 included, NaN, which ranks last, not),
    // so when at least k do, the k best are among them.
    let stride = (values.len() / 4096).max(1);
    if stride > 1 {
        let mut sample: Vec<f32> = values
            .iter()
            .step_by(stride)
            .copied()
            .filter(|v| !v.is_nan())
            .collect();
        let rank = ((k as f64 / values.len() as f64) * sample.len() as f64 * 2.0) as usize + 8;
        if rank < sample.len() {
            let threshold = *sample.select_nth_unstable_by(rank, |a, b| b.total_cmp(a)).1;
            for (p, &v) in values.iter().enumerate() {
                if v >= threshold {
                    keys.push(rank_key(v, p));
                }
            }
            if keys.len() < k {
                keys.clear();
            }
        }
    }
    if keys.is_empty() {
        keys.extend(values.iter().enumerate().map(|(p, &v)| rank_key(v, p)));
    }
    if k < keys.len() {
        keys.select_nth_unstable(k - 1);
    }
    let best = &mut keys[..k];
    best.sort_unstable();
    best.iter().map(|&key| key_index(key)).collect()
}

/// Each content token's k best partners by its row of S', as unordered pairs
/// in pair order, each pair once.
fn top_k_per_row(
    doc: &Document,
    transform: &Transform,
    k: usize,
    scratch: &mut Scratch,
) -> Vec<(u32, u32)> {
    let c = doc.content.len();
    let k = k.min(c.saturating_sub(1));
    if k == 0 {
        return Vec::new();
    }
    let mut chosen = Vec::with_capacity(c * k);
    let Scratch { row, keys, .. } = scratch;
    for &i in &doc.content {
        row.clear();
        for run in &doc.content_runs {
            transform.extend_row(i, run.clone(), row);
        }
        keys.clear();
        keys.extend(
            doc.content
                .iter()
                .zip(row.iter())
                .filter(|&(&j, _)| j != i)
                .map(|(&j, &v)| rank_key(v, j)),
        );
        if k < keys.len() {
            keys.select_nth_unstable(k - 1);
        }
        chosen.extend(keys[..k].iter().map(|&key| {
            let j = key_index(key);
            (i.min(j) as u32, i.max(j) as u32)
        }));
    }
    chosen.sort_unstable();
    chosen.dedup();
    chosen
}

/// Pearson correlation between every two layers' profiles.
fn correlation_matrix(profiles: Vec<Option<Vec<f64>>>) -> Vec<Vec<Option<f64>>> {
    // Centre and normalise once; each correlation is then a dot product.
    let unit: Vec<Option<Vec<f64>>> = profiles
        .into_iter()
        .map(|p| {
            let mut p = p?;
            let mean = p.iter().sum::<f64>() / p.len() as f64;
            p.iter_mut().for_each(|x| *x -= mean);
            let norm = p.iter().map(|x| x * x).sum::<f64>().sqrt();
            // Relative cut-off: a profile that is constant up to rounding has
            // no direction to correlate.
            let scale = mean.abs().max(1.0) * 1e-12 * (p.len() as f64).sqrt();
            if !(norm.is_finite() && norm > scale) {
                return None;
            }
            p.iter_mut().for_each(|x| *x /= norm);
            Some(p)
        })
        .collect();
    let l = unit.len();
    let mut grid = vec![vec![None; l]; l];
    for a in 0..l {
        let Some(x) = &unit[a] else { continue };
        grid[a][a] = Some(1.0);
        for b in a + 1..l {
            let Some(y) = &unit[b] else { continue };
            let r = dot(x, y);
            let r = finite(r.clamp(-1.0, 1.0));
            grid[a][b] = r;
            grid[b][a] = r;
        }
    }
    grid
}

/// Σ a·b with eight independent accumulators (see `lane_sum`).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let (chunks_a, chunks_b) = (a.chunks_exact(8), b.chunks_exact(8));
    let rest: f64 = (chunks_a.remainder().iter())
        .zip(chunks_b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for ((lane, x), y) in lanes.iter_mut().zip(ca).zip(cb) {
            *lane += x * y;
        }
    }
    lanes.iter().sum::<f64>() + rest
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

    #[test]
    fn p_ln_p_matches_std() {
        // Every f32 exponent, several mantissas each, both sides of √2.
        let mut x = f64::from(f32::MIN_POSITIVE);
        while x < 4.0 {
            for m in [1.0, 1.0001, 1.3, 1.414, 1.4143, 1.7, 1.999] {
                let p = (x * m) as f32;
                let (fast, exact) = (f64::from(p_ln_p(p)), f64::from(p) * f64::from(p).ln());
                // A few f32 ulps of ln p, scaled by p.
                let tolerance = 4.0 * f64::from(f32::EPSILON) * exact.abs() + 1e-45;
                assert!((fast - exact).abs() <= tolerance, "{p}: {fast} vs {exact}");
            }
            x *= 2.0;
        }
        assert_eq!(p_ln_p(1.0), 0.0);
        assert_eq!(p_ln_p(0.0), 0.0);
        assert_eq!(p_ln_p(1e-40), 0.0);
        assert_eq!(p_ln_p(f32::NAN), 0.0);
        assert_eq!(row_entropy(&[1.0, 0.0, 0.0]), 0.0);
        let uniform = vec![1.0 / 512.0; 512];
        assert!((row_entropy(&uniform) - 512f64.ln()).abs() < 1e-6);
    }

    #[test]
    fn rank_key_orders_like_numpy_lexsort() {
        let values = [
            1.0f32,
            f32::NAN,
            -0.0,
            3.0,
            0.0,
            f32::NEG_INFINITY,
            3.0,
            f32::INFINITY,
            -2.0,
        ];
        let mut keys: Vec<u64> = values
            .iter()
            .enumerate()
            .map(|(p, &v)| rank_key(v, p))
            .collect();
        keys.sort_unstable();
        let order: Vec<usize> = keys.iter().map(|&k| key_index(k)).collect();
        assert_eq!(order, vec![7, 3, 6, 0, 2, 4, 8, 5, 1]);
    }

    #[test]
    fn top_fraction_matches_full_sort_with_ties() {
        // Quantised values make many ties, across the sampling threshold too.
        let mut state = 12345u64;
        let values: Vec<f32> = (0..100_000)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 33) % 200) as f32 - 100.0
            })
            .collect();
        let mut all: Vec<usize> = (0..values.len()).collect();
        all.sort_by(|&a, &b| values[b].partial_cmp(&values[a]).unwrap().then(a.cmp(&b)));
        for k in [1, 7, 1000, 5000, 60_000, 100_000] {
            assert_eq!(
                top_fraction(&values, k, &mut Vec::new()),
                all[..k].to_vec(),
                "k = {k}"
            );
        }
    }

    #[test]
    fn top_fraction_count_rule() {
        assert_eq!(top_fraction_count(0.01, 0), 0);
        assert_eq!(top_fraction_count(0.01, 1), 1);
        assert_eq!(top_fraction_count(0.01, 1711), 17);
        assert_eq!(top_fraction_count(0.01, 130_816), 1308);
        assert_eq!(top_fraction_count(2.0, 10), 10);
        assert_eq!(top_fraction_count(-1.0, 10), 1);
    }

    #[test]
    fn options_round_trip_through_json() {
        let options = AnalysisOptions {
            selection: Selection::AboveMean { z: 2.5 },
            similarity: SimilarityVariant::RowOverDiagonal,
            local_window: 3,
        };
        let json = serde_json::to_string(&options).unwrap();
        assert_eq!(
            json,
            r#"{"selection":{"rule":"above_mean","z":2.5},"similarity":"row_over_diagonal","local_window":3}"#
        );
        assert_eq!(
            serde_json::from_str::<AnalysisOptions>(&json).unwrap(),
            options
        );
        assert_eq!(
            serde_json::from_str::<AnalysisOptions>("{}").unwrap(),
            AnalysisOptions::default()
        );
    }
}
