"""Tables of bAbI results in the layout of the paper's Table 1 / Appendix C."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

FAIL_ABOVE = 5.0  # a task fails at > 5% test error (the paper's Section 3.1 and Table 1)


def fails(error: float) -> bool:
    """Whether a task's error (%) is above :data:`FAIL_ABOVE`. Records written before the
    errors were computed from counts hold float32 noise (exactly 50 wrong of 1000 is
    5.0000012): the error is rounded to 4 decimals, far finer than one question of 10,000."""
    return round(error, 4) > FAIL_ABOVE


def average_error(errors: Iterable[float]) -> float:
    """The average of tasks' errors (%), as every bAbI table writes it: :func:`statistics.fmean`,
    whose sum is correctly rounded, where a plain float sum in task order can tip an average on a
    rounding tie (4.505, 19.815) the other way from the next table."""
    return statistics.fmean(errors)


def run_tasks(summary: dict[str, Any]) -> tuple[int, ...]:
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
        if summary.get("test") and run_tasks(summary):
            summary["run_dir"] = str(path.parent)
            runs.append(summary)
    return runs


def best_of_seeds(runs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per task, the run with the best validation score (the paper picks the best of 10 seeds).

    Runs are compared only with runs of the same task set: seeds of one single-task run
    with each other, seeds of a joint model with each other (the joint model is picked as a
    whole, on its validation error over all its tasks: the mean over them, whatever its
    ``task.selection`` kept the model on, so that seeds compare alike)."""
    groups: dict[tuple[int, ...], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault(run_tasks(run), []).append(run)
    best: dict[int, dict[str, Any]] = {}
    for tasks, group in sorted(groups.items(), key=lambda item: len(item[0])):
        winner = max(group, key=_validation_score)
        for task in tasks:
            best.setdefault(task, winner)  # a single-task run outranks a joint run in the same root
    return best


def _validation_score(run: dict[str, Any]) -> float:
    """Minus the run's mean validation error (its ``score`` under the default selection)."""
    validation = run.get("validation") or {}
    return -validation["mean_error"] if "mean_error" in validation else validation.get("score", float("-inf"))


Columns = dict[str, dict[int, dict[str, Any]]]  # model name -> task -> its (best) run


def _task_table(columns: Mapping[str, Mapping[int, Any]], cell: Callable[[int, Any], str | None]) -> list[str]:
    """Header and one row per task; ``cell(task, run)`` renders a model's run (``-`` where
    it has none or ``cell`` returns None)."""
    names = list(columns)
    lines = ["| task | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for task in sorted({t for col in columns.values() for t in col}):
        cells = [cell(task, col[task]) if task in col else None for col in columns.values()]
        lines.append(f"| {task} | " + " | ".join("-" if c is None else c for c in cells) + " |")
    return lines


def _test_values(columns: Columns, key: str) -> list[list[float]]:
    """Per model, the test metric ``taskN/key`` of every task that has it."""
    return [[v for t, run in col.items() if (v := run["test"].get(f"task{t}/{key}")) is not None] for col in columns.values()]


def _summary_row(label: str, values: list[str]) -> str:
    return f"| {label} | " + " | ".join(values) + " |"


def error_table(columns: Columns) -> str:
    """Markdown table: one row per task, one column per model (test error %); then average
    error and failed tasks, as in the paper's Table 1 and Appendix C."""
    lines = _task_table(columns, lambda t, run: f"{run['test'][f'task{t}/error']:.1f}")
    errors = _test_values(columns, "error")
    lines.append(_summary_row("average error", [f"{average_error(e):.2f}" if e else "-" for e in errors]))
    lines.append(_summary_row("failed (> 5%)", [str(sum(map(fails, e))) for e in errors]))
    lines.append(_summary_row("tasks run", [str(len(e)) for e in errors]))
    return "\n".join(lines)


def _ponder_cell(task: int, run: dict[str, Any]) -> str | None:
    mean, std = run["test"].get(f"task{task}/ponder_time"), run["test"].get(f"task{task}/ponder_std")
    return None if mean is None else f"{mean:.2f}" + ("" if std is None else f" ± {std:.2f}")


def ponder_table(columns: Columns) -> str:
    """Markdown table of the mean ± std test ponder time per task (over all positions)."""
    lines = _task_table(columns, _ponder_cell)
    means = _test_values(columns, "ponder_time")
    lines.append(_summary_row("mean over tasks", [f"{sum(m) / len(m):.2f}" if m else "-" for m in means]))
    return "\n".join(lines)


def role_ponder(metrics: dict[str, Any], prefix: str = "") -> str | None:
    """``supporting / other / question`` mean ponder times (metrics ``{prefix}ponder_ROLE``,
    e.g. prefix ``task2/``), or None when neither supporting facts nor the question have one."""
    values = [metrics.get(f"{prefix}ponder_{role}") for role in ("supporting", "other", "question")]
    return None if values[0] is None and values[2] is None else " / ".join("-" if v is None else f"{v:.2f}" for v in values)


def _role_cell(task: int, run: dict[str, Any]) -> str | None:
    return role_ponder(run["test"], f"task{task}/")


def role_ponder_table(columns: Columns) -> str:
    """Markdown table of the mean test ponder time of supporting facts / other facts / the
    question, per task: the halting pattern the paper's Section 3.1 discusses."""
    return "\n".join(_task_table(columns, _role_cell))


def baseline_table(columns: Columns, baseline: str = "recent") -> str:
    """Markdown table of what the failed tasks' errors are, against a baseline policy: per task
    that some model fails, the test error of the baseline (``recent``: answering with the
    candidate the story mentions last, ``recent_baseline_error``; ``question``: the answer
    training gives the question's text most often, ``question_baseline_error``; ``seen``: the
    answer training gives the same question on the same story, where it holds it verbatim,
    ``seen_baseline_error``, so "right" is the questions memory can answer), then per model
    that fails it ``error (error where the baseline is right / where it is wrong)``, in %
    (``error_if_recent_right``, ``error_if_recent_wrong``, ...). Models whose records predate
    the measure are left out. Where the models come from several data sets (the name's first
    folder) and the baseline differs between them, one baseline column per set."""
    def measured(run: dict[str, Any], task: int) -> bool:
        return fails(run["test"].get(f"task{task}/error", 0.0)) and f"task{task}/error_if_{baseline}_wrong" in run["test"]

    def cell(run: dict[str, Any], task: int) -> str:
        m = run["test"]
        right = m.get(f"task{task}/error_if_{baseline}_right")
        return f"{m[f'task{task}/error']:.1f} ({'-' if right is None else f'{right:.1f}'} / {m[f'task{task}/error_if_{baseline}_wrong']:.1f})"

    def value(task: int, models: list[dict[int, dict[str, Any]]]) -> str:  # the baseline's error, from any model's record
        key = f"task{task}/{baseline}_baseline_error"
        found = next((run["test"][key] for col in models if (run := col.get(task)) and key in run["test"]), None)
        return "-" if found is None else f"{found:.1f}"

    shown = {name: col for name, col in columns.items() if any(measured(run, t) for t, run in col.items())}
    tasks = sorted({t for col in shown.values() for t, run in col.items() if measured(run, t)})
    if not tasks:
        return "_No records with the measure yet._"
    # The baselines that read the training stories (question, seen) differ between data sets
    # (en, en-10k: the models' name prefixes): one column per set where they do.
    sets: dict[str, list[dict[int, dict[str, Any]]]] = {}
    for name, col in shown.items():
        sets.setdefault(name.split("/")[0] if "/" in name else "", []).append(col)
    baselines = {f"{BASELINES[baseline]} ({name})": [value(t, models) for t in tasks] for name, models in sets.items()}
    if len({tuple(values) for values in baselines.values()}) == 1:
        baselines = {BASELINES[baseline]: next(iter(baselines.values()))}
    lines = [f"| task | {' | '.join(baselines)} | " + " | ".join(shown) + " |", "|---" * (len(shown) + len(baselines) + 1) + "|"]
    for i, task in enumerate(tasks):
        cells = [cell(col[task], task) if task in col and measured(col[task], task) else "-" for col in shown.values()]
        lines.append(f"| {task} | " + " | ".join(values[i] for values in baselines.values()) + " | " + " | ".join(cells) + " |")
    return "\n".join(lines)


BASELINES = {"recent": "answering the latest candidate", "question": "answering the question's usual answer",
             "seen": "answering as training answered the same story"}
"""The baseline policies of :func:`baseline_table` and the header of their error column."""


def runs_table(columns: Columns) -> str:
    """Markdown table of the run behind each cell: ``steps done / step of the best model /
    training seconds`` (validation included), and the total training time per model."""
    lines = _task_table(columns, lambda t, run: f"{run.get('step')} / {run.get('best_step')} / {run.get('wall_time_seconds', 0):.0f} s")
    totals = []
    for column in columns.values():
        distinct = {run["run_dir"]: run for run in column.values()}.values()  # a joint run counts once
        totals.append(f"{sum(run.get('wall_time_seconds', 0) for run in distinct) / 60:.0f} min")
    lines.append(_summary_row("training time of these runs", totals))
    return "\n".join(lines)


SeedGroups = dict[str, dict[int, list[dict[str, Any]]]]  # model name -> task -> every seed's run


def seeds_table(groups: SeedGroups) -> str:
    """Markdown table of the test error over seeds, ``mean ± std (n)`` per task and model (the
    sample standard deviation; the paper's Appendix C reports mean and spread over its 10
    seeds beside the best one; a task with one seed shows its error and ``(1)``), then the
    average error over the tasks per seed (runs' ``seeds``), as ``mean ± std`` over the
    seeds that have every task of the column."""
    lines = _task_table(groups, lambda task, runs: _mean_std([run["test"][f"task{task}/error"] for run in runs]))
    averages = []
    for tasks in groups.values():
        complete = seed_averages(tasks)
        averages.append(_mean_std(complete) if complete else "-")
    lines.append(_summary_row("average error (per seed)", averages))
    return "\n".join(lines)


def seed_averages(tasks: Mapping[int, list[dict[str, Any]]]) -> list[float]:
    """The average test error over the tasks of each seed (runs' ``seeds``) that has every one of
    ``tasks`` (task -> every seed's run), by :func:`average_error`."""
    per_seed: dict[str, dict[int, float]] = {}
    for task, runs in tasks.items():
        for run in runs:
            per_seed.setdefault(str(run.get("seeds")), {})[task] = run["test"][f"task{task}/error"]
    return [average_error(e.values()) for e in per_seed.values() if len(e) == len(tasks)]


def paper_seeds_table(settings: Mapping[str, Mapping[int, list[dict[str, Any]]] | None]) -> str:
    """Markdown table in the layout of the paper's Appendix C over seeds: per task, for each
    setting of :data:`PAPER_SEED_MEAN` (``settings`` maps its label to our runs, task -> every
    seed's run, or None), the paper's mean ± "var" over its 10 seeds beside our mean ± sample
    standard deviation (number of seeds), in %; then the average error over the tasks, the
    paper's as it prints it and ours over the seeds that have all 20 tasks."""
    labels = list(settings)
    header = " | ".join(f"{label}: paper (10 seeds) | here" for label in labels)
    lines = [f"| task | {header} |", "|---" * (2 * len(labels) + 1) + "|"]
    for task in range(1, 21):
        cells = []
        for label in labels:
            mean, spread = PAPER_SEED_MEAN[label][task - 1]
            runs = (settings[label] or {}).get(task)
            cells += [f"{mean:.1f} ± {spread:.1f}", _mean_std([run["test"][f"task{task}/error"] for run in runs]) if runs else "-"]
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    averages = []
    for label in labels:
        mean, spread = PAPER_SEED_AVERAGE[label]
        tasks = settings[label]
        seeds = seed_averages(tasks) if tasks and len(tasks) == 20 else []
        averages += [f"{mean:.2f} ± {spread:.2f}", _mean_std(seeds, digits=2) if seeds else "-"]
    lines.append(_summary_row("average error", averages))
    return "\n".join(lines)


def _mean_std(values: list[float], digits: int = 1) -> str:
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (1)"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f} ({len(values)})"


def ponder_by_supporting_facts(column: dict[int, dict[str, Any]]) -> dict[int, tuple[float, float | None]]:
    """Test ponder time (mean, std over all positions) of tasks 1, 2, 3 (one, two, three
    supporting facts), as the paper reports them (2.3±0.8, 3.1±1.1, 3.8±2.2)."""
    out = {}
    for task in (1, 2, 3):
        run = column.get(task)
        if run is not None and f"task{task}/ponder_time" in run["test"]:
            out[task] = (run["test"][f"task{task}/ponder_time"], run["test"].get(f"task{task}/ponder_std"))
    return out


PAPER_BEST_OF_10: dict[str, tuple[float, ...]] = {
    # The paper's Appendix C, "best seed run for each task (out of 10 runs)", UT+ACT, test error %
    # of tasks 1-20; their averages are Table 1's (PAPER_AVERAGE) to its rounding.
    "10k single": (0.0, 0.0, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.4, 0.6, 0.0, 2.8, 0.0),
    "10k joint": (0.0, 0.0, 1.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.2, 0.2, 0.0, 3.1, 0.0),
    "1k single": (0.0, 0.0, 3.7, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.8, 32.0, 0.0, 47.1, 2.4),
    "1k joint": (0.0, 0.5, 5.4, 0.0, 0.5, 0.5, 3.2, 1.6, 0.2, 0.4, 0.1, 0.0, 0.6, 3.8, 5.9, 15.4, 42.9, 4.1, 68.2, 2.4),
}

PAPER_AVERAGE = {"10k single": 0.21, "10k joint": 0.29, "1k single": 4.55, "1k joint": 7.78}
"""The average test error % the paper prints for UT+ACT (Table 1, Appendix C)."""

PAPER_SEED_MEAN: dict[str, tuple[tuple[float, float], ...]] = {
    # The paper's Appendix C, "average (±var) over all seeds (for 10 runs)", UT+ACT, test error %
    # of tasks 1-20 as (mean, spread). The paper calls the spread "var" without saying whether it
    # is a variance or a standard deviation; it is kept as printed. The means average to
    # PAPER_SEED_AVERAGE's to its rounding.
    "10k single": ((0.0, 0.0), (0.2, 0.4), (1.8, 1.8), (0.1, 0.1), (0.2, 0.3), (0.1, 0.2), (0.3, 0.5), (0.3, 0.2),
                   (0.0, 0.0), (0.1, 0.2), (0.0, 0.0), (0.2, 0.1), (0.2, 0.5), (1.8, 2.6), (2.1, 3.4), (1.9, 2.2),
                   (1.6, 0.8), (0.3, 0.4), (3.4, 4.0), (0.0, 0.0)),
    "10k joint": ((0.0, 0.0), (1.7, 2.6), (4.6, 7.3), (0.2, 0.1), (0.8, 0.5), (0.1, 0.2), (1.1, 1.5), (0.5, 1.1),
                  (0.0, 0.0), (0.5, 0.4), (0.1, 0.1), (0.4, 0.4), (0.3, 0.4), (1.3, 1.6), (1.6, 2.8), (0.9, 1.3),
                  (1.4, 3.4), (0.7, 1.4), (6.1, 7.3), (0.0, 0.0)),
    "1k single": ((0.2, 0.3), (3.2, 4.1), (9.1, 12.7), (0.3, 0.3), (1.1, 1.3), (1.2, 2.1), (0.0, 0.0), (0.1, 0.2),
                  (0.1, 0.1), (0.7, 0.8), (0.4, 0.8), (0.6, 0.9), (0.8, 0.9), (0.1, 0.2), (0.3, 0.5), (9.1, 8.1),
                  (43.7, 18.6), (2.3, 3.6), (50.2, 8.4), (3.2, 2.5)),
    "1k joint": ((0.1, 0.2), (4.3, 11.6), (14.3, 18.1), (0.4, 0.6), (4.3, 5.6), (0.8, 0.4), (4.1, 2.9), (3.9, 4.2),
                 (0.3, 0.3), (1.3, 1.6), (0.3, 0.9), (0.3, 0.4), (1.1, 0.9), (4.7, 5.2), (10.3, 8.6), (34.1, 22.8),
                 (51.1, 12.9), (12.8, 9.0), (73.1, 23.9), (2.6, 2.8)),
}

PAPER_SEED_AVERAGE = {"10k single": (0.73, 0.89), "10k joint": (1.12, 1.62), "1k single": (6.34, 3.32),
                      "1k joint": (11.21, 6.65)}
"""The paper's average test error % over its 10 seeds, with its "±var" (Appendix C), for UT+ACT."""


def paper_table(settings: Mapping[str, dict[int, dict[str, Any]] | None]) -> str:
    """Markdown table in the layout of the paper's Appendix C: per task, for each setting of
    :data:`PAPER_BEST_OF_10` (``settings`` maps its label to our column, task -> run, or None
    where nothing answers it yet), the paper's best-of-10 test error beside ours (%), a cell
    in bold where ours fails and the paper's does not; then average error and failed tasks."""
    labels = list(settings)
    header = " | ".join(f"{label}: paper | here" for label in labels)
    lines = [f"| task | {header} |", "|---" * (2 * len(labels) + 1) + "|"]
    ours = {label: [column[t]["test"][f"task{t}/error"] for t in range(1, 21)] if column else None
            for label, column in settings.items()}
    for task in range(1, 21):
        cells = []
        for label in labels:
            paper = PAPER_BEST_OF_10[label][task - 1]
            here = "-" if ours[label] is None else f"{ours[label][task - 1]:.1f}"
            if ours[label] is not None and fails(ours[label][task - 1]) and not fails(paper):
                here = f"**{here}**"
            cells += [f"{paper:.1f}", here]
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    averages, failed = [], []
    for label in labels:
        averages += [f"{PAPER_AVERAGE[label]:.2f}", "-" if ours[label] is None else f"{average_error(ours[label]):.2f}"]
        failed += [str(sum(map(fails, errors))) if errors else "-" for errors in (PAPER_BEST_OF_10[label], ours[label])]
    lines += [_summary_row("average error", averages), _summary_row("failed (> 5%)", failed)]
    return "\n".join(lines)
