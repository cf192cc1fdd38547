#!/usr/bin/env bash
# bAbI runs, one after another: "train single" (one model per task, default all 20) or,
# with the task "joint", "train joint" (one model on all 20 tasks).
#   bash configs/babi/run.sh MODEL SET RUNS_DIR [SEED] [TASK ... | joint]
#   e.g. bash configs/babi/run.sh ut-act en runs/babi 0
#        bash configs/babi/run.sh ut-act en runs/babi 0 joint
# MODEL is a config name in this folder without .yaml (ut, ut-act, transformer).
# Each run writes RUNS_DIR/SET/MODEL/seed-SEED/taskN (or .../joint); `ut babi-report`
# tabulates them. Extra `ut train` options go in UT_ARGS, e.g.
#   UT_ARGS="--set train.steps=20000" bash configs/babi/run.sh ut en runs/babi 0 joint
set -u
model=$1; set=$2; out=$3; seed=${4:-0}
shift 4 2>/dev/null || shift $#
tasks=("$@"); [ ${#tasks[@]} -eq 0 ] && tasks=($(seq 1 20))
here=$(cd "$(dirname "$0")" && pwd)
ut=${UT:-ut}
for task in "${tasks[@]}"; do
  if [ "$task" = joint ]; then dir="$out/$set/$model/seed-$seed/joint"; which=all
  else dir="$out/$set/$model/seed-$seed/task$task"; which=$task; fi
  mkdir -p "$dir"
  start=$(date +%s)
  # shellcheck disable=SC2086  # UT_ARGS is a list of options
  $ut train "$here/$model.yaml" --out "$dir" --no-progress \
      --set task.tasks="$which" --set task.set="$set" --set train.seed="$seed" ${UT_ARGS:-} > "$dir.log" 2>&1
  echo "== task $task: exit $?, wall $(( $(date +%s) - start )) s" >> "$dir.log"
done
