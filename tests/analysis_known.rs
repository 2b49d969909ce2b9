//! `analysis::analyze` on hand-made inputs whose figures are worked out by
//! hand (ANALYSIS.md §3–§5).

use headscope::{analysis::*, captures::*, tokens::*};

const CLS: u32 = 101;
const SEP: u32 = 102;

/// A document-mode sequence from whitespace-separated tokens: `[CLS]` and
/// `[SEP]` are special, every other distinct text gets the next id from 1000
/// on; sentence k runs up to and including the k-th `[SEP]`.
fn doc(text: &str) -> TokenSequence {
    let mut vocabulary: Vec<&str> = Vec::new();
    let mut seq = TokenSequence {
        sep_id: SEP,
        cls_id: CLS,
        ..TokenSequence::default()
    };
    let mut sentence = 0;
    for word in text.split_whitespace() {
        let id = match word {
            "[CLS]" => CLS,
            "[SEP]" => SEP,
            _ => {
                let index = vocabulary
                    .iter()
                    .position(|&w| w == word)
                    .unwrap_or_else(|| {
                        vocabulary.push(word);
                        vocabulary.len() - 1
                    });
                1000 + index as u32
            }
        };
        seq.input_ids.push(id);
        seq.token_texts.push(word.to_owned());
        seq.special.push(id == CLS || id == SEP);
        seq.sentence_ids.push((id != CLS).then_some(sentence));
        seq.offsets.push(None);
        if id == SEP {
            sentence += 1;
        }
    }
    seq
}

/// A symmetric T×T matrix with the given off-diagonal or diagonal entries.
fn sym(t: usize, entries: &[(usize, usize, f32)]) -> Vec<f32> {
    let mut m = vec![0.0; t * t];
    for &(i, j, v) in entries {
        m[i * t + j] = v;
        m[j * t + i] = v;
    }
    m
}

fn uniform(t: usize) -> Vec<f32> {
    vec![1.0 / t as f32; t * t]
}

/// Every row i puts all its attention on `target(i)`.
fn one_hot(t: usize, target: impl Fn(usize) -> usize) -> Vec<f32> {
    let mut m = vec![0.0; t * t];
    for i in 0..t {
        m[i * t + target(i)] = 1.0;
    }
    m
}

/// Captures from one (similarity, attention) pair per head, layer-major.
fn captures(
    layers: usize,
    heads: usize,
    t: usize,
    per_head: Vec<(Vec<f32>, Vec<f32>)>,
) -> Captures {
    assert_eq!(per_head.len(), layers * heads);
    let (similarity, attentions): (Vec<Vec<f32>>, Vec<Vec<f32>>) = per_head.into_iter().unzip();
    Captures {
        layers,
        heads,
        tokens: t,
        head_dim: 0,
        attentions: attentions.concat(),
        head_outputs: Vec::new(),
        similarity: similarity.concat(),
        ..Captures::default()
    }
}

fn top(q: f64) -> AnalysisOptions {
    AnalysisOptions {
        selection: Selection::TopFraction { q },
        ..AnalysisOptions::default()
    }
}

fn close(actual: Option<f64>, expected: f64) {
    let actual = actual.expect("figure is undefined");
    assert!((actual - expected).abs() < 1e-12, "{actual} != {expected}");
}

/// For figures computed from f32 inputs that are not exact (1/3, 1/9).
fn close_f32(actual: Option<f64>, expected: f64) {
    let actual = actual.expect("figure is undefined");
    assert!((actual - expected).abs() < 1e-7, "{actual} != {expected}");
}

/// Every figure is either `None` or a finite number.
fn assert_no_nan(a: &Analysis) {
    let finite = |x: &Option<f64>| x.is_none_or(|x| x.is_finite());
    assert!(finite(&a.baseline_same_sentence_fraction));
    assert!(a.layer_correlation.iter().flatten().all(finite));
    for layer in &a.layers {
        assert!([
            layer.mean_distance,
            layer.same_sentence_fraction,
            layer.separator_attention,
            layer.focus_uniqueness,
            layer.segmentation_accuracy,
            layer.segmentation_undecided,
            layer.segmentation_share,
            layer.segmentation_share_chance,
            layer.sink_attention,
        ]
        .iter()
        .all(finite));
        for h in &layer.heads {
            let s = h.attention_stats.expect("P was given");
            assert!([
                h.mean_distance,
                h.same_sentence_fraction,
                h.repetition_fraction,
                h.focus_share,
                h.local_fraction,
                h.separator_attention,
                h.sink_attention,
                Some(s.entropy),
                Some(s.cls),
                Some(s.sep),
                Some(s.punctuation),
                Some(s.self_attention),
                Some(s.previous),
                Some(s.next),
            ]
            .iter()
            .all(finite));
        }
    }
}

