#!/usr/bin/env bash
# Runs every algorithmic cell (task x model) for a fixed training time, then evaluates
# the best checkpoint on the test lengths. Two lanes run side by side (one thread each).
#   bash configs/algorithmic/run_all.sh [RUNS_DIR] [SECONDS_PER_CELL]
# A cell cut off (or re-run) resumes from its checkpoint; `ut eval` then re-scores it.
set -u
out=${1:-runs/algorithmic}
secs=${2:-600}
here=$(cd "$(dirname "$0")" && pwd)
ut=${UT:-ut}
mkdir -p "$out"

run_cell() {
  local name=$1 start
  start=$(date +%s)
  {
    echo "== $name: $ut train $here/$name.yaml --out $out/$name --set train.time_limit=$secs"
    $ut train "$here/$name.yaml" --out "$out/$name" --no-progress --set train.time_limit="$secs"
    $ut eval "$out/$name" --split test
    echo "== $name: wall $(( $(date +%s) - start )) s"
  } > "$out/$name.log" 2>&1
}

lane() { for cell in "$@"; do run_cell "$cell"; done; }

lane copy-ut reverse-ut addition-ut copy-ut-act reverse-ut-act addition-ut-act &
lane copy-transformer reverse-transformer addition-transformer copy-lstm reverse-lstm addition-lstm &
wait
