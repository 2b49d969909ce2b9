//! Loading, name variants, encoder shapes and the cut, on tiny random
//! models written by the test itself (no download).

mod common;

use candle_core::Device;
use common::*;
use headscope::captures::HeadId;
use headscope::input::{build_input, split_sentences, InputError, InputMode};
use headscope::model::random::NameStyle;
use headscope::model::{Model, ModelSource};

fn load(dir: &std::path::Path) -> anyhow::Result<Model> {
    Model::load_folder(dir, &Device::Cpu)
}

fn err(dir: &std::path::Path) -> String {
    format!("{:#}", load(dir).expect_err("load must fail"))
}

#[test]
fn captures_have_the_models_shape_and_are_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let config = tiny_config();
    write_tiny_model(dir.path(), &config, NameStyle::default());
    let model = load(dir.path()).unwrap();
    let ids = [
        model.specials.start.id,
        2023,
        2003,
        1037,
        3231,
        1012,
        model.specials.separator.id,
    ];
    let captures = model.capture(&ids, &|| false).unwrap();
    let (l, h, t, d) = (2, 2, ids.len(), 4);
    assert_eq!(
        (
            captures.layers,
            captures.heads,
            captures.tokens,
            captures.head_dim
        ),
        (l, h, t, d)
    );
    assert_eq!(captures.attentions.len(), l * h * t * t);
    assert_eq!(captures.similarity.len(), l * h * t * t);
    assert_eq!(captures.head_outputs.len(), l * h * t * d);
    for id in captures.head_ids().collect::<Vec<_>>() {
        let p = captures.attention(id);
        for row in p.chunks(t) {
            let sum: f32 = row.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "attention row sums to {sum}");
            assert!(row.iter().all(|&v| v >= 0.0));
        }
        // S = O·Oᵀ, recomputed by hand.
        let o = captures.head_output(id);
        let s = captures.similarity(id);
        for i in 0..t {
            for j in 0..t {
                let dot: f32 = (0..d).map(|k| o[i * d + k] * o[j * d + k]).sum();
                assert!((s[i * t + j] - dot).abs() < 1e-5 * (1.0 + dot.abs()));
                assert!((s[i * t + j] - s[j * t + i]).abs() < 1e-5 * (1.0 + dot.abs()));
            }
        }
    }
    // Heads differ: the capture is not one head copied.
    assert_ne!(
        captures.attention(HeadId::new(0, 0)),
        captures.attention(HeadId::new(0, 1))
    );
}

#[test]
fn with_head_and_gamma_beta_names_load_to_the_same_model() {
    let config = tiny_config();
    let ids = [101u32, 7592, 2088, 999, 102];
    let mut results = Vec::new();
    for style in [
        NameStyle::default(),
        NameStyle {
            with_head: true,
            gamma_beta: false,
        },
        NameStyle {
            with_head: false,
            gamma_beta: true,
        },
        NameStyle {
            with_head: true,
            gamma_beta: true,
        },
    ] {
        let dir = tempfile::tempdir().unwrap();
        write_tiny_model(dir.path(), &config, style);
        let model = load(dir.path()).unwrap_or_else(|e| panic!("{style:?}: {e:#}"));
        results.push(model.capture(&ids, &|| false).unwrap());
    }
    for other in &results[1..] {
        assert_eq!(other.similarity, results[0].similarity);
        assert_eq!(other.attentions, results[0].attentions);
    }
}

#[test]
fn any_shape_from_the_config_runs() {
    for (layers, heads, hidden) in [(1, 1, 4), (3, 4, 16), (2, 3, 12)] {
        let dir = tempfile::tempdir().unwrap();
        let config = headscope::model::ModelConfig {
            num_hidden_layers: layers,
            num_attention_heads: heads,
            hidden_size: hidden,
            ..tiny_config()
        };
        write_tiny_model(dir.path(), &config, NameStyle::default());
        let model = load(dir.path()).unwrap();
        let captures = model.capture(&[101, 2009, 102], &|| false).unwrap();
        assert_eq!(
            (captures.layers, captures.heads, captures.head_dim),
            (layers, heads, hidden / heads)
        );
    }
}

#[test]
fn cancelling_stops_between_layers() {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &tiny_config(), NameStyle::default());
    let model = load(dir.path()).unwrap();
    let result = model.capture(&[101, 2009, 102], &|| true);
    assert!(matches!(
        result,
        Err(headscope::model::ForwardError::Cancelled)
    ));
}

