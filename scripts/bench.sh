#!/usr/bin/env bash
# Measures headscope against the Hugging Face transformers reference
# (PyTorch, CPU) side by side, on the same machine in one run, for
# all-MiniLM-L6-v2 and BERT-base- and RoBERTa-base-shaped models with random
# weights, at 128 and 512 tokens, the decoders SmolLM2-135M-Instruct (real,
# scripts/fetch-smollm2-model.sh) and a Qwen2-0.5B-shaped one at 512 and
# 2,048 tokens, the model part of four of them beside PyTorch's sgemm on
# the same products (on real text, with the figures' share), SmolLM2's Q4_1
# GGUF file (and any GGUF_FILES) beside llama.cpp's own prompt processing,
# a Llama-3-8B-shaped one in bfloat16 (time and peak memory alone), then
# the app's frame time and edit-to-grid time on the BERT-base-shaped model
# (`cargo bench --bench ui`), and prints the README's markdown tables.
#
#   scripts/bench.sh                      # needs the reference venv, see below
#   SECTIONS="decoders" scripts/bench.sh  # some of: encoders decoders sgemm gguf llama3 app
#   ISA=avx2 SECTIONS="encoders" scripts/bench.sh
#
# ISA=avx2 measures both sides as on a CPU without AVX-512, on any x86-64
# CPU: headscope built without its `avx512` feature (gemm's and our
# element-wise AVX-512 kernels left out) and PyTorch held to AVX2: its own
# kernels by ATEN_CPU_CAPABILITY (the capability it reports is printed), its
# sgemm (MKL) by MKL_ENABLE_INSTRUCTIONS, oneDNN by ONEDNN_MAX_CPU_ISA.
#
# The reference needs `python3 -m venv .venv-ref && .venv-ref/bin/pip install
# torch transformers tokenizers numpy safetensors` (several GB); set REF_PY to
# another python with those packages.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-7}"
ref_py="${REF_PY:-.venv-ref/bin/python}"
sections=" ${SECTIONS:-encoders decoders sgemm gguf llama3 app} "
# The reference each timing is set beside: transformers, or (the GGUF
# section) llama.cpp.
reference=("$ref_py" reference/torch_ref.py)
wants() { [[ "$sections" == *" $1 "* ]]; }
minilm="$(scripts/fetch-test-model.sh)"
if [ "${ISA:-}" = avx2 ]; then
  # A target folder of its own, so that the default release binary stays
  # the one with the AVX-512 kernels.
  cargo build --release --quiet --bin headscope --no-default-features --target-dir target/avx2
  bin=target/avx2/release/headscope
  export ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
  echo "PyTorch CPU capability: $("$ref_py" -c 'import torch; print(torch.backends.cpu.get_cpu_capability())')"
else
  cargo build --release --quiet --bin headscope
  bin=target/release/headscope
fi
base="${BERT_BASE_DIR:-target/bert-base-random}"
if { wants encoders || wants app || wants sgemm; } && [ ! -f "$base/model.safetensors" ]; then
  "$bin" make-random-model --like bert-base-uncased --tokenizer "$minilm/tokenizer.json" --out "$base"
fi
roberta="${ROBERTA_BASE_DIR:-target/roberta-base-random}"
if wants encoders && [ ! -f "$roberta/model.safetensors" ]; then
  "$bin" make-random-model --like roberta-base \
    --tokenizer tests/fixtures/families/roberta/tokenizer.json --out "$roberta"
fi
json() { python3 -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d['$1'])"; }
# headscope and the reference alternating (ROUNDS rounds, each one call of
# each with a warm-up and `runs` runs), so that a busy machine slows both
# alike: the medians of the calls' medians and the median of the rounds'
# ratios.
alternate() { # runs name dir tokens [flag]
  local runs="$1" name="$2" dir="$3" tokens="$4" flag="${5:-}" ours=() theirs=() rss=() ref_rss=()
  for _ in $(seq "${ROUNDS:-3}"); do
    local o t
    o="$("$bin" bench --model "$dir" --tokens "$tokens" --runs "$runs")"
    t="$("${reference[@]}" time --model "$dir" --tokens "$tokens" --runs "$runs" $flag 2>/dev/null)"
    ours+=("$(json median_ms <<<"$o")"); theirs+=("$(json median_ms <<<"$t")")
    rss+=("$(json peak_rss_mb <<<"$o")"); ref_rss+=("$(json peak_rss_mb <<<"$t")")
  done
  python3 - "$name" "$tokens" "${ours[*]}" "${theirs[*]}" "${rss[*]}" "${ref_rss[*]}" <<'PY'
import statistics as st, sys
name, tokens, ours, theirs, rss, ref = sys.argv[1:]
ours, theirs = [float(v) for v in ours.split()], [float(v) for v in theirs.split()]
ratio = st.median(o / t for o, t in zip(ours, theirs))
ms = lambda values: f"{st.median(values):.{1 if st.median(values) < 100 else 0}f}"
print(f"| {name} | {tokens} | {ms(ours)} | {ms(theirs)} | {ratio:.2f} "
      f"| {max(float(v) for v in rss.split()):.0f} | {max(float(v) for v in ref.split()):.0f} |")
PY
}
if wants encoders; then
  printf '| model | tokens | headscope ms | reference ms | ratio (median of rounds) | headscope peak RSS MB | reference peak RSS MB |\n'
  printf '|---|---:|---:|---:|---:|---:|---:|\n'
  for spec in "all-MiniLM-L6-v2:$minilm:" "BERT-base (random):$base:--random-init" \
    "RoBERTa-base (random):$roberta:--random-init"; do
    IFS=: read -r name dir flag <<<"$spec"
    for tokens in 128 512; do
      alternate "$runs" "$name" "$dir" "$tokens" $flag
    done
  done
