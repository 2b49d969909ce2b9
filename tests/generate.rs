//! A decoder that speaks, against transformers (`tests/fixtures/generation.json`,
//! made by `reference/make_generation_fixture.py`): greedy continuations of
//! SmolLM2-135M-Instruct (plain prompts and a user message through its
//! chat template) and of every decoder family fixture, token for token;
//! SmolLM2's logit lens, top-1 per layer and position; a seeded sampled
//! run repeats exactly; and the key/value cache's rows of P, O and S equal
//! a full pass over the same tokens.
//!
//! Where transformers' top two logits at a step are within float noise
//! (a recorded gap below 1e-4), two correct float32 runs may pick either
//! (ANALYSIS.md §7): the comparison stops there instead of failing. The
//! logit lens' top-1 is compared wherever the top two probabilities differ
//! by more than 1e-4.

mod common;

use common::*;
use headscope::captures::Captures;
use headscope::model::chat::chat_prompt_ids;
use headscope::model::predict::{GenerationEvent, GenerationOptions};
use headscope::model::{Model, ModelSource};
use headscope::predictions::{Decoding, Sampling};
use serde_json::Value;
use std::sync::OnceLock;

/// Within float noise: a tie may go either way.
const TIE: f64 = 1e-4;

fn smollm2() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| Model::load(&ModelSource::Folder(smollm2_model()), &mut |_| {}).unwrap())
}

