#!/usr/bin/env bash
# Trains the experiments CONFIG_DIR/NAME.yaml to the end of their configs (early stopping or
# train.steps) in time-limited chunks that resume exactly, two side by side (one lane per
# core; each config sets train.threads; LANES=1 runs them one after another, to leave the
# other core to another job). The runs are a queue: a lane that is free takes the
# next unfinished NAME in the given order, so both cores stay busy while runs are left, however
# long each one takes. Every chunk writes results/GROUP/NAME.json, marked
# partial until the run finishes, so an interrupted session still leaves its record; run
# the same command again to continue. `ut report` then regenerates docs/results.md.
#   bash scripts/run_lanes.sh CONFIG_DIR GROUP RUNS_DIR CHUNK_SECONDS NAME [NAME ...]
#   bash scripts/run_lanes.sh GRID_FILE GROUP RUNS_DIR CHUNK_SECONDS [NAME ...]
# e.g. bash scripts/run_lanes.sh configs/lm lm runs/lm 1800 ptb-ut ptb-ut-act
# A grid file (NAME.grid; see scripts/run_grid.sh) names the runs instead, one per line,
#   NAME CONFIG [KEY=VALUE ...]     (# starts a comment; NAME may contain '/'; recipes: scripts/grid.sh)
# each trained from its CONFIG with its overrides; without NAMEs, all of its runs, in order.
# Set UT to the `ut` executable when it is not on PATH. Set SET to config overrides for every
# chunk and the final evaluation (e.g. SET="task.source_eos=false" to resume a run trained
# before a config changed; space-separated KEY=VALUE pairs, each passed as --set). Set DEADLINE (anything GNU `date -d`
# reads, e.g. "19:10"; a bare time of day more than 12 hours past means tomorrow) to stop training
# by then: each chunk's time limit is cut to the time left (a run that finishes in that chunk
# still runs its final test evaluation after it), no chunk starts with less than two minutes
# to go, and the script then exits with status 3.
# A run the DEADLINE leaves unfinished then has its best model so far scored on the test split
# (`ut eval --record`, after the deadline), so that its partial record carries test metrics
# even if this machine, and the run directory with it, is gone by the next session.
# Set PUBLISH=1 to publish a run's best model (`ut publish`: results/models/GROUP/NAME, replacing
# the one there) each time its record gets test metrics here: when it finishes, or is scored at
# the DEADLINE or RUN_SECONDS. The model then lies in the working tree beside its record, the two
# in step, and survives this machine with them (a run folder does not); a publish that fails (the
# size cap) is logged and the queue goes on.
# Set RUN_SECONDS to cap each run's training in this invocation (a first pass over many runs, so
# that each has a scored record before the long ones take the lanes): a run that has trained
# that long (less than two minutes left of it) is scored on test in the same way and its lane
# takes the next run; the same command again continues them.
# A run whose record in results/GROUP/ is finished but whose run folder is not here (it ran
# on another machine) is skipped; a partial one starts afresh, and `ut` keeps the committed
# record until the new run has passed its steps or finished.
set -u
usage() { sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -lt 4 ] && usage
configs=$1 group=$2 out=$3 secs=$4
shift 4
names=("$@")
source "$(dirname "$0")/grid.sh"
select_runs "$configs" || exit 2
[ ${#names[@]} -eq 0 ] && usage
require_ut || exit 2
overrides=()
read -r -a set_values <<< "${SET:-}"  # split on blanks, no glob expansion
eval_overrides=()  # those `ut eval` takes: task options and train.eval_position_offsets
for kv in "${set_values[@]}"; do
  overrides+=(--set "$kv")
  [[ $kv == task.* || $kv == train.eval_position_offsets=* ]] && eval_overrides+=(--set "$kv")
done
lanes=${LANES:-2}
if ! [[ $lanes =~ ^[1-9][0-9]*$ ]]; then
  echo "LANES must be a positive number of lanes, got '$lanes'" >&2
  exit 2
fi
deadline=
if [ -n "${DEADLINE:-}" ]; then
  deadline=$(date -d "$DEADLINE" +%s) || exit 2
  # A bare time of day more than 12 hours past (a session that runs over midnight: "00:35" at
  # 22:30) means tomorrow; one that passed less than 12 hours ago has passed (a queue chained
  # after another that ran to the same DEADLINE must not run on until tomorrow).
  if (( deadline <= $(date +%s) - 43200 )) && [[ $DEADLINE =~ ^[0-9]{1,2}:[0-9]{2}$ ]]; then
    deadline=$(date -d "tomorrow $DEADLINE" +%s) || exit 2
  fi
  if (( deadline <= $(date +%s) )); then
    echo "DEADLINE $DEADLINE ($(date -d "@$deadline")) has passed" >&2
    exit 2
  fi
fi
run_seconds=${RUN_SECONDS:-}
if [ -n "$run_seconds" ] && ! [[ $run_seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "RUN_SECONDS must be a positive number of seconds, got '$run_seconds'" >&2
  exit 2
fi
secs=${secs%.*}  # whole seconds, for the arithmetic below
mkdir -p "$out"

# The best model so far of an unfinished run, scored on test into its record (none before its
# first evaluation).
score_partial() {
  local name=$1
  [ -d "$out/$name/best" ] || return 0
  echo "== $name: partial, scoring its best model on test" >> "$out/$name.log"
  $ut eval "$out/$name" --split test --threads 1 "${eval_overrides[@]}" --record "$group/$name" >> "$out/$name.log" 2>&1
}

# With PUBLISH set, the best model of a run whose record has just been scored on test.
publish_best() {
  local name=$1
  [ -n "${PUBLISH:-}" ] && [ -d "$out/$name/best" ] || return 0
  echo "== $name: publishing its best model as $group/$name" >> "$out/$name.log"
  $ut publish "$out/$name" --name "$group/$name" >> "$out/$name.log" 2>&1 \
    || echo "== $name: not published (above)" >> "$out/$name.log"
}

run_one() {
  local name=$1
  local limit config
  run_config "$configs" "$name"
  config=$run_config_path
  grid_set_args "$name"
  mkdir -p "$(dirname "$out/$name")"
  # A finished record (results/GROUP/NAME.json, as `ut` writes it from here) without a run folder
  # is a run finished on another machine: training it again would redo it from scratch.
  local record="results/$group/$name.json"
  if [ ! -d "$out/$name" ] && [ -f "$record" ] && ! grep -q '"status": "time_limit"' "$record"; then
    echo "== $name: finished elsewhere ($record, no $out/$name): not run again; move the record away to rerun it" >> "$out/$name.log"
    return 0
  fi
  local run_end= trained=
  [ -n "$run_seconds" ] && run_end=$(( $(date +%s) + run_seconds ))
  until [ -f "$out/$name/metrics.json" ]; do
    limit=$secs
    if [ -n "$deadline" ]; then
      limit=$(( deadline - $(date +%s) ))
      if (( limit < 120 )); then
        echo "== $name: not started, DEADLINE $DEADLINE is near ($(date -u +%FT%TZ))" >> "$out/$name.log"
        score_partial "$name" && publish_best "$name"
        return 3
      fi
      (( limit > secs )) && limit=$secs
    fi
    if [ -n "$run_end" ]; then
      if (( run_end - $(date +%s) < 120 )); then
        echo "== $name: stopped, RUN_SECONDS=$run_seconds spent ($(date -u +%FT%TZ))" >> "$out/$name.log"
        score_partial "$name" && publish_best "$name"
        return 0
      fi
      (( limit > run_end - $(date +%s) )) && limit=$(( run_end - $(date +%s) ))
    fi
    echo "== $name: chunk at $(date -u +%FT%TZ)" >> "$out/$name.log"
    $ut train "$config" --out "$out/$name" --no-progress --time-limit "$limit" \
        "${grid_args[@]}" "${overrides[@]}" --record "$group/$name" >> "$out/$name.log" 2>&1 || return 1
    trained=1
  done
  [ -n "$trained" ] && publish_best "$name"  # finished here: its record has its test metrics
  return 0
}

claims=$(mktemp -d) || exit 1  # one entry per run a lane has taken, in this invocation
trap 'rm -rf "$claims"' EXIT

lane() {
  local name
  for name in "${names[@]}"; do
    mkdir "$claims/${name//\//%}" 2>/dev/null || continue  # atomic: another lane took it
    run_one "$name"
    [ $? -eq 3 ] && return 3
  done
  return 0
}

pids=()
for (( i = 0; i < lanes && i < ${#names[@]}; i++ )); do
  lane & pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
