"""Reads a grid file with ``scripts/grid.sh``'s own ``read_grid`` (run in bash), for the tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

GRID_SH = Path(__file__).resolve().parents[2] / "scripts" / "grid.sh"

_DUMP = """source "$1"; read_grid "$2" || exit $?
for name in "${grid_order[@]}"; do printf '%s\\t%s\\t%s\\n' "$name" "${grid_config[$name]}" "${grid_sets[$name]}"; done"""


def read_grid(path: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``read_grid PATH`` (run in CWD): its stdout has one ``NAME<TAB>CONFIG<TAB>OVERRIDES`` line per run."""
    return subprocess.run(["bash", "-c", _DUMP, "bash", str(GRID_SH), str(path)],
                          capture_output=True, text=True, timeout=60, cwd=cwd)


def grid_runs(path: Path) -> list[tuple[str, str, list[str]]]:
    """(NAME, CONFIG, overrides with recipes expanded) per run of a grid file; fails on a reader error."""
    result = read_grid(path)
    assert result.returncode == 0, result.stderr
    return [(name, config, sets.split()) for name, config, sets in
            (line.split("\t") for line in result.stdout.splitlines())]
