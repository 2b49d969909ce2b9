//! Weights in their own precision (src/model/weight.rs): a checkpoint
//! stored in bfloat16 or float16 stays so in memory and is widened where
//! the pass reads it. Widening is exact, so its captures and figures are
//! those of the same weights widened to float32 before loading, bit for
//! bit: on the encoders' CPU kernel path (BERT; ELECTRA's embedding
//! projection) and on the decoder stack (GPT-2's fused Conv1D and learned
//! positions, Llama's grouped queries, ModernBERT's fused `Wqkv` and `Wi`).
//! And `make-random-model --dtype` writes such checkpoints.

mod common;

use candle_core::{DType, Device, Tensor};
use common::*;
use headscope::analysis::AnalysisOptions;
use headscope::input::InputMode;
use headscope::model::random::{self, NameStyle, WeightDtype};
use headscope::model::{Model, ModelConfig};
use headscope::pipeline::{self, InputOptions, RunOutput};
use std::collections::HashMap;
use std::path::Path;

/// Copies the model folder `from` to `to` with every float tensor rounded
/// to `dtype`, and kept in it (`widened` false) or widened back to float32.
fn write_rounded(from: &Path, to: &Path, dtype: DType, widened: bool) {
    std::fs::create_dir_all(to).unwrap();
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    let tensors = candle_core::safetensors::load(from.join("model.safetensors"), &Device::Cpu)
        .unwrap()
        .into_iter()
        .map(|(name, tensor)| {
            let mut tensor = tensor;
            if tensor.dtype().is_float() {
                tensor = tensor.to_dtype(dtype).unwrap();
                if widened {
                    tensor = tensor.to_dtype(DType::F32).unwrap();
                }
            }
            (name, tensor)
        })
        .collect::<HashMap<String, Tensor>>();
    candle_core::safetensors::save(&tensors, to.join("model.safetensors")).unwrap();
}

