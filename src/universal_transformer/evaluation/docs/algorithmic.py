"""The algorithmic tasks' tables and figures (the paper's Section 3.4, Table 4: Copy, Reverse,
Addition) and the README demo's, one row per task and model or per run."""

from __future__ import annotations

import json
import re
import statistics
from functools import partial
from pathlib import Path
from typing import Any, Callable

from ..algorithmic_report import TASK_ORDER
from ..records import RunRecord
from .common import (
    MODELS, NO_RECORDS, cell_record, family, fmt_accuracy, fmt_parameters, fmt_seconds, inference_steps,
    markdown_table, model_label, ordered, partial_footnote, partial_runs, status_label, task_label, trained_depth,
)
from .sections import FIGURES, FigureBuilder, register_table




def _algorithmic_groups(records: list[RunRecord]) -> dict[tuple[str, str], list[RunRecord]]:
    """(task, model) -> its records (seeds, and variants such as another width)."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        groups.setdefault((task_label(record.config), model_label(record.config)), []).append(record)
    return groups


def _cells(groups: dict[tuple[str, str], list[RunRecord]]) -> dict[tuple[str, str], RunRecord]:
    """(task, model) -> the record its cell shows (:func:`cell_record`), of ``groups`` of :func:`_algorithmic_groups`."""
    return {key: cell_record(group) for key, group in groups.items()}


def algorithmic_cells(records: list[RunRecord]) -> dict[tuple[str, str], RunRecord]:
    """(task, model) -> the record its cell shows (:func:`cell_record`)."""
    return _cells(_algorithmic_groups(records))


def variants_footnote(groups: dict[tuple[str, str], list[RunRecord]]) -> str:
    """A footnote for the cells that one of several runs fills (``groups`` of
    :func:`_algorithmic_groups`, the run :func:`cell_record` picks), naming the run shown and the others with their parameter
    counts (a wider UT is still a "UT"), or ''."""
    notes = []
    for (task, model), group in sorted(groups.items()):
        if len({r.experiment for r in group}) < 2:
            continue
        shown = cell_record(group)
        others = sorted({(r.experiment, r.parameters, not r.metrics["test"]) for r in group
                         if r.experiment != shown.experiment})
        notes.append(f"{task} {model}: {shown.experiment} ({fmt_parameters(shown.parameters)} parameters; also "
                     + ", ".join(f"{e} ({fmt_parameters(n)}" + (", not scored on test" if unscored else "") + ")"
                                 for e, n, unscored in others) + ")")
    return "\n\nbest on validation of several runs: " + "; ".join(notes) if notes else ""


def accuracy_cell(record: RunRecord, length: int | None, *, label_partial: bool = True, prefix: str = "") -> str:
    """``char / seq`` test accuracy at ``length`` (None: of the one test set), of the metrics
    named ``prefix...`` (e.g. ``beam4/``) ("-" if not measured)."""
    test = record.metrics["test"]
    at = prefix + ("" if length is None else f"len{length}/")
    char, seq = test.get(f"{at}char_accuracy"), test.get(f"{at}sequence_accuracy")
    if char is None and seq is None:
        return "-"
    return f"{fmt_accuracy(char)} / {fmt_accuracy(seq)}" + (" (partial)" if label_partial and record.partial else "")


def _lengths(records: list[RunRecord]) -> list[int]:
    found = {int(m.group(1)) for r in records for k in r.metrics["test"] if (m := re.fullmatch(r"len(\d+)/char_accuracy", k))}
    return sorted(found)


def _up_to_lengths(records: list[RunRecord]) -> list[int]:
    """The N of the test sets of lengths 1..N (metrics ``uptoN/...``) the records hold."""
    found = {int(m.group(1)) for r in records for k in r.metrics["test"] if (m := re.fullmatch(r"upto(\d+)/char_accuracy", k))}
    return sorted(found)


def task_table(records: list[RunRecord], name: str, order: tuple[str, ...], length: int | None, *,
                prefix: str = "") -> str:
    """Rows = models, columns = tasks of the family ``name``; cells = test char / sequence
    accuracy (at ``length``, or of the one test set; metrics named ``prefix...``) of the best
    seed on validation, "(partial)" after a run stopped by its time limit."""
    groups = _algorithmic_groups(family(records, name))
    cells = _cells(groups)
    if not cells:
        return NO_RECORDS
    tasks = ordered({t for t, _ in cells}, order)
    models = ordered({m for _, m in cells}, MODELS)
    rows = [[model, *(accuracy_cell(cells[t, model], length, prefix=prefix) if (t, model) in cells else "-"
                      for t in tasks)] for model in models]
    suffix = "" if length is None else f" (len {length})"
    return (markdown_table(["model", *(f"{t.capitalize()}{suffix}" for t in tasks)], rows)
            + partial_footnote(partial_runs(cells)) + variants_footnote(groups))


def algorithmic_table(records: list[RunRecord], length: int, *, name: str = "algorithmic") -> str:
    """The algorithmic tasks at test ``length`` (see :func:`task_table`)."""
    return task_table(records, name, TASK_ORDER, length)


def curve_table(records: list[RunRecord], *, name: str = "algorithmic", prefix: str = "") -> str:
    """One row per task and model: char / sequence accuracy at every test length (of the
    metrics named ``prefix...``, e.g. ``teacher_forced/``), the encoder ponder time at the
    longest length (where measured), steps, best step, wall time and status of the run."""
    groups = _algorithmic_groups(family(records, name))
    cells = _cells(groups)
    if not cells:
        return NO_RECORDS
    lengths = _lengths(list(cells.values()))
    longest = lengths[-1] if lengths else None
    with_ponder = any(f"len{longest}/encoder_ponder_time" in r.metrics["test"] for r in cells.values())
    header = ["task", "model", *(f"len {n}" for n in lengths)]
    header += [f"ponder (len {longest})"] * with_ponder + ["steps", "best step", "wall time", "status"]
    rows = []
    for task in ordered({t for t, _ in cells}, TASK_ORDER):
        for model in ordered({m for t, m in cells if t == task}, MODELS):
            record = cells[task, model]
            ponder = record.metrics["test"].get(f"len{longest}/encoder_ponder_time")
            rows.append([task, model, *(accuracy_cell(record, n, label_partial=False, prefix=prefix) for n in lengths)]
                        + ([fmt_accuracy(ponder)] if with_ponder else [])
                        + [str(record.steps), str(record.best_step if record.best_step is not None else "-"),
                           fmt_seconds(record.wall_time_seconds), status_label(record)])
    return markdown_table(header, rows) + variants_footnote(groups)


def mixed_length_table(records: list[RunRecord], *, name: str = "algorithmic") -> str:
    """One row per task and model: char / sequence accuracy on the test sets of lengths 1..N
    (``task.test_lengths_up_to``, metrics ``uptoN/...``), greedy and teacher-forced, the
    shape and scoring of tensor2tensor's evaluation of these problems."""
    cells = algorithmic_cells(family(records, name))
    tops = _up_to_lengths(list(cells.values()))
    if not tops:
        return NO_RECORDS
    header = ["task", "model"] + [f"lengths 1..{n}, {how}" for n in tops for how in ("greedy", "teacher-forced")]
    rows = []
    for task in ordered({t for t, _ in cells}, TASK_ORDER):
        for model in ordered({m for t, m in cells if t == task}, MODELS):
            record = cells[task, model]
            rows.append([task, model, *(accuracy_cell(record, None, label_partial=False, prefix=f"{forced}upto{n}/")
                                        for n in tops for forced in ("", "teacher_forced/"))])
    return markdown_table(header, rows)


