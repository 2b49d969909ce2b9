//! Every supported encoder family against Hugging Face transformers, on the
//! fixtures `reference/make_family_fixtures.py` made: a tiny random-weight
//! model of each family (saved as the base model or with a task head) with
//! a tokenizer trained for it, whose start and separator tokens are not at
//! BERT's ids, and a text written for it. `headscope analyze
//! --one-sentence-per-line --json --npz` must give the reference's input
//! ids; attentions, head outputs and similarity within 1e-4; every figure
//! within 1e-3. Then: the input's special tokens are the tokenizer's own,
//! checkpoints load under every naming, and broken ones name the tensor.

mod common;

use candle_core::Device;
use common::parity::analyze_family_fixture;
use common::*;
use headscope::input::{build_input, InputMode};
use headscope::model::random::{self, NameStyle};
use headscope::model::{Family, Model, ModelConfig};
use std::path::Path;

fn load(dir: &Path) -> anyhow::Result<Model> {
    Model::load_folder(dir, &Device::Cpu)
}

/// `headscope analyze` on the family's text agrees with the reference.
fn assert_family_matches_hugging_face(name: &str) {
    analyze_family_fixture(name);
}

#[test]
fn bert_matches_hugging_face() {
    assert_family_matches_hugging_face("bert");
}

#[test]
fn roberta_matches_hugging_face() {
    assert_family_matches_hugging_face("roberta");
}

#[test]
fn xlm_roberta_matches_hugging_face() {
    assert_family_matches_hugging_face("xlm-roberta");
}

#[test]
fn camembert_matches_hugging_face() {
    assert_family_matches_hugging_face("camembert");
}

#[test]
fn distilbert_matches_hugging_face() {
    assert_family_matches_hugging_face("distilbert");
}

#[test]
fn electra_matches_hugging_face() {
    assert_family_matches_hugging_face("electra");
}

#[test]
fn albert_matches_hugging_face() {
    assert_family_matches_hugging_face("albert");
}

#[test]
fn modernbert_matches_hugging_face() {
    assert_family_matches_hugging_face("modernbert");
}

/// EmbeddingGemma (a `gemma3_text` with `use_bidirectional_attention`,
/// ANALYSIS.md §8): bidirectional attention with its sliding layer's window
/// as transformers builds it, `<bos> … <eos>` from the tokenizer, the
/// separators at sentence ends and the segmentation figures defined, all
/// equal to transformers (reference/make_embedding_fixture.py).
#[test]
fn embeddinggemma_matches_hugging_face() {
    let ours = analyze_family_fixture("embeddinggemma");
    for layer in ours["layers"].as_array().unwrap() {
        for figure in [
            "segmentation_accuracy",
            "segmentation_undecided",
            "segmentation_share",
            "segmentation_share_chance",
        ] {
            assert!(layer[figure].is_number(), "{figure}: {}", layer[figure]);
        }
    }
    let model = load(&family_fixture("embeddinggemma")).unwrap();
    assert!(!model.config.is_causal() && model.config.is_bidirectional_decoder());
    let built = build_input(
        &model.tokenizer,
        "One short line.\nAnother short line.\n",
        InputMode::OneSentencePerLine,
        model.max_tokens(),
        0,
        &model.specials,
    )
    .unwrap();
    let tokens = &built.tokens;
    assert!(!tokens.causal && tokens.bidirectional_decoder);
    assert_eq!(tokens.token_texts.first().unwrap(), "<bos>");
    assert_eq!(tokens.token_texts.last().unwrap(), "<eos>");
    // Each sentence's last content token, never `<bos>` or `<eos>`.
    let separators = tokens.separator_positions();
    assert_eq!(separators.len(), 2);
    assert_eq!(*separators.last().unwrap(), tokens.len() - 2);
    assert!(separators.iter().all(|&i| !tokens.special[i]));
}

