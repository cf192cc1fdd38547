"""bAbI question answering (the paper's Section 3.1, Table 1, Appendix C and D): the per-task
tables of ``babi_report`` over the records, and the studies of halting, depth and stories seen."""

from __future__ import annotations

import re
import statistics
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from ...tasks.babi import parse_tasks
from ..babi_report import (
    PAPER_BEST_OF_10, PAPER_SEED_MEAN, average_error, baseline_table, best_of_seeds, error_table, fails, paper_seeds_table,
    paper_table, ponder_by_supporting_facts, ponder_table, role_ponder, role_ponder_table, run_tasks, runs_table,
    seeds_table,
)
from ..records import PUBLISHED_MODELS, RunRecord
from .common import (
    NO_RECORDS, family, fmt_accuracy, fmt_mean_std, fmt_seconds, markdown_table, model_label, partial_footnote,
    trained_depth, transpose_markdown,
)
from .sections import FIGURES, Builder, register_table


def babi_summary(record: RunRecord) -> dict[str, Any]:
    """The record as the run summary that ``babi_report``'s tables read (``metrics.json``'s
    layout); ``run_dir`` names the record, so a joint run counts once in totals."""
    return {
        "validation": dict(record.metrics["validation"]),
        "test": dict(record.metrics["test"]),
        "step": record.steps,
        "best_step": record.best_step,
        "wall_time_seconds": record.wall_time_seconds,
        "status": record.status,
        "experiment": record.experiment,
        "seeds": list(record.seeds),
        "run_dir": f"{record.experiment} seeds {record.seeds}",
    }


_TASK_SUFFIX = re.compile(r"/task\d+$")  # a single-task run's name ends so; a joint run's does not


def babi_group(experiment: str) -> str:
    """The column of a bAbI experiment: its name without ``babi/``, a trailing ``/taskN`` and a
    ``/seed-N`` folder (``ut sweep``'s layout: ``.../seed-1/task2`` is seed 1 of the setting's
    task 2), so the seeds and tasks of one setting share a column; a joint run is its own."""
    name = _TASK_SUFFIX.sub("", experiment.removeprefix("babi/"))
    return re.sub(r"/seed-\d+(?=/|$)", "", name)


def _study_only(record: RunRecord) -> bool:
    """A run that belongs to one study's table, not to the model tables: one that draws its stories
    with a seed of their own (``train.data_seed``; :func:`babi_seed_pairs_table`), or task 16 trained
    beside other tasks in the task-16 company study (:func:`babi_task16_pairs_table`)."""
    return _data_seed(record) is not None or TASK16_PAIRS.fullmatch(record.experiment) is not None


