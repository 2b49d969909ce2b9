# Sourced by the scripts that drive the real window (screenshots.sh,
# idle-cpu.sh): a scratch folder, an Xvfb display of 1600x1000 on a free-
# looking number from $1, and a trap that stops the app ($app_pid, set by
# the caller once it starts it) and Xvfb and removes the scratch folder.
scratch="$(mktemp -d)"
display=":$(( $1 + RANDOM % 9 ))"
app_pid=""
xvfb_pid=""
cleanup() {
  [ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null || true
  [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT
Xvfb "$display" -screen 0 1600x1000x24 -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
export DISPLAY="$display"
for _ in $(seq 100); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
