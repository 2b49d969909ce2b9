//! One pass over a head's attention P: the classic statistics of Clark et
//! al. (2019), the separator and sink attention of the content rows, the
//! role scores of ANALYSIS.md §9 (previous-token, duplicate-token,
//! induction, self), and the head's attention on the separators, for the
//! layer's segmentation. In a causal model a query's separator attention
//! counts only the separators it can see, at or before itself (§8).
//!
//! The entropy of each row comes with P from the pass that made it (the
//! attention core's softmax); P read from a file has none, and each row's
//! is computed here. The role scores read each content row in the same
//! pass: the previous key, the diagonal and the keys of the earlier
//! occurrences of the query's token (and the keys after them), O(T·k) per
//! head for k repeats, with no pass over P of their own. The same row-wise
//! sums run over the value-weighted attention N′ (§9), a row at a time,
//! for the `_vw` twins.

use super::segmentation::{HeadSeparators, SeparatorColumns};
use super::{finite, AttentionStats, Document, Role, NO_OCCURRENCE};
use crate::captures::{value_weight_row, value_weight_scale};
use crate::kernels::{prefetch, PREFETCH_ROWS};

/// What one pass over a head's attention yields.
pub(super) struct AttentionPass {
    pub(super) stats: AttentionStats,
    /// Mean separator attention of the content rows (`None` without content).
    pub(super) separator_attention: Option<f64>,
    /// Mean attention of the content rows on position 0.
    pub(super) sink_attention: Option<f64>,
    pub(super) roles: RoleScores,
}

/// A head's figures from one pass, in [`HeadFigures`](super::HeadFigures)
/// order: separator and sink attention, the previous-token,
/// duplicate-token, induction and self scores, and the role.
pub(super) type PassFigures = (
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<Role>,
);

impl AttentionPass {
    /// The head's figures this pass gives (of P, or of N′ for the `_vw`
    /// twins).
    pub(super) fn head_figures(&self) -> PassFigures {
        let roles = self.roles;
        (
            self.separator_attention,
            self.sink_attention,
            roles.previous_token,
            roles.duplicate_token,
            roles.induction,
            roles.self_attention,
            self.role(),
        )
    }

    /// The head's role by these scores (ANALYSIS.md §9).
    fn role(&self) -> Option<Role> {
        let roles = self.roles;
        Role::of_scores([
            (Role::PreviousToken, roles.previous_token),
            (Role::DuplicateToken, roles.duplicate_token),
            (Role::Induction, roles.induction),
            (Role::Sink, self.sink_attention),
            (Role::Separator, self.separator_attention),
            (Role::SelfAttention, roles.self_attention),
        ])
    }
}

/// The role scores of ANALYSIS.md §9, each `None` where no content query
/// defines it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct RoleScores {
    pub(super) previous_token: Option<f64>,
    pub(super) duplicate_token: Option<f64>,
    pub(super) induction: Option<f64>,
    pub(super) self_attention: Option<f64>,
}

/// A sum over the queries that define a score, and how many did.
#[derive(Clone, Copy, Default)]
struct QueryMean {
    sum: f64,
    queries: usize,
}

impl QueryMean {
    #[inline(always)]
    fn add(&mut self, x: f64) {
        self.sum += x;
        self.queries += 1;
    }

    fn mean(self) -> Option<f64> {
        if self.queries == 0 {
            None
        } else {
            finite(self.sum / self.queries as f64)
        }
    }
}

/// A head's passes over its attention P, fed a block of rows at a time in
/// order ([`AttentionRows::add_rows`], through `add_attention_rows`): the
/// classic statistics, the mean separator and sink attention of the
/// content rows, the role scores and the head's attention on each
/// separator from each content row (content × separators), which the layer
/// adds up over its heads; and the same, but the classic statistics, over
/// the value-weighted attention N′ (ANALYSIS.md §9) where the head has its
/// value norms: each row of P weighted by the size of what each key
/// writes, and divided by its sum, one row at a time. Each sum runs over
/// the rows in order, so the blocks' sizes do not change a bit.
pub(super) struct AttentionRows {
    plain: PassSums,
    weighted: Option<PassSums>,
    separators: HeadSeparators,
    /// Per key, the size of what it writes (T, or empty: no N′).
    value_norms: Vec<f32>,
    /// One row of N′ (T).
    row: Vec<f32>,
    /// The next row expected.
    next_row: usize,
}