def model_rows_table(records: list[RunRecord], *, name: str) -> str:
    """One row per record of the family ``name`` (e.g. models of one run at several training
    steps, each re-scored with ``ut eval RUN --model ...`` and named for its step): greedy and
    teacher-forced char / sequence accuracy at every test length and on the sets of lengths 1..N,
    then the run's steps (best step) and wall time, which differ between the rows' runs. Records
    decoded by beam search too (``beamK/...``, ``task.beam_size``) add a column per set and K."""
    runs = sorted(family(records, name, windows=True), key=lambda r: r.experiment)
    if not runs:
        return NO_RECORDS
    lengths = _lengths(runs)
    tops = _up_to_lengths(runs)
    sets = [(f"len {n}", f"len{n}/") for n in lengths] + [(f"1..{n}", f"upto{n}/") for n in tops]
    beams = sorted({int(m.group(1)) for r in runs for k in r.metrics["test"] if (m := re.match(r"beam(\d+)/", k))})
    decodings = [("greedy", ""), ("forced", "teacher_forced/"), *((f"beam {k}", f"beam{k}/") for k in beams)]
    header = ["model"] + [f"{label}, {how}" for label, _ in sets for how, _ in decodings] + ["steps (best)", "wall time"]
    rows = [[r.experiment.removeprefix(name + "/"),
             *(accuracy_cell(r, None, label_partial=False, prefix=decoding + key)
               for _, key in sets for _, decoding in decodings),
             f"{r.steps} ({r.best_step if r.best_step is not None else '-'})", fmt_seconds(r.wall_time_seconds)] for r in runs]
    return markdown_table(header, rows)


