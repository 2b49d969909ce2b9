//! The causal decoders (GPT-2, Llama, Qwen2, Mistral; GPT-NeoX, Gemma 1–3,
//! Qwen3, Phi-3, OLMo 2) against Hugging Face transformers, on the
//! fixtures `reference/make_decoder_fixtures.py` made: tiny random-weight
//! models (Llama with 2 key/value heads for 4 query heads and Llama 3's
//! RoPE scaling, Mistral with one key/value head, a sliding window of 5 and
//! linear RoPE scaling, Qwen2 with its q/k/v biases, GPT-2 cut at its 64
//! positions; each newer family with what sets it apart, as
//! tests/fixtures/README.md lists) with tokenizers trained for them.
//! `headscope analyze --one-sentence-per-line --json --npz` must give the
//! reference's input ids; attentions, head outputs and similarity within
//! 1e-4; every figure within 1e-3, the causal ones as ANALYSIS.md §8 says
//! (segmentation null). Then the input itself: the text encoded once with
//! the tokenizer's own special tokens, sentence-final separators.

mod common;

use candle_core::Device;
use common::parity::analyze_family_fixture;
use common::*;
use headscope::input::{build_input, InputMode};
use headscope::model::Model;
use std::path::Path;

fn load(dir: &Path) -> Model {
    Model::load_folder(dir, &Device::Cpu).unwrap_or_else(|e| panic!("{}: {e:#}", dir.display()))
}

/// Runs `headscope analyze` on the family's text and compares its files
/// with the reference; returns our JSON.
fn assert_decoder_matches_hugging_face(name: &str) -> serde_json::Value {
    let ours = analyze_family_fixture(name);
    // A causal model has no segmentation; the other figures are there.
    for layer in ours["layers"].as_array().unwrap() {
        assert!(layer["segmentation_accuracy"].is_null(), "{name}");
        assert!(layer["segmentation_undecided"].is_null(), "{name}");
        assert!(layer["segmentation_share"].is_null(), "{name}");
        assert!(layer["segmentation_share_chance"].is_null(), "{name}");
        assert!(
            layer["separator_attention"].as_f64().unwrap() > 0.0,
            "{name}"
        );
        assert!(layer["sink_attention"].as_f64().unwrap() > 0.0, "{name}");
    }
    ours
}

#[test]
fn gpt2_matches_hugging_face() {
    let ours = assert_decoder_matches_hugging_face("gpt2");
    // 64 positions: the text is cut after its last whole sentence that fits.
    assert_eq!(ours["sentences_left_out"], 3);
    assert_eq!(ours["tokens"].as_u64().unwrap(), 58);
}

#[test]
fn llama_matches_hugging_face() {
    assert_decoder_matches_hugging_face("llama");
}

#[test]
fn qwen2_matches_hugging_face() {
    assert_decoder_matches_hugging_face("qwen2");
}

#[test]
fn mistral_matches_hugging_face() {
    assert_decoder_matches_hugging_face("mistral");
}

/// GPT-NeoX (Pythia): the fused `query_key_value` laid out per head,
/// rotary on a quarter of each head, the parallel residual.
#[test]
fn gpt_neox_matches_hugging_face() {
    assert_decoder_matches_hugging_face("gpt_neox");
}

/// Gemma: RMSNorm by (1 + w), embeddings scaled by √hidden, GeGLU, one
/// key/value head of 16 dimensions (not hidden / heads); `<bos>` first.
#[test]
fn gemma_matches_hugging_face() {
    assert_decoder_matches_hugging_face("gemma");
}

/// Gemma 2: soft-capped scores, sliding windows on layers 0 and 2,
/// `query_pre_attn_scalar`, norms before and after both sublayers.
#[test]
fn gemma2_matches_hugging_face() {
    assert_decoder_matches_hugging_face("gemma2");
}

/// Gemma 3: q/k norms, local layers with their own rope base, the global
/// one with linear scaling.
#[test]
fn gemma3_text_matches_hugging_face() {
    assert_decoder_matches_hugging_face("gemma3_text");
}

/// Qwen3: q/k RMSNorm per head, head_dim 16.
#[test]
fn qwen3_matches_hugging_face() {
    assert_decoder_matches_hugging_face("qwen3");
}

/// Phi-3: fused `qkv_proj` (grouped keys) and `gate_up_proj`, rotary on
/// three quarters of each head.
#[test]
fn phi3_matches_hugging_face() {
    assert_decoder_matches_hugging_face("phi3");
}

