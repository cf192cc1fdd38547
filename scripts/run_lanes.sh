#!/usr/bin/env bash
# Trains the experiments CONFIG_DIR/NAME.yaml to the end of their configs (early stopping or
# train.steps) in time-limited chunks that resume exactly, two side by side (one lane per
# core; each config sets train.threads). Every chunk writes results/GROUP/NAME.json, marked
# partial until the run finishes, so an interrupted session still leaves its record; run
# the same command again to continue. `ut report` then regenerates docs/results.md.
#   bash scripts/run_lanes.sh CONFIG_DIR GROUP RUNS_DIR CHUNK_SECONDS NAME [NAME ...]
# e.g. bash scripts/run_lanes.sh configs/lm lm runs/lm 1800 ptb-ut ptb-ut-act
# Set UT to the `ut` executable when it is not on PATH. Set DEADLINE (anything `date -d`
# reads, e.g. "19:10") to end every lane by then: each chunk's limit is cut to the time left,
# and no chunk starts with less than two minutes to go.
set -u
if [ $# -lt 5 ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
configs=$1 group=$2 out=$3 secs=$4
shift 4
names=("$@")
ut=${UT:-ut}
deadline=
if [ -n "${DEADLINE:-}" ]; then
  deadline=$(date -d "$DEADLINE" +%s) || exit 2
fi
mkdir -p "$out"

run_one() {
  local name=$1
  local limit
  until [ -f "$out/$name/metrics.json" ]; do
    limit=$secs
    if [ -n "$deadline" ]; then
      limit=$(( deadline - $(date +%s) ))
      (( limit < 120 )) && return 3
      (( limit > secs )) && limit=$secs
    fi
    echo "== $name: chunk at $(date -u +%FT%TZ)" >> "$out/$name.log"
    $ut train "$configs/$name.yaml" --out "$out/$name" --no-progress --time-limit "$limit" \
        --record "$group/$name" >> "$out/$name.log" 2>&1 || return 1
  done
}

lane() { for name in "$@"; do run_one "$name"; [ $? -eq 3 ] && return; done; }

even=() odd=()
for i in "${!names[@]}"; do
  if (( i % 2 == 0 )); then even+=("${names[$i]}"); else odd+=("${names[$i]}"); fi
done
lane "${even[@]}" &
[ ${#odd[@]} -gt 0 ] && lane "${odd[@]}" &
wait
