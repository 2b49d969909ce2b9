#!/bin/bash
# Submits a sharded `headscope corpus` run to Slurm: an array job of N
# shards, then a merge job that starts once every shard succeeded.
#
#   scripts/slurm/submit.sh N OUT_DIR CORPUS_ARGS...
#
# e.g. scripts/slurm/submit.sh 16 runs/wiki --model ~/models/bert-base-uncased \
#          --text-field text /shared/wikipedia/*.parquet
#
# Prints the two job ids ("ARRAY_ID MERGE_ID"). OUT_DIR gets part-K.json per
# shard and corpus.json / corpus.csv from the merge; the jobs' logs go to
# the folder sbatch runs in. Further sbatch options (partition, time
# limit, account) through sbatch's own environment variables:
# SBATCH_PARTITION, SBATCH_TIMELIMIT, SBATCH_ACCOUNT, ...
# HEADSCOPE (the binary) is passed on to the jobs.
set -euo pipefail

if [ $# -lt 3 ]; then
    echo "usage: $0 N OUT_DIR CORPUS_ARGS..." >&2
    exit 2
fi
count=$1
out=$2
shift 2
case $count in
    '' | *[!0-9]* | 0)
        echo "N must be a whole number of shards, at least 1 (got $count)" >&2
        exit 2
        ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
array=$(sbatch --parsable --export=ALL --array=0-$((count - 1)) \
    "$here/corpus-array.sbatch" "$out" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --export=ALL --dependency=afterok:"$array" \
    "$here/merge.sbatch" "$out")
merge=${merge%%;*}
echo "$array $merge"
