"""``scripts/device_train.sh``: trains the named runs on CUDA side by side and packs each one
(newest checkpoint, best model, logs, record) into ``$OUT/NAME.tgz``; driven with a stand-in
``python3`` that writes what ``ut train`` would."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "device_train.sh"

# `python3 -m universal_transformer train CONFIG --out RUN ... --record GROUP/NAME`: writes a run
# directory with two checkpoints and the record, and logs its arguments.
FAKE_PYTHON = """#!/usr/bin/env bash
args="$*"
while [ $# -gt 0 ]; do
  case $1 in --out) run=$2;; --record) record=$2;; esac; shift
done
mkdir -p "$run/checkpoints" "$run/best" "results/$(dirname "$record")"
echo "$args"
touch "$run/config.yaml" "$run/metrics.jsonl" "$run/best/model.safetensors"
touch "$run/checkpoints/step-00000100.pt" "$run/checkpoints/step-00000200.pt"
echo '{}' > "results/$record.json"
"""


def _run(tmp_path: Path, names: list[str], *, out: Path | None = None) -> subprocess.CompletedProcess:
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake), "EXTRA": "--set task.x=1"}
    env.pop("OUT", None)
    if out is not None:
        env["OUT"] = str(out)
    return subprocess.run(["bash", str(SCRIPT), "configs/lte", "lte", "runs/lte", "420", *names], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)


def test_each_run_comes_back_as_one_archive_with_its_newest_checkpoint_and_record(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = _run(tmp_path, ["copy-ut", "reverse-ut"], out=out)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["copy-ut.tgz", "reverse-ut.tgz"]
    with tarfile.open(out / "copy-ut.tgz") as archive:
        members = set(archive.getnames())
    assert {"runs/lte/copy-ut/checkpoints/step-00000200.pt", "runs/lte/copy-ut/best/model.safetensors",
            "runs/lte/copy-ut/config.yaml", "runs/lte/copy-ut.log", "results/lte/copy-ut.json"} <= members
    assert "runs/lte/copy-ut/checkpoints/step-00000100.pt" not in members  # the newest is enough to resume
    args = (tmp_path / "runs/lte/copy-ut.log").read_text()
    assert args.startswith("-m universal_transformer train configs/lte/copy-ut.yaml --out runs/lte/copy-ut")
    assert "--device cuda" in args and "--time-limit 420" in args and args.rstrip().endswith("--set task.x=1")


def test_refuses_without_out_or_with_more_runs_than_come_back(tmp_path):
    unset = _run(tmp_path, ["copy-ut"])
    assert unset.returncode != 0 and "OUT is not set" in unset.stderr
    many = _run(tmp_path, [f"run{i}" for i in range(9)], out=tmp_path)
    assert many.returncode == 2 and "at most 8 runs" in many.stderr