#[test]
fn broken_model_folders_are_refused_with_the_file_named() {
    let config = tiny_config();
    // Missing folder.
    let missing = std::path::Path::new("/nonexistent/headscope-model");
    assert!(
        err(missing).contains("/nonexistent/headscope-model"),
        "{}",
        err(missing)
    );

    // No tokenizer.
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &config, NameStyle::default());
    std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
    assert!(
        err(dir.path()).contains("no tokenizer.json"),
        "{}",
        err(dir.path())
    );

    // Truncated weights.
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &config, NameStyle::default());
    let weights = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
    let message = err(dir.path());
    assert!(
        message.contains("model.safetensors") && message.contains("truncated or corrupt"),
        "{message}"
    );

    // Garbage weights.
    std::fs::write(&weights, b"this is not a safetensors file at all").unwrap();
    assert!(err(dir.path()).contains("truncated or corrupt"));

    // Not an encoder headscope runs.
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &config, NameStyle::default());
    let config_path = dir.path().join("config.json");
    let text = std::fs::read_to_string(&config_path).unwrap();
    std::fs::write(&config_path, text.replace("\"bert\"", "\"falcon\"")).unwrap();
    let message = err(dir.path());
    assert!(
        message.contains("config.json") && message.contains("\"falcon\" is not supported"),
        "{message}"
    );

    // config.json that is not JSON.
    std::fs::write(&config_path, "{ nope").unwrap();
    assert!(err(dir.path()).contains("config.json"));

    // Weights that do not fit the config.
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &config, NameStyle::default());
    let bigger = headscope::model::ModelConfig {
        hidden_size: 16,
        ..config.clone()
    };
    std::fs::write(
        dir.path().join("config.json"),
        serde_json::to_string(&bigger).unwrap(),
    )
    .unwrap();
    let message = err(dir.path());
    assert!(
        message.contains("does not fit") && message.contains("shape"),
        "{message}"
    );
}

#[test]
fn model_sources_parse_paths_and_hub_ids() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        ModelSource::parse(dir.path().to_str().unwrap()).unwrap(),
        ModelSource::Folder(dir.path().to_path_buf())
    );
    assert_eq!(
        ModelSource::parse("bert-base-uncased").unwrap(),
        ModelSource::Hub("bert-base-uncased".into())
    );
    assert_eq!(
        ModelSource::parse("sentence-transformers/all-MiniLM-L6-v2").unwrap(),
        ModelSource::Hub("sentence-transformers/all-MiniLM-L6-v2".into())
    );
    assert!(ModelSource::parse("/no/such/folder").is_err());
    assert!(ModelSource::parse("").is_err());
}

#[test]
fn offline_hub_id_fails_with_a_message_naming_it() {
    // The hub cannot be reached here (or HF_HUB_OFFLINE forbids it); either way
    // the message names the id and says how to pass a folder.
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("HF_HOME", cache.path());
    std::env::set_var("HF_HUB_OFFLINE", "1");
    let error =
        Model::load(&ModelSource::Hub("bert-base-uncased".into()), &mut |_| {}).unwrap_err();
    let message = format!("{error:#}");
    assert!(
        message.contains("bert-base-uncased") && message.contains("--model"),
        "{message}"
    );
}