#[test]
fn repeated_token_makes_a_repetition_head() {
    // 0 [CLS] 1 the 2 cat 3 saw 4 the 5 dog 6 [SEP]: N = 10, q = 0.2 gives k = 2.
    let tokens = doc("[CLS] the cat saw the dog [SEP]");
    let s = sym(7, &[(1, 4, 10.0), (2, 5, 5.0), (1, 2, 1.0), (3, 5, 0.5)]);
    let c = captures(1, 1, 7, vec![(s, uniform(7))]);
    let a = analyze(&tokens, &c, &top(0.2));

    assert_eq!((a.tokens, a.content_tokens, a.pairs), (7, 5, 10));
    assert_eq!(a.selected_per_head, Some(2));
    let h = &a.layers[0].heads[0];
    assert_eq!(h.selected_pairs, vec![(1, 4), (2, 5)]);
    close(h.repetition_fraction, 0.5);
    assert_eq!(h.category, Some(Category::Repetition));
    close(h.mean_distance, 3.0);
    close(h.same_sentence_fraction, 1.0);
    assert_eq!(h.focus_token_id, Some(1000));
    assert_eq!(h.focus_token.as_deref(), Some("the"));
    close(h.focus_share, 0.5);
    close(h.local_fraction, 1.0);
    close(a.baseline_same_sentence_fraction, 1.0);

    // Only the repeated pair: everything is repetition.
    let a = analyze(&tokens, &c, &AnalysisOptions::default());
    assert_eq!(a.selected_per_head, Some(1));
    let h = &a.layers[0].heads[0];
    assert_eq!(h.selected_pairs, vec![(1, 4)]);
    close(h.repetition_fraction, 1.0);
    assert_eq!(h.category, Some(Category::Repetition));
    assert_eq!(a.input_ids, vec![CLS, 1000, 1001, 1002, 1000, 1003, SEP]);
}

#[test]
fn token_similar_to_all_makes_a_focus_head() {
    // c (position 3) is equally similar to every other content token; the
    // four tied pairs come in pair order.
    let tokens = doc("[CLS] a b c d e [SEP]");
    let s = sym(
        7,
        &[
            (1, 3, 5.0),
            (2, 3, 5.0),
            (3, 4, 5.0),
            (3, 5, 5.0),
            (1, 2, 1.0),
        ],
    );
    let c = captures(1, 1, 7, vec![(s, uniform(7))]);
    let a = analyze(&tokens, &c, &top(0.4));
    let h = &a.layers[0].heads[0];
    assert_eq!(h.selected_pairs, vec![(1, 3), (2, 3), (3, 4), (3, 5)]);
    assert_eq!(h.focus_token_id, Some(1002));
    assert_eq!(h.focus_token.as_deref(), Some("c"));
    close(h.focus_share, 1.0);
    close(h.repetition_fraction, 0.0);
    close(h.mean_distance, 1.5);
    assert_eq!(h.category, Some(Category::Focus));
    assert_eq!(h.category.unwrap().to_string(), "focus");
}

#[test]
fn ties_share_the_last_places() {
    // All candidates equal: all 10 tie for the k = 3 places, 0.3 each. The
    // display keeps the first k in (i, j) order.
    let tokens = doc("[CLS] a b c d e [SEP]");
    let c = captures(1, 1, 7, vec![(vec![1.0; 49], uniform(7))]);
    let a = analyze(&tokens, &c, &top(0.3));
    let h = &a.layers[0].heads[0];
    assert_eq!(h.selected_pairs, vec![(1, 2), (1, 3), (1, 4)]);
    assert_eq!(
        h.ties,
        Some(TieShare {
            above: 0,
            tied: 10,
            weight: 0.3
        })
    );
    // The figures of all candidates: distances 1×4, 2×3, 3×2, 4×1.
    close(h.mean_distance, 2.0);
    // Every token ends pairs of weight 1.2: the smallest id, a, whose four
    // pairs weigh 1.2 of 3.
    assert_eq!(h.focus_token_id, Some(1000));
    close(h.focus_share, 0.4);
    close(Some(a.layers[0].distance_histogram[1]), 1.2);

    // −0 ties with +0, and both share the one place; the display keeps
    // the earlier pair.
    let at = |i: usize, j: usize| i * 7 + j;
    let mut s = vec![-1.0f32; 49];
    s[at(2, 3)] = 0.0;
    s[at(1, 5)] = -0.0;
    let c = captures(1, 1, 7, vec![(s, uniform(7))]);
    let a = analyze(&tokens, &c, &AnalysisOptions::default());
    let h = &a.layers[0].heads[0];
    assert_eq!(h.selected_pairs, vec![(1, 5)]);
    close(h.mean_distance, (4.0 + 1.0) / 2.0);
    close(a.layers[0].mean_distance, 2.5);

    // A value just outside ε (1e-3 of the largest |S|) is above, not tied.
    let mut s = vec![0.0f32; 49];
    s[at(1, 2)] = 1.0;
    s[at(1, 3)] = 0.998;
    s[at(2, 4)] = 0.9995;
    let c = captures(1, 1, 7, vec![(s, uniform(7))]);
    let a = analyze(&tokens, &c, &top(0.2));
    let h = &a.layers[0].heads[0];
    assert_eq!(
        h.ties,
        Some(TieShare {
            above: 0,
            tied: 2,
            weight: 1.0
        }),
        "k = 2: the k-th is 0.9995, and 1.0 and 0.9995 tie within 1e-3"
    );
    close(h.mean_distance, (1.0 + 2.0) / 2.0);

    // Focus tie between the two endpoints of one pair: the smaller id, even
    // though it comes second.
    let mut tokens = doc("[CLS] a b c [SEP]");
    tokens.input_ids = vec![CLS, 2000, 1500, 1800, SEP];
    let s = sym(5, &[(1, 2, 3.0)]);
    let c = captures(1, 1, 5, vec![(s, uniform(5))]);
    let a = analyze(&tokens, &c, &AnalysisOptions::default());
    let h = &a.layers[0].heads[0];
    assert_eq!(h.selected_pairs, vec![(1, 2)]);
    assert_eq!(h.focus_token_id, Some(1500));
    assert_eq!(h.focus_token.as_deref(), Some("b"));
    close(h.focus_share, 1.0);
    assert_eq!(h.category, Some(Category::Focus));
}

