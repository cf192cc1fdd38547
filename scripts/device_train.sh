#!/usr/bin/env bash
# For a GPU session's device machine (docs/compute.md, "A GPU session"): trains the experiments
# CONFIG_DIR/NAME.yaml on CUDA side by side (small models leave most of one GPU idle), each for
# at most SECONDS and resuming RUNS_DIR/NAME where an earlier chunk left it, then packs each run
# (its newest checkpoint, best model, logs and record) into $OUT/NAME.tgz for the way back.
# Unpack one here with `tar xzf FILE` in the repository root: it restores RUNS_DIR/NAME and
# results/GROUP/NAME.json, and the next chunk (here or there) resumes from it.
#   bash scripts/device_train.sh CONFIG_DIR GROUP RUNS_DIR SECONDS NAME [NAME ...]
# e.g. bash scripts/device_train.sh configs/algorithmic algorithmic runs/algorithmic 420 copy-ut reverse-ut
# Uses the machine's own python3 (PYTHON) and PyTorch (PYTHONPATH=src: nothing to install). EXTRA adds
# arguments to every `ut train` (e.g. EXTRA="--set task.data_dir=.carry/babi" for carried data).
# At most 8 names: the device tool brings back 8 files a call.
set -u
if [ $# -lt 5 ]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
configs=$1 group=$2 out=$3 secs=$4
shift 4
names=("$@")
if [ $# -gt 8 ]; then
  echo "at most 8 runs a call (the device tool brings back 8 files), got $#" >&2
  exit 2
fi
: "${OUT:?OUT is not set: this script runs through the device tool, which sets it}"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true

pids=()
for name in "${names[@]}"; do
  mkdir -p "$(dirname "$out/$name")"
  # shellcheck disable=SC2086  # EXTRA is a list of arguments
  ${PYTHON:-python3} -m universal_transformer train "$configs/$name.yaml" --out "$out/$name" --device cuda \
      --no-progress --time-limit "$secs" --record "$group/$name" ${EXTRA:-} >> "$out/$name.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { status=1; echo "== ${names[$i]}: ut train failed (its log: $out/${names[$i]}.log)" >&2; }
done

for name in "${names[@]}"; do
  run=$out/$name
  files=("$out/$name.log")
  for f in config.yaml metrics.jsonl metrics.json record.json best; do
    [ -e "$run/$f" ] && files+=("$run/$f")
  done
  newest=$(ls "$run"/checkpoints/step-*.pt 2>/dev/null | sort | tail -n 1)
  [ -n "$newest" ] && files+=("$newest")
  [ -f "results/$group/$name.json" ] && files+=("results/$group/$name.json")
  tar czf "$OUT/$(basename "$name").tgz" "${files[@]}"
  echo "== $name: $(tail -n 1 "$out/$name.log")"
done
exit $status