#[test]
fn the_cut_keeps_whole_sentences_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &tiny_config(), NameStyle::default());
    let model = load(dir.path()).unwrap();
    const LIMIT: usize = 24;
    let text = "The cat sat on the mat.\nA dog barked at the moon.\nBirds sang loudly.\nThe end came quickly for everyone.\nNothing else happened.\n";
    let built = build_input(
        &model.tokenizer,
        text,
        InputMode::OneSentencePerLine,
        LIMIT,
        0,
        &model.specials,
    )
    .unwrap();
    let lengths: Vec<usize> = split_sentences(text, InputMode::OneSentencePerLine)
        .iter()
        .map(|&(s, e)| model.tokenizer.encode(&text[s..e], false).unwrap().len())
        .collect();
    // Expected: as many whole sentences as fit in LIMIT positions.
    let mut used = 1;
    let mut fit = 0;
    for &n in &lengths {
        if used + n + 1 > LIMIT {
            break;
        }
        used += n + 1;
        fit += 1;
    }
    assert!(
        fit < lengths.len(),
        "the text must not fit, lengths {lengths:?}"
    );
    assert_eq!(built.tokens.len(), used);
    assert_eq!(built.sentences_analysed, fit);
    assert_eq!(built.sentences_left_out, lengths.len() - fit);
    assert_eq!(built.tokens_left_out, lengths[fit..].iter().sum::<usize>());
    assert!(built
        .left_out_warning()
        .unwrap()
        .contains(&format!("left out {} sentence", lengths.len() - fit)));
    // [CLS] first, every sentence closed by [SEP] with its sentence id.
    assert_eq!(built.tokens.input_ids[0], model.specials.start.id);
    let seps = built.tokens.separator_positions();
    assert_eq!(seps.len(), fit);
    for (k, &p) in seps.iter().enumerate() {
        assert_eq!(built.tokens.sentence_ids[p], Some(k));
    }
    // A window starting later analyses the next sentences.
    let later = build_input(
        &model.tokenizer,
        text,
        InputMode::OneSentencePerLine,
        LIMIT,
        fit,
        &model.specials,
    )
    .unwrap();
    assert_eq!(later.first_sentence, fit);
    assert!(later.sentences_analysed >= 1);
    // Empty text.
    assert_eq!(
        build_input(
            &model.tokenizer,
            " \n\t ",
            InputMode::Document,
            LIMIT,
            0,
            &model.specials
        )
        .unwrap_err(),
        InputError::Empty
    );
    // Plain mode cuts at a sentence too.
    let plain = build_input(
        &model.tokenizer,
        text,
        InputMode::Plain,
        LIMIT,
        0,
        &model.specials,
    )
    .unwrap();
    assert!(plain.tokens.len() <= LIMIT);
    assert_eq!(plain.tokens.separator_positions().len(), 1);
    assert!(plain.sentences_left_out >= 1);
    // A sentence too long on its own is cut into pieces, each analysed as a
    // sentence, even after a "sentence" of characters the tokenizer drops
    // (a zero-width space; found by the property campaign), a paragraph
    // of its own.
    let long = format!("\u{200b}\n\n{}.", "the cat sat on the mat ".repeat(6));
    for mode in [InputMode::Plain, InputMode::Document] {
        let mut start = Some(headscope::input::WindowStart::default());
        let mut pieces = Vec::new();
        while let Some(at) = start {
            let built =
                build_input(&model.tokenizer, &long, mode, LIMIT, at, &model.specials).unwrap();
            assert!(built.tokens.len() <= LIMIT, "{mode:?}");
            assert_eq!(
                (built.first_sentence, built.first_piece),
                (at.sentence, at.piece)
            );
            for split in &built.sentences_split {
                assert_eq!(
                    (split.sentence, split.tokens, split.pieces),
                    (1, 37, 2),
                    "{mode:?}"
                );
                assert!(split.at_word_boundaries, "{mode:?}");
                for piece in &split.in_window {
                    // Its tokens carry the piece's own sentence id.
                    let ids: Vec<_> = (0..built.tokens.len())
                        .filter(|&i| !built.tokens.special[i])
                        .filter(|&i| built.tokens.sentence_ids[i] == Some(piece.window_sentence))
                        .collect();
                    assert_eq!(ids.len(), piece.tokens, "{mode:?}");
                    pieces.push((piece.piece, piece.tokens));
                }
            }
            let notes = built.split_notes();
            if let Some(next) = built.next.filter(|next| next.piece > 0) {
                assert!(built
                    .left_out_warning()
                    .unwrap()
                    .contains("the rest of sentence 2"));
                assert!(
                    notes[0].contains(&format!("piece {} of 2", next.piece)),
                    "{notes:?}"
                );
            }
            start = built.next;
        }
        assert_eq!(pieces.len(), 2, "{mode:?}: {pieces:?}");
        assert_eq!((pieces[0].0, pieces[1].0), (0, 1), "{mode:?}");
        assert_eq!(pieces[0].1 + pieces[1].1, 37, "{mode:?}: every token once");
    }
}

#[test]
fn a_special_token_written_in_the_text_is_special_and_closes_no_sentence() {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &tiny_config(), NameStyle::default());
    let model = load(dir.path()).unwrap();
    // Two sentences in every mode: the first line ends one (a line break
    // alone would not, ANALYSIS.md §1).
    let text = "the cat [SEP] sat down.\nThe dog ran\n";
    for mode in [InputMode::OneSentencePerLine, InputMode::Plain] {
        let built = build_input(
            &model.tokenizer,
            text,
            mode,
            model.max_tokens(),
            0,
            &model.specials,
        )
        .unwrap();
        let tokens = &built.tokens;
        let typed = tokens
            .token_texts
            .iter()
            .position(|t| t == "[SEP]")
            .expect("the typed [SEP] is a token");
        assert_eq!(
            tokens.input_ids[typed], model.specials.separator.id,
            "{mode:?}"
        );
        // A separator, never a content token, and in no sentence.
        assert!(tokens.special[typed], "{mode:?}");
        assert!(!tokens.content_positions().contains(&typed), "{mode:?}");
        assert!(tokens.separator_positions().contains(&typed), "{mode:?}");
        assert_eq!(tokens.sentence_ids[typed], None, "{mode:?}");
        // The words on either side stay in the first sentence.
        let sentence_of = |word: &str| {
            let i = tokens.token_texts.iter().position(|t| t == word).unwrap();
            tokens.sentence_ids[i]
        };
        assert_eq!(sentence_of("cat"), Some(0), "{mode:?}");
        assert_eq!(sentence_of("sat"), Some(0), "{mode:?}");
        assert_eq!(sentence_of("dog"), Some(1), "{mode:?}");
        assert_eq!(built.sentences_analysed, 2, "{mode:?}");
    }
}