#[test]
fn one_content_token_has_no_pair_figures() {
    let tokens = doc("[CLS] alone [SEP]");
    let c = captures(
        1,
        2,
        3,
        vec![(uniform(3), uniform(3)), (uniform(3), one_hot(3, |_| 2))],
    );
    let a = analyze(&tokens, &c, &AnalysisOptions::default());
    assert_eq!((a.content_tokens, a.pairs), (1, 0));
    assert_eq!(a.selected_per_head, Some(0));
    assert_eq!(a.baseline_same_sentence_fraction, None);
    for h in &a.layers[0].heads {
        assert_eq!(h.mean_distance, None);
        assert_eq!(h.same_sentence_fraction, None);
        assert_eq!(h.repetition_fraction, None);
        assert_eq!(h.focus_token_id, None);
        assert_eq!(h.focus_token, None);
        assert_eq!(h.focus_share, None);
        assert_eq!(h.local_fraction, None);
        assert_eq!(h.category, None);
        assert!(h.selected_pairs.is_empty());
    }
    // Attention figures still exist: one content row, one [SEP].
    close_f32(a.layers[0].heads[0].separator_attention, 1.0 / 3.0);
    close(a.layers[0].heads[1].separator_attention, 1.0);
    let layer = &a.layers[0];
    assert_eq!(layer.mean_distance, None);
    assert_eq!(layer.same_sentence_fraction, None);
    assert_eq!(layer.focus_uniqueness, None);
    close_f32(layer.separator_attention, 2.0 / 3.0);
    close(layer.segmentation_accuracy, 1.0);
    assert_eq!(layer.distance_histogram, vec![0.0, 0.0, 0.0]);
    assert_eq!(a.layer_correlation, vec![vec![None]]);
    assert_no_nan(&a);

    let json = serde_json::to_value(&a).unwrap();
    assert!(json["baseline_same_sentence_fraction"].is_null());
    assert!(json["layers"][0]["mean_distance"].is_null());
    assert!(json["layers"][0]["heads"][0]["focus_token_id"].is_null());
    assert!(json["layers"][0]["heads"][0]["category"].is_null());
    assert!(!json.to_string().contains("NaN"));

    // The other rules agree.
    for selection in [
        Selection::AboveMean { z: 3.0 },
        Selection::TopKPerRow { k: 1 },
    ] {
        let options = AnalysisOptions {
            selection,
            ..AnalysisOptions::default()
        };
        let a = analyze(&tokens, &c, &options);
        assert_eq!(a.selected_per_head, None);
        assert_eq!(a.layers[0].heads[0].category, None);
        assert_no_nan(&a);
    }
}

#[test]
fn no_content_token_has_no_figures_at_all() {
    let tokens = doc("[CLS] [SEP]");
    let c = captures(
        2,
        1,
        2,
        vec![(uniform(2), uniform(2)), (uniform(2), uniform(2))],
    );
    for similarity in SimilarityVariant::ALL {
        let options = AnalysisOptions {
            similarity,
            ..AnalysisOptions::default()
        };
        let a = analyze(&tokens, &c, &options);
        assert_eq!((a.content_tokens, a.pairs), (0, 0));
        let layer = &a.layers[0];
        assert_eq!(layer.heads[0].separator_attention, None);
        assert_eq!(layer.separator_attention, None);
        assert_eq!(layer.segmentation_accuracy, None);
        assert_eq!(layer.heads[0].category, None);
        assert_eq!(
            a.layer_correlation,
            vec![vec![None, None], vec![None, None]]
        );
        // The classic statistics cover every row, special ones included.
        close(Some(layer.heads[0].attention_stats.expect("P").sep), 0.5);
        assert_no_nan(&a);
    }

    // Not even a token.
    let empty = Captures {
        layers: 1,
        heads: 1,
        ..Captures::default()
    };
    let a = analyze(
        &TokenSequence::default(),
        &empty,
        &AnalysisOptions::default(),
    );
    assert_eq!(a.tokens, 0);
    assert_eq!(
        a.layers[0].heads[0].attention_stats,
        Some(AttentionStats::default())
    );
    assert!(a.layers[0].distance_histogram.is_empty());
    assert_no_nan(&a);
}

/// 0 [CLS] 1 a 2 b 3 c 4 [SEP] 5 d 6 e 7 f 8 [SEP]: sentence 0 is 1–4,
/// sentence 1 is 5–8. Content 1,2,3,5,6,7: N = 15, 6 of them same-sentence.
fn two_sentences() -> TokenSequence {
    doc("[CLS] a b c [SEP] d e f [SEP]")
}

