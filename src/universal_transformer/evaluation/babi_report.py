"""Tables of bAbI results in the layout of the paper's Table 1 / Appendix C."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

FAIL_ABOVE = 5.0  # a task fails at > 5% test error (SPEC section 3)


def _run_tasks(summary: dict[str, Any]) -> tuple[int, ...]:
    """The tasks a finished run was tested on, from its ``taskN/error`` metrics."""
    return tuple(sorted(int(m.group(1)) for key in summary.get("test", {}) if (m := re.fullmatch(r"task(\d+)/error", key))))


def collect_runs(root: str | Path) -> list[dict[str, Any]]:
    """Finished bAbI runs under ``root`` (any ``**/metrics.json`` with per-task test errors):
    single-task runs (``seed-S/taskN``) and joint runs (one model on several tasks) alike."""
    runs = []
    for path in sorted(Path(root).glob("**/metrics.json")):
        summary = json.loads(path.read_text())
        if summary.get("test") and _run_tasks(summary):
            summary["run_dir"] = str(path.parent)
            runs.append(summary)
    return runs


def best_of_seeds(runs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per task, the run with the best validation score (the paper picks the best of 10 seeds).

    Runs are compared only with runs of the same task set: seeds of one single-task run
    with each other, seeds of a joint model with each other (the joint model is picked as a
    whole, on its validation score over all its tasks)."""
    groups: dict[tuple[int, ...], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault(_run_tasks(run), []).append(run)
    best: dict[int, dict[str, Any]] = {}
    for tasks, group in sorted(groups.items(), key=lambda item: len(item[0])):
        winner = max(group, key=lambda r: (r.get("validation") or {}).get("score", float("-inf")))
        for task in tasks:
            best.setdefault(task, winner)  # a single-task run outranks a joint run in the same root
    return best


def error_table(columns: dict[str, dict[int, dict[str, Any]]]) -> str:
    """Markdown table: one row per task, one column per model; then average error and failed tasks."""
    names = list(columns)
    tasks = sorted({t for col in columns.values() for t in col})
    lines = ["| task | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    errors: dict[str, list[float]] = {n: [] for n in names}
    for task in tasks:
        cells = []
        for name in names:
            run = columns[name].get(task)
            if run is None:
                cells.append("-")
                continue
            error = run["test"][f"task{task}/error"]
            errors[name].append(error)
            cells.append(f"{error:.1f}")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    lines.append("| average error | " + " | ".join(f"{sum(e) / len(e):.2f}" if e else "-" for e in errors.values()) + " |")
    lines.append("| failed (> 5%) | " + " | ".join(str(sum(x > FAIL_ABOVE for x in e)) for e in errors.values()) + " |")
    lines.append("| tasks run | " + " | ".join(str(len(e)) for e in errors.values()) + " |")
    return "\n".join(lines)


def ponder_by_supporting_facts(column: dict[int, dict[str, Any]]) -> dict[int, float]:
    """Mean test ponder time of tasks 1, 2, 3 (one, two, three supporting facts), as the paper reports."""
    out = {}
    for task in (1, 2, 3):
        run = column.get(task)
        if run is not None and f"task{task}/ponder_time" in run["test"]:
            out[task] = run["test"][f"task{task}/ponder_time"]
    return out
