//! Arbitrary strings through input construction, the encoder and the
//! analysis: never a panic, and every figure within its range (fractions in
//! [0, 1], distances below T, no NaN). `PROPTEST_CASES=100000` runs the full
//! campaign; the default keeps `cargo test` quick.

mod common;

use common::*;
use headscope::analysis::{analyze, AnalysisOptions, Selection, SimilarityVariant};
use headscope::input::{build_input, InputError, InputMode};
use headscope::model::random::NameStyle;
use headscope::model::Model;
use proptest::prelude::*;
use std::sync::OnceLock;

fn tiny_model() -> &'static Model {
    static MODEL: OnceLock<(tempfile::TempDir, Model)> = OnceLock::new();
    &MODEL
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            write_tiny_model(dir.path(), &tiny_config(), NameStyle::default());
            let model = Model::load_folder(dir.path(), &candle_core::Device::Cpu).unwrap();
            (dir, model)
        })
        .1
}

fn fraction(name: &str, value: Option<f64>) -> Result<(), TestCaseError> {
    if let Some(v) = value {
        prop_assert!((0.0..=1.0).contains(&v), "{name} = {v}");
    }
    Ok(())
}

/// Text made of the pieces that stress tokenizers and sentence splitting.
fn text_strategy() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-zA-Z]{1,8}",
        Just(" ".to_string()),
        Just(". ".to_string()),
        Just("\n".to_string()),
        Just("!?".to_string()),
        Just("the ".to_string()),
        Just("...".to_string()),
        Just("😀".to_string()),
        Just("東京は".to_string()),
        Just("\u{200b}".to_string()),
        Just("\t\r\n".to_string()),
        Just("\"".to_string()),
        any::<char>().prop_map(|c| c.to_string()),
        "\\PC{0,6}",
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

fn options_strategy() -> impl Strategy<Value = AnalysisOptions> {
    let selection = prop_oneof![
        (0.001f64..1.0).prop_map(|q| Selection::TopFraction { q }),
        (-2.0f64..4.0).prop_map(|z| Selection::AboveMean { z }),
        (1usize..4).prop_map(|k| Selection::TopKPerRow { k }),
    ];
    let similarity = prop_oneof![
        Just(SimilarityVariant::Raw),
        Just(SimilarityVariant::Cosine),
        Just(SimilarityVariant::RowOverDiagonal),
        Just(SimilarityVariant::ZScore),
    ];
    (selection, similarity, 0usize..8).prop_map(|(selection, similarity, local_window)| {
        AnalysisOptions {
            selection,
            similarity,
            local_window,
        }
    })
}

/// `PROPTEST_CASES` when set (the full campaign), else a quick run.
fn campaign_size() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: campaign_size(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_text_gives_figures_in_range(text in text_strategy(), mode_index in 0usize..3, options in options_strategy()) {
        let model = tiny_model();
        let mode = [InputMode::Document, InputMode::OneSentencePerLine, InputMode::Plain][mode_index];
        let built = match build_input(&model.tokenizer, &text, mode, model.max_tokens(), 0, &model.specials) {
            Ok(built) => built,
            Err(InputError::Empty) => {
                prop_assert!(text.trim().is_empty(), "non-blank text refused as empty");
                return Ok(());
            }
            Err(other) => return Err(TestCaseError::fail(format!("{other}"))),
        };
        let tokens = &built.tokens;
        let t = tokens.len();
        prop_assert!(t <= model.max_tokens() && t >= 2);
        prop_assert_eq!(tokens.input_ids[0], model.specials.start.id);
        prop_assert_eq!(tokens.input_ids[t - 1], model.specials.separator.id);
        prop_assert_eq!(tokens.special.len(), t);
        prop_assert_eq!(tokens.sentence_ids.len(), t);
        for offset in tokens.offsets.iter().flatten() {
            prop_assert!(offset.0 <= offset.1 && offset.1 <= text.len());
            prop_assert!(text.is_char_boundary(offset.0) && text.is_char_boundary(offset.1));
        }
        let captures = model.capture(&tokens.input_ids, &|| false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let analysis = analyze(tokens, &captures, &options);
        let json = serde_json::to_string(&analysis).unwrap();
        prop_assert!(!json.contains("NaN") && !json.contains("inf"));
        fraction("baseline", analysis.baseline_same_sentence_fraction)?;
        for layer in &analysis.layers {
            if let Some(d) = layer.mean_distance { prop_assert!(d >= 1.0 && d < t as f64); }
            fraction("same_sentence", layer.same_sentence_fraction)?;
            fraction("separator_attention", layer.separator_attention)?;
            fraction("focus_uniqueness", layer.focus_uniqueness)?;
            fraction("segmentation", layer.segmentation_accuracy)?;
            fraction("segmentation_undecided", layer.segmentation_undecided)?;
            fraction("segmentation_share", layer.segmentation_share)?;
            fraction("segmentation_share_chance", layer.segmentation_share_chance)?;
            fraction("sink_attention", layer.sink_attention)?;
            if let (Some(a), Some(u)) = (layer.segmentation_accuracy, layer.segmentation_undecided) {
                prop_assert!(a + u <= 1.0 + 1e-12);
            }
            prop_assert_eq!(layer.distance_histogram.len(), t);
            for head in &layer.heads {
                if let Some(d) = head.mean_distance { prop_assert!(d >= 1.0 && d < t as f64); }
                fraction("same_sentence", head.same_sentence_fraction)?;
                fraction("repetition", head.repetition_fraction)?;
                fraction("focus_share", head.focus_share)?;
                fraction("local", head.local_fraction)?;
                fraction("separator_attention", head.separator_attention)?;
                fraction("sink_attention", head.sink_attention)?;
                prop_assert_eq!(head.category.is_some(), head.mean_distance.is_some());
                for (i, j) in head.selected_pairs.iter() {
                    let (i, j) = (i as usize, j as usize);
                    prop_assert!(i < j && j < t && !tokens.special[i] && !tokens.special[j]);
                }
            }
        }
    }
}