#[test]
fn a_flat_head_has_the_figures_of_all_candidates() {
    // A head whose S is flat to float noise (a sink head: every token
    // outputs the same vector): every candidate ties, so its figures are
    // those of all candidate pairs, whatever the noise.
    let tokens = two_sentences();
    let t = 9;
    let mut state = 7u64;
    let mut noise = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 2e-6
    };
    let mut s = vec![0.0f32; t * t];
    for i in 0..t {
        for j in i..t {
            let v = 1.0 + noise();
            s[i * t + j] = v;
            s[j * t + i] = v;
        }
    }
    let c = captures(1, 1, t, vec![(s, uniform(t))]);
    let a = analyze(&tokens, &c, &top(0.2));
    let h = &a.layers[0].heads[0];
    let ties = h.ties.expect("top fraction");
    assert_eq!((ties.above, ties.tied), (0, 15));
    close_f32(
        h.same_sentence_fraction,
        a.baseline_same_sentence_fraction.unwrap(),
    );
    // Content positions 1 2 3 5 6 7: the mean of j − i over the 15 pairs.
    let content = [1usize, 2, 3, 5, 6, 7];
    let mut sum = 0;
    for (x, &i) in content.iter().enumerate() {
        for &j in &content[x + 1..] {
            sum += j - i;
        }
    }
    close_f32(h.mean_distance, sum as f64 / 15.0);
}

