#!/bin/bash
# The sharded corpus run on a real Slurm cluster of one node, started here:
# installs Debian's slurm-wlm and munge where missing, starts munged,
# slurmctld and slurmd with a private slurm.conf, runs a corpus as a 4-task
# array job plus a merge job that waits for it (scripts/slurm/submit.sh),
# and compares the merged JSON with an unsharded run of the same corpus:
# every count equal, every figure within 1e-9 relative. Exits non-zero on
# any failure or difference. Needs root (it installs packages and runs the
# daemons as root), as in CI.
#
#   scripts/slurm/ci-test.sh
#
# HEADSCOPE: the binary to test (default: target/debug/headscope, built when
# missing). HEADSCOPE_MODEL: the model folder (default: the test model,
# fetched by scripts/fetch-test-model.sh when missing). SHARDS: default 4.
# The corpus: Debian copyright files of packages every Debian system has
# (texts written by others), copied into a folder as .txt files.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
shards=${SHARDS:-4}
work=/tmp/headscope-slurm-ci
say() { echo "slurm-ci: $*" >&2; }
fail() {
    say "FAILED: $*"
    exit 1
}

# --- the binary and the model -------------------------------------------
headscope=${HEADSCOPE:-$repo/target/debug/headscope}
if [ ! -x "$headscope" ]; then
    say "building $headscope"
    cargo build --bin headscope
fi
model=${HEADSCOPE_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/headscope/models/all-MiniLM-L6-v2}
if [ ! -f "$model/model.safetensors" ]; then
    bash "$repo/scripts/fetch-test-model.sh"
fi

# --- Slurm and munge ----------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    say "installing slurm-wlm and munge"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq slurm-wlm munge >/dev/null
fi

# Stop what an earlier run of this script may have left running.
stop_daemons() {
    for pidfile in "$work"/slurmd.pid "$work"/slurmctld.pid; do
        if [ -f "$pidfile" ]; then
            kill "$(cat "$pidfile")" 2>/dev/null || true
            rm -f "$pidfile"
        fi
    done
}
stop_daemons
rm -rf "$work"
mkdir -p "$work"/state "$work"/spool "$work"/out "$work"/corpus "$work"/logs

started_munged=
if ! pgrep -x munged >/dev/null; then
    if [ ! -f /etc/munge/munge.key ]; then
        mungekey -c
    fi
    mkdir -p /run/munge
    munged --force
    started_munged=1
fi
cleanup() {
    stop_daemons
    if [ -n "$started_munged" ] && [ -f /run/munge/munged.pid ]; then
        kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
    fi
}
trap cleanup EXIT

node=$(hostname -s)
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=headscope-ci
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=3600
NodeName=$node CPUs=2 State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
say "starting slurmctld and slurmd on $node"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
    if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
        break
    fi
    sleep 1
done
sinfo -h -o %T | grep -qE '^(idle|mixed|allocated)' ||
    fail "the node did not come up: $(sinfo 2>&1); $(tail -5 "$work"/slurmctld.log "$work"/slurmd.log)"

# --- the corpus: texts written by others -----------------------------------
# Short ones (1-9 KB, one to four windows each), so that a debug build runs
# the corpus twice in a few minutes.
for package in base-files hostname grep gzip tar dash coreutils login sed; do
    source=/usr/share/doc/$package/copyright
    [ -f "$source" ] && cp "$source" "$work/corpus/$package.txt"
done
documents=$(find "$work/corpus" -name '*.txt' | wc -l)
[ "$documents" -ge 6 ] || fail "only $documents Debian copyright files found"

# --- the unsharded run, then the array and the merge ------------------------
say "unsharded run of $documents documents"
"$headscope" corpus --model "$model" --json "$work/unsharded.json" "$work/corpus" \
    2>"$work/logs/unsharded.log" || fail "the unsharded run: $(tail -5 "$work/logs/unsharded.log")"

say "submitting $shards shards and the merge"
cd "$work/logs"
read -r array merge < <(HEADSCOPE=$headscope "$repo/scripts/slurm/submit.sh" "$shards" "$work/out" \
    --model "$model" "$work/corpus")
[ -n "${merge:-}" ] || fail "sbatch did not submit the jobs (see above)"
say "array job $array, merge job $merge"
state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | sort -u | cut -d= -f2 | paste -sd,; }
deadline=$((SECONDS + ${SLURM_CI_TIMEOUT:-1800}))
while :; do
    merge_state=$(state "$merge")
    case $merge_state in
        COMPLETED) break ;;
        FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | DEADLINE)
            fail "merge job $merge: $merge_state; $(cat "$work"/logs/*.out)" ;;
    esac
    # A failed shard leaves the merge pending for ever (DependencyNeverSatisfied).
    if scontrol show job "$merge" | grep -q DependencyNeverSatisfied; then
        fail "a shard failed (array $array: $(state "$array")); $(cat "$work"/logs/*.out)"
    fi
    [ $SECONDS -lt $deadline ] || fail "timed out; array $array: $(state "$array"), merge: $merge_state"
    sleep 2
done
[ "$(state "$array")" = COMPLETED ] || fail "array job $array: $(state "$array")"
parts=$(find "$work/out" -name 'part-*.json' | wc -l)
[ "$parts" -eq "$shards" ] || fail "$parts parts for $shards shards"

say "comparing the merged JSON with the unsharded run"
python3 "$repo/scripts/slurm/compare-reports.py" "$work/unsharded.json" "$work/out/corpus.json" ||
    fail "the merged result differs from the unsharded run"
say "OK: $shards Slurm array tasks + merge equal the unsharded run ($documents documents)"