def _mean_sd(values: list[float]) -> str:
    """``mean ± sample sd`` with two decimals (the mean alone for one value)."""
    if len(values) == 1:
        return fmt_accuracy(values[0])
    return f"{fmt_accuracy(statistics.mean(values))} ± {fmt_accuracy(statistics.stdev(values))}"


def seeds_rows_table(records: list[RunRecord], *, name: str) -> str:
    """One row per experiment of the family ``name`` run with several seeds (records ``EXP`` and
    ``EXP/seed-N``, all scored on test): greedy and teacher-forced char / sequence accuracy at
    every test length and on the sets of lengths 1..N, as mean ± sample sd over the seeds."""
    groups: dict[str, list[RunRecord]] = {}
    for r in family(records, name):
        if r.metrics["test"]:
            groups.setdefault(re.sub(r"/seed-\d+$", "", r.experiment.removeprefix(name + "/")), []).append(r)
    groups = {k: v for k, v in sorted(groups.items()) if len(v) > 1}
    if not groups:
        return NO_RECORDS
    runs = [r for group in groups.values() for r in group]
    sets = [(f"len {n}", f"len{n}/") for n in _lengths(runs)] + [(f"1..{n}", f"upto{n}/") for n in _up_to_lengths(runs)]
    decodings = [("greedy", ""), ("forced", "teacher_forced/")]

    def cell(group: list[RunRecord], key: str) -> str:
        values = [[r.metrics["test"].get(f"{key}{m}_accuracy") for r in group] for m in ("char", "sequence")]
        if any(v is None for v in values[0] + values[1]):
            return "-"
        return " / ".join(_mean_sd(v) for v in values)

    header = ["model", "seeds"] + [f"{label}, {how}" for label, _ in sets for how, _ in decodings]
    rows = [[experiment, ", ".join(str(r.seeds[0]) for r in group),
             *(cell(group, decoding + key) for _, key in sets for _, decoding in decodings)]
            for experiment, group in groups.items()]
    return markdown_table(header, rows)


def depth_table(records: list[RunRecord], *, name: str = "algorithmic", prefix: str = "") -> str:
    """Test-time depth: for every run re-scored with other recurrent steps (``ut eval
    --steps``, :func:`inference_steps`), one row per depth, the training depth first, with
    char / sequence accuracy at every test length (of the metrics named ``prefix...``, e.g.
    ``teacher_forced/``). A re-scored record is matched to its
    trained run by what it copies from it: the command, seeds and config of the training;
    the trained row is the run's own record (not another re-score of it, e.g. averaged
    checkpoints)."""
    def run_key(record: RunRecord) -> tuple[str, str, str]:
        return record.command, str(record.seeds), json.dumps(record.config, sort_keys=True)

    runs = family(records, name, other_depths=True)
    deeper: dict[tuple[str, str, str], list[RunRecord]] = {}
    trained: dict[tuple[str, str, str], list[RunRecord]] = {}
    for record in runs:
        (trained if inference_steps(record) is None else deeper).setdefault(run_key(record), []).append(record)
    if not deeper:
        return NO_RECORDS
    lengths = _lengths([r for group in deeper.values() for r in group])
    task_rank = {t: i for i, t in enumerate(TASK_ORDER)}
    model_rank = {m: i for i, m in enumerate(MODELS)}

    def order(item: tuple[tuple[str, str, str], list[RunRecord]]) -> tuple:
        first = item[1][0]
        task, model = task_label(first.config), model_label(first.config)
        return task_rank.get(task, len(task_rank)), task, model_rank.get(model, len(model_rank)), first.experiment

    rows = []
    for key, group in sorted(deeper.items(), key=order):
        task, model = task_label(group[0].config), model_label(group[0].config)
        shown = []
        if key in trained:  # the training record itself first, then the shortest name (the run's)
            own = min(trained[key], key=lambda r: (r.status == "rescored", len(r.experiment), r.experiment))
            shown.append((f"{trained_depth(own.config['model'])} (trained)", own))
        shown += [(str(inference_steps(r)), r) for r in sorted(group, key=inference_steps)]
        rows += [[task, model, steps, *(accuracy_cell(r, n, label_partial=False, prefix=prefix) for n in lengths)]
                 for steps, r in shown]
    return markdown_table(["task", "model", "steps at test", *(f"len {n}" for n in lengths)], rows)