#[test]
fn two_sentences_pair_figures() {
    let tokens = two_sentences();
    let s = sym(9, &[(1, 2, 9.0), (2, 7, 8.0), (5, 7, 7.0), (3, 5, 1.0)]);
    let c = captures(1, 1, 9, vec![(s, uniform(9))]);
    // q = 0.21: k = floor(3.15) = 3.
    let a = analyze(&tokens, &c, &top(0.21));
    assert_eq!(a.selected_per_head, Some(3));
    close(a.baseline_same_sentence_fraction, 6.0 / 15.0);
    let h = &a.layers[0].heads[0];
    assert_eq!(h.selected_pairs, vec![(1, 2), (2, 7), (5, 7)]);
    close(h.mean_distance, 8.0 / 3.0);
    close(h.same_sentence_fraction, 2.0 / 3.0);
    close(h.local_fraction, 2.0 / 3.0);
    close(h.repetition_fraction, 0.0);
    // b and f both have two endpoints: the smaller id (b) is the focus.
    assert_eq!(h.focus_token.as_deref(), Some("b"));
    close(h.focus_share, 2.0 / 3.0);
    assert_eq!(h.category, Some(Category::Focus));
    let layer = &a.layers[0];
    assert_eq!(
        layer.distance_histogram,
        vec![0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    );
    close(layer.mean_distance, 8.0 / 3.0);
    close(layer.same_sentence_fraction, 2.0 / 3.0);
    close(layer.focus_uniqueness, 1.0);

    // A narrower window: only the adjacent pair is local.
    let options = AnalysisOptions {
        local_window: 1,
        ..top(0.21)
    };
    let a = analyze(&tokens, &c, &options);
    close(a.layers[0].heads[0].local_fraction, 1.0 / 3.0);
}

#[test]
fn layer_pools_its_heads() {
    let tokens = two_sentences();
    // Head 0 picks (1,2) and (2,3); head 1 picks (3,7) and (1,2).
    let s0 = sym(9, &[(1, 2, 9.0), (2, 3, 8.0)]);
    let s1 = sym(9, &[(3, 7, 9.0), (1, 2, 8.0)]);
    let c = captures(1, 2, 9, vec![(s0, uniform(9)), (s1, uniform(9))]);
    let a = analyze(&tokens, &c, &top(0.14)); // k = floor(2.1) = 2
    let layer = &a.layers[0];
    assert_eq!(layer.heads[0].selected_pairs, vec![(1, 2), (2, 3)]);
    assert_eq!(layer.heads[1].selected_pairs, vec![(3, 7), (1, 2)]);
    close(layer.mean_distance, (1.0 + 1.0 + 4.0 + 1.0) / 4.0);
    close(layer.same_sentence_fraction, 3.0 / 4.0);
    assert_eq!(
        layer.distance_histogram,
        vec![0.0, 3.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    );
    // Focus b (id 1001) in head 0; head 1's four endpoints are four distinct
    // ids, so the smallest, a.
    assert_eq!(layer.heads[0].focus_token.as_deref(), Some("b"));
    assert_eq!(layer.heads[1].focus_token.as_deref(), Some("a"));
    close(layer.focus_uniqueness, 1.0);
    // Same focus in both heads: uniqueness 1/2.
    let s1 = sym(9, &[(2, 6, 9.0), (2, 5, 8.0)]);
    let c = captures(
        1,
        2,
        9,
        vec![
            (sym(9, &[(1, 2, 9.0), (2, 3, 8.0)]), uniform(9)),
            (s1, uniform(9)),
        ],
    );
    let a = analyze(&tokens, &c, &top(0.14));
    assert_eq!(a.layers[0].heads[1].focus_token.as_deref(), Some("b"));
    close(a.layers[0].focus_uniqueness, 0.5);
}

#[test]
fn segmentation_and_separator_attention() {
    let tokens = two_sentences();
    let t = 9;
    let own_sep = |i: usize| if i <= 4 { 4 } else { 8 };
    let s = sym(t, &[(1, 2, 1.0)]);

    // Every token on the [SEP] closing its own sentence.
    let c = captures(1, 1, t, vec![(s.clone(), one_hot(t, own_sep))]);
    let a = analyze(&tokens, &c, &AnalysisOptions::default());
    close(a.layers[0].segmentation_accuracy, 1.0);
    close(a.layers[0].heads[0].separator_attention, 1.0);
    close(a.layers[0].segmentation_share, 1.0);
    close(a.layers[0].segmentation_share_chance, 0.5);

    // Everyone on the first [SEP]: only sentence 0's three tokens are right.
    let c = captures(1, 1, t, vec![(s.clone(), one_hot(t, |_| 4))]);
    let a = analyze(&tokens, &c, &AnalysisOptions::default());
    close(a.layers[0].segmentation_accuracy, 3.0 / 6.0);
    close(a.layers[0].segmentation_share, 3.0 / 6.0);

    // Averaged over two heads, sentence 1's tokens see 0.5 on each [SEP]:
    // a tie, so they are undecided and not right.
    let c = captures(
        1,
        2,
        t,
        vec![
            (s.clone(), one_hot(t, own_sep)),
            (s.clone(), one_hot(t, |_| 4)),
        ],
    );
    let a = analyze(&tokens, &c, &AnalysisOptions::default());
    close(a.layers[0].segmentation_accuracy, 0.5);
    close(a.layers[0].segmentation_undecided, 0.5);
    close(a.layers[0].separator_attention, 1.0);
    // Continuous where accuracy has its edge: sentence 0's tokens give all
    // their separator attention to their own [SEP], sentence 1's half.
    close(
        a.layers[0].segmentation_share,
        (3.0 * 1.0 + 3.0 * 0.5) / 6.0,
    );

    // Half of each content row on [CLS], half on its own [SEP]; the special
    // rows stay uniform.
    let mut p = uniform(t);
    for i in [1, 2, 3, 5, 6, 7] {
        p[i * t..(i + 1) * t].fill(0.0);
        p[i * t] = 0.5;
        p[i * t + own_sep(i)] = 0.5;
    }
    let c = captures(1, 2, t, vec![(s.clone(), p), (s, uniform(t))]);
    let a = analyze(&tokens, &c, &AnalysisOptions::default());
    let layer = &a.layers[0];
    close(layer.heads[0].separator_attention, 0.5);
    close_f32(layer.heads[1].separator_attention, 2.0 / 9.0);
    close_f32(layer.separator_attention, (0.5 + 2.0 / 9.0) / 2.0);
    close(layer.segmentation_accuracy, 1.0);
    close(layer.segmentation_undecided, 0.0);
    // Sink attention: the content rows' attention on position 0.
    close(layer.heads[0].sink_attention, 0.5);
    close_f32(layer.heads[1].sink_attention, 1.0 / 9.0);
    close_f32(layer.sink_attention, (0.5 + 1.0 / 9.0) / 2.0);
    let stats = layer.heads[0].attention_stats.expect("P");
    assert!((stats.cls - (6.0 * 0.5 + 3.0 / 9.0) / 9.0).abs() < 1e-7);
    assert!((stats.sep - (6.0 * 0.5 + 3.0 * 2.0 / 9.0) / 9.0).abs() < 1e-7);
}

#[test]
fn near_ties_between_separators_are_undecided() {
    let tokens = two_sentences();
    let t = 9;
    let s = sym(t, &[(1, 2, 1.0)]);
    // Every content row: a on the first [SEP], b on the second.
    let rows = |a: f32, b: f32| {
        let mut p = uniform(t);
        for i in [1, 2, 3, 5, 6, 7] {
            p[i * t..(i + 1) * t].fill(0.0);
            p[i * t + 4] = a;
            p[i * t + 8] = b;
        }
        p
    };
    let segmentation = |a: f32, b: f32| {
        let c = captures(1, 1, t, vec![(s.clone(), rows(a, b))]);
        let layer = analyze(&tokens, &c, &AnalysisOptions::default()).layers[0].clone();
        // Sentence 0's tokens give a/(a+b) to their own [SEP], sentence
        // 1's b/(a+b): 1/2 on average, with no edge at a = b.
        let share = layer.segmentation_share.expect("defined");
        assert!((share - 0.5).abs() < 1e-6, "{share}");
        (layer.segmentation_accuracy, layer.segmentation_undecided)
    };
    // Within 1e-4 relative: undecided, whichever is larger.
    let (accuracy, undecided) = segmentation(0.5, 0.5 * (1.0 - 5e-5));
    close(accuracy, 0.0);
    close(undecided, 1.0);
    let (accuracy, undecided) = segmentation(0.5 * (1.0 - 5e-5), 0.5);
    close(accuracy, 0.0);
    close(undecided, 1.0);
    // Further apart: decided, to the larger.
    let (accuracy, undecided) = segmentation(0.5, 0.5 * (1.0 - 5e-4));
    close(accuracy, 0.5);
    close(undecided, 0.0);
    let (accuracy, undecided) = segmentation(0.5 * (1.0 - 5e-4), 0.5);
    close(accuracy, 0.5);
    close(undecided, 0.0);
}

#[test]
fn choose_separator_follows_the_tie_rule() {
    use SeparatorChoice::*;
    assert_eq!(choose_separator(&[], 1), None);
    // One separator: the runner-up is 0, so only zero attention ties.
    assert_eq!(choose_separator(&[0.3], 1), Some(Separator(0)));
    assert_eq!(choose_separator(&[0.0], 1), Some(Undecided));
    // Sums over 2 heads: the mean decides, the largest wins.
    assert_eq!(choose_separator(&[0.2, 0.8, 0.4], 2), Some(Separator(1)));
    assert_eq!(choose_separator(&[0.8, 0.8, 0.1], 2), Some(Undecided));
    assert_eq!(choose_separator(&[0.1, 0.8, 0.79999], 2), Some(Undecided));
    assert_eq!(choose_separator(&[0.1, 0.8, 0.7999], 2), Some(Separator(1)));
}

#[test]
fn similarity_variants_on_a_small_matrix() {
    let s = [4.0, 2.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0];
    assert_eq!(
        transformed_similarity(&s, 3, SimilarityVariant::Raw),
        s.to_vec()
    );
    // Cosine: S01 / sqrt(4 · 1) = 1; the zero vector's entries are 0.
    assert_eq!(
        transformed_similarity(&s, 3, SimilarityVariant::Cosine),
        vec![1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(
        transformed_similarity(&s, 3, SimilarityVariant::RowOverDiagonal),
        vec![1.0, 0.5, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    );
    // Mean 1, population std 4/3 over all nine entries.
    assert_eq!(
        transformed_similarity(&s, 3, SimilarityVariant::ZScore),
        vec![2.25, 0.75, -0.75, 0.75, 0.0, -0.75, -0.75, -0.75, -0.75]
    );
    for variant in SimilarityVariant::ALL {
        let constant = transformed_similarity(&[0.0; 4], 2, variant);
        assert_eq!(constant, vec![0.0; 4], "{variant:?}");
    }
    // MAX / MIN_POSITIVE overflows f32: 0, never infinity.
    let overflow = [1.0, 1.0, f32::MAX, f32::MIN_POSITIVE];
    assert_eq!(
        transformed_similarity(&overflow, 2, SimilarityVariant::RowOverDiagonal),
        vec![1.0, 1.0, 0.0, 1.0]
    );

    // In the analysis: a long vector (S11 = 100) dominates the raw dot
    // products; cosine and row-over-diagonal see the aligned short pair.
    let tokens = doc("[CLS] x y z [SEP]");
    let s = sym(
        5,
        &[
            (1, 1, 100.0),
            (2, 2, 1.0),
            (3, 3, 1.0),
            (1, 2, 5.0),
            (1, 3, 1.0),
            (2, 3, 0.9),
        ],
    );
    let c = captures(1, 1, 5, vec![(s, uniform(5))]);
    for (variant, pair) in [
        (SimilarityVariant::Raw, (1, 2)),
        (SimilarityVariant::Cosine, (2, 3)),
        (SimilarityVariant::RowOverDiagonal, (2, 3)),
        (SimilarityVariant::ZScore, (1, 2)),
    ] {
        let options = AnalysisOptions {
            similarity: variant,
            ..AnalysisOptions::default()
        };
        let a = analyze(&tokens, &c, &options);
        assert_eq!(
            a.layers[0].heads[0].selected_pairs,
            vec![pair],
            "{variant:?}"
        );
    }
}

#[test]
fn above_mean_rule() {
    // Nine zeros and one 10 among the candidates: mean 1, std 3.
    let tokens = doc("[CLS] a b c d e [SEP]");
    let c = captures(1, 1, 7, vec![(sym(7, &[(2, 4, 10.0)]), uniform(7))]);
    let rule = |z| AnalysisOptions {
        selection: Selection::AboveMean { z },
        ..AnalysisOptions::default()
    };
    let a = analyze(&tokens, &c, &rule(2.0));
    assert_eq!(a.selected_per_head, None);
    assert_eq!(a.layers[0].heads[0].selected_pairs, vec![(2, 4)]);
    close(a.layers[0].heads[0].mean_distance, 2.0);
    // The threshold is exactly 10 and the rule is strict: nothing selected.
    let a = analyze(&tokens, &c, &rule(3.0));
    let h = &a.layers[0].heads[0];
    assert!(h.selected_pairs.is_empty());
    assert_eq!((h.mean_distance, h.category), (None, None));
    assert_eq!(a.layers[0].focus_uniqueness, None);
    assert_no_nan(&a);
    // A negative z takes everything above mean − |z|·std, in rank order.
    let a = analyze(&tokens, &c, &rule(-0.1));
    assert_eq!(a.layers[0].heads[0].selected_pairs, vec![(2, 4)]);
    let a = analyze(&tokens, &c, &rule(-1.0));
    assert_eq!(a.layers[0].heads[0].selected_pairs.len(), 10);
    let first_two: Vec<_> = a.layers[0].heads[0].selected_pairs.iter().take(2).collect();
    assert_eq!(first_two, [(2, 4), (1, 2)]);
}

#[test]
fn top_k_per_row_rule() {
    // Rows: a→b, b→a, c→d, d→c, e→(all zero, first partner: a).
    let tokens = doc("[CLS] a b c d e [SEP]");
    let s = sym(7, &[(1, 2, 5.0), (3, 4, 4.0), (2, 3, 3.0)]);
    let c = captures(1, 1, 7, vec![(s, uniform(7))]);
    let rule = |k| AnalysisOptions {
        selection: Selection::TopKPerRow { k },
        ..AnalysisOptions::default()
    };
    let a = analyze(&tokens, &c, &rule(1));
    assert_eq!(a.selected_per_head, None);
    let h = &a.layers[0].heads[0];
    assert_eq!(h.selected_pairs, vec![(1, 2), (1, 5), (3, 4)]);
    // e's row is flat: its four partners tie and share its one place
    // (weight 1/4 each), beside a–b and c–d (weight 1).
    close(
        h.mean_distance,
        (1.0 + 1.0 + 0.25 * (4.0 + 3.0 + 2.0 + 1.0)) / 3.0,
    );
    // a, b, c and d each end pairs of weight 1.25: the smallest id wins.
    assert_eq!(h.focus_token.as_deref(), Some("a"));
    close(h.focus_share, 1.25 / 3.0);
    assert_eq!(h.ties, None, "ties are shared row by row");

    // Second partners: a→c (tie of zeros, first), b→c, c→b, d→a, e→b.
    let a = analyze(&tokens, &c, &rule(2));
    assert_eq!(
        a.layers[0].heads[0].selected_pairs,
        vec![(1, 2), (1, 3), (1, 4), (1, 5), (2, 3), (2, 5), (3, 4)]
    );
    // k beyond the partners available: every pair once.
    let a = analyze(&tokens, &c, &rule(100));
    assert_eq!(a.layers[0].heads[0].selected_pairs.len(), 10);
    let a = analyze(&tokens, &c, &rule(0));
    assert!(a.layers[0].heads[0].selected_pairs.is_empty());
}

#[test]
fn attention_stats_on_known_matrices() {
    // 0 [CLS] 1 a 2 , 3 [SEP]
    let tokens = doc("[CLS] a , [SEP]");
    assert!(tokens.is_punctuation(2));
    let shift = one_hot(4, |i| i.saturating_sub(1));
    let c = captures(1, 2, 4, vec![(uniform(4), uniform(4)), (uniform(4), shift)]);
    let a = analyze(&tokens, &c, &AnalysisOptions::default());

    let u = a.layers[0].heads[0].attention_stats.expect("P");
    assert!((u.entropy - 4f64.ln()).abs() < 1e-6, "{}", u.entropy);
    for x in [
        u.cls,
        u.sep,
        u.punctuation,
        u.self_attention,
        u.previous,
        u.next,
    ] {
        assert_eq!(x, 0.25);
    }

    // Row 0 on itself, every other row on its predecessor.
    let s = a.layers[0].heads[1].attention_stats;
    assert_eq!(
        s.expect("P"),
        AttentionStats {
            entropy: 0.0,
            cls: 0.5,
            sep: 0.0,
            punctuation: 0.25,
            self_attention: 0.25,
            previous: 1.0,
            next: 0.0,
        }
    );
}

#[test]
fn layer_correlation_of_z_scored_heads() {
    // Candidates (1,2), (1,3), (2,3). Layer 0 has two heads whose z-scores
    // are [1,2,4] and [4,2,1] standardised (the second at ten times the
    // scale, which z-scoring removes): their mean is ∝ [1, −2, 1].
    let tokens = doc("[CLS] a b c [SEP]");
    let head = |v: [f32; 3]| {
        (
            sym(5, &[(1, 2, v[0]), (1, 3, v[1]), (2, 3, v[2])]),
            uniform(5),
        )
    };
    let c = captures(
        4,
        2,
        5,
        vec![
            head([1.0, 2.0, 4.0]),
            head([40.0, 20.0, 10.0]),
            head([2.0, 0.0, 2.0]), // ∝ [1, −2, 1]
            head([2.0, 0.0, 2.0]),
            head([1.0, 2.0, 4.0]),
            head([1.0, 2.0, 4.0]),
            head([7.0, 7.0, 7.0]), // constant: undefined
            head([7.0, 7.0, 7.0]),
        ],
    );
    let a = analyze(&tokens, &c, &AnalysisOptions::default());
    let r = &a.layer_correlation;
    assert_eq!(r.len(), 4);
    close(r[0][0], 1.0);
    close_f32(r[0][1], 1.0);
    close_f32(r[1][0], 1.0);
    // [1,2,4] against [1,−2,1]: centred [−4,−1,5]/3 · [1,−2,1] = 3/3 = 1,
    // norms sqrt(42)/3 and sqrt(6): r = 3 / sqrt(42 · 6).
    let expected = 3.0 / (42.0f64 * 6.0).sqrt();
    close(r[0][2], expected);
    close(r[2][1], expected);
    assert!(r[3].iter().all(Option::is_none));
    assert!(r.iter().all(|row| row[3].is_none()));
    assert_no_nan(&a);
}

#[test]
fn json_names_match_the_contract() {
    let tokens = two_sentences();
    let c = captures(1, 1, 9, vec![(sym(9, &[(1, 2, 1.0)]), uniform(9))]);
    let a = analyze(&tokens, &c, &AnalysisOptions::default());
    let json = serde_json::to_value(&a).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let sorted = |names: &[&str]| {
        let mut k: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&json),
        sorted(&[
            "tokens",
            "content_tokens",
            "pairs",
            "selected_per_head",
            "baseline_same_sentence_fraction",
            "input_ids",
            "sentences_analysed",
            "sentences_left_out",
            "tokens_left_out",
            "layers",
            "layer_correlation",
        ])
    );
    assert_eq!(
        keys(&json["layers"][0]),
        sorted(&[
            "mean_distance",
            "same_sentence_fraction",
            "separator_attention",
            "focus_uniqueness",
            "segmentation_accuracy",
            "segmentation_undecided",
            "segmentation_share",
            "segmentation_share_chance",
            "sink_attention",
            "separator_attention_vw",
            "segmentation_accuracy_vw",
            "segmentation_undecided_vw",
            "segmentation_share_vw",
            "sink_attention_vw",
            "distance_histogram",
            "heads",
        ])
    );
    assert_eq!(
        keys(&json["layers"][0]["heads"][0]),
        sorted(&[
            "mean_distance",
            "same_sentence_fraction",
            "repetition_fraction",
            "focus_token_id",
            "focus_token",
            "focus_share",
            "local_fraction",
            "separator_attention",
            "sink_attention",
            "category",
            "previous_token_score",
            "duplicate_token_score",
            "induction_score",
            "self_score",
            "role",
            "separator_attention_vw",
            "sink_attention_vw",
            "previous_token_score_vw",
            "duplicate_token_score_vw",
            "induction_score_vw",
            "self_score_vw",
            "role_vw",
            "attention_stats",
        ])
    );
    assert_eq!(
        keys(&json["layers"][0]["heads"][0]["attention_stats"]),
        sorted(&[
            "entropy",
            "cls",
            "sep",
            "punctuation",
            "self_attention",
            "previous",
            "next"
        ])
    );
    // One pair (1,2): a and b tie for focus, so the head is a focus head.
    assert_eq!(json["layers"][0]["heads"][0]["category"], "focus");
    assert_eq!(json["selected_per_head"], 1);
    assert_eq!(
        (
            a.sentences_analysed,
            a.sentences_left_out,
            a.tokens_left_out
        ),
        (0, 0, 0)
    );
    assert_no_nan(&a);

    for (category, name) in Category::ALL
        .iter()
        .zip(["repetition", "focus", "local", "mixed"])
    {
        assert_eq!(serde_json::to_value(category).unwrap(), name);
        assert_eq!(category.to_string(), name);
    }
    let options = serde_json::to_value(AnalysisOptions::default()).unwrap();
    assert_eq!(
        options,
        serde_json::json!({"selection": {"rule": "top_fraction", "q": 0.01}, "similarity": "raw", "local_window": 4})
    );
}

/// Pearson correlation of two profiles, straight from its definition.
fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    cov / (vx * vy).sqrt()
}

#[test]
fn layer_correlation_over_many_tiles() {
    // 4 sentences of 110 words: 440 content tokens, 96,580 pairs, more
    // than one tile of the grid's, the separators cutting the rows' runs.
    let text: Vec<String> = std::iter::once("[CLS]".to_owned())
        .chain((0..4).flat_map(|s| {
            (0..110)
                .map(move |w| format!("w{}", (s * 110 + w) % 97))
                .chain(std::iter::once("[SEP]".to_owned()))
        }))
        .collect();
    let tokens = doc(&text.join(" "));
    let t = tokens.len();
    let (layers, heads, d) = (3, 2, 4);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut random = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    };
    // Random head outputs, but layer 1's heads lean on layer 0's first
    // head, so those layers correlate.
    let mut outputs: Vec<f32> = (0..layers * heads * t * d).map(|_| random()).collect();
    for h in 0..heads {
        for x in 0..t * d {
            let layer0 = outputs[x];
            outputs[(heads + h) * t * d + x] += 2.0 * layer0;
        }
    }
    let similarity: Vec<f32> = outputs
        .chunks_exact(t * d)
        .flat_map(|o| {
            (0..t * t).map(move |ij| {
                let (i, j) = (ij / t, ij % t);
                (0..d).map(|c| o[i * d + c] * o[j * d + c]).sum::<f32>()
            })
        })
        .collect();
    let content: Vec<usize> = (0..t).filter(|&i| !tokens.special[i]).collect();
    let profile = |layer: usize| -> Vec<f64> {
        let mut profile = Vec::new();
        for h in 0..heads {
            let s = &similarity[(layer * heads + h) * t * t..][..t * t];
            let values: Vec<f64> = (0..content.len())
                .flat_map(|a| (a + 1..content.len()).map(move |b| (a, b)))
                .map(|(a, b)| f64::from(s[content[a] * t + content[b]]))
                .collect();
            let n = values.len() as f64;
            let mean = values.iter().sum::<f64>() / n;
            let std = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
            profile.resize(values.len(), 0.0);
            for (p, v) in profile.iter_mut().zip(&values) {
                *p += (v - mean) / std;
            }
        }
        profile
    };
    let profiles: Vec<Vec<f64>> = (0..layers).map(profile).collect();
    let stored = Captures {
        layers,
        heads,
        tokens: t,
        head_dim: 0,
        similarity: similarity.clone(),
        ..Captures::default()
    };
    // With O, the grid makes S again from it (float32 products: S differs
    // by roundings, r by about 1e-7).
    let with_outputs = Captures {
        head_dim: d,
        head_outputs: outputs.clone(),
        ..stored.clone()
    };
    for (captures, tolerance) in [(&stored, 1e-10), (&with_outputs, 1e-6)] {
        let a = analyze(&tokens, captures, &AnalysisOptions::default());
        assert!(a.pairs > 65_536, "{} pairs fit one tile", a.pairs);
        for x in 0..layers {
            for y in 0..layers {
                let expected = pearson(&profiles[x], &profiles[y]);
                let r = a.layer_correlation[x][y].expect("a varying profile");
                assert!(
                    (r - expected).abs() < tolerance,
                    "r[{x}][{y}] = {r}, not {expected}"
                );
            }
        }
        assert!(a.layer_correlation[0][1].unwrap() > 0.3);
    }
}
