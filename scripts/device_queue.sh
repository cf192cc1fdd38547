#!/usr/bin/env bash
# For a GPU session's device machine (docs/compute.md, "A GPU session"): run_lanes.sh's queue of
# many short runs (seeds, single tasks) over the whole machine. Each of LANES lanes (default: the
# CPU cores less one) takes the next unfinished NAME; a run trains on the GPU when one of
# GPU_SLOTS (default 8) is free, else on one CPU core (its config's train.threads), so that
# the GPU and the machine's cores work the queue together. On the GPU a run trains in fp32
# (`train.precision=fp32`), as on a CPU, so that seeds trained on either compare. Then packs every
# run's record, log and metrics into $OUT/records.tgz (records-TAG.tgz with TAG set); no models.
#   bash scripts/device_queue.sh GRID_FILE GROUP RUNS_DIR CHUNK_SECONDS NAME [NAME ...]
# DEADLINE and SET as for run_lanes.sh: set DEADLINE inside the call's limit (e.g.
# DEADLINE=@$(( $(date +%s) + 420 ))); the runs it leaves unfinished are scored on test as partial.
# Uses the machine's own python3 (PYTHON) and PyTorch (PYTHONPATH=src: nothing to install).
# GPU_SLOTS=0 runs everything on the CPU (to try the script out here).
set -u
if [ $# -lt 5 ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
: "${OUT:?OUT is not set: this script runs through the device tool, which sets it}"
group=$2 out=$3
names=("${@:5}")
slots=${GPU_SLOTS:-8}
if ! [[ $slots =~ ^[0-9]+$ ]]; then
  echo "GPU_SLOTS must be a number of runs on the GPU at once, got '$slots'" >&2
  exit 2
fi
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
locks=$(mktemp -d) || exit 1
trap 'rm -rf "$locks"' EXIT
# The `ut` each lane calls: it holds a free GPU slot's lock (file descriptor 9, inherited by the
# exec'd python and so held until the run ends) or, when none is free, runs on the CPU.
cat > "$locks/ut" <<EOF
#!/usr/bin/env bash
py=$(printf %q "${PYTHON:-python3}")
for (( k = 1; k <= $slots; k++ )); do
  exec 9> "$locks/gpu-\$k"
  if flock -n 9; then
    [ "\$1" = train ] && exec "\$py" -m universal_transformer "\$@" --device cuda --set train.precision=fp32
    exec "\$py" -m universal_transformer "\$@" --device cuda
  fi
  exec 9>&-
done
exec "\$py" -m universal_transformer "\$@" --device cpu
EOF
chmod +x "$locks/ut"
[ "$slots" -gt 0 ] && { nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true; }

UT=$locks/ut LANES=${LANES:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))} bash "$(dirname "$0")/run_lanes.sh" "$@"
status=$?

records=()
for name in "${names[@]}"; do
  for f in "$out/$name.log" "$out/$name/metrics.jsonl" "results/$group/$name.json"; do
    [ -e "$f" ] && records+=("$f")
  done
done
[ ${#records[@]} -gt 0 ] && tar czf "$OUT/records${TAG:+-$TAG}.tgz" "${records[@]}"
exit $status
