#!/usr/bin/env bash
# Makes, once, the virtual environment the Python package's tests run in
# (python/requirements-test.txt: PyTorch from PyPI, ~5 GB with its CUDA
# libraries, transformers, TransformerLens, pytest, maturin), and prints
# its folder. Cached under $HEADSCOPE_CACHE (~/.cache/headscope)/pyenv and
# rebuilt only when the requirements change; $HEADSCOPE_PYENV names
# another folder.
set -euo pipefail
cd "$(dirname "$0")/.."
env="${HEADSCOPE_PYENV:-${HEADSCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headscope}/pyenv}"
requirements=python/requirements-test.txt
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ ! -x "$env/bin/python" ] || [ "$(cat "$env/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
    echo "python-env: installing $requirements into $env (once; PyTorch is large)" >&2
    python3 -m venv "$env"
    "$env/bin/pip" install -q --upgrade pip >&2
    "$env/bin/pip" install -q -r "$requirements" >&2
    echo "$want" >"$env/.requirements.sha256"
fi
echo "$env"
