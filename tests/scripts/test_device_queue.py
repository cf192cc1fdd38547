"""``scripts/device_queue.sh``: run_lanes.sh's queue over a lent machine, each run on the GPU while
one of ``GPU_SLOTS`` is free and on a CPU core otherwise, then every run's record, log and metrics
packed into ``$OUT/records.tgz``; driven with a stand-in ``python3`` that writes what ``ut train``
would."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "device_queue.sh"

# `python3 -m universal_transformer train CONFIG --out RUN ... --record GROUP/NAME ...`: logs its
# arguments, holds on for a second (so that the lanes' runs overlap) and writes a finished run.
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*"
while [ $# -gt 0 ]; do
  case $1 in --out) run=$2;; --record) record=$2;; esac; shift
done
sleep 1
mkdir -p "$run" "results/$(dirname "$record")"
echo '{}' > "$run/metrics.json"; echo '{}' > "$run/metrics.jsonl"; echo '{}' > "results/$record.json"
"""


def _run(tmp_path: Path, names: list[str], **env_vars: str) -> subprocess.CompletedProcess:
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake), "PATH": f"{tmp_path}:{os.environ['PATH']}", **env_vars}
    for name in ("OUT", "GPU_SLOTS", "LANES", "TAG", "DEADLINE", "SET"):
        if name not in env_vars:
            env.pop(name, None)
    return subprocess.run(["bash", str(SCRIPT), "configs/lte", "lte", "runs/lte", "420", *names], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)


def test_the_runs_share_the_gpu_slots_and_the_cpu_and_come_back_in_one_archive(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = _run(tmp_path, ["a", "b", "c"], OUT=str(out), GPU_SLOTS="1", LANES="2")
    assert result.returncode == 0, result.stderr
    logs = {name: (tmp_path / f"runs/lte/{name}.log").read_text() for name in ("a", "b", "c")}
    devices = sorted("cuda" if "--device cuda" in log else "cpu" for log in logs.values())
    assert devices.count("cpu") >= 1 and devices.count("cuda") >= 1  # two lanes, one GPU slot
    for log in logs.values():
        assert "-m universal_transformer train configs/lte/" in log
        # fp32 on the GPU as on a CPU, so that seeds trained on either compare
        assert ("--device cuda" in log) == ("--set train.precision=fp32" in log)
    with tarfile.open(out / "records.tgz") as tar:
        members = set(tar.getnames())
    for name in ("a", "b", "c"):
        assert {f"runs/lte/{name}.log", f"runs/lte/{name}/metrics.jsonl", f"results/lte/{name}.json"} <= members


def test_no_gpu_slots_runs_everything_on_the_cpu(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = _run(tmp_path, ["a", "b"], OUT=str(out), GPU_SLOTS="0", LANES="2", TAG="q")
    assert result.returncode == 0, result.stderr
    assert all("--device cpu" in (tmp_path / f"runs/lte/{n}.log").read_text() for n in ("a", "b"))
    assert (out / "records-q.tgz").exists()


def test_bad_settings_are_refused_by_name(tmp_path):
    result = _run(tmp_path, ["a"])
    assert result.returncode != 0 and "OUT is not set" in result.stderr
    result = _run(tmp_path, ["a"], OUT=str(tmp_path), GPU_SLOTS="many")
    assert result.returncode == 2 and "GPU_SLOTS must be a number" in result.stderr
    assert not (tmp_path / "runs").exists()