/// What a head's passes over its attention give: P's and, with value
/// norms, N′'s, each with its attention on the separators (content ×
/// separators).
pub(super) struct AttentionFigures {
    pub(super) plain: AttentionPass,
    pub(super) weighted: Option<AttentionPass>,
    pub(super) separators: HeadSeparators,
}

impl AttentionRows {
    /// Passes over a head whose keys write `value_norms` (T, or empty).
    pub(super) fn new(doc: &Document, value_norms: &[f32]) -> Self {
        let weighted = value_norms.len() == doc.t && doc.t > 0;
        Self {
            plain: PassSums::default(),
            weighted: weighted.then(PassSums::default),
            separators: HeadSeparators {
                plain: SeparatorColumns::new(doc),
                weighted: weighted.then(|| SeparatorColumns::new(doc)),
            },
            value_norms: if weighted {
                value_norms.to_vec()
            } else {
                Vec::new()
            },
            row: Vec::new(),
            next_row: 0,
        }
    }

    /// Whether it makes N′ (the head has its value norms).
    pub(super) fn weighs_values(&self) -> bool {
        self.weighted.is_some()
    }

    /// Adds rows `first`, … of P (each T wide), with their entropies as
    /// the pass made them with P (one a row), or empty: each row's is then
    /// computed here; panics unless `first` is the row after the last one
    /// added (a programming error). Where the head has its value norms,
    /// `weighted_rows` sees each row of N′ (T wide, 0 past a causal query).
    #[inline(always)]
    pub(super) fn add_rows(
        &mut self,
        doc: &Document,
        first: usize,
        rows: &[f32],
        entropies: &[f32],
        mut weighted_rows: Option<super::RowSink<'_>>,
    ) {
        let t = doc.t;
        assert_eq!(first, self.next_row, "attention rows must come in order");
        assert!(
            entropies.is_empty() || entropies.len() * t == rows.len(),
            "one entropy per row of attention, or none"
        );
        self.row.resize(t, 0.0);
        let seen_by = |i: usize| if doc.tokens.causal { i + 1 } else { t };
        for (i, row) in (first..).zip(rows.chunks_exact(t.max(1))) {
            // Ask for a later row ahead: a causal row is read up to its
            // query, a piece of each row, and the hardware's prefetchers
            // stop at each page; a whole row's first reads are scattered
            // (the separators' entries, where the entropy once read it
            // from its start), which they do not follow.
            let ahead = (i - first + PREFETCH_ROWS) * t;
            if ahead < rows.len() {
                let seen = seen_by(i + PREFETCH_ROWS).min(t);
                prefetch(&rows[ahead..ahead + seen]);
            }
            // The last key the query sees: a causal query's keys after itself
            // hold 0 (half of a decoder's P).
            let last_seen = seen_by(i) - 1;
            self.plain.stats.entropy += match entropies.get(i - first) {
                Some(&entropy) => f64::from(entropy),
                // Those zeros are not read: whole blocks of 64 are left out,
                // as `row_entropy` sums them, so the sum is the same to the bit.
                None => row_entropy(&row[..(last_seen + 1).next_multiple_of(ENTROPY_BLOCK).min(t)]),
            };
            self.plain
                .add_row(doc, i, row, &mut self.separators.plain, true);
            if let (Some(weighted), Some(columns)) =
                (&mut self.weighted, &mut self.separators.weighted)
            {
                let seen = last_seen + 1;
                if let Some(weighted_rows) = weighted_rows.as_deref_mut() {
                    // A causal row's keys after the query hold 0 in P, and
                    // stay 0 here: no earlier row wrote past its own.
                    let n = &mut self.row;
                    n[..seen].copy_from_slice(&row[..seen]);
                    value_weight_row(&mut n[..seen], &self.value_norms);
                    weighted.add_row(doc, i, &n[..], columns, false);
                    weighted_rows(i, n);
                } else {
                    // Only a few entries of N′ are read: each is made as it
                    // is read, the same bits as in the whole row.
                    let n = WeightedRow {
                        attention: &row[..seen],
                        value_norms: &self.value_norms,
                        scale: value_weight_scale(&row[..seen], &self.value_norms),
                    };
                    weighted.add_row(doc, i, n, columns, false);
                }
            }
            self.next_row = i + 1;
        }
    }

    /// The passes' figures; panics unless every row was added.
    pub(super) fn finish(self, doc: &Document) -> AttentionFigures {
        assert_eq!(self.next_row, doc.t, "every attention row must be added");
        AttentionFigures {
            plain: self.plain.finish(doc, true),
            weighted: self.weighted.map(|sums| sums.finish(doc, false)),
            separators: self.separators,
        }
    }
}