/// OLMo 2: q/k RMSNorm over all heads, norms after the sublayers only.
#[test]
fn olmo2_matches_hugging_face() {
    assert_decoder_matches_hugging_face("olmo2");
}

/// Above the diagonal (and behind the sliding window of Mistral's layers,
/// Gemma 2's layers 0 and 2, Gemma 3's local layers 0 and 1) the
/// attention is exactly 0: the query cannot see those keys.
#[test]
fn masked_attention_is_exactly_zero() {
    let cases: [(&str, &[Option<usize>]); 5] = [
        ("gpt2", &[None, None]),
        ("llama", &[None, None]),
        ("mistral", &[Some(5), Some(5)]),
        ("gemma2", &[Some(6), None, Some(6)]),
        ("gemma3_text", &[Some(6), Some(6), None]),
    ];
    for (name, windows) in cases {
        let model = load(&family_fixture(name));
        let text = std::fs::read_to_string(fixture(&format!("families/{name}.txt"))).unwrap();
        let built = build_input(
            &model.tokenizer,
            &text,
            InputMode::OneSentencePerLine,
            model.max_tokens(),
            0,
            &model.specials,
        )
        .unwrap();
        let captures = model.capture(&built.tokens.input_ids, &|| false).unwrap();
        assert_eq!(captures.layers, windows.len(), "{name}");
        let t = captures.tokens;
        let mut outside_windows = 0;
        for (row_index, row) in captures.attentions.chunks(t).enumerate() {
            let (i, layer) = (row_index % t, row_index / (t * captures.heads));
            let window = windows[layer];
            for (j, &p) in row.iter().enumerate() {
                let visible = j <= i && window.is_none_or(|w: usize| i - j < w);
                if !visible {
                    assert_eq!(p, 0.0, "{name}: L{layer} P[{i}, {j}]");
                    outside_windows += usize::from(j < i);
                } else {
                    assert!(p > 0.0, "{name}: L{layer} P[{i}, {j}] is visible");
                }
            }
        }
        assert_eq!(
            outside_windows > 0,
            windows.iter().any(Option::is_some),
            "{name}"
        );
    }
}

/// The input is the text encoded once with the tokenizer's own special
/// tokens: a BOS for the Llama-style tokenizers, none for GPT-2 and Qwen2.
/// Each sentence's last token is its separator, a content token; every
/// token belongs to the sentence of its first non-space character.
#[test]
fn decoder_inputs_follow_analysis_section_8() {
    let text = "A naïve café opened.  Then it closed!\nThe end came late.\n";
    for (name, bos) in [
        ("gpt2", None),
        ("llama", Some("<s>")),
        ("qwen2", None),
        ("mistral", Some("<s>")),
        ("gpt_neox", None),
        ("gemma", Some("<bos>")),
        ("gemma2", Some("<bos>")),
        ("gemma3_text", Some("<bos>")),
        ("qwen3", None),
        ("phi3", Some("<s>")),
        ("olmo2", None),
    ] {
        let model = load(&family_fixture(name));
        assert!(model.specials.causal, "{name}");
        for mode in [InputMode::Document, InputMode::OneSentencePerLine] {
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
            assert!(tokens.causal);
            let whole = model
                .tokenizer
                .encode(
                    if mode == InputMode::Document {
                        text.to_string()
                    } else {
                        "A naïve café opened.  Then it closed! The end came late.".to_string()
                    },
                    true,
                )
                .unwrap();
            // A prefix of the tokenizer's own encoding (the trailing newline
            // after the last sentence belongs to no sentence).
            assert_eq!(
                tokens.input_ids[..],
                whole.get_ids()[..tokens.len()],
                "{name} {mode:?}"
            );
            match bos {
                Some(bos) => {
                    assert_eq!(tokens.token_texts[0], bos, "{name}");
                    assert!(tokens.special[0] && tokens.sentence_ids[0].is_none());
                    assert_eq!(tokens.cls_positions(), [0]);
                }
                None => assert!(!tokens.special[0], "{name}: no BOS"),
            }
            let sentences = if mode == InputMode::Document { 3 } else { 2 };
            assert_eq!(built.sentences_analysed, sentences, "{name} {mode:?}");
            let separators = tokens.separator_positions();
            assert_eq!(separators.len(), sentences, "{name} {mode:?}");
            assert_eq!(*separators.last().unwrap(), tokens.len() - 1);
            for (k, &i) in separators.iter().enumerate() {
                assert!(!tokens.special[i], "{name}: a separator is content");
                assert_eq!(tokens.sentence_ids[i], Some(k));
                assert_eq!(
                    tokens.sentence_ids.get(i + 1).copied().flatten(),
                    (k + 1 < sentences).then_some(k + 1)
                );
            }
            // The sentence of a token is that of its first non-space
            // character, in the user's text.
            for i in tokens.content_positions() {
                let (s, _) = tokens.offsets[i].unwrap();
                let first = s + text[s..].find(|c: char| !c.is_whitespace()).unwrap();
                let k = built
                    .sentence_spans
                    .iter()
                    .position(|&(a, b)| a <= first && first < b);
                assert_eq!(tokens.sentence_ids[i], k, "{name} {mode:?} token {i}");
            }
        }
    }
}

