"""``scripts/run_grid.sh``: trains a grid's runs one after another, skipping finished ones;
driven with a stand-in ``ut`` that logs its arguments."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "run_grid.sh"

# Writes its arguments to $LOG and RUN_DIR/metrics.json, which marks the run finished.
FAKE_UT = """#!/usr/bin/env bash
echo "$*" >> "$LOG"
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
mkdir -p "$out" && echo '{}' > "$out/metrics.json"
"""


def _run(tmp_path: Path, ut: Path) -> subprocess.CompletedProcess:
    (tmp_path / "shared.recipes").write_text("@lr  train.lr=0.1\n")
    grid = tmp_path / "g.grid"  # a shared recipe, as the bAbI grids cite theirs
    grid.write_text("# a comment\n@include shared.recipes\na  configs/a.yaml  @lr\nb  configs/b.yaml\n")
    return subprocess.run(["bash", str(SCRIPT), str(grid), "group", str(tmp_path / "runs")],
                          env={**os.environ, "UT": str(ut), "LOG": str(tmp_path / "log")},
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_runs_each_line_once_with_its_overrides_and_record(tmp_path):
    fake = tmp_path / "ut"
    fake.write_text(FAKE_UT)
    fake.chmod(0o755)
    result = _run(tmp_path, fake)
    assert result.returncode == 0, result.stderr
    calls = (tmp_path / "log").read_text().splitlines()
    assert len(calls) == 2 and calls[0].startswith("train configs/a.yaml --out ")
    assert "--set train.lr=0.1" in calls[0] and "--record group/a" in calls[0] and "--record group/b" in calls[1]
    assert _run(tmp_path, fake).returncode == 0
    assert len((tmp_path / "log").read_text().splitlines()) == 2  # finished: not run again


def test_without_ut_it_stops_at_once(tmp_path):
    result = _run(tmp_path, tmp_path / "no-such-ut")
    assert result.returncode == 2 and "no-such-ut: not found" in result.stderr
    assert not (tmp_path / "runs").exists()