fn run(dir: &Path, text: &str) -> RunOutput {
    let model = Model::load_folder(dir, &Device::Cpu).unwrap();
    let input = InputOptions {
        mode: InputMode::OneSentencePerLine,
        ..Default::default()
    };
    pipeline::run(&model, text, &input, &AnalysisOptions::default(), &|| false).unwrap()
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn half_precision_checkpoints_give_the_figures_of_their_widened_weights() {
    for name in ["bert", "electra", "gpt2", "llama", "modernbert"] {
        let text = std::fs::read_to_string(fixture(&format!("families/{name}.txt"))).unwrap();
        for dtype in [DType::BF16, DType::F16] {
            let dir = tempfile::tempdir().unwrap();
            let (half, wide) = (dir.path().join("half"), dir.path().join("wide"));
            write_rounded(&family_fixture(name), &half, dtype, false);
            write_rounded(&family_fixture(name), &wide, dtype, true);
            let what = format!("{name} in {dtype:?}");
            let (ours, widened) = (run(&half, &text), run(&wide, &text));
            assert!(ours.input.tokens.input_ids.len() > 20, "{what}");
            assert_eq!(
                ours.input.tokens.input_ids, widened.input.tokens.input_ids,
                "{what}"
            );
            let (a, b) = (&ours.captures, &widened.captures);
            assert!(!a.attentions.is_empty(), "{what}");
            assert!(bits(&a.attentions) == bits(&b.attentions), "{what}: P");
            assert!(bits(&a.head_outputs) == bits(&b.head_outputs), "{what}: O");
            assert!(bits(&a.similarity) == bits(&b.similarity), "{what}: S");
            assert_eq!(
                serde_json::to_value(&ours.analysis).unwrap(),
                serde_json::to_value(&widened.analysis).unwrap(),
                "{what}: figures"
            );
            // Rounding to half precision did change the model: the check
            // compares two runs of new weights, not the fixture twice.
            let original = run(&family_fixture(name), &text);
            assert!(
                bits(&original.captures.head_outputs) != bits(&a.head_outputs),
                "{what}"
            );
        }
    }
}

/// The safetensors header of `path`: tensor name → (dtype, shape).
fn header(path: &Path) -> HashMap<String, (String, Vec<usize>)> {
    let bytes = std::fs::read(path).unwrap();
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    tensors
        .tensors()
        .into_iter()
        .map(|(name, view)| (name, (format!("{:?}", view.dtype()), view.shape().to_vec())))
        .collect()
}

/// A random model written in bfloat16 or float16 holds the float32 random
/// model's values rounded to that precision, tensor for tensor, and runs.
#[test]
fn random_models_are_written_in_the_precision_asked() {
    let config = ModelConfig::from_file(&family_fixture("llama").join("config.json")).unwrap();
    let tokenizer = family_fixture("llama").join("tokenizer.json");
    let dir = tempfile::tempdir().unwrap();
    let style = NameStyle::default();
    let f32_dir = dir.path().join("f32");
    random::write_random_model(&config, &tokenizer, &f32_dir, 3, style).unwrap();
    let reference =
        candle_core::safetensors::load(f32_dir.join("model.safetensors"), &Device::Cpu).unwrap();
    for (dtype, name, candle_dtype) in [
        (WeightDtype::Bf16, "BF16", DType::BF16),
        (WeightDtype::F16, "F16", DType::F16),
    ] {
        let out = dir.path().join(name);
        let mut reports = Vec::new();
        random::write_random_model_with(&config, &tokenizer, &out, 3, style, dtype, &mut |d, t| {
            reports.push((d, t))
        })
        .unwrap();
        let weights = out.join("model.safetensors");
        let (&(done, total), file_len) =
            (reports.last().unwrap(), weights.metadata().unwrap().len());
        assert_eq!(done, total);
        assert!(total < file_len && file_len < total + 64 * 1024, "{name}");
        let header = header(&weights);
        assert_eq!(header.len(), reference.len(), "{name}");
        let written = candle_core::safetensors::load(&weights, &Device::Cpu).unwrap();
        for (tensor, values) in &reference {
            assert_eq!(header[tensor].0, name, "{tensor}");
            assert_eq!(header[tensor].1, values.dims(), "{tensor}");
            let rounded = values
                .to_dtype(candle_dtype)
                .unwrap()
                .to_dtype(DType::F32)
                .unwrap();
            let ours = written[tensor].to_dtype(DType::F32).unwrap();
            assert_eq!(
                ours.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                rounded.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                "{tensor} in {name}"
            );
        }
        let model = Model::load_folder(&out, &Device::Cpu).unwrap();
        let captures = model.capture(&[1, 20, 21, 22, 23], &|| false).unwrap();
        assert!(captures.attentions.iter().all(|p| p.is_finite()));
    }
}

/// `make-random-model --dtype bf16` writes bfloat16 weights that `analyze`
/// runs; `--like llama-3-8b` is a known shape; a wrong `--dtype` is refused.
#[test]
fn make_random_model_takes_a_dtype() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model");
    let tokenizer = family_fixture("llama").join("tokenizer.json");
    run_ok(
        headscope_command()
            .args(["make-random-model", "--dtype", "bf16", "--like"])
            .arg(family_fixture("llama"))
            .arg("--tokenizer")
            .arg(&tokenizer)
            .arg("--out")
            .arg(&out),
        "make-random-model",
    );
    let header = header(&out.join("model.safetensors"));
    assert!(header.values().all(|(dtype, _)| dtype == "BF16"));
    run_ok(
        headscope_command()
            .args(["analyze", "--one-sentence-per-line", "--model"])
            .arg(&out)
            .arg(fixture("families/llama.txt")),
        "analyze",
    );
    let wrong = headscope_command()
        .args(["make-random-model", "--dtype", "int4", "--like", "gpt2"])
        .arg("--tokenizer")
        .arg(&tokenizer)
        .arg("--out")
        .arg(dir.path().join("never"))
        .output()
        .unwrap();
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(stderr.contains("not f32, bf16 or f16"), "{stderr}");
    assert!(!dir.path().join("never").exists());

    let llama3 = ModelConfig::like("llama-3-8b").unwrap();
    let shape = llama3.pre_norm.as_ref().unwrap();
    assert_eq!(
        (
            llama3.num_hidden_layers,
            llama3.hidden_size,
            llama3.num_attention_heads
        ),
        (32, 4096, 32)
    );
    assert_eq!(
        (
            shape.num_key_value_heads,
            llama3.intermediate_size,
            llama3.vocab_size
        ),
        (8, 14336, 128256)
    );
    let parameters: usize = random::tensor_shapes(&llama3)
        .iter()
        .map(|(_, shape)| shape.iter().product::<usize>())
        .sum();
    // Meta's 8.03B less the language-model head (128,256 × 4,096), which
    // a base model's checkpoint does not hold.
    assert_eq!(parameters, 8_030_261_248 - 128_256 * 4096);
}
