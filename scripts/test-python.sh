#!/usr/bin/env bash
# The Python package's tests: `pip install .` (maturin builds the native
# module in release, python/Cargo.toml) into the environment of
# scripts/python-env.sh, then pytest on python/tests against the headscope
# binary the Rust tests built (target/debug/headscope; built here if
# missing) and the test models (fetched by scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
env=$(scripts/python-env.sh)
[ -x target/debug/headscope ] || cargo build --bin headscope
"$env/bin/pip" install -q . 
HEADSCOPE_BIN="$PWD/target/debug/headscope" "$env/bin/python" -m pytest -q python/tests "$@"
