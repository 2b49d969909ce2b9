#!/usr/bin/env bash
# Screenshots of the real app: builds headscope, starts it under Xvfb
# (1600x1000) on the test model with assets/sample.txt, waits for the
# overview grid and saves screenshots/overview.png, then clicks a head and
# saves screenshots/head.png, then saves one screenshot of each of the
# study's views (layers.png, token-focus.png, separators.png,
# separators-value-weighted.png, ablated-run.png,
# heads-marked.png, specialisation.png) and of the corpus window; last, the
# grid and Layers view of a 12-layer model (twelve-layers*.png), and the
# Compare tab with both models (compare*.png), and SmolLM2's grid, by
# category, by role on the text and on the induction probe, and its heads
# sorted by previous-token score and as a scatter, four of its heads
# ablated and each head's importance, and its value-weighted grid
# (decoder-smollm2.png, decoder-roles.png, decoder-value-weighted.png,
# decoder-probe-roles.png, decoder-ablation.png, decoder-importance.png,
# roles-table.png,
# roles-scatter.png).
#
# Needs: Xvfb, xdotool, ImageMagick (import). The app runs with a scratch
# settings and cache folder, so it starts fresh and leaves the user's
# autosave alone. HEADSCOPE_TRACE=1 makes the app report on stderr when a
# result is on screen and which head is open; the script waits on those
# lines. HEADSCOPE_TRACE_WIDGETS makes it keep a list of its named controls
# and where they are, so the script clicks buttons, menus, fields and heads
# by their labels, as a screen reader finds them.
set -euo pipefail
cd "$(dirname "$0")/.."

model="$(scripts/fetch-test-model.sh)"
deep_model="$(scripts/fetch-bge-model.sh)"
# HEADSCOPE_BIN: a binary already built (say by `cargo test`), else build one.
bin="${HEADSCOPE_BIN:-target/debug/headscope}"
[ -n "${HEADSCOPE_BIN:-}" ] || cargo build --bin headscope >&2

# shellcheck source=scripts/xvfb-session.sh
. scripts/xvfb-session.sh 90
log="$scratch/app.log"
widgets="$scratch/widgets.tsv"
export HEADSCOPE_TRACE_WIDGETS="$widgets"

# Waits until the app's log has a line matching $1 (at most $2 seconds).
wait_for_log() {
  for _ in $(seq $(( $2 * 10 ))); do
    grep -q "$1" "$log" 2>/dev/null && return 0
    kill -0 "$app_pid" 2>/dev/null || { cat "$log" >&2; echo "screenshots: the app exited" >&2; exit 1; }
    sleep 0.1
  done
  cat "$log" >&2
  echo "screenshots: timed out waiting for '$1'" >&2
  exit 1
}

# "x y": the centre of the first control named $1 (with prefix as $2: whose
# name starts with $1) in the app's list of its controls; waits until it
# shows (at most 30 seconds).
find_label() {
  local mode="${2:-exact}" where=""
  for _ in $(seq 300); do
    where="$(awk -F'\t' -v name="$1" -v mode="$mode" \
      '(mode == "exact" ? $1 == name : index($1, name) == 1) { print $2, $3; exit }' \
      "$widgets" 2>/dev/null || true)"
    [ -n "$where" ] && { echo "$where"; return 0; }
    sleep 0.1
  done
  return 1
}

# Points at the control named $1 (see find_label).
point_at_label() {
  local where
  where="$(find_label "$@")" || {
    cat "$log" >&2
    echo "screenshots: no control named '$1' showed; the window's controls:" >&2
    cut -f1 "$widgets" >&2 || true
    exit 1
  }
  # shellcheck disable=SC2086 # "x y"
  xdotool mousemove $where
  sleep 0.3   # egui hovers on the move, clicks on the next event
}

# Points at the first token chip, in text order, that shows $1, with or
# without the · of a leading space (the chips are named "token N “text”",
# N the token's place).
point_at_token() {
  local where=""
  for _ in $(seq 300); do
    where="$(awk -F'\t' -v text="$1" '
      $1 ~ /^token [0-9]+ / {
        split($1, words, " ")
        shown = substr($1, length("token " words[2] " ") + 1)
        if ((shown == "“" text "”" || shown == "“·" text "”") \
            && (best == "" || words[2] + 0 < best)) { best = words[2] + 0; at = $2 " " $3 }
      }
      END { if (at != "") print at }' "$widgets" 2>/dev/null || true)"
    [ -n "$where" ] && break
    sleep 0.1
  done
  [ -n "$where" ] || { echo "screenshots: no token chip shows '$1'" >&2; exit 1; }
  # shellcheck disable=SC2086 # "x y"
  xdotool mousemove $where
  sleep 0.3
}