/// A window over a long text keeps the leading BOS and starts at a whole
/// sentence; the limit counts it.
#[test]
fn decoder_windows_keep_the_bos_and_whole_sentences() {
    let model = load(&family_fixture("llama"));
    let text = std::fs::read_to_string(fixture("families/llama.txt")).unwrap();
    let built = build_input(
        &model.tokenizer,
        &text,
        InputMode::OneSentencePerLine,
        30,
        1,
        &model.specials,
    )
    .unwrap();
    assert_eq!(built.tokens.token_texts[0], "<s>");
    assert!(built.tokens.len() <= 30);
    assert!(built.sentences_analysed >= 1 && built.sentences_left_out >= 1);
    assert_eq!(
        built.first_sentence + built.sentences_analysed + built.sentences_left_out,
        built.sentence_spans.len()
    );
    assert_eq!(built.tokens.sentence_ids[1], Some(0));
}

/// A random decoder of each fixture's shape loads as the base model saves
/// it and as a checkpoint with a head (`transformer.`, `model.` before
/// every name) to the same model, and `make-random-model` writes one that
/// `analyze` runs.
#[test]
fn random_decoders_load_under_either_naming() {
    use headscope::model::random::{self, NameStyle};
    use headscope::model::ModelConfig;
    for name in DECODER_FIXTURES {
        let config = ModelConfig::from_file(&family_fixture(name).join("config.json")).unwrap();
        let tokenizer = family_fixture(name).join("tokenizer.json");
        let mut results = Vec::new();
        for with_head in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let style = NameStyle {
                with_head,
                gamma_beta: false,
            };
            random::write_random_model(&config, &tokenizer, dir.path(), 5, style).unwrap();
            let model = load(dir.path());
            results.push(model.capture(&[3, 20, 21, 22, 23], &|| false).unwrap());
        }
        assert_eq!(results[0].attentions, results[1].attentions, "{name}");
        assert_eq!(results[0].layers, config.num_hidden_layers);

        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("model");
        run_ok(
            headscope_command()
                .args(["make-random-model", "--like"])
                .arg(family_fixture(name))
                .arg("--tokenizer")
                .arg(&tokenizer)
                .arg("--out")
                .arg(&out),
            name,
        );
        run_ok(
            headscope_command()
                .args(["analyze", "--one-sentence-per-line", "--model"])
                .arg(&out)
                .arg(fixture(&format!("families/{name}.txt"))),
            name,
        );
    }
}

/// The `--like` shape of each newer family, shrunk to a tiny width but
/// keeping what sets it apart (its norms, q/k norms, fused weights, partial
/// rotary, soft-cap, windows, rope bases), writes as a random model that
/// loads and runs; full-size they would take gigabytes.
#[test]
fn every_family_shape_of_make_random_model_loads_when_shrunk() {
    use headscope::model::random::{self, NameStyle};
    use headscope::model::{Family, ModelConfig};
    let tokenizer = family_fixture("gemma").join("tokenizer.json");
    for (name, family) in [
        ("pythia-160m", Family::GptNeoX),
        ("gemma-2b", Family::Gemma),
        ("gemma-2-2b", Family::Gemma2),
        ("gemma-3-1b", Family::Gemma3Text),
        ("qwen3-0.6b", Family::Qwen3),
        ("phi-3-mini", Family::Phi3),
        ("olmo-2-1b", Family::Olmo2),
    ] {
        let full = ModelConfig::like(name).unwrap();
        assert_eq!(full.family, family, "{name}");
        let mut config = full.clone();
        // Seven layers keep one of Gemma 3's global layers (every sixth).
        let layers = full.num_hidden_layers.min(7);
        config.num_hidden_layers = layers;
        config.hidden_size = 32;
        config.intermediate_size = 64;
        config.num_attention_heads = 4;
        config.vocab_size = 1500;
        let shape = config.pre_norm.as_mut().unwrap();
        let full_shape = full.pre_norm.as_ref().unwrap();
        shape.num_key_value_heads = match full_shape.num_key_value_heads {
            1 => 1,
            kv if kv == full.num_attention_heads => 4,
            _ => 2,
        };
        shape.head_dim = 8;
        shape.sliding_windows.truncate(layers);
        config.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        let dir = tempfile::tempdir().unwrap();
        random::write_random_model(&config, &tokenizer, dir.path(), 3, NameStyle::default())
            .unwrap();
        let model = load(dir.path());
        assert_eq!(model.config.family, family, "{name}");
        assert_eq!(model.config.pre_norm, config.pre_norm, "{name}: read back");
        let captures = model.capture(&[2, 20, 21, 22, 23, 24], &|| false).unwrap();
        assert_eq!(captures.layers, layers, "{name}");
        for row in captures.attentions.chunks(6) {
            let sum: f32 = row.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "{name}: a row sums to {sum}");
        }
    }
}