def error_position_table(records: list[RunRecord], *, names: tuple[str, ...], length: int,
                         rescored: str | None = None) -> str:
    """Where along the target the wrong tokens of a length-``length`` test set are: one row
    per record of the families ``names`` that measured it (``teacher_forced/lenN/error_rate_by_tenth``,
    :func:`~universal_transformer.evaluation.metrics.teacher_forced_accuracy`), the share of
    wrong tokens in each tenth of the targets, teacher-forced, so that one mistake does not
    hide the ones after it, and in all; then the share of targets whose end of sequence is
    predicted where it is, and of those whose every label before it is right. A run that
    the family ``rescored`` re-scores (same command and seeds) shows only there."""
    key = f"teacher_forced/len{length}/error_rate_by_tenth"
    runs = [r for name in names for r in family(records, name, other_depths=True)
            if isinstance(r.metrics["test"].get(key), list)]
    if rescored is not None:  # keep the re-score, drop the run's own record
        again = {(r.command, tuple(r.seeds)) for r in family(records, rescored, other_depths=True)}
        runs = [r for r in runs if r.experiment.startswith(rescored + "/") or (r.command, tuple(r.seeds)) not in again]
    runs.sort(key=lambda r: r.experiment)
    if not runs:
        return NO_RECORDS
    header = ["record", *(f"{10 * i}-{10 * (i + 1)}%" for i in range(10)), "all", "end right", "right before end"]
    forced = f"teacher_forced/len{length}/"
    rows = [[r.experiment, *(fmt_accuracy(v, 3) for v in r.metrics["test"][key]),
             fmt_accuracy(1 - r.metrics["test"][forced + "char_accuracy"], 3),
             fmt_accuracy(r.metrics["test"].get(forced + "end_accuracy")),
             fmt_accuracy(r.metrics["test"].get(forced + "sequence_accuracy_before_end"))] for r in runs]
    return markdown_table(header, rows)


def length_curves(records: list[RunRecord], *, name: str = "algorithmic", prefix: str = "",
                  select: Callable[[RunRecord], bool] | None = None) -> dict[str, dict[str, list[tuple[int, Any, Any]]]]:
    """Task -> model -> ``(test length, char accuracy, sequence accuracy)`` at every length
    the best seed on validation was tested at (``None`` where not measured), tasks and
    models in the tables' order; runs without test metrics (partial) are left out. ``prefix``
    picks the metrics (``teacher_forced/``: given the true target prefix), ``select`` the
    family's records that compete (all of them by default)."""
    cells = algorithmic_cells([r for r in family(records, name) if select is None or select(r)])
    curves: dict[str, dict[str, list[tuple[int, Any, Any]]]] = {}
    for task in ordered({t for t, _ in cells}, TASK_ORDER):
        for model in ordered({m for t, m in cells if t == task}, MODELS):
            test = cells[task, model].metrics["test"]
            points = [(n, test.get(f"{prefix}len{n}/char_accuracy"), test.get(f"{prefix}len{n}/sequence_accuracy"))
                      for n in _lengths([cells[task, model]])]
            if points:
                curves.setdefault(task, {})[model] = points
    return curves


def _draw_length_curves(curves: dict[str, dict[str, list[tuple[int, Any, Any]]]], out: Path, title: str) -> bool:
    """Plot ``curves`` (panel -> model -> points, as :func:`length_curves` gives) to ``out``;
    False, drawing nothing, when no run was tested at two lengths."""
    if not any(len(points) > 1 for models in curves.values() for points in models.values()):
        return False
    from ...visualisation.algorithmic import plot_length_curves  # matplotlib only when drawing

    plot_length_curves(curves, out, title=title)
    return True


def _length_curve_figure(name: str, title: str) -> FigureBuilder:
    def build(records: list[RunRecord], out: Path) -> bool:
        return _draw_length_curves(length_curves(records, name=name), out, title)

    build.__doc__ = f"Accuracy against test length of the ``{name}/...`` records (:func:`length_curves`)."
    return build


