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
    single-task runs (``seed-S/taskN``) and joint runs (one model on several tasks) alike.
    Where ``ut eval RUN --split test`` has re-scored a finished run (an ``eval-test.json``
    newer than its ``metrics.json``), those test metrics are used."""
    runs = []
    for path in sorted(Path(root).glob("**/metrics.json")):
        summary = json.loads(path.read_text())
        rescored = path.parent / "eval-test.json"
        if rescored.exists() and rescored.stat().st_mtime >= path.stat().st_mtime:
            summary["test"] = json.loads(rescored.read_text())
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


def _task_rows(columns: dict[str, dict[int, dict[str, Any]]], key: str) -> tuple[list[str], dict[str, list[dict[str, Any]]]]:
    """Header and one row per task; a cell shows ``test[taskN/key]`` (``-`` where a model has
    no run or no such metric). Also returns each column's test metrics, task by task."""
    names = list(columns)
    tasks = sorted({t for col in columns.values() for t in col})
    lines = ["| task | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    shown: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for task in tasks:
        cells = []
        for name in names:
            run = columns[name].get(task)
            value = None if run is None else run["test"].get(f"task{task}/{key}")
            if value is None:
                cells.append("-")
                continue
            test = {k.split("/", 1)[1]: v for k, v in run["test"].items() if k.startswith(f"task{task}/")}
            shown[name].append(test)
            std = test.get("ponder_std") if key == "ponder_time" else None
            cells.append(f"{value:.1f}" if key == "error" else f"{value:.2f}" + (f" ± {std:.2f}" if std is not None else ""))
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return lines, shown


def error_table(columns: dict[str, dict[int, dict[str, Any]]]) -> str:
    """Markdown table: one row per task, one column per model (test error %); then average
    error and failed tasks, as in the paper's Table 1 and Appendix C."""
    lines, shown = _task_rows(columns, "error")
    errors = {name: [t["error"] for t in tests] for name, tests in shown.items()}
    lines.append("| average error | " + " | ".join(f"{sum(e) / len(e):.2f}" if e else "-" for e in errors.values()) + " |")
    lines.append("| failed (> 5%) | " + " | ".join(str(sum(x > FAIL_ABOVE for x in e)) for e in errors.values()) + " |")
    lines.append("| tasks run | " + " | ".join(str(len(e)) for e in errors.values()) + " |")
    return "\n".join(lines)


def ponder_table(columns: dict[str, dict[int, dict[str, Any]]]) -> str:
    """Markdown table of the mean ± std test ponder time per task (over all positions)."""
    lines, shown = _task_rows(columns, "ponder_time")
    means = {name: [t["ponder_time"] for t in tests] for name, tests in shown.items()}
    lines.append("| mean over tasks | " + " | ".join(f"{sum(m) / len(m):.2f}" if m else "-" for m in means.values()) + " |")
    return "\n".join(lines)


def runs_table(columns: dict[str, dict[int, dict[str, Any]]]) -> str:
    """Markdown table of the run behind each cell: ``steps done / step of the best model /
    training seconds`` (validation included), and the total training time per model."""
    names = list(columns)
    tasks = sorted({t for col in columns.values() for t in col})
    lines = ["| task | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for task in tasks:
        cells = []
        for name in names:
            run = columns[name].get(task)
            cells.append("-" if run is None else f"{run.get('step')} / {run.get('best_step')} / {run.get('wall_time_seconds', 0):.0f} s")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    totals = []
    for column in columns.values():
        distinct = {run["run_dir"]: run for run in column.values()}.values()  # a joint run counts once
        totals.append(f"{sum(run.get('wall_time_seconds', 0) for run in distinct) / 60:.0f} min")
    lines.append("| training time of these runs | " + " | ".join(totals) + " |")
    return "\n".join(lines)


def ponder_by_supporting_facts(column: dict[int, dict[str, Any]]) -> dict[int, tuple[float, float | None]]:
    """Test ponder time (mean, std over all positions) of tasks 1, 2, 3 (one, two, three
    supporting facts), as the paper reports them (2.3±0.8, 3.1±1.1, 3.8±2.2)."""
    out = {}
    for task in (1, 2, 3):
        run = column.get(task)
        if run is not None and f"task{task}/ponder_time" in run["test"]:
            out[task] = (run["test"][f"task{task}/ponder_time"], run["test"].get(f"task{task}/ponder_std"))
    return out
