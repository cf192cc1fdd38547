#!/usr/bin/env bash
# Trains the algorithmic cells (task x model) to the end of their configs (validation at
# length 40 stops improving, or train.steps), in time-limited chunks that resume exactly,
# two cells side by side (one thread each). Each chunk writes results/algorithmic/CELL.json
# (partial until the cell finishes); `ut report` then regenerates docs/results.md.
#   bash configs/algorithmic/run_all.sh [RUNS_DIR] [CHUNK_SECONDS] [CELL ...]
# CELL is a config name without .yaml (default: all twelve). Run it again to continue.
set -u
out=${1:-runs/algorithmic}
secs=${2:-3600}
shift 2 2>/dev/null || shift $#
cells=("$@")
if [ ${#cells[@]} -eq 0 ]; then
  cells=(copy-ut copy-transformer reverse-ut reverse-transformer addition-ut addition-transformer
         copy-ut-act copy-lstm reverse-ut-act reverse-lstm addition-ut-act addition-lstm)
fi
here=$(cd "$(dirname "$0")" && pwd)
ut=${UT:-ut}
mkdir -p "$out"

run_cell() {
  local name=$1
  until [ -f "$out/$name/metrics.json" ]; do
    echo "== $name: chunk at $(date -u +%FT%TZ)" >> "$out/$name.log"
    $ut train "$here/$name.yaml" --out "$out/$name" --no-progress --time-limit "$secs" \
        --record "algorithmic/$name" >> "$out/$name.log" 2>&1 || return
  done
}

lane() { for cell in "$@"; do run_cell "$cell"; done; }

even=() odd=()
for i in "${!cells[@]}"; do
  if (( i % 2 == 0 )); then even+=("${cells[$i]}"); else odd+=("${cells[$i]}"); fi
done
lane "${even[@]}" &
[ ${#odd[@]} -gt 0 ] && lane "${odd[@]}" &
wait
