"""Every record: the runs overview and the progress of runs still partial."""

from __future__ import annotations

import re
from typing import Any
from ..records import RunRecord
from .common import NO_RECORDS, fmt_parameters, fmt_seconds, markdown_table, status_label
from .sections import register_table


def _machine_label(machine: dict[str, Any]) -> str:
    gpus = machine.get("gpus") or []
    if gpus:
        return ", ".join(sorted(set(gpus)))
    return str(machine.get("cpu") or "-")


def _short_commit(commit: str | None) -> str:
    if commit is None:
        return "-"
    head, dirty, _ = commit.partition("-dirty")
    return head[:7] + dirty


# Metrics of a run still in progress worth showing: overall errors, accuracies, perplexity,
# BLEU and ponder times, and accuracies per evaluation length.
_PROGRESS_OVERALL = re.compile(r"^(mean_error|failed_tasks|perplexity|bleu|char_accuracy|sequence_accuracy|ponder_\w+)$")
_PROGRESS_PER_PART = re.compile(r"/(char_accuracy|sequence_accuracy|accuracy)$")


def progress_table(records: list[RunRecord]) -> str:
    """One row per partial run (stopped at its time limit): where it stands on validation.

    Partial runs have no test metrics yet; this shows the validation metrics of their best
    model so far (at ``best step``), so a long run's progress is on record as it goes."""
    partial_runs = [r for r in records if r.partial]
    if not partial_runs:
        return NO_RECORDS
    rows = []
    for r in partial_runs:
        metrics = r.metrics["validation"]
        keys = sorted(k for k in metrics if _PROGRESS_OVERALL.match(k))
        keys += sorted((k for k in metrics if _PROGRESS_PER_PART.search(k)), key=_natural)
        shown = [f"{k} {metrics[k]:.4g}" if isinstance(metrics[k], float) else f"{k} {metrics[k]}" for k in keys]
        rows.append([r.experiment, str(r.steps), str(r.best_step) if r.best_step is not None else "-",
                     fmt_seconds(r.wall_time_seconds), "; ".join(shown) or "-"])
    return markdown_table(["run (partial)", "steps", "best step", "wall time", "validation of the best model so far"], rows)


def _natural(key: str) -> list[Any]:
    """Sort key with numbers compared as numbers (len40 before len400, task2 before task10)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key)]


register_table("progress")(progress_table)


@register_table("runs")
def runs_overview(records: list[RunRecord]) -> str:
    """One row per record: experiment, parameters, seeds, status, steps, best step, wall time,
    commit, machine."""
    if not records:
        return NO_RECORDS
    rows = [[r.experiment, fmt_parameters(r.parameters), " ".join(map(str, r.seeds)) or "-", status_label(r), str(r.steps),
             str(r.best_step) if r.best_step is not None else "-", fmt_seconds(r.wall_time_seconds),
             _short_commit(r.commit), _machine_label(r.machine)] for r in records]
    return markdown_table(["experiment", "parameters", "seeds", "status", "steps", "best step", "wall time", "commit", "machine"], rows)