/// EmbeddingGemma as sentence-transformers saves it: its tensor names
/// without the `model.` prefix (`embed_tokens.weight`, `layers.0.…`). It
/// opens and gives transformers' figures too.
#[test]
fn embeddinggemma_opens_with_sentence_transformers_names() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("embeddinggemma");
    std::fs::create_dir(&folder).unwrap();
    let source = family_fixture("embeddinggemma");
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(source.join(file), folder.join(file)).unwrap();
    }
    let tensors =
        candle_core::safetensors::load(source.join("model.safetensors"), &Device::Cpu).unwrap();
    let renamed: std::collections::HashMap<String, _> = tensors
        .into_iter()
        .map(|(name, tensor)| {
            let bare = name
                .strip_prefix("model.")
                .expect("the fixture's names have the prefix");
            (bare.to_string(), tensor)
        })
        .collect();
    assert!(renamed.contains_key("embed_tokens.weight"));
    candle_core::safetensors::save(&renamed, folder.join("model.safetensors")).unwrap();
    let (json, npz) = (dir.path().join("ours.json"), dir.path().join("ours.npz"));
    run_ok(
        headscope_command()
            .arg("analyze")
            .arg("--model")
            .arg(&folder)
            .arg("--one-sentence-per-line")
            .arg("--json")
            .arg(&json)
            .arg("--npz")
            .arg(&npz)
            .arg(fixture("families/embeddinggemma.txt")),
        "embeddinggemma without prefix",
    );
    common::parity::assert_files_match_reference(
        (&json, &npz),
        (
            &fixture("families/embeddinggemma.json"),
            &fixture("families/embeddinggemma.npz"),
        ),
    );
}

/// A capture of EmbeddingGemma (`analyze --save-capture`) says it is not
/// causal and names no separator token; read back, its separators are the
/// sentence ends again and `analyze --capture` gives transformers' figures,
/// segmentation included.
#[test]
fn an_embeddinggemma_capture_reads_back_bidirectional() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("run.safetensors");
    let (json, npz) = (dir.path().join("ours.json"), dir.path().join("ours.npz"));
    run_ok(
        headscope_command()
            .arg("analyze")
            .arg("--model")
            .arg(family_fixture("embeddinggemma"))
            .arg("--one-sentence-per-line")
            .arg("--save-capture")
            .arg(&capture)
            .arg(fixture("families/embeddinggemma.txt")),
        "analyze --save-capture",
    );
    let file = headscope::capture_file::CaptureFile::read(&capture).unwrap();
    assert!(!file.header.causal);
    assert_eq!(file.header.tokens.separator_id, None);
    assert!(file.tokens.bidirectional_decoder && !file.tokens.causal);
    run_ok(
        headscope_command()
            .arg("analyze")
            .arg("--capture")
            .arg(&capture)
            .arg("--json")
            .arg(&json)
            .arg("--npz")
            .arg(&npz),
        "analyze --capture",
    );
    common::parity::assert_files_match_reference(
        (&json, &npz),
        (
            &fixture("families/embeddinggemma.json"),
            &fixture("families/embeddinggemma.npz"),
        ),
    );
}

/// The input starts and is cut by the tokens the tokenizer's post-processor
/// adds, with the tokenizer's texts for them.
#[test]
fn inputs_use_the_tokenizers_own_start_and_separator() {
    let expected = [
        ("bert", "[CLS]", "[SEP]"),
        ("roberta", "<s>", "</s>"),
        ("xlm-roberta", "<s>", "</s>"),
        ("camembert", "<s>", "</s>"),
        ("distilbert", "[CLS]", "[SEP]"),
        ("electra", "[CLS]", "[SEP]"),
        ("albert", "[CLS]", "[SEP]"),
        ("modernbert", "[CLS]", "[SEP]"),
    ];
    for (name, start, separator) in expected {
        let model = load(&family_fixture(name)).unwrap();
        let specials = &model.specials;
        assert_eq!(
            (
                specials.start.text.as_str(),
                specials.separator.text.as_str()
            ),
            (start, separator),
            "{name}"
        );
        assert_eq!(model.tokenizer.token_to_id(start), Some(specials.start.id));
        assert_eq!(
            model.tokenizer.token_to_id(separator),
            Some(specials.separator.id)
        );
        assert_ne!(
            (specials.start.id, specials.separator.id),
            (101, 102),
            "{name}: the fixture's ids must not be BERT's"
        );
        let text = "One short line.\nAnother short line.\n";
        for mode in [InputMode::OneSentencePerLine, InputMode::Plain] {
            let built = build_input(
                &model.tokenizer,
                text,
                mode,
                model.max_tokens(),
                0,
                specials,
            )
            .unwrap();
            let tokens = &built.tokens;
            assert_eq!(tokens.input_ids[0], specials.start.id, "{name} {mode:?}");
            assert_eq!(tokens.token_texts[0], start, "{name} {mode:?}");
            assert_eq!(
                (tokens.cls_id, tokens.sep_id),
                (specials.start.id, specials.separator.id)
            );
            let separators = tokens.separator_positions();
            let closing = if mode == InputMode::Plain { 1 } else { 2 };
            assert_eq!(separators.len(), closing, "{name} {mode:?}");
            assert_eq!(*separators.last().unwrap(), tokens.len() - 1);
            for &i in &separators {
                assert_eq!(tokens.token_texts[i], separator, "{name} {mode:?}");
                assert!(tokens.special[i]);
            }
        }
    }
}

