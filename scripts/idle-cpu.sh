#!/usr/bin/env bash
# The app's CPU use when nothing changes: starts headscope under Xvfb on
# the test model (or $1: a model folder or GGUF file) with
# assets/sample.txt, waits until the result is on screen and its
# thumbnails and next tokens are done (`SETTLE` seconds, default 20), then
# reads the process's CPU time over `SECONDS_IDLE` seconds (default 20)
# from /proc and prints the share of one core it used. A window that
# redraws when nothing changes shows here as several percent; an idle one
# as under 1%.
#
#   scripts/idle-cpu.sh
#   scripts/idle-cpu.sh ~/.cache/headscope/models/SmolLM2-135M-Instruct
#
# Needs: Xvfb, xdotool (as scripts/screenshots.sh). HEADSCOPE_BIN: the
# binary (default target/release/headscope, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:-$(scripts/fetch-test-model.sh)}"
bin="${HEADSCOPE_BIN:-target/release/headscope}"
[ -x "$bin" ] || cargo build --release --bin headscope >&2
settle="${SETTLE:-20}"
idle="${SECONDS_IDLE:-20}"

# shellcheck source=scripts/xvfb-session.sh
. scripts/xvfb-session.sh 70

log="$scratch/app.log"
XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config" \
HEADSCOPE_CACHE="$scratch/cache" HEADSCOPE_TRACE=1 \
  "$bin" --model "$model" assets/sample.txt >"$log" 2>&1 &
app_pid=$!
for _ in $(seq 1800); do
  grep -q "headscope: result" "$log" && break
  kill -0 "$app_pid" 2>/dev/null || { cat "$log" >&2; echo "idle-cpu: the app exited" >&2; exit 1; }
  sleep 0.1
done
grep -q "headscope: result" "$log" || { echo "idle-cpu: no result in 180 s" >&2; exit 1; }
window="$(xdotool search --sync --name '^headscope' | head -n 1)"
xdotool windowsize "$window" 1600 1000
xdotool mousemove 1590 5   # the pointer off the window's controls
sleep "$settle"

# utime + stime of the process, in clock ticks (fields 14 and 15 of
# /proc/PID/stat, after the parenthesised name).
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$app_pid/stat"; }
hz="$(getconf CLK_TCK)"
before="$(ticks)"
sleep "$idle"
after="$(ticks)"
awk -v d="$((after - before))" -v hz="$hz" -v s="$idle" -v m="$model" \
  'BEGIN { printf "idle CPU of headscope on %s: %.2f%% of one core over %d s\n", m, 100 * d / hz / s, s }'
