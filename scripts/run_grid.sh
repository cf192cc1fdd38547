#!/usr/bin/env bash
# Trains the runs of a grid file one after another (one lane; each config sets its threads)
# and records each as results/GROUP/NAME.json. A grid file has one run per line:
#   NAME CONFIG [KEY=VALUE ...]     (the overrides of `ut train --set`; # starts a comment;
#   shared overrides as recipes, `@RECIPE ...` and `@include FILE`: scripts/grid.sh)
# NAME may contain '/' (folders). Runs that finished (RUNS_DIR/NAME/metrics.json) are skipped,
# so the same command continues an interrupted grid; `ut report` then regenerates the tables.
#   bash scripts/run_grid.sh GRID GROUP RUNS_DIR
# e.g. bash scripts/run_grid.sh configs/checks/precision.grid checks/precision runs/checks/precision
# Set UT to the `ut` executable when it is not on PATH. Exit status 1 if a run failed.
set -u
if [ $# -ne 3 ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
grid=$1 group=$2 out=$3
[ -r "$grid" ] || { echo "$grid: cannot read the grid file" >&2; exit 2; }
source "$(dirname "$0")/grid.sh"
require_ut || exit 2
read_grid "$grid" || exit 2
status=0
for name in "${grid_order[@]}"; do
  config=${grid_config[$name]}
  [ -f "$out/$name/metrics.json" ] && continue
  grid_set_args "$name"
  mkdir -p "$(dirname "$out/$name")"
  echo "== $name: $(date -u +%FT%TZ)" >> "$out/$name.log"
  $ut train "$config" --out "$out/$name" --no-progress "${grid_args[@]}" --record "$group/$name" \
      >> "$out/$name.log" 2>&1 < /dev/null || { echo "$name failed (see $out/$name.log)" >&2; status=1; }
done
exit $status