/// What a pass adds up row by row.
#[derive(Default)]
struct PassSums {
    /// Sums over the rows of the classic statistics.
    stats: AttentionStats,
    content_separator: f64,
    content_sink: f64,
    previous_token: QueryMean,
    duplicate_token: QueryMean,
    induction: QueryMean,
    self_score: QueryMean,
}

impl PassSums {
    /// Adds query `i`'s row of attention (T), and writes its attention on
    /// the separators it sees into `separators`: their sum, and each if it
    /// is a content row. The classic statistics only `with_stats`: N′'s
    /// are not reported, and its punctuation sum alone would cost as much
    /// as the rest of its row.
    #[inline(always)]
    fn add_row<'d>(
        &mut self,
        doc: &'d Document,
        i: usize,
        row: impl AttentionRow,
        separators: &mut SeparatorColumns,
        with_stats: bool,
    ) {
        let t = doc.t;
        let special = &doc.tokens.special;
        let last_seen = if doc.tokens.causal { i } else { t - 1 };
        // The positions it sees, at or before `last_seen`: the others hold
        // 0, and reading them would fetch the cache lines the entropy left
        // out (a bidirectional query sees every one: no search).
        let visible = |at: &'d [usize]| {
            if doc.tokens.causal {
                &at[..at.partition_point(|&k| k <= last_seen)]
            } else {
                at
            }
        };
        let seen_separators = visible(&doc.separators);
        let separator = sum_at(row, seen_separators);
        separators.row_sums[i] = separator;
        if with_stats {
            let s = &mut self.stats;
            s.cls += sum_at(row, visible(&doc.cls));
            s.sep += separator;
            s.punctuation += sum_at(row, visible(&doc.punctuation));
            s.self_attention += f64::from(row.at(i));
            if i >= 1 {
                s.previous += f64::from(row.at(i - 1));
            }
            if i + 1 < t {
                s.next += f64::from(row.at(i + 1));
            }
        }
        if special[i] {
            return;
        }
        self.content_separator += separator;
        self.content_sink += f64::from(row.at(0));
        self.self_score.add(f64::from(row.at(i)));
        if i >= 1 && !special[i - 1] {
            self.previous_token.add(f64::from(row.at(i - 1)));
        }
        // Every earlier occurrence p of the query's token (duplicate), and
        // the token after it, p + 1, while that is before the query
        // (induction: J_i of §9).
        let mut earlier = doc.earlier_occurrence[i];
        if earlier != NO_OCCURRENCE {
            let (mut on_duplicates, mut on_successors) = (0.0, 0.0);
            let mut has_successor = false;
            while earlier != NO_OCCURRENCE {
                let p = earlier as usize;
                on_duplicates += f64::from(row.at(p));
                if p + 1 < i {
                    on_successors += f64::from(row.at(p + 1));
                    has_successor = true;
                }
                earlier = doc.earlier_occurrence[p];
            }
            self.duplicate_token.add(on_duplicates);
            if has_successor {
                self.induction.add(on_successors);
            }
        }
        // The row's columns, among the content rows'; those of the
        // separators it does not see stay 0. None for a causal model.
        if separators.columns.is_empty() {
            return;
        }
        let n = doc.separators.len();
        let c = doc.content_index[i] as usize;
        let columns = &mut separators.columns[c * n..(c + 1) * n];
        for (column, &k) in columns.iter_mut().zip(seen_separators) {
            *column = row.at(k);
        }
    }

    /// The pass' figures; the classic statistics only `with_stats`.
    fn finish(self, doc: &Document, with_stats: bool) -> AttentionPass {
        let t = doc.t;
        let s = self.stats;
        let rows = t as f64;
        let shifted = (t.max(1) - 1).max(1) as f64;
        let clean = |x: f64| if x.is_finite() { x } else { 0.0 };
        let stats = (with_stats && t > 0).then(|| AttentionStats {
            entropy: clean(s.entropy / rows),
            cls: clean(s.cls / rows),
            sep: clean(s.sep / rows),
            punctuation: clean(s.punctuation / rows),
            self_attention: clean(s.self_attention / rows),
            previous: clean(s.previous / shifted),
            next: clean(s.next / shifted),
        });
        let content_mean = |sum: f64| {
            if doc.content.is_empty() {
                None
            } else {
                finite(sum / doc.content.len() as f64)
            }
        };
        AttentionPass {
            stats: stats.unwrap_or_default(),
            separator_attention: content_mean(self.content_separator),
            sink_attention: content_mean(self.content_sink),
            roles: RoleScores {
                previous_token: self.previous_token.mean(),
                duplicate_token: self.duplicate_token.mean(),
                induction: self.induction.mean(),
                self_attention: self.self_score.mean(),
            },
        }
    }
}