/// RoBERTa's padding token written in the text is special and belongs to
/// no sentence; its position is the padding index, so the positions after
/// it move back by one (the parity test checks the numbers).
#[test]
fn a_padding_token_in_the_text_is_never_content() {
    let model = load(&family_fixture("roberta")).unwrap();
    let pad = model.specials.pad.expect("RoBERTa pads");
    assert_eq!(model.tokenizer.id_to_token(pad).as_deref(), Some("<pad>"));
    let built = build_input(
        &model.tokenizer,
        "a <pad> here\n",
        InputMode::OneSentencePerLine,
        model.max_tokens(),
        0,
        &model.specials,
    )
    .unwrap();
    let tokens = &built.tokens;
    let at = tokens.input_ids.iter().position(|&id| id == pad).unwrap();
    assert!(tokens.special[at]);
    assert_eq!(tokens.sentence_ids[at], None);
    assert!(!tokens.content_positions().contains(&at));
    assert_eq!(model.config.position_ids(&tokens.input_ids)[at], pad);
}

/// RoBERTa's limit is its position table less the padding index and the
/// positions before it: 65 − 2 for the XLM-R fixture, which the text fills.
#[test]
fn roberta_family_limits_count_from_the_padding_index() {
    let model = load(&family_fixture("xlm-roberta")).unwrap();
    assert_eq!(model.config.max_position_embeddings, 65);
    assert_eq!(model.max_tokens(), 63);
}

/// The config of a family fixture, at the shape of its checkpoint.
fn fixture_config(name: &str) -> ModelConfig {
    ModelConfig::from_file(&family_fixture(name).join("config.json")).unwrap()
}

fn write_family_model(dir: &Path, name: &str, style: NameStyle) {
    random::write_random_model(
        &fixture_config(name),
        &family_fixture(name).join("tokenizer.json"),
        dir,
        5,
        style,
    )
    .unwrap();
}

/// A checkpoint saved as the base model, with a task head (the family's
/// prefix and a classifier's tensors) or with `gamma`/`beta` names loads to
/// the same model.
#[test]
fn every_family_loads_as_base_or_with_a_head() {
    for name in FAMILY_FIXTURES {
        let mut results = Vec::new();
        for (with_head, gamma_beta) in [(false, false), (true, false), (true, true)] {
            let dir = tempfile::tempdir().unwrap();
            let style = NameStyle {
                with_head,
                gamma_beta,
            };
            write_family_model(dir.path(), name, style);
            let model = load(dir.path()).unwrap_or_else(|e| panic!("{name} {style:?}: {e:#}"));
            let ids = [
                model.specials.start.id,
                20,
                21,
                22,
                model.specials.separator.id,
            ];
            results.push(model.capture(&ids, &|| false).unwrap());
        }
        for other in &results[1..] {
            assert_eq!(other.attentions, results[0].attentions, "{name}");
            assert_eq!(other.similarity, results[0].similarity, "{name}");
        }
        assert_eq!(results[0].layers, fixture_config(name).attention_layers());
    }
}

/// Rewrites a model's weights without the tensors `drop` matches.
fn drop_tensors(dir: &Path, drop: impl Fn(&str) -> bool) {
    let path = dir.join("model.safetensors");
    let tensors = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
    let kept: std::collections::HashMap<_, _> = tensors
        .into_iter()
        .filter(|(name, _)| !drop(name))
        .collect();
    candle_core::safetensors::save(&kept, &path).unwrap();
}

