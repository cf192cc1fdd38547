#!/usr/bin/env bash
# Does bf16 autocast learn as well as fp32 on the CPU? (issue 11: "check on a short bAbI and
# Copy run that bf16 learns as well as fp32 before using it for long runs"). Trains the same
# short runs in both precisions and two seeds, one after another on one thread, each with a
# fixed number of steps (no early stopping) and recorded as results/checks/precision/NAME.json;
# `ut report` puts them side by side in docs/results.md (table precision-check).
#   bash scripts/precision_check.sh RUNS_DIR [SEED ...]     (default seeds: 0 1)
# Runs that finished are skipped, so the same command continues an interrupted check.
# Set UT to the `ut` executable when it is not on PATH.
set -u
out=${1:?usage: bash scripts/precision_check.sh RUNS_DIR [SEED ...]}
shift
if [ $# -eq 0 ]; then seeds=(0 1); else seeds=("$@"); fi
ut=${UT:-ut}
mkdir -p "$out"
# name, config, overrides (both: fixed steps, no early stop, greedy test decoding only)
checks=(
  "copy|configs/lte/copy-ut.yaml|train.steps=1500 train.early_stopping=null task.beam_size=1"
  "babi1|configs/babi/ut-act.yaml|train.steps=1500 train.early_stopping=null train.stop_at_score=null task.tasks=1"
)
for check in "${checks[@]}"; do
  IFS='|' read -r name config overrides <<< "$check"
  for seed in "${seeds[@]}"; do
    for precision in fp32 bf16; do
      run="$name-$precision-s$seed"
      [ -f "$out/$run/metrics.json" ] && continue
      sets=(--set "train.seed=$seed" --set "train.precision=$precision" --set train.allow_slow_bf16=true)
      read -r -a extra <<< "$overrides"  # split on spaces, no glob expansion
      for o in "${extra[@]}"; do sets+=(--set "$o"); done
      echo "== $run: $(date -u +%FT%TZ)" >> "$out/$run.log"
      $ut train "$config" --out "$out/$run" --no-progress "${sets[@]}" \
          --record "checks/precision/$run" >> "$out/$run.log" 2>&1 || echo "$run failed (see $out/$run.log)" >&2
    done
  done
done