/// A row of P or of N′ as a pass reads it, an entry at a time.
trait AttentionRow: Copy {
    fn at(self, k: usize) -> f32;
}

impl AttentionRow for &[f32] {
    #[inline(always)]
    fn at(self, k: usize) -> f32 {
        self[k]
    }
}

/// A row of N′ whose entries are made as they are read, as
/// [`value_weight_row`] makes them; 0 past the keys the query sees.
#[derive(Clone, Copy)]
struct WeightedRow<'r> {
    /// The row of P up to the last key the query sees.
    attention: &'r [f32],
    value_norms: &'r [f32],
    /// [`value_weight_scale`] of the row.
    scale: f32,
}

impl AttentionRow for WeightedRow<'_> {
    #[inline(always)]
    fn at(self, k: usize) -> f32 {
        match self.attention.get(k) {
            Some(&p) => p * self.value_norms[k] * self.scale,
            None => 0.0,
        }
    }
}

/// The entries `row_entropy` computes in f32 before adding them in f64.
const ENTROPY_BLOCK: usize = 64;

/// Σ row[k] for k in `at`, in f64, in four running sums added up in
/// order: one would wait on each addition before the next (a sentence's
/// punctuation is a tenth of its tokens).
#[inline(always)]
fn sum_at(row: impl AttentionRow, at: &[usize]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let positions = at.chunks_exact(4);
    let rest: f64 = positions
        .remainder()
        .iter()
        .map(|&k| f64::from(row.at(k)))
        .sum();
    for four in positions {
        for (lane, &k) in lanes.iter_mut().zip(four) {
            *lane += f64::from(row.at(k));
        }
    }
    lanes.iter().sum::<f64>() + rest
}

/// −Σ p ln p over one row. Entries below the smallest normal f32 (zero
/// included) contribute nothing (their share is below 1e-36).
#[inline(always)]
fn row_entropy(row: &[f32]) -> f64 {
    // The terms are computed in a plain loop over a block, which vectorises
    // in f32 lanes, and then summed in f64.
    let mut terms = [0.0f32; ENTROPY_BLOCK];
    let mut sum = 0.0;
    for block in row.chunks(ENTROPY_BLOCK) {
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
pub(super) fn lane_sum(values: &[f32], f: impl Fn(f32) -> f64) -> f64 {
    let mut sum = LaneSum::default();
    sum.add(values, f);
    sum.total()
}

/// [`lane_sum`] over values handed in parts, in order: the same sum as
/// over their concatenation while every part but the last holds a multiple
/// of eight values (a block of whole rows of a T × T matrix, 128 rows).
#[derive(Default)]
pub(super) struct LaneSum {
    lanes: [f64; 8],
    rest: f64,
    /// A part left values over the lanes: only the last may.
    ended: bool,
}

impl LaneSum {
    #[inline(always)]
    pub(super) fn add(&mut self, values: &[f32], f: impl Fn(f32) -> f64) {
        assert!(!self.ended, "only the last part may leave values over");
        let chunks = values.chunks_exact(8);
        if !chunks.remainder().is_empty() {
            self.rest = chunks.remainder().iter().map(|&x| f(x)).sum();
            self.ended = true;
        }
        for chunk in chunks {
            for (lane, &x) in self.lanes.iter_mut().zip(chunk) {
                *lane += f(x);
            }
        }
    }

    #[inline(always)]
    pub(super) fn total(&self) -> f64 {
        self.lanes.iter().sum::<f64>() + self.rest
    }
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

    /// A causal row read up to the end of the query's block of 64 has
    /// the entropy of the whole row, to the bit.
    #[test]
    fn a_causal_row_read_to_its_block_has_the_whole_entropy() {
        for (query, tokens) in [(100, 300), (63, 64), (64, 200), (0, 65), (299, 300)] {
            let mut row = vec![0.0f32; tokens];
            for (k, p) in row[..=query].iter_mut().enumerate() {
                *p = ((k * 37 % 101) as f32 + 1.0) / 5151.0;
            }
            let seen = &row[..(query + 1).next_multiple_of(ENTROPY_BLOCK).min(tokens)];
            assert_eq!(row_entropy(seen).to_bits(), row_entropy(&row).to_bits());
        }
    }
}