def _babi_runs(records: list[RunRecord]) -> dict[str, list[dict[str, Any]]]:
    """Column name -> the summaries of its runs with per-task test errors (every seed), those of
    :func:`_study_only` left out."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in family(records, "babi"):
        if _study_only(record):
            continue
        summary = babi_summary(record)
        if run_tasks(summary):
            groups.setdefault(babi_group(record.experiment), []).append(summary)
    return groups


def babi_columns(records: list[RunRecord]) -> dict[str, dict[int, dict[str, Any]]]:
    """Column name -> task -> the best run on validation (``babi_report.best_of_seeds``)."""
    return {name: best_of_seeds(runs) for name, runs in _babi_runs(records).items()}


@register_table("babi-seeds")
def babi_seeds_table(records: list[RunRecord]) -> str:
    """bAbI test error over seeds (``babi_report.seeds_table``), for the columns with more
    than one seed of some task, one row per model; a joint run counts for each of its tasks."""
    groups = {name: _by_task(runs) for name, runs in _babi_runs(records).items()}
    groups = {name: tasks for name, tasks in groups.items() if any(len(runs) > 1 for runs in tasks.values())}
    return _one_row_per_model(seeds_table(groups)) if groups else NO_RECORDS


def _one_row_per_model(table: str) -> str:
    """A babi_report table (one column per model, as the paper's Table 1) turned to one row per
    model: the models measured far outnumber the 20 tasks. Text that is not a table (a
    "no records" line) is returned as it is."""
    return transpose_markdown(table, "model / task") if table.startswith("|") else table


def _by_task(runs: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Task -> the runs (seeds) of a column that were tested on it, in task order."""
    tasks: dict[int, list[dict[str, Any]]] = {}
    for run in runs:
        for task in run_tasks(run):
            tasks.setdefault(task, []).append(run)
    return dict(sorted(tasks.items()))


BABI_SETTINGS = (("10k single", "en-10k", False), ("10k joint", "en-10k", True),
                 ("1k single", "en", False), ("1k joint", "en", True))
"""The paper's four bAbI settings (Table 1): label, data set, joint."""


@register_table("babi-paper")
def babi_paper_table(records: list[RunRecord]) -> str:
    """bAbI UT+ACT per task beside the paper's Appendix C (``babi_report.paper_table``): in each
    setting the column the standing table picks (:func:`babi_setting_column`), then the runs."""
    found = {label: babi_setting_column(records, data, joint, "UT+ACT") for label, data, joint in BABI_SETTINGS}
    if not any(found.values()):
        return NO_RECORDS
    runs = [f"{label}: {'not measured in full yet' if f is None else babi_run_label(*f)}" for label, f in found.items()]
    return paper_table({label: f and f[1] for label, f in found.items()}) + "\n\nhere: " + "; ".join(runs)


@register_table("babi-paper-seeds")
def babi_paper_seeds_table(records: list[RunRecord]) -> str:
    """bAbI UT+ACT per task over seeds beside the paper's Appendix C average over its 10 seeds
    (``babi_report.paper_seeds_table``): in each setting every seed of the column that the
    ``babi-paper`` table shows, then the runs."""
    found = {label: babi_seed_runs(records, data, joint, "UT+ACT") for label, data, joint in BABI_SETTINGS}
    if not any(found.values()):
        return NO_RECORDS
    named = [f"{label}: {'not measured in full yet' if f is None else babi_seeds_label(*f)}" for label, f in found.items()]
    return paper_seeds_table({label: f and f[1] for label, f in found.items()}) + "\n\nhere: " + "; ".join(named)


def babi_seed_runs(records: list[RunRecord], data: str, joint: bool,
                   model: str) -> tuple[str, dict[int, list[dict[str, Any]]]] | None:
    """The column :func:`babi_setting_column` picks, with every seed's run per task: its name and
    task -> runs, or None."""
    runs = _babi_runs(records)
    found = _setting_column(records, runs, data, joint, model)
    return found and (found[0], _by_task(runs[found[0]]))


def babi_seeds_label(name: str, tasks: dict[int, list[dict[str, Any]]]) -> str:
    """``babi/NAME`` with the seeds run (``seeds 0, 1`` or ``seed 0``), marked partial where one
    of them stopped at its time limit."""
    seeds, partial = _seeds_and_partial([run for runs in tasks.values() for run in runs])
    notes = [f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"] + (["partial"] if partial else [])
    return f"babi/{name} ({'; '.join(notes)})"


SPREAD_MIN_SEEDS = 5
"""The seeds a task of a column needs to be in the ``babi-seed-spread`` table."""


@register_table("babi-seed-spread")
def babi_seed_spread_table(records: list[RunRecord]) -> str:
    """How far a task's test error moves with the seed, beside the paper's 10 runs: for each
    column and task with at least :data:`SPREAD_MIN_SEEDS` seeds of single-task runs, the seeds,
    their mean ± sample standard deviation, lowest and highest test error, the seed best on
    validation (the one the other tables show), how many pass (<= 5%), and the paper's UT+ACT
    mean ± "var" and best of its 10 runs in the same setting (Appendix C)."""
    rows = []
    for column, runs in sorted(_babi_runs(records).items()):
        setting = f"{_DATA_SIZE.get(column.split('/')[0])} single"  # the column is named DATA/...
        for task, seeds in _by_task([run for run in runs if len(run_tasks(run)) == 1]).items():
            if len(seeds) < SPREAD_MIN_SEEDS:
                continue
            key = f"task{task}/error"
            errors = [run["test"][key] for run in seeds]
            paper = ["-", "-"]
            if setting in PAPER_SEED_MEAN:
                mean, spread = PAPER_SEED_MEAN[setting][task - 1]
                paper = [f"{mean:.1f} ± {spread:.1f}", f"{PAPER_BEST_OF_10[setting][task - 1]:.1f}"]
            stopped = sum(run["status"] == "time_limit" for run in seeds)
            rows.append([column, str(task), f"{len(seeds)}" + (f" ({stopped} partial)" if stopped else ""),
                         f"{statistics.mean(errors):.1f} ± {statistics.stdev(errors):.1f}", f"{min(errors):.1f}",
                         f"{max(errors):.1f}", f"{best_of_seeds(seeds)[task]['test'][key]:.1f}",
                         str(sum(not fails(e) for e in errors)), *paper])
    if not rows:
        return NO_RECORDS
    header = ["column", "task", "seeds", "test error %: mean ± std", "lowest", "highest", "best on validation",
              "seeds passed (<= 5%)", "paper UT+ACT, 10 seeds: mean ± var", "paper: best of 10"]
    return markdown_table(header, rows)


PER_TASK_SUFFIX = "-per-task"
"""``ut eval RUN --per-task --record NAME-per-task`` for the joint run recorded as ``NAME``."""

_DATA_SIZE = {data: label.split()[0] for label, data, _ in BABI_SETTINGS}  # "en" -> "1k", "en-10k" -> "10k"


@register_table("babi-readings")
def babi_readings_table(records: list[RunRecord]) -> str:
    """The three readings of the paper's "single" bAbI setting, per task, for each joint run
    scored per task (``ut eval --per-task``, recorded as ``NAME-per-task``): a model per task
    trained on task N's data alone (the single column of that model best on validation,
    :func:`babi_setting_column`), the joint model ``NAME`` whole, and the joint run's models
    picked each on task N's own validation, as tensor2tensor's ``babi_qa_sentence_taskN``
    problems train on all tasks' data and select on task N's. Where a joint run has several
    seeds, each of its columns picks one seed whole on validation, and a column beside it picks
    the seed per task (:func:`best_seed_per_task`), as the paper's Appendix C does in every setting."""
    seeds = _babi_runs(records)
    columns = {name: best_of_seeds(runs) for name, runs in seeds.items()}  # babi_columns, from the runs at hand
    parts, shown = [], set()
    for record in family(records, "babi"):
        per_task = babi_group(record.experiment)  # the seeds of a run share its column: one table
        if record.metrics["test"].get("selection") != "per_task" or per_task in shown:
            continue
        shown.add(per_task)
        data, model = record.config["task"]["set"], model_label(record.config)
        alone = babi_setting_column(records, data, False, model)
        joint = per_task.removesuffix(PER_TASK_SUFFIX)
        readings = {"alone": alone, "joint": (joint, columns[joint]) if joint in columns and joint != per_task else None,
                    "joint, per task": (per_task, columns[per_task])}
        for label, name in (("joint", joint), ("joint, per task", per_task)):
            if readings[label] and len(seeds[name]) > 1:
                readings[f"{label}, best seed per task"] = (name, best_seed_per_task(seeds[name]))
        runs = "; ".join(f"{label}: {'not measured in full yet' if found is None else babi_run_label(*found)}"
                         for label, found in readings.items())
        table = error_table({label: found[1] for label, found in readings.items() if found})
        parts.append(f"{_DATA_SIZE.get(data, data)} {model} ({runs}):\n\n{table}")
    return "\n\n".join(parts) if parts else NO_RECORDS


def _babi_builder(table: Callable[[dict[str, dict[int, dict[str, Any]]]], str]) -> Builder:
    """A table builder over every bAbI model (:func:`babi_columns`), shown one row per model
    (:func:`_one_row_per_model`), with a footnote naming the partial runs."""
    def build(records: list[RunRecord]) -> str:
        columns = babi_columns(records)
        if not columns:
            return NO_RECORDS
        shown = [run for column in columns.values() for run in column.values()]
        partial_runs = [(r["experiment"], r["step"], r["wall_time_seconds"]) for r in shown if r["status"] == "time_limit"]
        return _one_row_per_model(table(columns)) + partial_footnote(partial_runs)

    build.__doc__ = f"bAbI, transposed to one row per model: {getattr(table, 'func', table).__doc__}"  # a partial: its function's
    return build


HISTORY_STEPS = (1000, 2000, 5000, 10000, 20000, 50000, 100000)
"""The evaluations a history table shows (and each run's last one)."""


@register_table("babi-joint-history")
def babi_joint_history_table(records: list[RunRecord]) -> str:
    """How the halting pattern of each joint bAbI model (a record without ``/taskN``, named with
    its ``/seed-N`` folder where it has one; not :func:`_study_only`) with a validation history
    evolved: at the steps of :data:`HISTORY_STEPS` and the run's last evaluation, the validation
    error and the ponder time of supporting facts / other facts / the question, averaged over the
    tasks."""
    rows = []
    for record in family(records, "babi"):
        if _TASK_SUFFIX.search(record.experiment) or not record.history or _study_only(record):
            continue
        last = record.history[-1]["step"]
        for entry in record.history:
            if entry["step"] in HISTORY_STEPS or entry["step"] == last:
                error = entry.get("mean_error")
                rows.append([record.experiment.removeprefix("babi/"), str(entry["step"]), "-" if error is None else f"{error:.1f}",
                             role_ponder(entry) or "-"])
    if not rows:
        return NO_RECORDS
    return markdown_table(["model", "step", "validation error %", "supporting / other / question"], rows)


# Stories per step (configs/babi/t2t-v2.grid, the 4- and 8-task mixes): does a task of a joint model learn
# as the same task alone at the same number of its stories seen, whatever the batch holds?
STORIES_STUDY = ("babi/en-10k/ut-act-t2t-v2/task19", "babi/en-10k/ut-act-t2t-v2-mix4-b256",
                 "babi/en-10k/ut-act-t2t-v2-mix4-b64", "babi/en-10k/ut-act-t2t-v2-mix4-b16",
                 "babi/en-10k/ut-act-t2t-v2-mix8-b128")
STORIES_STUDY_TASK = 19
STORIES_ROW = 64_000  # a row every 64,000 of the task's stories: an evaluation of each run


def _batch(record: RunRecord) -> int:
    """The stories of a training step (``train.max_batch_size``; ``batch_tokens`` holds that many)."""
    return record.config["train"]["max_batch_size"]


def stories_per_step(record: RunRecord) -> float:
    """The stories of each of a bAbI record's tasks in one training step: ``max_batch_size``
    shared evenly by its tasks (``all``: the 20). Exact for the mixes of :data:`STORIES_STUDY`:
    every batch is full (``batch_tokens`` holds ``max_batch_size`` of their longest stories), every
    bucket mixes the tasks (one bucket), and the tasks' training sets have the same size (9,000
    questions or so each). In the 10k 20-task joint models task 3 trains from its 1k file (its 10k
    one is missing), so each other task's true share is 5% above this (9,000 of 171,900 stories);
    the mix of tasks in a batch varies with the length bucket, the mean over steps does not."""
    return _batch(record) / len(parse_tasks(record.config["task"]["tasks"]))


def stories_curves(records: list[RunRecord], metric: str = "error", *, study: tuple[str, ...] = STORIES_STUDY,
                   task: int = STORIES_STUDY_TASK) -> list[tuple[RunRecord, dict[int, tuple[float, int]]]]:
    """The runs of ``study`` with a history, in its order, each with its validation curve of task
    ``task``: stories of the task seen -> (``metric``, step). ``metric`` is ``error`` (%) or
    ``ponder_question`` (the question's ponder time): a run over several tasks keeps both per
    task in its history, a run over one task as its summary."""
    curves = []
    for record in _study_runs(records, study):
        share = stories_per_step(record)
        curve = {round(step * share): (value, step) for step, value in task_curve(record, task, metric).items()}
        if curve:
            curves.append((record, curve))
    return curves


def _study_runs(records: list[RunRecord], study: tuple[str, ...]) -> list[RunRecord]:
    """The records named in ``study`` that have a history, in its order."""
    return sorted((r for r in records if r.experiment in study and r.history), key=lambda r: study.index(r.experiment))


def task_curve(record: RunRecord, task: int, metric: str = "error") -> dict[int, float]:
    """Step -> task ``task``'s validation ``metric`` in a bAbI record's history: ``error`` (%) or
    ``ponder_question``, kept per task by a run over several tasks (a list, or ``all``), and as its
    summary by a run over one."""
    several = record.config["task"]["tasks"] != task
    key = f"task{task}/{metric}" if several else {"error": "mean_error"}.get(metric, metric)
    return {e["step"]: e[key] for e in record.history if key in e}


def _stories_label(record: RunRecord) -> str:
    return f"{babi_group(record.experiment)} ({stories_per_step(record):g} of {_batch(record)} a step)"


def _stories_rows(study: list[tuple[RunRecord | None, dict[int, tuple[float, int]]]], every: int, *,
                  with_last: bool = False) -> list[list[str]]:
    """Rows of the curves of :func:`stories_curves` every ``every`` stories (the error, then the
    step), from the first to the last count any of them reaches, and (``with_last``) at each run's
    last evaluation; rows no run lands on are left out (a run of None: an empty column)."""
    curves = [c for _, c in study]
    counts = set(range(every, max((seen for curve in curves for seen in curve), default=0) + 1, every))
    if with_last:
        counts |= {max(curve) for curve in curves if curve}
    rows = []
    for seen in sorted(counts):
        cells = [f"{c[seen][0]:.1f} ({c[seen][1]:,})" if seen in c else "-" for c in curves]
        if any(cell != "-" for cell in cells):
            rows.append([f"{seen:,}", *cells])
    return rows


@register_table("babi-stories-per-step")
def babi_stories_table(records: list[RunRecord]) -> str:
    """Task 19's validation error (%) at equal numbers of its stories seen, in the runs of
    :data:`STORIES_STUDY` (each cell: the error, then the step), per :data:`STORIES_ROW` stories;
    a run's per-step share is :func:`stories_per_step`."""
    study = stories_curves(records)
    rows = _stories_rows(study, STORIES_ROW)
    if not rows:
        return NO_RECORDS
    runs = [r for r, _ in study]
    header = [f"task {STORIES_STUDY_TASK} stories seen", *map(_stories_label, runs)]
    partial_runs = [(r.experiment, r.steps, r.wall_time_seconds) for r in runs if r.partial]
    return markdown_table(header, rows) + partial_footnote(partial_runs)


# Task 16's lottery (configs/babi/t2t-single.grid): the depth-2 UT's seeds at 64 stories a step,
# each pair of a seed of the initial weights (train.seed) and one of the training stories
# (train.data_seed), to step 10,000; the seeds' own runs are the pairs with both alike.
SEED_PAIRS_STUDY = ("babi/en-10k/ut-t2t-v2-steps2-nopatience", "babi/en-10k/ut-t2t-v2-steps2-nopatience-s10k")
SEED_PAIRS_TASK = 16
SEED_PAIRS_STEP = 10_000
# The same pairs trained with tensor2tensor's optimiser (Adam (0.9, 0.997), its learning-rate
# formula, no weight decay, no clipping; the grid's @t2t-optimiser).
SEED_PAIRS_T2T_OPTIMISER_STUDY = ("babi/en-10k/ut-t2t-v2-steps2-nopatience-s10k-t2topt",)


def _data_seed(record: RunRecord) -> int | None:
    """A run's ``train.data_seed``: None where its one seed draws both weights and data."""
    return record.config.get("train", {}).get("data_seed")


def seed_pair(record: RunRecord) -> tuple[int, int]:
    """A run's seed of the initial weights and seed of the training stories (``train.data_seed``, or
    ``train.seed`` where that is null: one seed draws both)."""
    weights, data_seed = _seed(record), _data_seed(record)
    return weights, weights if data_seed is None else data_seed


def _pair_errors(records: list[RunRecord], study: tuple[str, ...], task: int,
                 step: int) -> tuple[dict[tuple[int, int], list[float]], list[tuple[str, int, float]]]:
    """Task ``task``'s validation error (%) at step ``step`` of each run of task ``task`` alone under
    the folders of ``study``, by :func:`seed_pair`, several runs of one pair in the order of
    ``study``; and the runs stopped at their time limit before ``step`` (name, steps, seconds)."""
    def place(record: RunRecord) -> int | None:  # the folder of study it lies under
        return next((i for i, folder in enumerate(study) if record.experiment.startswith(folder + "/")), None)

    placed = [(place(r), r.experiment, r) for r in family(records, "babi")]
    runs = [(i, name, r) for i, name, r in placed
            if i is not None and r.history and parse_tasks(r.config["task"].get("tasks")) == [task]]
    errors: dict[tuple[int, int], list[float]] = {}
    short = []
    for _, _, record in sorted(runs, key=lambda run: run[:2]):
        error = task_curve(record, task).get(step)
        if error is not None:
            errors.setdefault(seed_pair(record), []).append(error)
        elif record.partial:
            short.append((record.experiment, record.steps, record.wall_time_seconds))
    return errors, short


@register_table("babi-seed-pairs")
def babi_seed_pairs_table(records: list[RunRecord], *, study: tuple[str, ...] = SEED_PAIRS_STUDY,
                          task: int = SEED_PAIRS_TASK, step: int = SEED_PAIRS_STEP) -> str:
    """Task ``task``'s validation error (%) at step ``step`` in the runs of task ``task`` alone under
    the folders of ``study``, one row per seed of the weights and one column per seed of the stories
    (:func:`seed_pair`); where several runs are the same pair, their errors in the order of ``study``
    (a pair run again under another commit or CPU need not repeat its numbers). A run stopped at its time limit before ``step``
    shows as ``-`` and is named in a footnote."""
    errors, short = _pair_errors(records, study, task, step)
    if not errors:
        return NO_RECORDS
    weights, stories = sorted({w for w, _ in errors}), sorted({d for _, d in errors})
    rows = [[f"weights {w}", *(" / ".join(f"{e:.1f}" for e in errors.get((w, d), [])) or "-" for d in stories)]
            for w in weights]
    return markdown_table([f"task {task}, step {step:,}", *(f"stories {d}" for d in stories)], rows) + partial_footnote(short)


register_table("babi-seed-pairs-t2t-optimiser")(partial(babi_seed_pairs_table, study=SEED_PAIRS_T2T_OPTIMISER_STUDY))


# The levers tried on the lottery, side by side: each a column of the same pairs' runs. The two
# after tensor2tensor's optimiser each add one thing to it (not to each other): the readout from the
# mean over all positions (model.pooling=mean, its class-label output layer's) or its initialiser
# (model.weight_init=tensor2tensor).
SEED_PAIRS_LEVERS = (
    ("our optimiser", SEED_PAIRS_STUDY),
    ("t2t optimiser", SEED_PAIRS_T2T_OPTIMISER_STUDY),
    ("t2t optimiser + mean readout", ("babi/en-10k/ut-t2t-v2-steps2-nopatience-s10k-t2topt-meanpool",)),
    ("t2t optimiser + t2t initialiser", ("babi/en-10k/ut-t2t-v2-steps2-nopatience-s10k-t2topt-t2tinit",)),
)
SEED_PAIRS_CUT = 45.0  # below it at step 10,000 a run has left the colour policy (about 50%)


@register_table("babi-seed-pairs-levers")
def babi_seed_pairs_levers_table(
    records: list[RunRecord], *, levers: tuple[tuple[str, tuple[str, ...]], ...] = SEED_PAIRS_LEVERS,
    task: int = SEED_PAIRS_TASK, step: int = SEED_PAIRS_STEP,
) -> str:
    """Task ``task``'s validation error (%) at step ``step``, one row per seed pair and one column per
    lever (a label and the folders of its runs; ``-`` where it has no run of the pair that reached
    ``step``, those stopped before it named in a footnote); then each column's mean over its own
    pairs and over the pairs that every lever with runs ran, and how many of its pairs are below
    :data:`SEED_PAIRS_CUT`. Where a lever ran a pair twice, its last run by (folder in the order
    given, run name) counts (for ours, the rerun beside the other pairs, on the same day and CPU)."""
    columns, short = [], []
    for _, study in levers:
        errors, stopped = _pair_errors(records, study, task, step)
        columns.append({pair: runs[-1] for pair, runs in errors.items()})
        short += stopped
    ran = [errors for errors in columns if errors]
    if len(ran) < 2:
        return NO_RECORDS
    pairs = sorted(set().union(*ran))
    common = sorted(set.intersection(*(set(errors) for errors in ran)))

    def summary(label: str, cell) -> list[str]:  # one cell per column, "-" for a lever without runs
        return [label, *(cell(errors) if errors else "-" for errors in columns)]

    rows = [summary(f"weights {w}, stories {d}", lambda e: f"{e[(w, d)]:.1f}" if (w, d) in e else "-") for w, d in pairs]
    rows.append(summary("mean over its pairs", lambda e: f"**{statistics.fmean(e.values()):.1f}** ({len(e)})"))
    if common:
        rows.append(summary(f"mean over the {len(common)} pairs all ran",
                            lambda e: f"{statistics.fmean(e[pair] for pair in common):.1f}"))
    rows.append(summary(f"below {SEED_PAIRS_CUT:g}%", lambda e: f"{sum(v < SEED_PAIRS_CUT for v in e.values())} of {len(e)}"))
    header = [f"task {task}, step {step:,}", *(label for label, _ in levers)]
    return markdown_table(header, rows) + partial_footnote(short)


def _stories_figure(records: list[RunRecord], out: Path, *, metric: str = "error", ylabel: str,
                    study: tuple[str, ...] = STORIES_STUDY, task: int = STORIES_STUDY_TASK) -> bool:
    """The curves of :func:`stories_curves`, every evaluation, when there are two or more."""
    curves = {_stories_label(record): sorted((seen, value) for seen, (value, _) in curve.items())
              for record, curve in stories_curves(records, metric, study=study, task=task)}
    return _draw_curves(curves, out, xlabel=f"task {task} stories seen", ylabel=ylabel)


def _draw_curves(curves: dict[str, list[tuple[float, float]]], out: Path, *, xlabel: str, ylabel: str) -> bool:
    """Draw the non-empty ``curves`` (label -> points) when there are two or more to compare."""
    curves = {label: points for label, points in curves.items() if points}
    if len(curves) < 2:
        return False
    from ...visualisation.babi import plot_learning_curves  # matplotlib only when drawing

    plot_learning_curves(curves, out, xlabel=xlabel, ylabel=ylabel)
    return True


FIGURES["babi-stories-per-step"] = partial(_stories_figure, ylabel=f"task {STORIES_STUDY_TASK} validation error %")
# Does the question's halting follow the learning, or lead it? The same runs' question ponder time.
FIGURES["babi-stories-ponder"] = partial(_stories_figure, metric="ponder_question",
                                         ylabel=f"task {STORIES_STUDY_TASK} question ponder time (steps)")


# Are the tasks that every 20-task joint model fails, though trained alone they are learnt, short of
# stories (configs/babi/t2t-v2.grid, the floor of 2 continued)? Each task alone with the joint models'
# recipe, beside the joint models, at equal numbers of the task's stories seen; the joint models see
# a twentieth of theirs. (long2's record at step 303,708 is a prefix of its -395k one, the same run
# scored later; long3 is warm-started again from long2's published best, at step 289,000. The
# single run with the joint models' floor of 2, `-min2`, tells the floor's part from the sharing's.)
JOINT_STORIES_TASKS = (17, 18)
JOINT_STORIES_STUDY = ("babi/en-10k/ut-act-t2t-v2/task{task}", "babi/en-10k/ut-act-t2t-v2-min2/task{task}",
                       "babi/en-10k/ut-t2t-v2-joint-10k",
                       "babi/en-10k/ut-act-t2t-v2-joint-10k-min2", "babi/en-10k/ut-act-t2t-v2-joint-10k-min2-long",
                       "babi/en-10k/ut-act-t2t-v2-joint-10k-min2-long2-395k", "babi/en-10k/ut-act-t2t-v2-joint-10k-min2-long3")
JOINT_STORIES_ROW = 256_000  # every 4,000 steps of a single run, 80,000 of a 20-task joint one


def _joint_stories_study(task: int) -> tuple[str, ...]:
    return tuple(name.format(task=task) for name in JOINT_STORIES_STUDY)


@register_table("babi-stories-joint")
def babi_joint_stories_table(records: list[RunRecord]) -> str:
    """Per task of :data:`JOINT_STORIES_TASKS`, its validation error (%) at equal numbers of its
    stories seen, trained alone and in the joint models of :data:`JOINT_STORIES_STUDY` (a column
    each; a cell: the error, then the step), every :data:`JOINT_STORIES_ROW` stories and at each
    run's last evaluation."""
    studies = {task: _joint_stories_study(task) for task in JOINT_STORIES_TASKS}
    found = {task: {r.experiment: (r, curve) for r, curve in stories_curves(records, study=study, task=task)}
             for task, study in studies.items()}
    # a column per place in the study that some task has a run for (each task's own run alone shares one)
    columns = [i for i in range(len(JOINT_STORIES_STUDY)) if any(studies[t][i] in found[t] for t in studies)]
    labels = [next(_stories_label(found[t][studies[t][i]][0]) for t in studies if studies[t][i] in found[t])
              for i in columns]
    rows, shown = [], []
    for task, study in studies.items():
        cells = [found[task].get(study[i], (None, {})) for i in columns]
        rows += [[str(task), *row] for row in _stories_rows(cells, JOINT_STORIES_ROW, with_last=True)]
        shown += [r for r, _ in cells if r is not None]
    if not rows:
        return NO_RECORDS
    partial_runs = [(r.experiment, r.steps, r.wall_time_seconds) for r in shown if r.partial]
    return markdown_table(["task", "stories seen", *labels], rows) + partial_footnote(partial_runs)


FIGURES["babi-stories-joint"] = partial(_stories_figure, ylabel=f"task {JOINT_STORIES_TASKS[0]} validation error %",
                                        study=_joint_stories_study(JOINT_STORIES_TASKS[0]), task=JOINT_STORIES_TASKS[0])


# A floor under the depth (configs/babi/t2t-v2.grid): the 20-task joint v2 model without ACT, and
# with ACT whose positions may not halt before step 2 or 4 (act_min_steps). Task 19 (path finding),
# which no joint model with ACT and its question halting at step 1 learnt, step by step.
FLOOR_STUDY = ("babi/en-10k/ut-t2t-v2-joint-10k", "babi/en-10k/ut-act-t2t-v2-joint-10k-min2",
               "babi/en-10k/ut-act-t2t-v2-joint-10k-min4", "babi/en-10k/ut-act-t2t-v2-joint-10k-pw0")
FLOOR_TASK = 19
FLOOR_ROW = 4_000  # a row every 4,000 steps


def _repeat(record: RunRecord) -> dict[str, int]:
    """A bAbI record's ``task.repeat`` (task -> factor, as JSON keys it), empty where unset."""
    return record.config.get("task", {}).get("repeat") or {}


def _second_stage(record: RunRecord) -> bool:
    """A run warm-started from another run's model at step 0 (``train.init_from``, fresh schedule): a
    curriculum's second stage. A run continued from its own model warm-starts at that model's step."""
    train = record.config.get("train", {})
    return bool(train.get("init_from")) and not train.get("init_step")


def _batched_by_task(record: RunRecord) -> bool:
    """A bAbI record trained on batches of one task each (``task.batch_by_task``, a diagnostic)."""
    return bool(record.config.get("task", {}).get("batch_by_task"))


def _warm_source(record: RunRecord) -> str | None:
    """The experiment whose model ``train.init_from`` names (``[...]/runs/NAME/best`` or
    ``[...]/results/models/NAME/best``, NAME as its record names it), None for a run from scratch."""
    source = record.config.get("train", {}).get("init_from")
    if not source:
        return None
    parts = PurePosixPath(source).parts
    for marker in (("results", PUBLISHED_MODELS), ("runs",)):
        at = next((i for i in range(len(parts)) if parts[i:i + len(marker)] == marker), None)
        if at is not None:
            parts = parts[at + len(marker):]
            break
    return "/".join(parts[:-1] if parts[-1:] == ("best",) else parts)


def _off_protocol(record: RunRecord, by_name: dict[str, RunRecord]) -> bool:
    """A diagnostic that trained otherwise than the paper: on resampled tasks (``task.repeat``), on
    batches of one task (``task.batch_by_task``), from another run's model (a curriculum), or on
    from the model of such a run (at its step or not: the weights carry what it trained on).
    ``by_name``: the records by experiment, to find a warm start's source (one not found counts as
    the protocol: a leg continued from a run whose record is gone)."""
    seen: set[str] = set()
    leg: RunRecord | None = record
    while leg is not None and leg.experiment not in seen:  # back through the warm starts
        if _repeat(leg) or _batched_by_task(leg) or _second_stage(leg):
            return True
        seen.add(leg.experiment)
        leg = by_name.get(_warm_source(leg) or "")
    return False


def _floor_label(record: RunRecord) -> str:
    resampled = "".join(f", task {task} x{factor}" for task, factor in _repeat(record).items())
    by_task = ", batches by task" if _batched_by_task(record) else ""
    warm = ", from another run's model" if _second_stage(record) else ""
    return f"{babi_group(record.experiment)} ({_halting_label(record)}{resampled}{by_task}{warm})"


def _seeded_floor_label(record: RunRecord) -> str:
    """:func:`_floor_label`, and the seed where it is not 0 (a study of several seeds of one setting)."""
    return _floor_label(record) + (f", seed {_seed(record)}" if _seed(record) else "")


# A floor study's entry is an experiment, or a lineage: one model trained on in legs, each leg a
# record of its own warm-started (train.init_from, train.init_step) from the previous leg's model.
FloorEntry = str | tuple[str, ...]


def _floor_lineages(records: list[RunRecord], study: tuple[FloorEntry, ...]) -> list[list[RunRecord]]:
    """The legs found of each entry of ``study``, in its order; entries with no record left out."""
    found = {r.experiment: r for r in records if r.history}
    lineages = [[found[name] for name in ((entry,) if isinstance(entry, str) else entry) if name in found]
                for entry in study]
    return [legs for legs in lineages if legs]


def _lineage_curve(legs: list[RunRecord], task: int, metric: str = "error") -> dict[int, float]:
    """:func:`task_curve` of a lineage: each leg up to the step the next one started from (its
    ``init_step``; a leg restarts from an earlier model, not from where the previous leg stopped)."""
    curve: dict[int, float] = {}
    for leg, following in zip(legs, [*legs[1:], None]):
        points = task_curve(leg, task, metric)
        if following is not None:
            start = following.config["train"].get("init_step") or min(task_curve(following, task, metric), default=0)
            points = {step: value for step, value in points.items() if step <= start}
        curve.update(points)
    return curve


def _lineage_label(legs: list[RunRecord]) -> str:
    """:func:`_seeded_floor_label` of the first leg, and the later legs by what they add to its name
    (by their column's name where they are named otherwise: a curriculum's second stage)."""
    first = legs[0].experiment
    later = [leg.experiment.removeprefix(first) if leg.experiment.startswith(first) else babi_group(leg.experiment)
             for leg in legs[1:]]
    return _seeded_floor_label(legs[0]) + (f", trained on as {', '.join(later)}" if later else "")


def _halting_label(record: RunRecord) -> str:
    """How a bAbI model's positions halt: ACT and its floors, or a fixed depth."""
    model = record.config["model"]
    halting = f"ACT, floor {model.get('act_min_steps', 1)}" if model.get("act") else f"no ACT, {model.get('num_steps')} steps"
    if model.get("act") and (model.get("act_fact_min_steps") is not None or model.get("act_question_min_steps") is not None):
        fact, question = (model.get(key) or model.get("act_min_steps", 1) for key in ("act_fact_min_steps", "act_question_min_steps"))
        halting = f"ACT, facts' floor {fact}, question's {question}"
    if model.get("act") and model.get("ponder_weight") == 0:
        halting += ", no ponder cost"
    return halting


def floor_table(records: list[RunRecord], study: tuple[FloorEntry, ...], task: int, every: int) -> str:
    """Task ``task``'s validation error (%) and, in brackets, its question's ponder time in the runs
    of ``study`` (a column each, a lineage's legs in one), every ``every`` steps and at each
    column's last evaluation; then its test error, scored at the step best on validation (of a
    lineage, its last leg's)."""
    lineages = _floor_lineages(records, study)
    curves = [(_lineage_curve(legs, task), _lineage_curve(legs, task, "ponder_question")) for legs in lineages]
    steps = sorted({step for error, _ in curves for step in error
                    if step % every == 0 or step == max(error)})
    rows = []
    for step in steps:
        cells = [f"{error[step]:.1f} ({ponder[step]:.1f})" if step in error and step in ponder
                 else f"{error[step]:.1f}" if step in error else "-" for error, ponder in curves]
        rows.append([f"{step:,}", *cells])
    if not rows:
        return NO_RECORDS
    tests = [legs[-1].metrics.get("test", {}).get(f"task{task}/error") for legs in lineages]
    rows.append(["test", *(f"**{error:.1f}**" if error is not None else "-" for error in tests)])
    partial_runs = [(r.experiment, r.steps, r.wall_time_seconds) for legs in lineages for r in legs if r.partial]
    return markdown_table(["step", *map(_lineage_label, lineages)], rows) + partial_footnote(partial_runs)


@register_table("babi-floor")
def babi_floor_table(records: list[RunRecord]) -> str:
    """:func:`floor_table` for task :data:`FLOOR_TASK` in the joint runs of :data:`FLOOR_STUDY`."""
    return floor_table(records, FLOOR_STUDY, FLOOR_TASK, FLOOR_ROW)


# What slows task 17 under the joint models' floor (configs/babi/t2t-single.grid)? Task 17 alone
# without a floor, with the floor of 2 on every position, with a floor on the question only (2, and
# 8), two seeds each: the pace follows how deep the question goes early, not the floor itself.
TASK17_FLOOR_STUDY = tuple(f"babi/en-10k/{name}" for name in (
    "ut-act-t2t-v2/task17", "ut-act-t2t-v2/seed-1/task17", "ut-act-t2t-v2-min2/task17", "ut-act-t2t-v2-min2/seed-1/task17",
    "ut-act-t2t-v2-qmin2/task17", "ut-act-t2t-v2-qmin2/seed-1/task17", "ut-act-t2t-v2-qmin8/task17",
    "ut-act-t2t-v2-qmin8/seed-1/task17"))


@register_table("babi-floor-task17")
def babi_task17_floor_table(records: list[RunRecord]) -> str:
    """:func:`floor_table` for task 17 trained alone under the floors of :data:`TASK17_FLOOR_STUDY`."""
    return floor_table(records, TASK17_FLOOR_STUDY, 17, FLOOR_ROW)


# The same question in the 20-task joint model (configs/babi/t2t-v2.grid): the floor-2 model (two
# seeds; seed 0 with the legs it was trained on in, to 395,000 steps) against the one whose question
# is held to step 8 from the first step, same seed, data stream and schedule, so that the columns
# compare step by step.
JOINT17_FLOOR_STUDY: tuple[FloorEntry, ...] = tuple(
    tuple(f"babi/en-10k/ut-act-t2t-v2-joint-10k-{name}" for name in entry) for entry in (
        ("min2", "min2-long", "min2-long2-395k"), ("min2/seed-1",), ("min2-q8",)))
JOINT17_FLOOR_ROW = 10_000


@register_table("babi-floor-joint17")
def babi_joint17_floor_table(records: list[RunRecord]) -> str:
    """:func:`floor_table` for task 17 in the joint models of :data:`JOINT17_FLOOR_STUDY`."""
    return floor_table(records, JOINT17_FLOOR_STUDY, 17, JOINT17_FLOOR_ROW)


# What keeps task 16 on the colour policy in the joint model, where the task trained alone leaves it
# (configs/babi/t2t-v2.grid)? The depth-2 joint models under tensor2tensor's optimiser, with its
# initialiser (seeds 0 and 1), with that and task 16's training questions listed 8 times an epoch
# (task.repeat: 19.6 of a step's 64 questions against 3.35), with that and batches of one task each
# (task.batch_by_task), and with that, started from a model
# that learnt task 16 alone in the joint model's shape (a curriculum: task.vocabulary_tasks); then
# two curricula inside the joint mix: the 20 tasks with task 16 x19 (the pairs study's runs) to
# step 24,000-26,000, the plain joint on from there (a lineage each, seeds 0 and 1); and the x19 mix
# trained on (seeds 0 to 4), seeds 0 and 3 until they had learnt task 16, then the plain joint from
# there (two legs each).
_JOINT_T2T = "babi/en-10k/ut-t2t-v2-steps2-nopatience-joint-10k-"
TASK16_JOINT_STUDY: tuple[FloorEntry, ...] = (
    *(_JOINT_T2T + name for name in ("t2topt", "t2topt-t2tinit", "t2topt-t2tinit/seed-1", "t2topt-t2tinit-r16x8",
                                     "t2topt-t2tinit-r16x8-bytask", "t2topt-t2tinit-after16")),
    *((f"babi/en-10k/ut-t2t-v2-steps2-nopatience-t2topt-t2tinit-pairs/seed-{seed}/16x19-with-19",
       f"{_JOINT_T2T}t2topt-t2tinit-afterx19/seed-{seed}") for seed in (0, 1)),
    (f"{_JOINT_T2T}t2topt-t2tinit-r16x19", f"{_JOINT_T2T}t2topt-t2tinit-r16x19-plain",
     f"{_JOINT_T2T}t2topt-t2tinit-r16x19-plain-long"),
    *(f"{_JOINT_T2T}t2topt-t2tinit-r16x19/seed-{seed}" for seed in (1, 2)),
    (f"{_JOINT_T2T}t2topt-t2tinit-r16x19/seed-3", f"{_JOINT_T2T}t2topt-t2tinit-r16x19-plain/seed-3",
     f"{_JOINT_T2T}t2topt-t2tinit-r16x19-plain-long/seed-3"),
    f"{_JOINT_T2T}t2topt-t2tinit-r16x19/seed-4")


@register_table("babi-task16-joint")
def babi_task16_joint_table(records: list[RunRecord]) -> str:
    """:func:`floor_table` for task 16 in the joint models of :data:`TASK16_JOINT_STUDY`."""
    return floor_table(records, TASK16_JOINT_STUDY, 16, JOINT17_FLOOR_ROW)


# Which other task keeps task 16 on the colour policy (configs/babi/t2t-v2.grid)? Task 16 trained
# with one other task at a time, in the joint model's shape, beside task 16 alone in that shape,
# same seed; then at about a pair's share of the questions (task.repeat) beside 3, 9 and all 19
# other tasks; then the 20-task model at 31% (x8) under tensor2tensor's decaying rate (seed 0's is the
# joint study's -r16x8), with the rate held at its peak after the warm-up (-constant), and in batches
# of 128 (-b128). Rows align the runs at equal numbers of task 16's questions seen.
TASK16_ALONE = re.compile(r"babi/en-10k/ut-t2t-v2-steps2-nopatience-10k-t2topt-t2tinit-jointvocab/seed-(\d+)/task16")
TASK16_PAIRS = re.compile(r"babi/en-10k/ut-t2t-v2-steps2-nopatience-t2topt-t2tinit-pairs/seed-(\d+)/16(x\d+)?-with-\d+(-constant|-b\d+)?")
TASK16_JOINT_X8 = "babi/en-10k/ut-t2t-v2-steps2-nopatience-joint-10k-t2topt-t2tinit-r16x8"  # seed 0
TASK16_STEP_STORIES = 64  # the unit "a step's worth": the batch of every run of the study but -b128's
TASK16_PAIR_SEEN = (5_000, 8_000, 10_000, 13_000)  # steps' worth of task 16's questions
TASK16_LEFT = 45.0  # below this on validation, task 16 has left the colour policy (about 50%)
# Training questions per task in en-10k: 9,000 (10,000 less the validation split), task 3's 1,000
# (its 10k training file is missing; the loader reads en's, ../shared/data/babi/README.md).
EN10K_TRAIN_QUESTIONS = 9_000
EN10K_TASK3_TRAIN_QUESTIONS = 1_000


def _task16_repeat(record: RunRecord) -> int:
    """How many times an epoch a run lists task 16's training questions (``task.repeat``; 1 unset)."""
    return int(_repeat(record).get("16", 1))


def _task16_share(record: RunRecord) -> float:
    """Task 16's share of a 10k run's training questions, with its ``task.repeat`` factor."""
    tasks = parse_tasks(record.config["task"]["tasks"])
    count = {task: EN10K_TASK3_TRAIN_QUESTIONS if task == 3 else EN10K_TRAIN_QUESTIONS for task in tasks}
    count[16] *= _task16_repeat(record)
    return count[16] / sum(count.values())


def _task16_company(record: RunRecord) -> tuple[int, ...]:
    """The tasks a run of the task-16 study trained beside task 16: () alone."""
    return tuple(task for task in parse_tasks(record.config["task"]["tasks"]) if task != 16)


def _peak_rate_held(record: RunRecord) -> bool:
    """A run whose learning rate stays at its peak after the warm-up (``train.schedule: constant``)."""
    return record.config["train"].get("schedule") == "constant"


def _task16_pair_runs(records: list[RunRecord]) -> list[tuple[int, RunRecord]]:
    """(seed, record) of the study's runs: task 16 alone (only with the seeds of some run with
    company), then with one companion by companion, then with more by their number, by task 16's
    repeat factor, the decaying rate before the held one, by the stories a step; by seed within."""
    found = [(int(match.group(1)), record) for record in records if record.history
             for match in [TASK16_PAIRS.fullmatch(record.experiment) or TASK16_ALONE.fullmatch(record.experiment)]
             if match]
    found += [(_seed(record), record) for record in records if record.history and record.experiment == TASK16_JOINT_X8]
    seeds = {seed for seed, record in found if _task16_company(record)}
    return sorted(((seed, r) for seed, r in found if seed in seeds),
                  key=lambda run: (len(_task16_company(run[1])), _task16_company(run[1]),
                                   _task16_repeat(run[1]), _peak_rate_held(run[1]), _batch(run[1]), run[0]))


def _task16_company_label(record: RunRecord, seed: int) -> str:
    company = _task16_company(record)
    factor = _task16_repeat(record)
    label = ("alone" if not company else f"with task {company[0]}" if len(company) == 1
             else f"with the other {len(company)}" if len(company) == 19
             else f"with {len(company)} ({', '.join(map(str, company))})")
    batch = _batch(record)
    return (label + (f", x{factor}" if factor > 1 else "") + (", peak rate held" if _peak_rate_held(record) else "")
            + (f", {batch} a step" if batch != TASK16_STEP_STORIES else "") + f", seed {seed}")


@register_table("babi-task16-pairs")
def babi_task16_pairs_table(records: list[RunRecord]) -> str:
    """Task 16 alone and in the company of the runs of :data:`TASK16_PAIRS` and
    :data:`TASK16_JOINT_X8`, a row per seed: its share of the training questions
    (:func:`_task16_share`), its validation error (%) at the evaluation nearest to ``n`` steps' worth
    of its questions seen (within 500; step x share x stories a step / :data:`TASK16_STEP_STORIES`),
    the first evaluation below :data:`TASK16_LEFT` in those units, and the tasks' test errors at the
    step best on validation (task 16, and the others' mean)."""
    runs = _task16_pair_runs(records)
    if not runs:
        return NO_RECORDS
    rows = []
    for seed, record in runs:
        share = _task16_share(record)
        worth = share * _batch(record) / TASK16_STEP_STORIES  # steps' worth of task 16 a step
        curve = {step * worth: error for step, error in task_curve(record, 16).items()}
        cells = []
        for target in TASK16_PAIR_SEEN:
            near = min(curve, key=lambda seen: (abs(seen - target), seen))
            cells.append(f"{curve[near]:.1f}" if abs(near - target) <= 500 else "-")
        left = min((seen for seen, error in curve.items() if error < TASK16_LEFT), default=None)
        test = record.metrics.get("test", {})
        company = _task16_company(record)
        test16 = test.get("task16/error", None if company else test.get("mean_error"))
        others = [test.get(f"task{task}/error") for task in company]
        other = statistics.mean(others) if others and None not in others else None
        rows.append([_task16_company_label(record, seed), f"{share:.0%}", *cells,
                     f"{left:,.0f}" if left is not None else f"not by {max(curve):,.0f}",
                     *(f"{error:.1f}" if error is not None else "-" for error in (test16, other))])
    header = ["task 16", "share", *(f"{seen:,}" for seen in TASK16_PAIR_SEEN), f"first below {TASK16_LEFT:g}%",
              "test: task 16", "test: the others' mean"]
    partial_runs = [(r.experiment, r.steps, r.wall_time_seconds) for _, r in runs if r.partial]
    return markdown_table(header, rows) + partial_footnote(partial_runs)


# Task 3's depth (configs/babi/t2t-v2.grid): tasks 1-3 trained together, with the facts halting at
# ACT's floor of 2, every position through 8 steps (no ACT, or ACT's floor at 8, where it stays),
# the facts through 8 steps with the question halting by ACT, and the reverse (the question held to
# step 12, the facts halting by ACT). Every seed is a row.
DEPTH_STUDY = ("babi/en-10k/ut-act-t2t-v2-mix123", "babi/en-10k/ut-t2t-v2-mix123",
               "babi/en-10k/ut-act-t2t-v2-mix123-min8", "babi/en-10k/ut-act-t2t-v2-mix123-facts8",
               "babi/en-10k/ut-act-t2t-v2-mix123-question12")
DEPTH_TASKS = (1, 2, 3)


def _depth_setting(record: RunRecord) -> str:
    """The experiment without its ``/seed-N`` folder."""
    return re.sub(r"/seed-\d+$", "", record.experiment)


def _seed(record: RunRecord) -> int:
    return record.config["train"].get("seed", 0)


def _depth_runs(records: list[RunRecord]) -> list[RunRecord]:
    """The runs of :data:`DEPTH_STUDY` scored on test, in its order, then by seed."""
    return sorted((r for r in records if _depth_setting(r) in DEPTH_STUDY and "task3/error" in r.metrics.get("test", {})),
                  key=lambda r: (DEPTH_STUDY.index(_depth_setting(r)), _seed(r)))


@register_table("babi-depth")
def babi_depth_table(records: list[RunRecord]) -> str:
    """For each run of :data:`DEPTH_STUDY` (any seed): its test error (%) on tasks 1, 2 and 3 from
    the best model on validation, and the test ponder time of task 3's supporting and other facts
    and of the question of each task (steps plus remainder; a fixed depth of 8 counts 8, ACT's floor of 8 at least 9)."""
    def cells(test: dict[str, Any], keys: list[str]) -> str:
        return " / ".join(f"{test[k]:.1f}" if k in test else "-" for k in keys)

    runs = _depth_runs(records)
    rows = []
    for r in runs:
        test = r.metrics["test"]
        rows.append([_floor_label(r), str(_seed(r)),
                     f"{r.best_step:,} of {r.steps:,}" + (" (partial)" if r.partial else ""),
                     cells(test, [f"task{t}/error" for t in DEPTH_TASKS]),
                     cells(test, ["task3/ponder_supporting", "task3/ponder_other"]),
                     cells(test, [f"task{t}/ponder_question" for t in DEPTH_TASKS])])
    if not rows:
        return NO_RECORDS
    partial_runs = [(r.experiment, r.steps, r.wall_time_seconds) for r in runs if r.partial]
    header = ["run", "seed", "best step", "test error % (tasks 1 / 2 / 3)", "task 3 facts' ponder (supporting / other)",
              "question's ponder (tasks 1 / 2 / 3)"]
    return markdown_table(header, rows) + partial_footnote(partial_runs)


PonderCurves = dict[str, dict[int, tuple[float, float | None]]]  # label -> task -> (mean, std over positions)


def depth_ponder_panels(records: list[RunRecord]) -> tuple[dict[str, PonderCurves], dict[str, dict]]:
    """The ponder times of the ACT runs of :data:`DEPTH_STUDY` on tasks 1-3, as panels of
    curves (title -> label -> task -> (mean, std over positions)) for ``plot_ponder_panels``:
    over all positions (the paper's measure) and of the question alone; and each label's line
    style, a colour per setting and a line style per seed."""
    runs = [r for r in _depth_runs(records) if r.config["model"].get("act")]

    def points(r: RunRecord, metric: str, std: str | None) -> dict[int, tuple[float, float | None]]:
        test = r.metrics["test"]
        return {t: (test[f"task{t}/{metric}"], test.get(f"task{t}/{std}") if std else None)
                for t in DEPTH_TASKS if f"task{t}/{metric}" in test}

    labels = {r.experiment: f"{_halting_label(r)}, seed {_seed(r)}" for r in runs}
    panels = {"all positions": {labels[r.experiment]: points(r, "ponder_time", "ponder_std") for r in runs},
              "the question": {labels[r.experiment]: points(r, "ponder_question", None) for r in runs}}
    settings = list(dict.fromkeys(map(_depth_setting, runs)))
    styles = {labels[r.experiment]: {"color": f"C{settings.index(_depth_setting(r))}",
                                     "linestyle": ("-", ":", "-.", "--")[_seed(r) % 4]} for r in runs}
    return panels, styles


def _depth_figure(records: list[RunRecord], out: Path) -> bool:
    """:func:`depth_ponder_panels` beside the paper's 2.3 / 3.1 / 3.8, when a run has two tasks' ponder times."""
    panels, styles = depth_ponder_panels(records)
    if not any(len(points) > 1 for curves in panels.values() for points in curves.values()):
        return False
    from ...visualisation.babi import plot_ponder_panels  # matplotlib only when drawing

    plot_ponder_panels(panels, out, paper=PAPER_PONDER, styles=styles)
    return True


FIGURES["babi-depth"] = _depth_figure


def _floor_figure(records: list[RunRecord], out: Path, *, study: tuple[FloorEntry, ...] = FLOOR_STUDY,
                  task: int = FLOOR_TASK) -> bool:
    """Task ``task``'s validation error against the step in the runs of ``study`` (a lineage one curve)."""
    curves = {_lineage_label(legs): sorted(_lineage_curve(legs, task).items()) for legs in _floor_lineages(records, study)}
    return _draw_curves(curves, out, xlabel="training step", ylabel=f"task {task} validation error %")


FIGURES["babi-floor"] = _floor_figure
FIGURES["babi-floor-task17"] = partial(_floor_figure, study=TASK17_FLOOR_STUDY, task=17)
FIGURES["babi-floor-joint17"] = partial(_floor_figure, study=JOINT17_FLOOR_STUDY, task=17)


register_table("babi")(_babi_builder(error_table))
register_table("babi-ponder")(_babi_builder(ponder_table))
register_table("babi-runs")(_babi_builder(runs_table))
register_table("babi-roles")(_babi_builder(role_ponder_table))
register_table("babi-recency")(_babi_builder(baseline_table))
register_table("babi-question")(_babi_builder(partial(baseline_table, baseline="question")))
register_table("babi-seen")(_babi_builder(partial(baseline_table, baseline="seen")))


@register_table("babi-fit")
def babi_fit_table(records: list[RunRecord]) -> str:
    """Underfitting or overfitting? Per bAbI record with training-set metrics (``ut eval --split
    train``: the best model on its own training stories), per task it fails on test (all its
    tasks when it fails none), the error (%) on the training stories, validation and test.
    A model that errs on its training stories as often as on validation underfits: more
    regularisation will not help it, a model or schedule that fits will."""
    rows = []
    for record in family(records, "babi"):
        train = record.metrics.get("train")
        if not train:
            continue
        test, validation = record.metrics["test"], record.metrics["validation"]
        tasks = sorted({int(m.group(1)) for k in train if (m := re.fullmatch(r"task(\d+)/error", k))})
        failed = [t for t in tasks if fails(test.get(f"task{t}/error", 0.0))] or tasks

        def cell(metrics: dict[str, Any], task: int) -> str:
            value = metrics.get(f"task{task}/error")
            return "-" if value is None else f"{value:.1f}"

        rows += [[babi_group(record.experiment), str(t), cell(train, t), cell(validation, t), cell(test, t)] for t in failed]
    if not rows:
        return NO_RECORDS
    return markdown_table(["model", "task", "training stories error %", "validation error %", "test error %"], rows)


LEVERS_1K = {
    "en/ut-t2t-v2-steps2": "the recipe (depth 2, patience 10)",
    "en/ut-t2t-v2-steps2-drop3": "dropout 0.3 (from 0.1)",
    "en/ut-t2t-v2-steps2-half": "half the width (d_model 64, filter 256)",
    "en/ut-t2t-v2-steps2-qwords": "question on the facts' word table (own mask)",
    "en/ut-t2t-v2-steps2-qshared": "question on the facts' table and mask",
    "en/ut-t2t-v2-steps2-nopatience": "60,000 steps, no early stopping",
    "en/ut-t2t-v2-steps2-nopatience-wd": "60,000 steps, no early stopping, weight decay 0.1",
    "en/ut-t2t-v2-steps2-nopatience-wd1": "60,000 steps, no early stopping, weight decay 1.0",
    "en/ut-t2t-v2-steps2-nopatience-wd1-long": "150,000 steps, no early stopping, weight decay 1.0",
    "en/ut-t2t-v2-steps2-nopatience-wd1-qwords": "60,000 steps, no early stopping, weight decay 1.0, question on the facts' word table",
}
"""The levers tried on the 1k single-task models' overfitting: column of the bAbI table -> what
it changes from the first, the recipe of ``en/ut-t2t-v2-steps2`` (configs/babi/t2t-single-1k.grid)."""


@register_table("babi-1k-levers")
def babi_1k_levers_table(records: list[RunRecord]) -> str:
    """Per lever of :data:`LEVERS_1K` that has a run, the test error (%) of each task it ran (the
    best model on validation) and their mean beside the recipe's mean on the same tasks."""
    found = babi_columns(records)
    columns = {name: found[name] for name in LEVERS_1K if found.get(name)}  # in the table's order
    errors = {name: {t: run["test"][f"task{t}/error"] for t, run in column.items() if f"task{t}/error" in run["test"]}
              for name, column in columns.items()}
    base = errors.get(next(iter(LEVERS_1K)))
    tasks = sorted({t for column in errors.values() if column is not base for t in column})
    if not tasks or not base:
        return NO_RECORDS
    rows = []
    for name in errors:
        ran = [t for t in tasks if t in errors[name]]
        compared = [base[t] for t in ran if t in base]
        cell = (f"{average_error(errors[name][t] for t in ran):.1f} ({average_error(compared):.1f})"
                if ran and compared else "-")
        partial_mark = " (partial)" if any(columns[name][t]["status"] == "time_limit" for t in ran) else ""
        rows.append([f"{name}{partial_mark}", LEVERS_1K[name]]
                    + [fmt_accuracy(errors[name].get(t), 1) for t in tasks] + [cell])
    header = ["column", "lever"] + [f"task {t}" for t in tasks] + ["mean over its tasks (the recipe's)"]
    return markdown_table(header, rows)


JOINT_DECAY_1K = (
    "babi/en/ut-t2t-v2-joint", "babi/en/ut-t2t-v2-joint/seed-1", "babi/en/ut-t2t-v2-joint/seed-2",
    "babi/en/ut-t2t-v2-joint-wd01", "babi/en/ut-t2t-v2-steps2-joint", "babi/en/ut-t2t-v2-steps2-nopatience-wd01-joint",
    "babi/en/ut-t2t-v2-steps2-nopatience-wd01-joint-long", "babi/en/ut-t2t-v2-steps2-nopatience-wd01-joint/seed-1",
    "babi/en/ut-t2t-v2-steps2-nopatience-wd01-joint/seed-2",
    "babi/en/ut-t2t-v2-steps2-nopatience-wd03-joint", "babi/en/ut-t2t-v2-steps2-nopatience-wd1-joint",
)
"""The 1k joint UT runs (no ACT, configs/babi/t2t-v2.grid and t2t-single-1k.grid) that differ in
depth and AdamW's weight decay alone (and in patience: the decay runs without it train 100,000 steps)."""


@register_table("babi-1k-joint-decay")
def babi_1k_joint_decay_table(records: list[RunRecord]) -> str:
    """Per run of :data:`JOINT_DECAY_1K`, by depth then decay: steps trained and the best model's
    step, the training loss logged at that step (label smoothing included: how far the decay keeps
    the model off its training stories), validation and test error (failed tasks), and the test
    error of every task that some run fails; runs not yet scored on test are left out."""
    runs = sorted((r for r in records if r.experiment in JOINT_DECAY_1K and run_tasks(r.metrics)),
                  key=lambda r: (int(r.config["model"]["num_steps"]), float(r.config["train"]["weight_decay"]),
                                 r.experiment))
    if not runs:
        return NO_RECORDS
    tasks = sorted({t for r in runs for t in run_tasks(r.metrics) if fails(r.metrics["test"][f"task{t}/error"])})
    rows = []
    for r in runs:
        test = r.metrics["test"]
        errors = [test[f"task{t}/error"] for t in run_tasks(r.metrics)]
        loss = next((h.get("train_loss") for h in r.history or [] if h.get("step") == r.best_step), None)
        rows.append([r.experiment.removeprefix("babi/") + (" (partial)" if r.partial else ""),
                     str(r.config["model"]["num_steps"]), f"{float(r.config['train']['weight_decay']):g}",
                     f"{r.steps:,} ({r.best_step:,})" if r.best_step is not None else f"{r.steps:,}",
                     fmt_accuracy(loss), fmt_accuracy(r.metrics["validation"].get("mean_error")),
                     f"{average_error(errors):.2f} ({sum(map(fails, errors))})"]
                    + [fmt_accuracy(test.get(f"task{t}/error"), 1) for t in tasks])
    header = ["run", "depth", "weight decay", "steps (best at)", "training loss at the best",
              "validation error %", "test error % (failed)"] + [f"task {t}" for t in tasks]
    return markdown_table(header, rows)


def _kept_cell(record: RunRecord, error: float) -> str:
    """A test error % with the step of the kept model (and whether the run is partial)."""
    kept = "-" if record.best_step is None else f"{record.best_step:,}"
    return f"{error:.1f} ({kept}{', partial' if record.partial else ''})"


@register_table("babi-port")
def babi_port_table(records: list[RunRecord]) -> str:
    """The authors' port's protocol against ours, per task: each ``babi-port/NAME`` record
    (``task.validation: test``: trained on the whole training file, the kept model chosen on
    test) beside ``babi/NAME`` (chosen on the stories held out of training): the test error % of
    each (with the step of its kept model) and their difference; a last row per column gives the
    mean over the tasks both have and the failed tasks."""
    by_name = {r.experiment: r for r in family(records, "babi")}
    pairs: dict[str, list[tuple[int, RunRecord, RunRecord]]] = {}
    for port in family(records, "babi-port"):
        ours = by_name.get("babi/" + port.experiment.removeprefix("babi-port/"))
        if ours is None or len(tasks := run_tasks(port.metrics)) != 1 or run_tasks(ours.metrics) != tasks:
            continue
        pairs.setdefault(babi_group(ours.experiment), []).append((tasks[0], ours, port))
    if not pairs:
        return NO_RECORDS

    rows = []
    for column, runs in sorted(pairs.items()):
        errors = []  # (ours, the port's) per task
        for task, ours, port in sorted(runs, key=lambda run: run[0]):
            a, b = (r.metrics["test"][f"task{task}/error"] for r in (ours, port))
            errors.append((a, b))
            rows.append([column, str(task), _kept_cell(ours, a), _kept_cell(port, b), f"{b - a:+.1f}"])
        (a, b), (fa, fb) = ((average_error(e) for e in zip(*errors)), (sum(map(fails, e)) for e in zip(*errors)))
        rows.append([column, f"mean of {len(runs)}", f"{a:.2f} ({fa} failed)", f"{b:.2f} ({fb} failed)", f"{b - a:+.2f}"])
    header = ["column", "task", "a tenth of the stories held out, chosen on them: test error % (kept step)",
              "the port's protocol, every story trained, chosen on test: test error % (kept step)", "difference"]
    return markdown_table(header, rows)


@register_table("babi-data")
def babi_data_table(records: list[RunRecord]) -> str:
    """The test error against the amount of training data: each ``babi-data/SET/RECIPE/fracF/taskN``
    record (the first F of the 10k file's training stories, ``task.train_fraction``) beside the
    same recipe on the 1k file (``babi/en/RECIPE/taskN``), per task: test error % (kept step). A
    last row per recipe gives each column's mean and failed tasks over the tasks it has, beside
    the 1k file's mean on those tasks."""
    one_k = {r.experiment: r for r in family(records, "babi")}
    runs: dict[str, dict[int, dict[float, RunRecord]]] = {}  # recipe -> task -> fraction (0: the 1k file) -> run
    for record in family(records, "babi-data"):
        name = re.fullmatch(r"babi-data/[^/]+/(.+)/frac[^/]+/task\d+", record.experiment)
        if name is None or len(tasks := run_tasks(record.metrics)) != 1:
            continue
        by_fraction = runs.setdefault(name.group(1), {}).setdefault(tasks[0], {})
        by_fraction[float(record.config["task"].get("train_fraction", 1.0))] = record
        if (ours := one_k.get(f"babi/en/{name.group(1)}/task{tasks[0]}")) is not None:
            by_fraction[0.0] = ours
    if not runs:
        return NO_RECORDS
    columns = sorted({f for tasks in runs.values() for by_fraction in tasks.values() for f in by_fraction})

    def error(record: RunRecord, task: int) -> float:
        return record.metrics["test"][f"task{task}/error"]

    def mean_cell(tasks: dict[int, dict[float, RunRecord]], f: float) -> str:
        # Over the column's tasks, each beside the 1k file's mean on the same tasks (where it has them
        # all): columns run on different tasks compare through it.
        mine = [task for task, by_fraction in tasks.items() if f in by_fraction]
        if not mine:
            return "-"
        errors = [error(tasks[task][f], task) for task in mine]
        cell = f"{average_error(errors):.2f} ({sum(map(fails, errors))} of {len(mine)} failed"
        if f != 0.0 and all(0.0 in tasks[task] for task in mine):
            cell += f"; the 1k file {average_error(error(tasks[task][0.0], task) for task in mine):.2f}"
        return cell + ")"

    rows = []
    for recipe, tasks in sorted(runs.items()):
        for task, by_fraction in sorted(tasks.items()):
            cells = ["-" if (record := by_fraction.get(f)) is None else _kept_cell(record, error(record, task))
                     for f in columns]
            rows.append([recipe, str(task), *cells])
        rows.append([recipe, "mean", *(mean_cell(tasks, f) for f in columns)])
    header = ["recipe", "task", *("the 1k file: test error % (kept step)" if f == 0.0 else "the whole 10k file"
                                  if f == 1.0 else f"the first {f:g} of the 10k file" for f in columns)]
    return markdown_table(header, rows)


@register_table("babi-attention")
def babi_attention_table(records: list[RunRecord]) -> str:
    """Where the question looks (``babi-attention/NAME`` records: bAbI models re-scored with
    ``task.attention_stats``): per model and task, the test error, the question's attention on
    each supporting fact as the data lists them, on the other facts and on itself, and the facts
    per story (uniform attention gives each position ``1 / (facts + 1)``)."""
    rows = []
    for record in family(records, "babi-attention"):
        test = record.metrics.get("test", {})
        for task in sorted({int(m.group(1)) for k in test if (m := re.fullmatch(r"task(\d+)/attention_other", k))}):
            def cell(name: str) -> str:
                return fmt_accuracy(test.get(f"task{task}/{name}"))
            error = test.get(f"task{task}/error")
            rows.append([record.experiment.removeprefix("babi-attention/"), str(task),
                         "-" if error is None else f"{error:.1f}",
                         *(cell(f"attention_supporting{k}") for k in (1, 2, 3)),
                         cell("attention_other"), cell("attention_question"), fmt_accuracy(test.get(f"task{task}/story_facts"), 1)])
    if not rows:
        return NO_RECORDS
    header = ["model", "task", "test error %", "supporting 1", "supporting 2", "supporting 3", "other facts",
              "question", "facts per story"]
    return markdown_table(header, rows)


# The ponder-time study (configs/babi/ponder-study.grid): which ACT settings make the ponder
# time depend on the number of supporting facts, as the paper's Appendix reports.

PAPER_PONDER = {1: 2.3, 2: 3.1, 3: 3.8}  # the paper's mean ponder time on tasks 1 / 2 / 3
PAPER_PONDER_SPREAD = {1: 0.8, 2: 1.1, 3: 2.2}  # and its "±" over all positions (Section 3.1)


def ponder_study(records: list[RunRecord]) -> dict[str, dict[int, RunRecord]]:
    """Setting -> task -> record, of the ``babi-ponder/SETTING/taskN`` records, settings in
    descending ponder weight then halting bias (the grid's order)."""
    study: dict[str, dict[int, RunRecord]] = {}
    for record in family(records, "babi-ponder"):
        match = re.fullmatch(r"babi-ponder/(.+)/task(\d+)", record.experiment)
        if match:
            study.setdefault(match.group(1), {})[int(match.group(2))] = record

    def order(setting: str) -> tuple[float, float, str]:
        model = next(iter(study[setting].values())).config["model"]
        return -float(model.get("ponder_weight", 0.0)), -float(model.get("act_bias_init", 0.0)), setting

    return {setting: dict(sorted(study[setting].items())) for setting in sorted(study, key=order)}


@register_table("babi-ponder-study")
def ponder_study_table(records: list[RunRecord]) -> str:
    """One row per setting and task: halting bias, ponder weight, step limit, test error, the mean
    ponder time N + R (± std over positions) and that of supporting facts / other facts / the
    question, and the mean depth N (the steps alone, the paper's measure) beside the paper's."""
    study = ponder_study(records)
    if not study:
        return NO_RECORDS
    rows, partial_runs = [], []
    for setting, tasks in study.items():
        for task, r in tasks.items():
            test, model = r.metrics["test"], r.config["model"]
            rows.append([setting, fmt_accuracy(model.get("act_bias_init"), 1), str(model.get("ponder_weight")),
                         trained_depth(model), str(task),
                         f"{test[f'task{task}/error']:.1f}" if f"task{task}/error" in test else "-",
                         fmt_mean_std(test, f"task{task}/ponder_time", f"task{task}/ponder_std"),
                         role_ponder(test, f"task{task}/") or "-",
                         fmt_mean_std(test, f"task{task}/depth", f"task{task}/depth_std"),
                         f"{PAPER_PONDER.get(task, '-')}", str(r.steps), fmt_seconds(r.wall_time_seconds)])
            if r.partial:
                partial_runs.append((r.experiment, r.steps, r.wall_time_seconds))
    header = ["setting", "halting bias", "ponder weight", "step limit", "task", "test error %", "ponder time N + R",
              "supporting / other / question", "depth N", "paper's ponder time", "steps", "wall time"]
    return markdown_table(header, rows) + partial_footnote(partial_runs)


@register_table("babi-paper-depth")
def babi_paper_depth_table(records: list[RunRecord]) -> str:
    """The paper's ponder time on tasks 1 / 2 / 3 (Section 3.1: the depth, steps N without the
    remainder, mean ± spread over all positions of the test stories) beside the test depth of every
    bAbI run with ACT scored with it (``taskN/depth``), and task 3's depth of supporting facts,
    other facts and the question; with each run's readout, step limit and floor."""
    def depths(test: dict[str, Any]) -> str:
        return " / ".join(fmt_mean_std(test, f"task{t}/depth", f"task{t}/depth_std") for t in PAPER_PONDER)

    runs = sorted((r for r in family(records, "babi") if r.config["model"].get("act")
                   and any(f"task{t}/depth" in r.metrics.get("test", {}) for t in PAPER_PONDER)),
                  key=lambda r: r.experiment)
    if not runs:
        return NO_RECORDS
    rows = [["the paper (Section 3.1)", "-", "-", "-", "-",
             " / ".join(f"{PAPER_PONDER[t]} ± {PAPER_PONDER_SPREAD[t]}" for t in PAPER_PONDER), "-"]]
    for r in runs:
        test, model = r.metrics["test"], r.config["model"]
        rows.append([r.experiment.removeprefix("babi/") + (" (partial)" if r.partial else ""),
                     str(model.get("pooling", "last")), trained_depth(model), _halting_label(r),
                     " / ".join(f"{test[f'task{t}/error']:.1f}" if f"task{t}/error" in test else "-" for t in PAPER_PONDER),
                     depths(test),
                     " / ".join(fmt_accuracy(test.get(f"task3/depth_{role}")) for role in ("supporting", "other", "question"))])
    header = ["run", "readout", "step limit", "halting", "test error % (tasks 1 / 2 / 3)",
              "depth N (tasks 1 / 2 / 3)", "task 3 depth (supporting / other / question)"]
    return markdown_table(header, rows)


def _ponder_study_figure(records: list[RunRecord], out: Path) -> bool:
    study = ponder_study(records)
    curves = {setting: {task: (r.metrics["test"].get(f"task{task}/ponder_time"), r.metrics["test"].get(f"task{task}/ponder_std"))
                        for task, r in tasks.items() if f"task{task}/ponder_time" in r.metrics["test"]}
              for setting, tasks in study.items()}
    if not any(len(points) > 1 for points in curves.values()):
        return False
    from ...visualisation.babi import plot_ponder_by_facts  # matplotlib only when drawing

    plot_ponder_by_facts(curves, out, paper=PAPER_PONDER)
    return True


FIGURES["babi-ponder-study"] = _ponder_study_figure


def _babi_ponder_figure(records: list[RunRecord], out: Path) -> bool:
    """Mean test ponder time against the number of supporting facts (tasks 1, 2, 3) for each
    column of the bAbI table with ACT that has it for two of them or more (the joint models, the
    single-task models), beside the paper's 2.3 / 3.1 / 3.8; a fixed depth has nothing to show."""
    act = {babi_group(r.experiment) for r in family(records, "babi") if r.config.get("model", {}).get("act")}
    curves = {name: points for name, column in babi_columns(records).items()
              if name in act and len(points := ponder_by_supporting_facts(column)) > 1}
    if not curves:
        return False
    from ...visualisation.babi import plot_ponder_by_facts  # matplotlib only when drawing

    plot_ponder_by_facts(curves, out, paper=PAPER_PONDER)
    return True


FIGURES["babi-ponder"] = _babi_ponder_figure


def best_seed_per_task(runs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Task -> the run of ``runs`` (the seeds of one joint model) with the lowest validation error
    on that task, the first of them on a tie: the paper's Appendix C gives "the best seed run for
    each task" in the joint settings too, so its joint columns mix the tasks of several models."""
    best: dict[int, dict[str, Any]] = {}
    for task in sorted({task for run in runs for task in run_tasks(run)}):
        scored = [(error, i) for i, run in enumerate(runs) if (error := _babi_validation_error(run, task)) is not None]
        if scored:
            best[task] = runs[min(scored)[1]]
    return best


def _babi_validation_error(run: dict[str, Any], task: int) -> float | None:
    """A task's validation error (%) in a bAbI run summary: its ``taskN/error``, or a single-task run's mean."""
    validation = run.get("validation") or {}
    if f"task{task}/error" in validation:
        return validation[f"task{task}/error"]
    return validation.get("mean_error") if run_tasks(run) == (task,) else None


def babi_setting_column(records: list[RunRecord], data: str, joint: bool,
                        model: str) -> tuple[str, dict[int, dict[str, Any]]] | None:
    """The bAbI column (:func:`babi_columns`) of ``data`` (``en-10k``, ``en``), joint or single,
    of ``model`` (:func:`model_label`), that holds all 20 tasks, with the lowest mean validation
    error over them (the paper picks on validation too): its name and task -> run, or None."""
    return _setting_column(records, _babi_runs(records), data, joint, model)


def _setting_column(records: list[RunRecord], runs: dict[str, list[dict[str, Any]]], data: str, joint: bool,
                    model: str) -> tuple[str, dict[int, dict[str, Any]]] | None:
    """:func:`babi_setting_column` over the runs :func:`_babi_runs` grouped already."""
    # A run that resampled the tasks or batched them apart trained on other data or batches than the
    # paper's; one that started from another run's model (a curriculum), or went on from the model of
    # a run of these, trained in another order.
    by_name = {r.experiment: r for r in records}
    kinds = {babi_group(r.experiment): (not _TASK_SUFFIX.search(r.experiment), model_label(r.config))
             for r in family(records, f"babi/{data}") if not _off_protocol(r, by_name)}
    candidates = []
    for name, column in ((name, best_of_seeds(seeds)) for name, seeds in runs.items()):
        if kinds.get(name) != (joint, model) or sorted(column) != list(range(1, 21)):
            continue
        if any(run["test"].get("selection") == "per_task" for run in column.values()):
            continue  # a joint run's models picked per task (`ut eval --per-task`): neither reading whole
        validation = [_babi_validation_error(run, task) for task, run in column.items()]
        if None not in validation:
            candidates.append((statistics.mean(validation), name, column))  # type: ignore[arg-type]
    if not candidates:
        return None
    _, name, column = min(candidates, key=lambda c: c[0])
    return name, column


def babi_run_label(name: str, column: dict[int, dict[str, Any]]) -> str:
    """``babi/NAME``, marked partial where a run of the column stopped at its time limit, and
    naming the seeds picked where a column of several seeds did not pick seed 0 alone."""
    seeds, partial = _seeds_and_partial(list(column.values()))
    notes = ["partial"] if partial else []
    if seeds != [0]:
        notes.append(f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {', '.join(map(str, seeds))}, picked per task")
    return f"babi/{name}" + (f" ({'; '.join(notes)})" if notes else "")


def _seeds_and_partial(runs: list[dict[str, Any]]) -> tuple[list[int], bool]:
    """The seeds of ``runs``, sorted, and whether one of them stopped at its time limit."""
    seeds = sorted({seed for run in runs for seed in run["seeds"]})
    return seeds, any(run["status"] == "time_limit" for run in runs)
