#!/usr/bin/env bash
# For a GPU session's device machine (docs/compute.md, "A GPU session"): trains the experiments
# CONFIG_DIR/NAME.yaml (or the runs NAME of a grid file, as run_lanes.sh reads one) on CUDA side
# by side (small models leave most of one GPU idle), each for at most SECONDS and resuming
# RUNS_DIR/NAME where an earlier chunk (on this machine, or carried) left it, then packs for the
# way back:
#   $OUT/records.tgz  every run's record, config, logs and evaluation log (small; records-TAG.tgz
#                     with TAG set, so that two invocations side by side in one call both come back);
#   $OUT/NAME.tgz     for each run named in PACK (default: every run, when there are at most 7; a
#                     NAME's slashes become dashes: a/seed-1 packs into a-seed-1.tgz):
#                     its best model and newest checkpoint, to publish it or resume it elsewhere.
#                     With BUNDLE=K, K runs of PACK to an archive (NAME_and_N_more.tgz, NAME the
#                     first of them): for more runs than files come back, each small (at most
#                     16 MiB an archive; a bAbI run packs into about 3 MB, so BUNDLE=4 fits).
# Unpack here with `tar xzf FILE` in the repository root: it restores RUNS_DIR/NAME and
# results/GROUP/NAME.json, and the next chunk (here or there) resumes from what came back.
#   bash scripts/device_train.sh CONFIG_DIR|GRID_FILE GROUP RUNS_DIR SECONDS NAME [NAME ...]
# e.g. TEST=1 bash scripts/device_train.sh configs/algorithmic algorithmic runs/algorithmic 420 copy-ut reverse-ut
# TEST=1 then scores each run's best model on the test split (`ut eval --record`), so that a
# partial run keeps a test score when its machine goes back; EVAL_SECONDS bounds each scoring
# (`timeout`), so that the packing still happens inside the call's limit. SECONDS=0 trains nothing (scores only).
# Uses the machine's own python3 (PYTHON) and PyTorch (PYTHONPATH=src: nothing to install). EXTRA adds
# arguments to every `ut train` (e.g. EXTRA="--set task.data_dir=.carry/babi" for carried data).
# DEVICE (default cuda) is for trying the script out on a CPU.
set -u
if [ $# -lt 5 ]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
configs=$1 group=$2 out=$3 secs=$4
shift 4
names=("$@")
source "$(dirname "$0")/grid.sh"
select_runs "$configs" || exit 2
bundle=${BUNDLE:-1}
if ! [[ $bundle =~ ^[1-9][0-9]*$ ]]; then
  echo "BUNDLE must be a positive number of runs per archive, got '$bundle'" >&2
  exit 2
fi
archives() { echo $(( ($1 + bundle - 1) / bundle )); }  # how many archives N packed runs make
if [ -z "${PACK+x}" ]; then
  if [ "$(archives $#)" -le 7 ]; then PACK="${names[*]}"; else PACK=""; fi
fi
read -r -a pack <<< "$PACK"
if [ "$(archives ${#pack[@]})" -gt 7 ]; then
  echo "PACK names more runs than come back: at most 7 archives of BUNDLE=$bundle runs each (the device tool" \
       "brings back 8 files, records.tgz among them)" >&2
  exit 2
fi
: "${OUT:?OUT is not set: this script runs through the device tool, which sets it}"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true

device=${DEVICE:-cuda}
# One name's command, in cmd: `ut train` from its config (and grid overrides), or `ut eval`.
train_cmd() {
  grid_set_args "$1"
  run_config "$configs" "$1"
  # shellcheck disable=SC2206  # EXTRA is a list of arguments
  cmd=("$py" -m universal_transformer train "$run_config_path" --out "$out/$1"
       --device "$device" --no-progress --time-limit "$secs" --record "$group/$1" "${grid_args[@]}" ${EXTRA:-})
}
eval_cmd() {
  cmd=("$py" -m universal_transformer eval "$out/$1" --split test --device "$device" --record "$group/$1")
  [ -n "${EVAL_SECONDS:-}" ] && cmd=(timeout "$EVAL_SECONDS" "${cmd[@]}")
}
# Runs one command per name side by side; fails if any failed.
side_by_side() {  # side_by_side WHAT MAKE_CMD (a function that sets cmd for a name)
  local what=$1 make=$2 pids=() status=0 i cmd
  for name in "${names[@]}"; do
    mkdir -p "$(dirname "$out/$name")"
    "$make" "$name"
    "${cmd[@]}" >> "$out/$name.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { status=1; echo "== ${names[$i]}: $what failed (its log: $out/${names[$i]}.log)" >&2; }
  done
  return $status
}

status=0
if [ "$secs" -gt 0 ]; then
  side_by_side "ut train" train_cmd || status=1
fi
if [ "${TEST:-0}" = 1 ]; then
  side_by_side "ut eval" eval_cmd || status=1
fi

records=()
for name in "${names[@]}"; do
  run=$out/$name
  records+=("$out/$name.log")
  for f in config.yaml metrics.jsonl metrics.json record.json eval-test.json; do
    [ -e "$run/$f" ] && records+=("$run/$f")
  done
  [ -f "results/$group/$name.json" ] && records+=("results/$group/$name.json")
  echo "== $name: $(tail -n 1 "$out/$name.log")"
done
tar czf "$OUT/records${TAG:+-$TAG}.tgz" "${records[@]}"
for (( i = 0; i < ${#pack[@]}; i += bundle )); do
  files=() group=("${pack[@]:i:bundle}")
  for name in "${group[@]}"; do
    run=$out/$name
    [ -e "$run/best" ] && files+=("$run/best")
    newest=$(ls "$run"/checkpoints/step-*.pt 2>/dev/null | sort -V | tail -n 1)
    [ -n "$newest" ] && files+=("$newest")
  done
  # task3 and seed-1 recur under many names: the whole name, its slashes dashes, names the pack.
  archive=${group[0]//\//-}
  [ ${#group[@]} -gt 1 ] && archive+="_and_$(( ${#group[@]} - 1 ))_more"
  [ ${#files[@]} -gt 0 ] && tar czf "$OUT/$archive.tgz" "${files[@]}"
done
exit $status