fi

# Decoders: SmolLM2-135M-Instruct is the real checkpoint (30 layers × 9
# query heads, 3 key/value heads, hidden 576); Qwen2-0.5B's shape (24 layers
# × 14 query heads, 2 key/value heads, hidden 896) has random weights. At
# 2,048 tokens P and S are recomputed per head in headscope (the default
# memory limit), while the reference holds every one at once.
if wants decoders || wants sgemm; then
  smollm2="${SMOLLM2_DIR:-$(scripts/fetch-smollm2-model.sh)}"
  qwen="${QWEN2_DIR:-target/qwen2-0.5b-random}"
  if [ ! -f "$qwen/model.safetensors" ]; then
    "$bin" make-random-model --like qwen2-0.5b \
      --tokenizer tests/fixtures/families/qwen2/tokenizer.json --out "$qwen"
  fi
fi
if wants decoders; then
  echo
  printf '| decoder | tokens | headscope ms | reference ms | ratio (median of rounds) | headscope peak RSS MB | reference peak RSS MB |\n'
  printf '|---|---:|---:|---:|---:|---:|---:|\n'
  for tokens in 512 2048; do
    alternate "${DECODER_RUNS:-2}" "SmolLM2-135M-Instruct" "$smollm2" "$tokens"
  done
  # At 2,048 tokens the reference holds 19.5 GB: QWEN2_TOKENS=512 skips it.
  for tokens in ${QWEN2_TOKENS:-512 2048}; do
    alternate "${DECODER_RUNS:-2}" "Qwen2-0.5B (random)" "$qwen" "$tokens" --random-init
  done
fi

# The model part beside PyTorch's sgemm on the model's own products
# (reference/sgemm_rate.py: every linear layer, the attention's products
# and S = O·Oᵀ, each shape timed with torch.matmul on the same threads), and
# the figures beside the model part, on real text (docs/ANALYSIS.md, or
# SGEMM_TEXT), at 512 tokens or the sentence end before it. The engine
# issue's aims: the model part at 0.9 or more of that pace (the last
# column), the figures at most 15% of the model part. Alternating, ROUNDS
# rounds: the medians, and the median of the rounds' ratios.
if wants sgemm; then
  text="${SGEMM_TEXT:-docs/ANALYSIS.md}"
  echo
  printf '| model, real text | tokens | model part ms | figures ms | figures / model part | GFLOP | PyTorch sgemm GFLOP/s | model part GFLOP/s | model part / sgemm pace |\n'
  printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|\n'
  for spec in "all-MiniLM-L6-v2:$minilm" "BERT-base (random):$base" \
    "SmolLM2-135M-Instruct:$smollm2" "Qwen2-0.5B (random):$qwen"; do
    IFS=: read -r name dir <<<"$spec"
    ours=() theirs=()
    for _ in $(seq "${ROUNDS:-3}"); do
      ours+=("$("$bin" bench --model "$dir" --tokens 512 --runs "${SGEMM_RUNS:-3}" --text "$text" | tail -n 1)")
      tokens="$(json tokens <<<"${ours[-1]}")"
      theirs+=("$("$ref_py" reference/sgemm_rate.py --model "$dir" --tokens "$tokens" 2>/dev/null | tail -n 1)")
    done
    python3 - "$name" "$(printf '%s\n' "${ours[@]}")" "$(printf '%s\n' "${theirs[@]}")" <<'PY'
import json, statistics as st, sys
name, ours, theirs = sys.argv[1], sys.argv[2].splitlines(), sys.argv[3].splitlines()
ours, theirs = [json.loads(o) for o in ours], [json.loads(t) for t in theirs]
model = st.median(o["model_median_ms"] for o in ours)
figures = st.median(o["analysis_median_ms"] for o in ours)
gflop = theirs[0]["gflop"]
pace = st.median(t["gflops"] for t in theirs)
share = st.median(t["sgemm_ms"] / o["model_median_ms"] for o, t in zip(ours, theirs))
print(f"| {name} | {ours[0]['tokens']} | {model:.0f} | {figures:.0f} | {figures / model:.0%} | {gflop:.1f} "
      f"| {pace:.0f} | {gflop / model * 1000:.0f} | {share:.2f} |")
PY
  done
fi

