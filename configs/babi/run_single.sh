#!/usr/bin/env bash
# "train single" on bAbI: one model per task, for the tasks given (default all 20).
#   bash configs/babi/run_single.sh MODEL SET RUNS_DIR [SEED] [TASK ...]
#   e.g. bash configs/babi/run_single.sh ut-act en runs/babi 0
# MODEL is a config name in this folder without -single.yaml (ut, ut-act, transformer).
# Each run writes RUNS_DIR/SET/MODEL/seed-SEED/taskN; `ut babi-report` tabulates them.
set -u
model=$1; set=$2; out=$3; seed=${4:-0}
shift 4 2>/dev/null || shift $#
tasks=("$@"); [ ${#tasks[@]} -eq 0 ] && tasks=($(seq 1 20))
here=$(cd "$(dirname "$0")" && pwd)
ut=${UT:-ut}
for task in "${tasks[@]}"; do
  dir="$out/$set/$model/seed-$seed/task$task"
  mkdir -p "$dir"
  start=$(date +%s)
  $ut train "$here/$model-single.yaml" --out "$dir" --no-progress \
      --set task.tasks="$task" --set task.set="$set" --set train.seed="$seed" > "$dir.log" 2>&1
  echo "== task $task: exit $?, wall $(( $(date +%s) - start )) s" >> "$dir.log"
done