/// `headscope bench` runs on a decoder whose vocabulary is far below the
/// reference's random-id range (ids are drawn within the vocabulary).
#[test]
fn bench_runs_on_a_tiny_vocabulary_decoder() {
    let output = run_ok(
        headscope_command()
            .args(["bench", "--tokens", "40", "--runs", "1", "--model"])
            .arg(family_fixture("gpt2")),
        "bench",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: serde_json::Value =
        serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
    assert_eq!(report["tokens"], 40);
    assert!(report["median_ms"].as_f64().unwrap() > 0.0);
    // Its memory limit is the user's, as `analyze`'s.
    let fixture = family_fixture("gpt2");
    let refused = headscope(&[
        "bench",
        "--tokens",
        "40",
        "--runs",
        "1",
        "--capture-memory-mb",
        "0",
        "--model",
        fixture.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("does not fit the capture memory limit of 0 MB (--capture-memory-mb)"),
        "{stderr}"
    );
    // On real text: its first window of at most --tokens, whole sentences.
    let output = run_ok(
        headscope_command()
            .args(["bench", "--tokens", "60", "--runs", "1", "--text"])
            .arg(repo().join("reference/texts/long60.txt"))
            .arg("--model")
            .arg(&fixture),
        "bench --text",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: serde_json::Value =
        serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
    let tokens = report["tokens"].as_u64().unwrap();
    assert!((20..=60).contains(&tokens), "{report}");
}

/// `tokens` run through `model` in capture mode `mode` and analysed with
/// the default options: the captures and the figures.
fn analysed_in(
    model: &Model,
    tokens: &headscope::tokens::TokenSequence,
    mode: headscope::captures::CaptureMode,
) -> (headscope::captures::Captures, headscope::analysis::Analysis) {
    let mut captures = headscope::captures::Captures::default();
    let options = headscope::analysis::AnalysisOptions::default();
    let (analysis, _, _) = headscope::pipeline::capture_and_analyze(
        model,
        tokens,
        mode,
        Default::default(),
        &options,
        &mut captures,
        &|| false,
    )
    .unwrap();
    (captures, analysis)
}

/// A long input keeps no P or S: the figures are computed layer by layer
/// during the pass, and P and S are recomputed per head when asked. On
/// every decoder fixture (grouped-query Llama, Mistral's sliding window,
/// ModernBERT's bidirectional local layers) the figures equal those of a
/// pass that kept everything, P and S agree to float rounding (masked
/// cells exactly 0), the Separators view's arrays are the same (and those
/// that P read whole gives), and the `.npz` holds the same arrays.
#[test]
fn recomputed_captures_equal_kept_ones() {
    use headscope::captures::CaptureMode;
    use headscope::npz::{read_captures_npz, write_captures_npz};
    use headscope::pipeline::{prepare_input, InputOptions};
    for name in DECODER_FIXTURES.into_iter().chain(["modernbert"]) {
        let model = load(&family_fixture(name));
        let text = std::fs::read_to_string(fixture(&format!("families/{name}.txt"))).unwrap();
        let input = InputOptions {
            mode: InputMode::OneSentencePerLine,
            ..InputOptions::default()
        };
        let tokens = prepare_input(&model, &text, &input).unwrap().tokens;
        let run = |mode| {
            let (captures, analysis) = analysed_in(&model, &tokens, mode);
            let arrays: Vec<_> = (analysis.layers.iter())
                .map(|l| (l.separator_tokens.clone(), l.separator_tokens_vw.clone()))
                .collect();
            (captures, serde_json::to_value(&analysis).unwrap(), arrays)
        };
        let (kept, kept_figures, kept_arrays) = run(CaptureMode::Stored);
        let (recomputed, figures, arrays) = run(CaptureMode::Recomputed);
        assert_eq!(arrays, kept_arrays, "{name}: the Separators view's arrays");
        assert!(arrays.iter().all(|(_, vw)| vw.is_some()), "{name}: N′'s");
        let tokens_of: Vec<_> = arrays.into_iter().map(|(plain, _)| plain).collect();
        assert!(
            kept.stores_squares() && !recomputed.stores_squares(),
            "{name}"
        );
        assert!(recomputed.attentions.is_empty() && recomputed.similarity.is_empty());
        assert_eq!(figures, kept_figures, "{name}: the figures");
        assert_eq!(recomputed.head_outputs, kept.head_outputs, "{name}");
        for id in kept.head_ids() {
            let (p, kept_p) = (recomputed.attention(id), kept.attention(id));
            assert_close(&format!("{name} {id} P"), &p, &kept_p, 1e-6);
            for (a, b) in p.iter().zip(kept_p.iter()) {
                assert_eq!(*a == 0.0, *b == 0.0, "{name} {id}: the mask");
            }
            let s = recomputed.similarity(id);
            assert_close(&format!("{name} {id} S"), &s, &kept.similarity(id), 1e-6);
        }
        // The Separators view's arrays, from each layer's heads' P read
        // whole: the analysis made them while it streamed the rows.
        let separators = tokens.separator_positions();
        for (layer, arrays) in tokens_of.iter().enumerate() {
            let arrays = arrays.as_ref().expect("arrays from P");
            let (t, n, heads) = (kept.tokens, separators.len(), kept.heads);
            let mut sums = vec![0.0f32; t * n];
            let mut attention = vec![0.0f64; t];
            for h in 0..heads {
                let p = kept.attention(headscope::captures::HeadId::new(layer, h));
                for i in 0..t {
                    for (s, &k) in separators.iter().enumerate() {
                        let v = p[i * t + k];
                        sums[i * n + s] = if h == 0 { v } else { sums[i * n + s] + v };
                    }
                    let row = separators.iter().map(|&k| f64::from(p[i * t + k]));
                    attention[i] += row.sum::<f64>();
                }
            }
            let attention: Vec<f64> = attention.iter().map(|a| a / heads as f64).collect();
            assert_eq!(arrays.attention, attention, "{name} layer {layer}");
            for i in 0..t {
                // A causal model has no segmentation: no token is assigned.
                let expected = if tokens.special[i] || tokens.causal {
                    None
                } else {
                    headscope::analysis::choose_separator(&sums[i * n..(i + 1) * n], heads)
                };
                assert_eq!(
                    arrays.assigned[i], expected,
                    "{name} layer {layer} token {i}"
                );
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let (kept_npz, npz) = (dir.path().join("kept.npz"), dir.path().join("r.npz"));
        write_captures_npz(&kept_npz, &tokens.input_ids, &kept).unwrap();
        write_captures_npz(&npz, &tokens.input_ids, &recomputed).unwrap();
        let (ids, read) = read_captures_npz(&npz).unwrap();
        let (_, read_kept) = read_captures_npz(&kept_npz).unwrap();
        assert_eq!(ids, tokens.input_ids);
        assert_close("npz P", &read.attentions, &read_kept.attentions, 1e-6);
        assert_close("npz S", &read.similarity, &read_kept.similarity, 1e-6);
        assert_eq!(read.head_outputs, read_kept.head_outputs);
    }
}

/// Past the attention core's block of 128 rows, a pass that makes each
/// head a block of rows at a time (holding 128 × T of its P and none of
/// its S) gives the bits of one that keeps every P and S: the same figures
/// (JSON), the same O. The fixtures take 128 positions; rotary models take
/// any, so each is loaded with room for 400 (a window of Mistral's and
/// Gemma 2's sliding layers, ModernBERT's bidirectional local and global
/// layers, Gemma 2's soft-cap, Llama's grouped keys).
#[test]
fn long_inputs_made_in_blocks_equal_kept_ones() {
    use headscope::captures::CaptureMode;
    for name in ["llama", "mistral", "gemma2", "modernbert"] {
        let (_dir, model, tokens) = long_family_input(name);
        let run = |mode| {
            let (captures, analysis) = analysed_in(&model, &tokens, mode);
            let figures = format!("{:?} {:?}", analysis.layers, analysis.layer_correlation);
            (captures, figures)
        };
        let (kept, kept_figures) = run(CaptureMode::Stored);
        let (recomputed, figures) = run(CaptureMode::Recomputed);
        assert!(!recomputed.stores_squares(), "{name}");
        assert_eq!(recomputed.head_outputs, kept.head_outputs, "{name}: O");
        assert!(figures == kept_figures, "{name}: the figures differ");
        for id in kept.head_ids() {
            assert_eq!(
                recomputed.similarity(id),
                kept.similarity(id),
                "{name} {id}: S"
            );
        }
    }
}

/// The entropy of each row of P that the attention core makes with P, from
/// the scores (no logarithm per entry), is the −Σ p ln p of the row it
/// wrote: analysed without it (as a capture file is, from P alone), every
/// other figure keeps its bits and each head's entropy moves by at most
/// 1e-6 of itself. On sliding windows (Mistral, Gemma 2's soft-capped
/// scores) and ModernBERT's bidirectional local and global layers.
#[test]
fn the_pass_entropy_is_that_of_its_attention() {
    use headscope::analysis::{analyze, AnalysisOptions};
    use headscope::captures::CaptureMode;
    for name in ["llama", "mistral", "gemma2", "modernbert"] {
        let (_dir, model, tokens) = long_family_input(name);
        let (mut captures, made) = analysed_in(&model, &tokens, CaptureMode::Stored);
        let (layers, heads) = (captures.layers, captures.heads);
        assert_eq!(
            captures.attention_entropy.len(),
            layers * heads * tokens.len(),
            "{name}: the pass makes every row's entropy"
        );
        captures.attention_entropy.clear();
        let from_p = analyze(&tokens, &captures, &AnalysisOptions::default());
        let entropy = |layer: &headscope::analysis::LayerFigures, h: usize| {
            layer.heads[h].attention_stats.as_ref().unwrap().entropy
        };
        let mut without_entropy = (made.layers.clone(), from_p.layers.clone());
        for (ours, theirs) in made.layers.iter().zip(&from_p.layers) {
            for h in 0..heads {
                let (a, b) = (entropy(ours, h), entropy(theirs, h));
                assert!(b > 0.0 && (a - b).abs() <= 1e-6 * b, "{name}: {a} vs {b}");
            }
        }
        for layers in [&mut without_entropy.0, &mut without_entropy.1] {
            for head in layers.iter_mut().flat_map(|layer| &mut layer.heads) {
                head.attention_stats.as_mut().unwrap().entropy = 0.0;
            }
        }
        assert!(
            format!("{:?}", without_entropy.0) == format!("{:?}", without_entropy.1),
            "{name}: a figure other than the entropy differs"
        );
    }
}

/// `headscope analyze` on an input whose P and S would not fit the memory
/// limit says on stderr that they are recomputed, and writes the same
/// figures and (to float rounding) the same `.npz` as a run that kept them;
/// with O and the queries in a scratch file on disk (as past 256 MB), the
/// same bits again.
#[test]
fn analyze_recomputes_what_does_not_fit() {
    use headscope::npz::read_captures_npz;
    let dir = tempfile::tempdir().unwrap();
    for name in ["llama", "modernbert"] {
        // One short sentence a line fills 127 of the 128 positions: P and S
        // take 1.06 MB, what recomputes them 0.94 MB.
        let long = dir.path().join(format!("{name}.txt"));
        std::fs::write(&long, "She.\n".repeat(80)).unwrap();
        let run = |limit: Option<&str>, stem: &str, scratch_from_mb: Option<&str>| {
            let (json, npz) = (
                dir.path().join(format!("{stem}.json")),
                dir.path().join(format!("{stem}.npz")),
            );
            let mut command = headscope_command();
            command
                .args(["analyze", "--one-sentence-per-line", "--model"])
                .arg(family_fixture(name));
            if let Some(mb) = limit {
                command.args(["--capture-memory-mb", mb]);
            }
            if let Some(mb) = scratch_from_mb {
                command.env("HEADSCOPE_SCRATCH_FROM_MB", mb);
            }
            command
                .arg("--json")
                .arg(&json)
                .arg("--npz")
                .arg(&npz)
                .arg(&long);
            let output = run_ok(&mut command, name);
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            (json, read_captures_npz(&npz).unwrap().1, stderr)
        };
        let (kept_json, kept, kept_stderr) = run(None, &format!("{name}-kept"), None);
        let (json, recomputed, stderr) = run(Some("1"), &format!("{name}-recomputed"), None);
        assert_eq!(kept_json["tokens"], 127, "{name}");
        assert!(!kept_stderr.contains("recomputed"), "{name}: {kept_stderr}");
        assert!(
            stderr.contains("P and S are recomputed for each head"),
            "{name}: {stderr}"
        );
        assert_eq!(json, kept_json, "{name}: the figures");
        assert_close("P", &recomputed.attentions, &kept.attentions, 1e-6);
        assert_close("S", &recomputed.similarity, &kept.similarity, 1e-6);
        assert_eq!(recomputed.head_outputs, kept.head_outputs, "{name}");
        assert!(!stderr.contains("scratch file"), "{name}: {stderr}");
        let (scratch_json, on_disk, scratch_stderr) =
            run(Some("1"), &format!("{name}-scratch"), Some("0"));
        assert!(
            scratch_stderr.contains("outputs O and queries (")
                && scratch_stderr.contains("are kept in a scratch file"),
            "{name}: {scratch_stderr}"
        );
        assert_eq!(scratch_json, json, "{name}: the figures, O on disk");
        assert_eq!(on_disk, recomputed, "{name}: the arrays, O on disk");

        // `compare` says it of each model's window.
        let model = family_fixture(name);
        let output = run_ok(
            headscope_command()
                .args([
                    "compare",
                    "--one-sentence-per-line",
                    "--capture-memory-mb",
                    "1",
                ])
                .arg("--model")
                .arg(&model)
                .arg("--model")
                .arg(&model)
                .arg(&long),
            name,
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        let notes = stderr
            .matches("P and S are recomputed for each head")
            .count();
        assert_eq!(notes, 2, "{name}: {stderr}");
    }
}

/// Large checkpoints come sharded (`model.safetensors.index.json` naming
/// the file of each tensor) and in half precision: both load, one tensor at
/// a time, to the same model as one float32 file; an index naming a
/// missing shard is refused with its name.
#[test]
fn sharded_and_half_precision_checkpoints_load() {
    use candle_core::{DType, Tensor};
    use std::collections::HashMap;
    let source = family_fixture("qwen2");
    let ids = [3u32, 20, 21, 22, 23, 24, 25];
    let tensors =
        candle_core::safetensors::load(source.join("model.safetensors"), &Device::Cpu).unwrap();
    let folder_with = |files: &[(&str, HashMap<String, Tensor>)], index: Option<String>| {
        let dir = tempfile::tempdir().unwrap();
        for file in ["config.json", "tokenizer.json"] {
            std::fs::copy(source.join(file), dir.path().join(file)).unwrap();
        }
        for (name, tensors) in files {
            candle_core::safetensors::save(tensors, dir.path().join(name)).unwrap();
        }
        if let Some(index) = index {
            std::fs::write(dir.path().join("model.safetensors.index.json"), index).unwrap();
        }
        dir
    };
    let convert = |dtype: DType| -> HashMap<String, Tensor> {
        let tensors = tensors.iter();
        tensors
            .map(|(k, v)| (k.clone(), v.to_dtype(dtype).unwrap()))
            .collect()
    };

    // Two shards and their index.
    let mut names: Vec<&String> = tensors.keys().collect();
    names.sort();
    let (first, second) = names.split_at(names.len() / 2);
    let shard = |part: &[&String]| -> HashMap<String, Tensor> {
        part.iter()
            .map(|&k| (k.clone(), tensors[k].clone()))
            .collect()
    };
    let shard_names = [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ];
    let weight_map: serde_json::Map<String, serde_json::Value> = first
        .iter()
        .map(|k| ((*k).clone(), shard_names[0].into()))
        .chain(second.iter().map(|k| ((*k).clone(), shard_names[1].into())))
        .collect();
    let index = serde_json::json!({ "metadata": {}, "weight_map": weight_map }).to_string();
    let sharded = folder_with(
        &[
            (shard_names[0], shard(first)),
            (shard_names[1], shard(second)),
        ],
        Some(index.clone()),
    );
    let original = load(&source).capture(&ids, &|| false).unwrap();
    let from_shards = load(sharded.path()).capture(&ids, &|| false).unwrap();
    assert_eq!(from_shards, original, "sharded");

    // Half precision: the same as float32 weights holding the rounded values.
    for dtype in [DType::F16, DType::BF16] {
        let half = folder_with(&[("model.safetensors", convert(dtype))], None);
        let rounded: HashMap<String, Tensor> = convert(dtype)
            .into_iter()
            .map(|(k, v)| (k, v.to_dtype(DType::F32).unwrap()))
            .collect();
        let widened = folder_with(&[("model.safetensors", rounded)], None);
        let a = load(half.path()).capture(&ids, &|| false).unwrap();
        let b = load(widened.path()).capture(&ids, &|| false).unwrap();
        assert_eq!(a, b, "{dtype:?}");
    }

    // An index whose shard is missing.
    let broken = folder_with(&[(shard_names[0], shard(first))], Some(index));
    let error = Model::load_folder(broken.path(), &Device::Cpu).unwrap_err();
    let message = format!("{error:#}");
    assert!(
        message.contains("model-00002-of-00002.safetensors") && message.contains("missing"),
        "{message}"
    );
}

/// `headscope corpus` cuts windows as `analyze` does: `--max-tokens`
/// bounds every window, and windows whose P and S do not fit
/// `--capture-memory-mb` are analysed during the pass, to the same
/// statistics; the report records the limits, and parts made with other
/// limits do not merge.
#[test]
fn corpus_windows_follow_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("a.txt"), "She.\n".repeat(80)).unwrap();
    std::fs::write(docs.join("b.txt"), "The end.\n".repeat(70)).unwrap();
    let run = |limits: &[&str], stem: &str| -> serde_json::Value {
        let json = dir.path().join(format!("{stem}.json"));
        let part = dir.path().join(format!("{stem}.part.json"));
        run_ok(
            headscope_command()
                .args(["corpus", "--one-sentence-per-line", "--model"])
                .arg(family_fixture("llama"))
                .args(limits)
                .arg("--json")
                .arg(&json)
                .arg("--part")
                .arg(&part)
                .arg(&docs),
            stem,
        );
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
    };
    let kept = run(&[], "kept");
    let recomputed = run(&["--capture-memory-mb", "1"], "recomputed");
    assert_eq!(recomputed["limits"]["capture_memory_mb"], 1);
    assert_eq!(kept["windows"], 4);
    for key in ["windows", "tokens", "layers", "tokens_per_window"] {
        assert_eq!(recomputed[key], kept[key], "{key}");
    }
    let cut = run(&["--max-tokens", "40"], "cut");
    assert_eq!(cut["limits"]["max_tokens"], 40);
    assert!(cut["windows"].as_u64().unwrap() > 4);
    // Every window within 40 tokens: no document holds more than 40 per window.
    for document in cut["documents"].as_array().unwrap() {
        let (tokens, windows) = (document["tokens"].as_u64(), document["windows"].as_u64());
        assert!(tokens.unwrap() <= 40 * windows.unwrap(), "{document}");
    }

    let output = headscope_command()
        .args(["merge", "--json"])
        .arg(dir.path().join("merged.json"))
        .arg(dir.path().join("kept.part.json"))
        .arg(dir.path().join("cut.part.json"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("the window limits differ"), "{stderr}");
}

/// A run tells its progress before each layer of the pass, in order, and
/// once the figures begin: on the encoders' tuned CPU path (ALBERT's shared
/// layers counted per application), on candle's ops (ModernBERT, the
/// decoders), and for a decoder whose P and S are recomputed.
#[test]
fn a_run_tells_its_progress_before_every_layer() {
    use headscope::analysis::AnalysisOptions;
    use headscope::captures::{CaptureMode, Captures};
    use headscope::pipeline::{capture_and_analyze, prepare_input, InputOptions, Watched};
    use std::cell::RefCell;
    for name in ["bert", "albert", "modernbert", "llama", "gpt2"] {
        let model = load(&family_fixture(name));
        let text = std::fs::read_to_string(fixture(&format!("families/{name}.txt"))).unwrap();
        let tokens = prepare_input(&model, &text, &InputOptions::default())
            .unwrap()
            .tokens;
        let modes = if model.config.pre_norm.is_some() {
            vec![CaptureMode::Stored, CaptureMode::Recomputed]
        } else {
            vec![CaptureMode::Stored]
        };
        for mode in modes {
            let told = RefCell::new(Vec::new());
            let watch = Watched {
                cancelled: || false,
                progress: |progress| told.borrow_mut().push(progress),
            };
            let mut captures = Captures::default();
            capture_and_analyze(
                &model,
                &tokens,
                mode,
                Default::default(),
                &AnalysisOptions::default(),
                &mut captures,
                &watch,
            )
            .unwrap();
            let told = told.into_inner();
            let layers = model.layers();
            let steps: Vec<(usize, bool)> =
                told.iter().map(|p| (p.layers_done, p.figures)).collect();
            let expected: Vec<(usize, bool)> = (0..layers)
                .map(|k| (k, false))
                .chain([(layers, true)])
                .collect();
            assert_eq!(steps, expected, "{name} {mode:?}");
            assert!(told.iter().all(|p| p.layers == layers));
            assert!(told
                .windows(2)
                .all(|pair| pair[0].elapsed <= pair[1].elapsed));
        }
    }
}