# GGUF files as llama.cpp's quantizer writes them, beside llama.cpp's own
# prompt processing of the same tokens (reference/llamacpp_ref.py, through
# llama-cpp-python; LLAMACPP_PY names its python): SmolLM2's Q4_1 file as
# its wheel ships it, and the files GGUF_FILES lists (say a Llama 3.1
# 8B-shaped Q4_K_M file, reference/make_llama8b_gguf.py), at 512 tokens.
# llama.cpp makes no P, O or S and keeps nothing: the ratio is what
# capturing and analysing every head costs beyond running the model.
# llama-cpp-python builds from its PyPI source (about 15 minutes on 2
# cores); the native build's AMX path crashes on some CPUs, so:
#   python3 -m venv .venv-llamacpp && CMAKE_ARGS="-DGGML_NATIVE=OFF
#   -DGGML_AVX2=ON -DGGML_AVX512=ON (OFF on a CPU without AVX-512)
#   -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF" .venv-llamacpp/bin/pip install
#   llama-cpp-python
if wants gguf; then
  llamacpp_py="${LLAMACPP_PY:-.venv-llamacpp/bin/python}"
  echo
  if ! "$llamacpp_py" -c 'import llama_cpp' 2>/dev/null; then
    echo "(GGUF beside llama.cpp skipped: no llama-cpp-python at $llamacpp_py; see scripts/bench.sh)"
  else
    scripts/fetch-smollm2-model.sh >/dev/null
    smollm2_gguf="${HEADSCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headscope}/models/SmolLM2-135M-Instruct.Q4_1.gguf"
    printf '| GGUF file | tokens | headscope ms | llama.cpp ms | ratio (median of rounds) | headscope peak RSS MB | llama.cpp peak RSS MB |\n'
    printf '|---|---:|---:|---:|---:|---:|---:|\n'
    reference=("$llamacpp_py" reference/llamacpp_ref.py)
    for file in "$smollm2_gguf" ${GGUF_FILES:-}; do
      alternate "${GGUF_RUNS:-2}" "$(basename "$file")" "$file" 512 "--threads $(nproc)"
    done
    reference=("$ref_py" reference/torch_ref.py)
  fi
fi

# Weights in their own precision: a Llama-3-8B-shaped checkpoint with
# random bfloat16 weights (15 GB on disk; 30 GB were it widened to float32)
# at 128 and 512 tokens, one warm-up and one run each (a pass takes a minute
# or more on two cores), with the peak resident memory as `/usr/bin/time -v`
# reports it. Needs 16 GB of disk and 20 GB of free memory: skipped (with a
# note) when `free` reports less available; SKIP_LLAMA3=1 skips it.
llama3="${LLAMA3_DIR:-target/llama-3-8b-bf16-random}"
available_gb="$(free -g | awk '/^Mem:/ {print $7}')"
if ! wants llama3; then
  :
elif [ "${SKIP_LLAMA3:-0}" = 1 ] || [ "$available_gb" -lt 20 ]; then
  echo
  echo "(Llama-3-8B bf16 skipped: ${available_gb} GB available, 20 needed)"
else
  if [ ! -f "$llama3/model.safetensors" ]; then
    "$bin" make-random-model --like llama-3-8b --dtype bf16 \
      --tokenizer tests/fixtures/families/llama/tokenizer.json --out "$llama3"
  fi
  echo
  printf '| Llama-3-8B (random, bf16) | tokens | wall s (load + 2 passes) | one pass s | peak RSS GiB |\n'
  printf '|---|---:|---:|---:|---:|\n'
  for tokens in 128 512; do
    timed="$(mktemp)"
    ours="$(/usr/bin/time -v "$bin" bench --model "$llama3" --tokens "$tokens" --runs 1 2>"$timed")"
    wall="$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$timed")"
    rss="$(awk -F': ' '/Maximum resident set size/ {print $2}' "$timed")"
    o="$(json median_ms <<<"$ours")"
    python3 -c "print(f'| | $tokens | {float($wall):.0f} | {float($o) / 1000:.1f} | {int($rss) / 2**20:.1f} |')"
    rm -f "$timed"
  done
fi

# The app: frame time with the full grid on screen, and edit → updated grid.
wants app || exit 0
echo
printf '| app, BERT-base (random), 12 × 12 heads | tokens | median ms | p95 ms |\n'
printf '|---|---:|---:|---:|\n'
ui_table='
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    if d["measure"] == "frame_ms":
        name, p95 = "frame with the full grid", "%.1f" % d["p95_ms"]
    else:
        name, p95 = "edit → grid updated (incl. %d ms pause)" % d["debounce_ms"], ""
    print("| %s | %d | %.1f | %s |" % (name, d["tokens"], d["median_ms"], p95))
'
ui_log="$(mktemp)"
if ! HEADSCOPE_BENCH_MODEL="$base" cargo bench --quiet --bench ui 2>"$ui_log" |
  grep '"measure"' | python3 -c "$ui_table"; then
  echo "The app bench failed; the end of what it printed:" >&2
  tail -n 30 "$ui_log" >&2
  exit 1
fi
rm -f "$ui_log"