fn reference() -> &'static Value {
    static JSON: OnceLock<Value> = OnceLock::new();
    JSON.get_or_init(|| {
        let text = std::fs::read_to_string(fixture("generation.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

fn ids(value: &Value) -> Vec<u32> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect()
}

fn greedy(model: &Model, prompt: &[u32], max_new_tokens: usize) -> Vec<u32> {
    let options = GenerationOptions {
        max_new_tokens,
        decoding: Decoding::Greedy,
    };
    model
        .generate(prompt, &options, &|| false, &mut |_| {})
        .unwrap()
        .generated_ids
}

/// Ours equals theirs token for token, but where their top two logits
/// were within float noise: from such a step on, either pick is right.
/// Returns how many tokens were compared.
fn assert_same_continuation(what: &str, ours: &[u32], entry: &Value) -> usize {
    let theirs = ids(&entry["generated_ids"]);
    let gaps: Vec<f64> = entry["top_logit_gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_f64().unwrap())
        .collect();
    for (step, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        if a != b {
            assert!(
                gaps[step] < TIE,
                "{what}: step {step} picked {a}, transformers {b} (top-two gap {})",
                gaps[step]
            );
            eprintln!("{what}: a tie at step {step} went the other way");
            return step;
        }
    }
    assert_eq!(ours.len(), theirs.len(), "{what}: {ours:?} vs {theirs:?}");
    ours.len()
}

#[test]
fn smollm2_greedy_equals_transformers() {
    let model = smollm2();
    for entry in reference()["greedy"].as_array().unwrap() {
        if entry["model"] != "SmolLM2-135M-Instruct" {
            continue;
        }
        let prompt = entry["prompt"].as_str().unwrap();
        let prompt_ids = ids(&entry["prompt_ids"]);
        let ours_prompt = if entry["chat"] == true {
            chat_prompt_ids(model, prompt).unwrap()
        } else {
            model
                .tokenizer
                .encode(prompt, true)
                .unwrap()
                .get_ids()
                .to_vec()
        };
        assert_eq!(ours_prompt, prompt_ids, "{prompt:?}: prompt ids");
        let n = entry["max_new_tokens"].as_u64().unwrap() as usize;
        let ours = greedy(model, &prompt_ids, n);
        let compared = assert_same_continuation(prompt, &ours, entry);
        assert!(compared >= 8, "{prompt:?}: only {compared} tokens compared");
    }
}

#[test]
fn family_fixtures_greedy_equals_transformers() {
    let mut families = 0;
    for entry in reference()["greedy"].as_array().unwrap() {
        let Some(name) = entry["model"].as_str().unwrap().strip_prefix("families/") else {
            continue;
        };
        let model = Model::load_folder(&family_fixture(name), &candle_core::Device::Cpu).unwrap();
        let prompt_ids = ids(&entry["prompt_ids"]);
        let n = entry["max_new_tokens"].as_u64().unwrap() as usize;
        let ours = greedy(&model, &prompt_ids, n);
        assert_same_continuation(name, &ours, entry);
        assert_cached_rows_equal_full_pass(name, &model, &prompt_ids, 6);
        families += 1;
    }
    assert_eq!(families, 11);
}

/// The logit lens of `smollm2.json`'s input: top-1 per layer and position
/// equals transformers' wherever its top two probabilities differ by more
/// than 1e-4, every top-5 probability within 1e-3 of its; the last layer's
/// is the model's own prediction.
#[test]
fn smollm2_logit_lens_equals_transformers() {
    let model = smollm2();
    let lens_ref = &reference()["logit_lens"];
    let input_ids = ids(&lens_ref["input_ids"]);
    let lens = model.logit_lens(&input_ids, 5, &|| false).unwrap();
    let layers = lens_ref["layers"].as_array().unwrap();
    assert_eq!(lens.layers.len(), layers.len());
    let (mut compared, mut ties) = (0, 0);
    for (l, (ours, theirs)) in lens.layers.iter().zip(layers).enumerate() {
        let their_ids = theirs["top_ids"].as_array().unwrap();
        let their_probs = theirs["top_probs"].as_array().unwrap();
        assert_eq!(ours.top_ids.len(), input_ids.len());
        for t in 0..input_ids.len() {
            let probs: Vec<f64> = their_probs[t]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_f64().unwrap())
                .collect();
            let top = ids(&their_ids[t]);
            if probs[0] - probs[1] > TIE {
                assert_eq!(ours.top_ids[t][0], top[0], "layer {l} position {t}");
                compared += 1;
            } else {
                ties += 1;
            }
            for (k, (&ours, theirs)) in ours.top_probs[t].iter().zip(&probs).enumerate() {
                assert!(
                    (f64::from(ours) - theirs).abs() < 1e-3,
                    "layer {l} position {t} rank {k}: {ours} vs {theirs}"
                );
            }
        }
        // The true next token's rank: transformers' to within the few
        // places that logits 1e-6 apart may trade, and where it is in our
        // top 5, its place there.
        let their_ranks = ids(&theirs["next_token_ranks"]);
        assert_eq!(ours.next_token_ranks.len(), input_ids.len() - 1);
        for (t, (&rank, &their_rank)) in ours.next_token_ranks.iter().zip(&their_ranks).enumerate()
        {
            let slack = 2 + their_rank / 1000;
            assert!(
                rank.abs_diff(their_rank) <= slack,
                "layer {l} position {t}: rank {rank} vs {their_rank}"
            );
            if let Some(k) = ours.top_ids[t]
                .iter()
                .position(|&id| id == input_ids[t + 1])
            {
                assert_eq!(rank as usize, k + 1, "layer {l} position {t}");
            }
        }
    }
    eprintln!("logit lens: {compared} top-1 compared, {ties} within 1e-4");
    assert!(compared > layers.len() * input_ids.len() * 9 / 10);

    // The last layer is the model's own prediction: the logits generation
    // picks from.
    let last = lens.layers.last().unwrap();
    let prompt = &input_ids[..12];
    let next = greedy(model, prompt, 1);
    let lens_of_prompt = model.logit_lens(prompt, 5, &|| false).unwrap();
    assert_eq!(
        lens_of_prompt.layers.last().unwrap().top_ids[11][0],
        next[0]
    );
    assert_eq!(
        last.top_ids[11],
        lens_of_prompt.layers.last().unwrap().top_ids[11]
    );
}

/// A run keeps the residual stream after each layer, whether it keeps
/// every P and S or what recomputes them, and the logit lens and the next
/// tokens read from it are those of a pass of their own, to the bit (the
/// app's lens and hover read it instead of running the model again).
#[test]
fn the_lens_of_a_runs_kept_residual_stream_is_the_lens_of_a_pass() {
    let model = smollm2();
    let input_ids = ids(&reference()["logit_lens"]["input_ids"]);
    assert!(model.keeps_residuals(input_ids.len()));
    let own = model.logit_lens(&input_ids, 5, &|| false).unwrap();
    let own_next = model.next_tokens(&input_ids, &[], 5, &|| false).unwrap();
    assert_eq!(&own_next, own.layers.last().unwrap());
    let mut stored = Captures::default();
    model
        .capture_into(&input_ids, &|| false, true, &mut stored)
        .unwrap();
    let recomputed = model
        .capture_recomputable(&input_ids, &|| false, true, &mut |_, _| {})
        .unwrap();
    // Not asked, none is kept.
    assert!(model
        .capture(&input_ids, &|| false)
        .unwrap()
        .residuals
        .is_empty());
    let values = model.layers() * input_ids.len() * model.config.hidden_size;
    assert_eq!(recomputed.residuals, stored.residuals);
    let stream = stored.residuals.clone();
    for (mode, captures) in [("stored", stored), ("recomputed", recomputed)] {
        assert_eq!(captures.residuals.len(), values, "{mode}");
        let kept = &captures.residuals;
        let lens = model
            .logit_lens_counted(&input_ids, kept, 5, &|| false, &|_| {})
            .unwrap();
        assert_eq!(lens, own, "{mode}");
        let next = model.next_tokens(&input_ids, kept, 5, &|| false).unwrap();
        assert_eq!(next, own_next, "{mode}");
    }
    // A stream of another input is refused, not read.
    let shorter = &input_ids[..4];
    let other = model.logit_lens_counted(shorter, &stream, 5, &|| false, &|_| {});
    assert!(other.is_err());
}

/// A seed repeats its run exactly; another seed, or greedy, differs.
#[test]
fn seeded_sampling_repeats_exactly() {
    let model = smollm2();
    let prompt = ids(&reference()["greedy"][1]["prompt_ids"]);
    let sample = |seed: u64| {
        let options = GenerationOptions {
            max_new_tokens: 8,
            decoding: Decoding::Sampled(Sampling {
                temperature: 1.3,
                top_p: 0.95,
                top_k: 50,
                seed,
            }),
        };
        model
            .generate(&prompt, &options, &|| false, &mut |_| {})
            .unwrap()
            .generated_ids
    };
    let first = sample(11);
    assert_eq!(first.len(), 8);
    assert_eq!(first, sample(11));
    assert_ne!(first, sample(12));
}

#[test]
fn smollm2_cached_rows_equal_a_full_pass() {
    let prompt = ids(&reference()["greedy"][0]["prompt_ids"]);
    assert_cached_rows_equal_full_pass("SmolLM2", smollm2(), &prompt, 5);
}

/// Generates `new` tokens greedily, keeping every layer's rows of P, O
/// and S from the cache, then runs the whole sequence once: each row
/// within 1e-4 of the full pass's (of the layer's largest magnitude).
fn assert_cached_rows_equal_full_pass(what: &str, model: &Model, prompt: &[u32], new: usize) {
    let (layers, heads, d) = (model.layers(), model.heads(), model.config.head_dim());
    // Per layer, per position: (P row, O row, S row) of every head.
    let mut rows: Vec<Vec<Option<[Vec<f32>; 3]>>> = vec![Vec::new(); layers];
    let mut tokens = prompt.to_vec();
    let options = GenerationOptions {
        max_new_tokens: new,
        decoding: Decoding::Greedy,
    };
    model
        .generate(prompt, &options, &|| false, &mut |event| match event {
            GenerationEvent::Token(id) => tokens.push(id),
            GenerationEvent::Rows { layer, rows: got } => {
                let n = got.head_outputs.len() / (heads * d);
                let t = got.attention.len() / (heads * n);
                for i in 0..n {
                    let position = got.first_position + i;
                    let pick = |values: &[f32], width: usize| -> Vec<f32> {
                        (0..heads)
                            .flat_map(|h| values[(h * n + i) * width..][..width].to_vec())
                            .collect()
                    };
                    let store = &mut rows[layer];
                    store.resize(store.len().max(position + 1), None);
                    store[position] = Some([
                        pick(got.attention, t),
                        pick(got.head_outputs, d),
                        pick(got.similarity, t),
                    ]);
                }
            }
        })
        .unwrap();
    // The last token picked is never run.
    let run = &tokens[..tokens.len() - 1];
    let full = model.capture(run, &|| false).unwrap();
    let t_all = run.len();
    for (layer, positions) in rows.iter().enumerate() {
        assert_eq!(
            positions.len(),
            t_all,
            "{what} layer {layer}: positions run"
        );
        let square = heads * t_all * t_all;
        let p_all = &full.attentions[layer * square..][..square];
        let s_all = &full.similarity[layer * square..][..square];
        let o_all = &full.head_outputs[layer * heads * t_all * d..][..heads * t_all * d];
        let scale = |values: &[f32]| values.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
        let (p_scale, o_scale, s_scale) = (scale(p_all), scale(o_all), scale(s_all));
        for (t, cached) in positions.iter().enumerate() {
            let [p, o, s] = cached.as_ref().expect("every position run");
            let width = p.len() / heads;
            for h in 0..heads {
                let full_row = |all: &[f32], w: usize, cols: usize| -> Vec<f32> {
                    all[(h * t_all + t) * w..][..cols].to_vec()
                };
                for (name, ours, theirs, scale) in [
                    (
                        "P",
                        &p[h * width..][..width],
                        full_row(p_all, t_all, width),
                        p_scale,
                    ),
                    ("O", &o[h * d..][..d], full_row(o_all, d, d), o_scale),
                    (
                        "S",
                        &s[h * width..][..width],
                        full_row(s_all, t_all, width),
                        s_scale,
                    ),
                ] {
                    for (a, b) in ours.iter().zip(&theirs) {
                        assert!(
                            (a - b).abs() <= 1e-4 * scale,
                            "{what} layer {layer} head {h} position {t} {name}: {a} vs {b}"
                        );
                    }
                }
            }
        }
    }
}

/// `headscope generate --json`: the greedy continuation on stdout, and the
/// analysis of prompt + continuation with the ids of each; an encoder is
/// refused with a clear message.
#[test]
fn cli_generates_and_analyses_the_continuation() {
    let entry = &reference()["greedy"][0];
    let dir = tempfile::tempdir().unwrap();
    let prompt = dir.path().join("prompt.txt");
    std::fs::write(&prompt, format!("{}\n", entry["prompt"].as_str().unwrap())).unwrap();
    let json = dir.path().join("out.json");
    let output = run_ok(
        headscope_command()
            .arg("generate")
            .arg("--model")
            .arg(smollm2_model())
            .args(["--max-new-tokens", "12", "--json"])
            .arg(&json)
            .arg(&prompt),
        "generate",
    );
    let printed = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let generated = ids(&report["generated_ids"]);
    assert_same_continuation("generate --json", &generated, entry);
    assert_eq!(ids(&report["prompt_ids"]), ids(&entry["prompt_ids"]));
    let decoded = smollm2().tokenizer.decode(&generated, true).unwrap();
    assert_eq!(printed.trim_end(), decoded.trim_end());
    // The analysis covers prompt and continuation, every layer.
    let tokens = ids(&report["prompt_ids"]).len() + generated.len();
    assert_eq!(report["tokens"].as_u64(), Some(tokens as u64));
    assert_eq!(report["layers"].as_array().unwrap().len(), 30);

    let refused = headscope(&[
        "generate",
        "--model",
        &model_arg(),
        prompt.to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("generation needs a decoder"), "{message}");
}

/// `headscope analyze --logit-lens --json`: one layer per model layer,
/// top 5 at every position, the last layer's top-1 transformers' where its
/// top two differ.
#[test]
fn cli_writes_the_logit_lens() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("text.txt");
    std::fs::write(&text, "The capital of France is").unwrap();
    let json = dir.path().join("lens.json");
    run_ok(
        headscope_command()
            .arg("analyze")
            .arg("--model")
            .arg(smollm2_model())
            .arg("--logit-lens")
            .arg("--json")
            .arg(&json)
            .arg(&text),
        "analyze --logit-lens",
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let layers = report["logit_lens"]["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 30);
    let last = &layers[29];
    assert_eq!(last["top_ids"].as_array().unwrap().len(), 5);
    assert_eq!(last["top_probs"][4].as_array().unwrap().len(), 5);
    // One rank per position but the last; the top-1's is 1.
    let ranks = ids(&last["next_token_ranks"]);
    assert_eq!(
        ranks.len(),
        report["input_ids"].as_array().unwrap().len() - 1
    );
    for (t, &rank) in ranks.iter().enumerate() {
        assert_eq!(
            rank == 1,
            last["top_ids"][t][0] == report["input_ids"][t + 1]
        );
    }
    // "The capital of France is" → " Paris" (greedy's first token).
    assert_eq!(
        last["top_ids"][4][0],
        reference()["greedy"][0]["generated_ids"][0]
    );
}

/// SmolLM2's GGUF file (the converted folder's source; its LM head tied to
/// the Q8_0 token table, kept quantized) continues as the folder does.
#[test]
fn smollm2_gguf_greedy_equals_transformers() {
    let model = Model::load(&ModelSource::Gguf(smollm2_gguf()), &mut |_| {}).unwrap();
    let entry = &reference()["greedy"][0];
    let ours = greedy(&model, &ids(&entry["prompt_ids"]), 4);
    assert_eq!(ours, ids(&entry["generated_ids"])[..4]);
    assert_eq!(model.stop_ids(), vec![2]);
}

/// The analysis' input of prompt + continuation is those tokens exactly,
/// each in its sentence of the text they decode to (a chat prompt's
/// markers and the end-of-sequence token special), whitespace included.
#[test]
fn prompt_and_continuation_become_the_input_as_they_are() {
    let model = smollm2();
    for entry in reference()["greedy"].as_array().unwrap().iter().take(3) {
        let all: Vec<u32> = ids(&entry["prompt_ids"])
            .into_iter()
            .chain(ids(&entry["generated_ids"]))
            .collect();
        let (built, text) =
            headscope::pipeline::prepare_ids(model, &all, &Default::default()).unwrap();
        let tokens = &built.tokens;
        assert_eq!(tokens.input_ids, all);
        assert!(tokens.causal);
        let sentences: Vec<usize> = tokens.sentence_ids.iter().flatten().copied().collect();
        assert!(sentences.windows(2).all(|w| w[0] <= w[1]), "{sentences:?}");
        // The tokens' spans tile the decoded text after the leading
        // special tokens (a chat prompt's first marker), which have none.
        let spans: String = tokens
            .offsets
            .iter()
            .flatten()
            .map(|&(s, e)| &text[s..e])
            .collect();
        let leading = tokens.offsets.iter().take_while(|o| o.is_none()).count();
        let leading_text = model.tokenizer.decode(&all[..leading], false).unwrap();
        assert_eq!(format!("{leading_text}{spans}"), text);
        for (id, &special) in all.iter().zip(&tokens.special) {
            assert_eq!(special, model.specials.contains(*id), "token {id}");
        }
    }
}