for _length in (40, 400):  # the paper's training and test lengths
    register_table(f"algorithmic-len{_length}")(partial(algorithmic_table, length=_length))
del _length
register_table("algorithmic-curve")(curve_table)
# The same runs scored as tensor2tensor scores by default: the argmax given the true target prefix.
register_table("algorithmic-curve-teacher-forced")(partial(curve_table, prefix="teacher_forced/"))
register_table("algorithmic-mixed-lengths")(mixed_length_table)
# One Copy UT's models after more training than validation can tell apart (results/algorithmic-longer).
register_table("algorithmic-longer")(partial(model_rows_table, name="algorithmic-longer"))
register_table("algorithmic-depth")(depth_table)
# Copy UTs trained with other numbers of recurrent steps (results/algorithmic-trained-depth).
register_table("algorithmic-trained-depth")(partial(model_rows_table, name="algorithmic-trained-depth"))
# Where the wrong tokens of the length-400 test sets are, along the target (algorithmic-errors:
# trained runs re-scored at length 400 alone to measure it).
register_table("algorithmic-error-position")(partial(
    error_position_table, names=("algorithmic", "algorithmic-offsets", "algorithmic-trained-depth", "algorithmic-errors",
                                 "algorithmic-source-eos", "algorithmic-prenorm"), length=400, rescored="algorithmic-errors"))
# Runs whose sources end with EOS (task.source_eos), and runs with source and target offsets apart.
register_table("algorithmic-source-eos")(partial(model_rows_table, name="algorithmic-source-eos"))
register_table("algorithmic-offsets")(partial(model_rows_table, name="algorithmic-offsets"))
# The tiny UTs pre-norm (configs/algorithmic/prenorm.grid), as tensor2tensor normalises.
register_table("algorithmic-prenorm")(partial(model_rows_table, name="algorithmic-prenorm"))
register_table("algorithmic-prenorm-seeds")(partial(seeds_rows_table, name="algorithmic-prenorm"))
# Trained models re-scored with local attention at test time (ut eval --attention-window).
register_table("algorithmic-window")(partial(model_rows_table, name="algorithmic-window"))
register_table("algorithmic-prenorm-depth")(partial(depth_table, name="algorithmic-prenorm"))
# Addition with operands drawn as tensor2tensor draws them (task.operand_lengths: tensor2tensor).
register_table("algorithmic-t2t-operands")(partial(model_rows_table, name="algorithmic-t2t-operands"))
register_table("algorithmic-t2t-operands-depth")(partial(depth_table, name="algorithmic-t2t-operands"))
register_table("algorithmic-t2t-operands-depth-teacher-forced")(
    partial(depth_table, name="algorithmic-t2t-operands", prefix="teacher_forced/"))
# Trained runs re-scored with beam search (`ut eval RUN --split test --set task.beam_size=K`).
register_table("algorithmic-beam")(partial(model_rows_table, name="algorithmic-beam"))
# Small-scale Reverse (train 1..10, test to 40) over recipe choices (configs/algorithmic/mini.grid).
register_table("algorithmic-mini")(partial(model_rows_table, name="algorithmic-mini"))
register_table("demo-depth")(partial(depth_table, name="demo"))
register_table("demo")(partial(curve_table, name="demo"))
FIGURES["algorithmic-length"] = _length_curve_figure(
    "algorithmic", "Copy, Reverse, Addition: trained on lengths up to 40 (results/algorithmic)")
FIGURES["demo-length"] = _length_curve_figure("demo", "ut demo: Copy trained on lengths up to 10 (results/demo)")


def _position_free_figure(records: list[RunRecord], out: Path) -> bool:
    """Accuracy against test length of the position-free runs of ``algorithmic-prenorm``
    (``model.position_embedding: none``), greedy and teacher-forced, a panel for each."""
    def position_free(record: RunRecord) -> bool:
        return record.config.get("model", {}).get("position_embedding") == "none"

    scored = {how: length_curves(records, name="algorithmic-prenorm", prefix=prefix, select=position_free)
              for how, prefix in (("greedy", ""), ("teacher-forced", "teacher_forced/"))}
    curves = {f"{task}, {how}": scored[how][task] for task in scored["greedy"] for how in scored}
    return _draw_length_curves(curves, out, "Without a position signal (sepconv_t2t, position_embedding: none): "
                                            "trained on lengths up to 40 (results/algorithmic-prenorm)")


FIGURES["algorithmic-position-free-length"] = _position_free_figure