# Clicks the control named $1 (see find_label).
click_label() {
  point_at_label "$@"
  xdotool click 1
}

rm -f "$widgets"
XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config" \
HEADSCOPE_CACHE="$scratch/cache" HEADSCOPE_TRACE=1 \
  "$bin" --model "$model" assets/sample.txt >"$log" 2>&1 &
app_pid=$!

wait_for_log "headscope: result" 180
window="$(xdotool search --sync --name '^headscope' | head -n 1)"
xdotool windowmove "$window" 0 0 windowsize "$window" 1600 1000
# Without a window manager the window only gets key events once focused.
xdotool windowfocus --sync "$window"
xdotool mousemove 1590 5   # keep the pointer (and tooltips) off the grid
sleep 2   # let the resized frame settle
mkdir -p screenshots
import -window root screenshots/overview.png

# Open layer 2, head 5 of the grid: its thumbnail is named "L2 H5 …".
click_label "L2 H5 " prefix
wait_for_log "headscope: showing head" 30
sleep 1
xdotool mousemove 1100 500   # point at a cell so the hover read-out shows
sleep 1
import -window root screenshots/head.png
grep "showing head" "$log" >&2

# The study's views, one tab each, switched with Ctrl+2 … Ctrl+5 (see
# src/app/views.rs); the app logs "showing the … tab" when one is on screen.
show_tab() {  # $1: the digit, $2: the tab's name
  xdotool mousemove 1590 5 key "ctrl+$1"
  wait_for_log "showing the $2 tab" 30
  sleep 1.5
}

show_tab 2 Layers
import -window root screenshots/layers.png

# Token focus: pick "light" (its first place, in the fourth sentence) and
# shift-pick "boats" (second), the focus tokens of L0 H3 and L0 H10, in the
# text chips (buttons named "token N “text”").
show_tab 4 "Token focus"
point_at_token "light"
xdotool click 1
sleep 0.5
point_at_token "boats"
xdotool keydown shift click 1 keyup shift
sleep 1
xdotool mousemove 1590 5
sleep 1
import -window root screenshots/token-focus.png

# Separators, with the tokens picked above still outlined.
show_tab 3 Separators
import -window root screenshots/separators.png
# The same from the value-weighted attention N′ (ANALYSIS.md §9), then back.
click_label "Value-weighted (N′)"
xdotool mousemove 1590 5
sleep 1
import -window root screenshots/separators-value-weighted.png
click_label "Value-weighted (N′)"

# "Show on the Heads grid" (top of the Separators view): the grid with each
# head's separator attention, the heads focused on a picked token outlined.
click_label "Show on the Heads grid"
for _ in $(seq 100); do
  [ "$(grep -c "showing the Heads tab" "$log")" -ge 2 ] && break
  sleep 0.1
done
[ "$(grep -c "showing the Heads tab" "$log")" -ge 2 ] \
  || { cat "$log" >&2; echo "screenshots: the Heads grid did not come back" >&2; exit 1; }
xdotool mousemove 1590 5
sleep 2
import -window root screenshots/heads-marked.png

show_tab 5 Specialisation
import -window root screenshots/specialisation.png

# Back on the grid, the overlay off: L2 H7 ablated through its menu, and
# the ablated model's run shown in place of the unablated one (ANALYSIS.md
# §9): the layers after L2 change their pictures and categories.
show_tab 1 Heads
click_label "Separator attention"
point_at_label "L2 H7 " prefix
xdotool click 3
click_label "Ablate L2 H7"
sleep 6   # three passes of MiniLM
click_label "Show the ablated run"
xdotool mousemove 1590 5
sleep 6
import -window root screenshots/ablated-run.png
click_label "Give every head back"

# The corpus statistics window (File → Corpus statistics…) on a folder of
# 16 small texts made from the sample texts, plus one binary file the run
# lists as skipped; the app logs "corpus finished" when the result is on
# screen.
python3 - "$scratch/corpus" assets/sample.txt tests/fixtures/harbour.txt <<'PY'
import os, random, re, sys
out = sys.argv[1]
os.makedirs(os.path.join(out, "letters"), exist_ok=True)
sentences = []
for name in sys.argv[2:]:
    text = open(name).read().replace("\n", " ")
    sentences += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
