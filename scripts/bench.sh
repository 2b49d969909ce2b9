#!/usr/bin/env bash
# Measures headscope against the Hugging Face transformers reference
# (PyTorch, CPU) side by side, on the same machine in one run, for
# all-MiniLM-L6-v2 and BERT-base- and RoBERTa-base-shaped models with random
# weights, at 128 and 512 tokens, a Qwen2-0.5B-shaped decoder at 512 and
# 2,048 tokens, a Llama-3-8B-shaped one in bfloat16 (time and peak memory
# alone), then the app's frame time and edit-to-grid time on the
# BERT-base-shaped model (`cargo bench --bench ui`), and prints the README's
# markdown tables.
#
#   scripts/bench.sh            # needs the reference venv, see below
#
# The reference needs `python3 -m venv .venv-ref && .venv-ref/bin/pip install
# torch transformers tokenizers numpy safetensors` (several GB); set REF_PY to
# another python with those packages.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-7}"
ref_py="${REF_PY:-.venv-ref/bin/python}"
minilm="$(scripts/fetch-test-model.sh)"
cargo build --release --quiet --bin headscope
bin=target/release/headscope
base="${BERT_BASE_DIR:-target/bert-base-random}"
if [ ! -f "$base/model.safetensors" ]; then
  "$bin" make-random-model --like bert-base-uncased --tokenizer "$minilm/tokenizer.json" --out "$base"
fi
roberta="${ROBERTA_BASE_DIR:-target/roberta-base-random}"
if [ ! -f "$roberta/model.safetensors" ]; then
  "$bin" make-random-model --like roberta-base \
    --tokenizer tests/fixtures/families/roberta/tokenizer.json --out "$roberta"
fi
json() { python3 -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d['$1'])"; }
printf '| model | tokens | headscope median ms | reference median ms | ratio | headscope peak RSS MB |\n'
printf '|---|---:|---:|---:|---:|---:|\n'
for spec in "all-MiniLM-L6-v2:$minilm:" "BERT-base (random):$base:--random-init" \
  "RoBERTa-base (random):$roberta:--random-init"; do
  IFS=: read -r name dir flag <<<"$spec"
  for tokens in 128 512; do
    ours="$("$bin" bench --model "$dir" --tokens "$tokens" --runs "$runs")"
    theirs="$("$ref_py" reference/torch_ref.py time --model "$dir" --tokens "$tokens" --runs "$runs" $flag 2>/dev/null)"
    o="$(json median_ms <<<"$ours")"; t="$(json median_ms <<<"$theirs")"; m="$(json peak_rss_mb <<<"$ours")"
    python3 -c "print(f'| $name | $tokens | {float($o):.1f} | {float($t):.1f} | {float($o)/float($t):.2f} | {float($m):.0f} |')"
  done
done

# A decoder: Qwen2-0.5B's shape (24 layers × 14 query heads, 2 key/value
# heads, hidden 896) with random weights, at 512 and 2,048 tokens, time and
# peak memory beside the reference (fewer runs: a 2,048-token run takes a
# minute on two cores and both sides hold 14-19 GB).
qwen="${QWEN2_DIR:-target/qwen2-0.5b-random}"
if [ ! -f "$qwen/model.safetensors" ]; then
  "$bin" make-random-model --like qwen2-0.5b \
    --tokenizer tests/fixtures/families/qwen2/tokenizer.json --out "$qwen"
fi
echo
printf '| Qwen2-0.5B (random) | tokens | headscope median ms | reference median ms | ratio | headscope peak RSS MB | reference peak RSS MB |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
for tokens in 512 2048; do
  decoder_runs=3; [ "$tokens" = 2048 ] && decoder_runs=2
  ours="$("$bin" bench --model "$qwen" --tokens "$tokens" --runs "$decoder_runs")"
  theirs="$("$ref_py" reference/torch_ref.py time --model "$qwen" --tokens "$tokens" --runs "$decoder_runs" --random-init 2>/dev/null)"
  o="$(json median_ms <<<"$ours")"; t="$(json median_ms <<<"$theirs")"
  m="$(json peak_rss_mb <<<"$ours")"; r="$(json peak_rss_mb <<<"$theirs")"
  python3 -c "print(f'| | $tokens | {float($o):.0f} | {float($t):.0f} | {float($o)/float($t):.2f} | {float($m):.0f} | {float($r):.0f} |')"
done

# Weights in their own precision: a Llama-3-8B-shaped checkpoint with
# random bfloat16 weights (15 GB on disk; 30 GB were it widened to float32)
# at 128 and 512 tokens, one warm-up and one run each (a pass takes a minute
# or more on two cores), with the peak resident memory as `/usr/bin/time -v`
# reports it. Needs 16 GB of disk and 20 GB of free memory: skipped (with a
# note) when `free` reports less available; SKIP_LLAMA3=1 skips it.
llama3="${LLAMA3_DIR:-target/llama-3-8b-bf16-random}"
available_gb="$(free -g | awk '/^Mem:/ {print $7}')"
if [ "${SKIP_LLAMA3:-0}" = 1 ] || [ "$available_gb" -lt 20 ]; then
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
HEADSCOPE_BENCH_MODEL="$base" cargo bench --quiet --bench ui 2>/dev/null | grep '"measure"' | python3 -c "$ui_table"
