#!/usr/bin/env bash
# Runs algorithmic cells (task x model) for a fixed training time each, then evaluates the
# best checkpoint on the test lengths. Cells alternate between two lanes run side by side
# (one thread each).
#   bash configs/algorithmic/run_all.sh [RUNS_DIR] [SECONDS_PER_CELL] [CELL ...]
# CELL is a config name without .yaml (default: all twelve). A cell cut off, or run again,
# resumes from its checkpoint; `ut eval RUN --split test` re-scores it.
set -u
out=${1:-runs/algorithmic}
secs=${2:-600}
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
  local name=$1 start
  start=$(date +%s)
  {
    echo "== $name: $ut train $here/$name.yaml --out $out/$name --set train.time_limit=$secs"
    $ut train "$here/$name.yaml" --out "$out/$name" --no-progress --set train.time_limit="$secs"
    $ut eval "$out/$name" --split test
    echo "== $name: wall $(( $(date +%s) - start )) s"
  } >> "$out/$name.log" 2>&1
}

lane() { for cell in "$@"; do run_cell "$cell"; done; }

even=() odd=()
for i in "${!cells[@]}"; do
  if (( i % 2 == 0 )); then even+=("${cells[$i]}"); else odd+=("${cells[$i]}"); fi
done
lane "${even[@]}" &
[ ${#odd[@]} -gt 0 ] && lane "${odd[@]}" &
wait