rng = random.Random(7)
for i in range(16):
    chosen = rng.sample(sentences, min(rng.randint(4, 9), len(sentences)))
    folder = os.path.join(out, "letters" if i % 4 == 3 else "")
    with open(os.path.join(folder, f"story{i:02}.txt"), "w") as f:
        f.write(" ".join(chosen) + "\n")
with open(os.path.join(out, "scan.txt"), "wb") as f:
    f.write(bytes([0, 159, 146, 150, 0, 0, 1, 2, 3]))
PY
click_label File
click_label "Corpus statistics…"
click_label "Corpus folder or file"
sleep 0.3
xdotool windowfocus --sync "$window"
xdotool type --delay 20 "$scratch/corpus"
xdotool key Return                       # Enter runs, like the Run button
wait_for_log "headscope: corpus finished" 300
point_at_label "Corpus L5 H3:" prefix    # hover L5 H3 of the head grid
sleep 2
import -window root screenshots/corpus.png
echo "screenshots: wrote screenshots/corpus.png" >&2

kill "$app_pid" 2>/dev/null || true
wait "$app_pid" 2>/dev/null || true

# A 12-layer model (bge-small-en-v1.5, the depth of the paper's BERT-12):
# the grid, then the Layers view, where the deep layers' attention ties
# between separators show as undecided segmentation.
rm -f "$widgets"
XDG_DATA_HOME="$scratch/data12" XDG_CONFIG_HOME="$scratch/config12" \
HEADSCOPE_CACHE="$scratch/cache12" HEADSCOPE_TRACE=1 \
  "$bin" --model "$deep_model" assets/sample.txt >"$log" 2>&1 &
app_pid=$!
wait_for_log "headscope: result" 300
window="$(xdotool search --sync --name '^headscope' | head -n 1)"
xdotool windowmove "$window" 0 0 windowsize "$window" 1600 1000
# The new window may not be viewable yet (BadMatch): try again a while.
for _ in $(seq 20); do
  xdotool windowfocus --sync "$window" 2>/dev/null && break
  sleep 0.5
done
xdotool mousemove 1590 5
sleep 2
import -window root screenshots/twelve-layers.png
show_tab 2 Layers
import -window root screenshots/twelve-layers-layers.png

kill "$app_pid" 2>/dev/null || true
wait "$app_pid" 2>/dev/null || true

# Two models on one text: the test model (A) and the 12-layer model (B),
# loaded through the Compare tab's model panel (its id field, then Enter);
# the app logs "comparison on screen" when the comparison is drawn. Then a
# click on A's L1 H3 shows its best matches in B.
rm -f "$widgets"
XDG_DATA_HOME="$scratch/data-compare" XDG_CONFIG_HOME="$scratch/config-compare" \
HEADSCOPE_CACHE="$scratch/cache-compare" HEADSCOPE_TRACE=1 \
  "$bin" --model "$model" assets/sample.txt >"$log" 2>&1 &
app_pid=$!
wait_for_log "headscope: result" 180
window="$(xdotool search --sync --name '^headscope' | head -n 1)"
xdotool windowmove "$window" 0 0 windowsize "$window" 1600 1000
for _ in $(seq 20); do
  xdotool windowfocus --sync "$window" 2>/dev/null && break
  sleep 0.5
done
sleep 1
show_tab 6 Compare
click_label "or a Hugging Face model id (downloaded once, then cached):"
sleep 0.3
xdotool type --delay 10 "$deep_model"
xdotool key Return
wait_for_log "headscope: comparison on screen" 300
click_label "A L1 H3 " prefix
sleep 0.7
xdotool mousemove 1590 5
sleep 1.5
import -window root screenshots/compare.png
# Further down: the A × B head matching and the specialisation table.
xdotool mousemove 1000 600
for _ in $(seq 12); do xdotool click 5; sleep 0.05; done
xdotool mousemove 1590 5
sleep 1.5
import -window root screenshots/compare-matching.png

kill "$app_pid" 2>/dev/null || true
wait "$app_pid" 2>/dev/null || true