/// A checkpoint that does not fit its family says which tensor.
#[test]
fn tensors_that_do_not_fit_are_named() {
    for (name, missing) in [
        ("distilbert", "transformer.layer.1.ffn.lin2.weight"),
        (
            "albert",
            "encoder.albert_layer_groups.1.albert_layers.0.full_layer_layer_norm.bias",
        ),
        ("electra", "embeddings_project.weight"),
        ("roberta", "embeddings.token_type_embeddings.weight"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write_family_model(dir.path(), name, NameStyle::default());
        drop_tensors(dir.path(), |tensor| tensor == missing);
        let message = format!("{:#}", load(dir.path()).unwrap_err());
        assert!(
            message.contains("does not fit") && message.contains(missing),
            "{name}: {message}"
        );
    }
    // A shape that differs names the tensor too.
    let dir = tempfile::tempdir().unwrap();
    write_family_model(dir.path(), "albert", NameStyle::default());
    let wider = ModelConfig {
        intermediate_size: 80,
        ..fixture_config("albert")
    };
    std::fs::write(
        dir.path().join("config.json"),
        serde_json::to_string(&wider).unwrap(),
    )
    .unwrap();
    let message = format!("{:#}", load(dir.path()).unwrap_err());
    assert!(
        message.contains("shape") && message.contains("albert_layers.0.ffn.weight"),
        "{message}"
    );
    // A DistilBERT checkpoint under a BERT config: BERT's names are missing.
    let dir = tempfile::tempdir().unwrap();
    write_family_model(dir.path(), "distilbert", NameStyle::default());
    let as_bert = ModelConfig {
        family: Family::Bert,
        type_vocab_size: 2,
        ..fixture_config("distilbert")
    };
    std::fs::write(
        dir.path().join("config.json"),
        serde_json::to_string(&as_bert).unwrap(),
    )
    .unwrap();
    let message = format!("{:#}", load(dir.path()).unwrap_err());
    assert!(message.contains("cannot find tensor"), "{message}");
}

/// `make-random-model` makes each family from a config, and the result
/// runs through `analyze`.
#[test]
fn make_random_model_makes_every_family() {
    for name in FAMILY_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("model");
        let made = run_ok(
            headscope_command()
                .args(["make-random-model", "--like"])
                .arg(family_fixture(name))
                .arg("--tokenizer")
                .arg(family_fixture(name).join("tokenizer.json"))
                .arg("--out")
                .arg(&out),
            name,
        );
        let family = fixture_config(name).family;
        assert!(
            String::from_utf8_lossy(&made.stderr).contains(family.display_name()),
            "{name}"
        );
        assert_eq!(
            ModelConfig::from_file(&out.join("config.json"))
                .unwrap()
                .family,
            family
        );
        let analysed = run_ok(
            headscope_command()
                .arg("analyze")
                .arg("--model")
                .arg(&out)
                .args(["--one-sentence-per-line", "--json", "-"])
                .arg(fixture(&format!("families/{name}.txt"))),
            name,
        );
        let figures: serde_json::Value = serde_json::from_slice(&analysed.stdout).unwrap();
        assert_eq!(
            figures["layers"].as_array().unwrap().len(),
            fixture_config(name).attention_layers(),
            "{name}"
        );
    }
}

/// An unsupported model type is refused with the supported ones named.
#[test]
fn unsupported_model_types_are_named_with_the_supported_ones() {
    let dir = tempfile::tempdir().unwrap();
    write_family_model(dir.path(), "bert", NameStyle::default());
    let config_path = dir.path().join("config.json");
    let text = std::fs::read_to_string(&config_path).unwrap();
    std::fs::write(&config_path, text.replace("\"bert\"", "\"deberta-v2\"")).unwrap();
    let message = format!("{:#}", load(dir.path()).unwrap_err());
    assert!(
        message.contains("config.json") && message.contains("\"deberta-v2\" is not supported"),
        "{message}"
    );
    for family in Family::ALL {
        assert!(message.contains(family.model_type()), "{message}");
    }
}
