#!/usr/bin/env bash
# Trains the algorithmic cells (task x model) to the end of their configs (validation at
# length 40 stops improving, or train.steps), in time-limited chunks that resume exactly,
# two cells side by side (one thread each); see scripts/run_lanes.sh. Each chunk writes
# results/algorithmic/CELL.json (partial until the cell finishes).
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
exec bash "$here/../../scripts/run_lanes.sh" "$here" algorithmic "$out" "$secs" "${cells[@]}"