# A real decoder's grid, SmolLM2-135M-Instruct on its fixture text, with
# the default colour scale (1st–99th percentile, the sink left out).
smollm2="$(scripts/fetch-smollm2-model.sh | head -n 1)"
rm -f "$widgets"
XDG_DATA_HOME="$scratch/data-decoder" XDG_CONFIG_HOME="$scratch/config-decoder" \
HEADSCOPE_CACHE="$scratch/cache-decoder" HEADSCOPE_TRACE=1 \
  "$bin" --model "$smollm2" tests/fixtures/smollm2.txt >"$log" 2>&1 &
app_pid=$!
wait_for_log "headscope: result" 300
window="$(xdotool search --sync --name '^headscope' | head -n 1)"
xdotool windowmove "$window" 0 0 windowsize "$window" 1600 1000
xdotool mousemove 1590 5
sleep 20   # 270 thumbnails
import -window root screenshots/decoder-smollm2.png

# The same grid's attention, log-scaled, captioned by each head's role
# (ANALYSIS.md §9), then the Specialisation table sorted by the
# previous-token score.
click_label "Attention"
click_label "Log scale"
click_label "roles"
xdotool mousemove 1590 5
sleep 1
import -window root screenshots/decoder-roles.png
# The same grid value-weighted (N′, ANALYSIS.md §9): the sink's columns fade
# where the first token writes little, and the captions give N′'s roles.
click_label "Value-weighted"
xdotool mousemove 1590 5
sleep 20   # 270 thumbnails again
import -window root screenshots/decoder-value-weighted.png
click_label "Attention"
# Roles on the induction probe, scrolled to layers 17-22, where its
# induction heads are.
click_label "roles on the probe"
xdotool mousemove 1000 600
sleep 5
for _ in $(seq 31); do xdotool click 5; sleep 0.05; done
xdotool mousemove 1590 5
sleep 1
import -window root screenshots/decoder-probe-roles.png
xdotool windowfocus --sync "$window"
show_tab 5 Specialisation
click_label "prev. token"
xdotool mousemove 1590 5
sleep 1
import -window root screenshots/roles-table.png
click_label "Scatter"
xdotool mousemove 1590 5
sleep 1
import -window root screenshots/roles-scatter.png

# Back on the probe's grid, its four induction heads ablated through their
# menus (right click): the loss of the repeated half climbs, its tokens red.
xdotool windowfocus --sync "$window"
show_tab 1 Heads
for head in "L17 H3" "L17 H4" "L17 H5" "L18 H6"; do
  point_at_label "$head " prefix
  xdotool click 3
  click_label "Ablate $head"
  sleep 3   # the effect's row above the grid moves the grid down
done
xdotool mousemove 1590 5
sleep 15   # two passes of SmolLM2 over the probe
import -window root screenshots/decoder-ablation.png

# Every head back, then each head's importance on the probe: each ablated
# alone, the rise of the loss on its thumbnail (layers 14-19: L16 H0).
click_label "Give every head back"
click_label "Each head's importance"
xdotool mousemove 1000 600
for _ in $(seq 9); do xdotool click 4; sleep 0.05; done
xdotool mousemove 1590 5
sleep 150  # 270 ablated passes (a debug build takes longer: set HEADSCOPE_BIN to a release one)
import -window root screenshots/decoder-importance.png

# Each head's importance over a corpus: the Corpus window on the three
# short texts of reference/texts/, each head ablated alone in every window;
# the head grid opens on the loss change (L1 H5 hovered).
mkdir -p "$scratch/short"
cp reference/texts/code.txt reference/texts/market.txt reference/texts/science.txt "$scratch/short"
xdotool windowfocus --sync "$window"
click_label File
click_label "Corpus statistics…"
click_label "Ablate each head alone (importance)"
click_label "Corpus folder or file"
xdotool key ctrl+a BackSpace
xdotool type --delay 20 "$scratch/short"
xdotool key Return
wait_for_log "headscope: corpus finished: 3 windows" 900
xdotool mousemove 800 700
for _ in $(seq 12); do xdotool click 5; sleep 0.1; done
point_at_label "Corpus L1 H5:" prefix
sleep 2
import -window root screenshots/corpus-importance.png

echo "screenshots: wrote screenshots/{overview,head,layers,separators,heads-marked,token-focus,separators-value-weighted,specialisation,ablated-run,corpus,twelve-layers,twelve-layers-layers,compare,compare-matching,decoder-smollm2,decoder-roles,decoder-value-weighted,decoder-probe-roles,roles-table,roles-scatter,decoder-ablation,decoder-importance,corpus-importance}.png" >&2
