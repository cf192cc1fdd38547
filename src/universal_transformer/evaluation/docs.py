"""Generated sections of a markdown file: the tables of ``docs/results.md`` from run records.

A generated section is everything between two marker lines, each alone on its line::

    <!-- generated: NAME -->
    (the table; replaced by ``ut report``)
    <!-- end generated: NAME -->

``NAME`` is a table in :data:`TABLES` (``algorithmic-len400``, ``babi``, ``runs``, ...).
:func:`render` replaces the lines between the markers with the table built from the
records (framed by one blank line each side) and leaves every other line as it is, so the
prose around the tables stays hand-written. Sections cannot nest; markers inside fenced
code blocks (outside a section) are text, not markers. The markers are HTML comments,
invisible in rendered markdown.

Table families take the records whose experiment name starts with the family:
``algorithmic/...`` for the algorithmic tables, ``babi/...`` for the bAbI tables,
``demo/...`` for the demo table, ``lm/ptb...`` (models trained on Penn Treebank) for the
language-modelling tables; ``runs`` takes all. Where several seeds (records) fill
one cell, the one with the best validation ``score`` is shown, as the paper picks its best
seed. A run stopped by its time limit is labelled *partial*.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

from ..data.lte import PROGRAM_OPERATIONS
from ..tasks.babi import parse_tasks
from .algorithmic_report import MODEL_NAMES, MODEL_ORDER, TASK_ORDER
from .lte_report import MEMORISATION_ORDER, PROGRAM_ORDER
from .babi_report import (
    FAIL_ABOVE, PAPER_AVERAGE, PAPER_BEST_OF_10, baseline_table, best_of_seeds, error_table, paper_table,
    ponder_by_supporting_facts, ponder_table, role_ponder, role_ponder_table, run_tasks, runs_table, seeds_table,
)
from .records import RunRecord

Builder = Callable[[list[RunRecord]], str]
TABLES: dict[str, Builder] = {}
"""Table builders by section name; fill it with :func:`register_table`."""
FigureBuilder = Callable[[list[RunRecord], Path], bool]
FIGURES: dict[str, FigureBuilder] = {}
"""Figure builders by name: ``builder(records, path)`` draws ``path`` (a PNG) and returns
True, or returns False when the records hold nothing to draw; :func:`update_figures`."""

STATUS_LABELS = {"done": "done", "early_stopped": "early stopped", "time_limit": "partial", "rescored": "rescored"}
NO_RECORDS = "_No records yet._"

_START = re.compile(r"\s*<!--\s*generated:\s*(\S+)\s*-->\s*")
_END = re.compile(r"\s*<!--\s*end generated:\s*(\S+)\s*-->\s*")
_MARKER_LIKE = re.compile(r"\s*<!--\s*(end\s+)?generated\b")
_FENCE = re.compile(r"\s*(```|~~~)")


class DocsError(ValueError):
    """A markdown file's generated sections are malformed; the message names the line."""


def register_table(name: str) -> Callable[[Builder], Builder]:
    """Decorator: register ``builder(records) -> markdown`` as the section ``name``."""
    if not re.fullmatch(r"\S+", name):
        raise ValueError(f"table name {name!r} must be one word (no spaces)")

    def decorator(builder: Builder) -> Builder:
        if name in TABLES:
            raise ValueError(f"table {name!r} is registered twice")
        TABLES[name] = builder
        return builder

    return decorator


@dataclass(frozen=True)
class Section:
    """A generated section: its table name and the 1-based lines of its two markers."""

    name: str
    start: int
    end: int


def find_sections(text: str, *, source: str = "<text>") -> list[Section]:
    """The generated sections of ``text``; malformed, unbalanced or nested markers and unknown
    table names raise :class:`DocsError` naming ``source`` and the line."""
    sections: list[Section] = []
    open_name, open_line, fence = None, 0, None
    for number, line in enumerate(text.split("\n"), start=1):
        where = f"{source}, line {number}"
        if open_name is None:
            fence_match = _FENCE.match(line)
            if fence_match:
                fence = None if fence == fence_match.group(1) else fence or fence_match.group(1)
                continue
            if fence is not None:
                continue
        start, end = _START.fullmatch(line), _END.fullmatch(line)
        if start:
            if open_name is not None:
                raise DocsError(f"{where}: section {start.group(1)!r} starts inside section {open_name!r} "
                                f"(opened on line {open_line}); sections cannot nest")
            if start.group(1) not in TABLES:
                raise DocsError(f"{where}: unknown table {start.group(1)!r}; known: {', '.join(sorted(TABLES))}")
            open_name, open_line = start.group(1), number
        elif end:
            if open_name is None:
                raise DocsError(f"{where}: end marker of {end.group(1)!r} without its start marker")
            if end.group(1) != open_name:
                raise DocsError(f"{where}: end marker of {end.group(1)!r}, but section {open_name!r} "
                                f"(line {open_line}) is open")
            sections.append(Section(open_name, open_line, number))
            open_name = None
        elif _MARKER_LIKE.match(line):
            raise DocsError(f"{where}: malformed marker {line.strip()!r}; expected "
                            "'<!-- generated: NAME -->' or '<!-- end generated: NAME -->' alone on the line")
    if open_name is not None:
        raise DocsError(f"{source}, line {open_line}: section {open_name!r} is never closed "
                        f"(no '<!-- end generated: {open_name} -->')")
    return sections


def _body(name: str, records: list[RunRecord]) -> list[str]:
    """The lines between a section's markers: the table, one blank line each side."""
    return ["", *TABLES[name](records).strip("\n").split("\n"), ""]


def render(text: str, records: list[RunRecord], *, source: str = "<text>") -> str:
    """``text`` with the body of every generated section replaced by its table."""
    lines = text.split("\n")
    out: list[str] = []
    done = 0  # lines before this index are copied or replaced
    for section in find_sections(text, source=source):
        out += lines[done:section.start] + _body(section.name, records)
        done = section.end - 1  # the end marker and what follows
    return "\n".join(out + lines[done:])


def stale_sections(text: str, records: list[RunRecord], *, source: str = "<text>") -> list[str]:
    """Names of the sections whose body differs from what ``records`` generate."""
    lines = text.split("\n")
    return [s.name for s in find_sections(text, source=source) if lines[s.start:s.end - 1] != _body(s.name, records)]


def update_file(path: str | Path, records: list[RunRecord], check: bool = False) -> bool:
    """Regenerate the sections of the markdown file ``path``. Returns True when the file was
    already up to date. With ``check`` nothing is written; otherwise the file is written
    only if something changed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise DocsError(f"{path}: cannot read: {err.strerror or err}") from None
    new = render(text, records, source=str(path))
    if new == text:
        return True
    if not check:
        path.write_text(new, encoding="utf-8")
    return False


def update_figures(folder: str | Path, records: list[RunRecord]) -> dict[str, Path | None]:
    """Draw every figure of :data:`FIGURES` that the records hold data for as
    ``folder/NAME.png`` (removing one they no longer hold data for); returns name -> the
    path written, or None (nothing to draw)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    drawn: dict[str, Path | None] = {}
    for name, build in FIGURES.items():
        path = folder / f"{name}.png"
        drawn[name] = path if build(records, path) else None
        if drawn[name] is None:
            path.unlink(missing_ok=True)  # its records are gone: so is the figure
    return drawn


# Shared cell formats, so every table prints numbers the same way.

def fmt_seconds(seconds: float) -> str:
    """Wall time in whole seconds, e.g. ``573 s``."""
    return f"{seconds:.0f} s"


def fmt_accuracy(value: Any, digits: int = 2) -> str:
    """An accuracy (or ponder time) with two decimals (or ``digits``); ``-`` when not a number."""
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "-"


def fmt_perplexity(value: Any) -> str:
    """A perplexity with one decimal; ``-`` when not a number."""
    return f"{value:.1f}" if isinstance(value, (int, float)) else "-"


def fmt_parameters(count: int | None) -> str:
    """A parameter count in millions, e.g. ``1.91M``; ``-`` when the record lacks it."""
    return f"{count / 1e6:.2f}M" if count is not None else "-"


def status_label(record: RunRecord) -> str:
    """``partial`` for a run stopped by its time limit; else how it ended."""
    return STATUS_LABELS[record.status]


def family(records: list[RunRecord], name: str, *, other_depths: bool = False, windows: bool = False) -> list[RunRecord]:
    """The records of experiments named ``NAME/...``; those re-scored at another depth than
    the model was trained with (:func:`inference_steps`) only with ``other_depths``, those
    re-scored with local attention at test time (:func:`inference_window`) only with ``windows``."""
    return [r for r in records if r.experiment.startswith(name + "/") and (other_depths or inference_steps(r) is None)
            and (windows or inference_window(r) is None)]


def best_on_validation(records: list[RunRecord]) -> RunRecord:
    """The record with the highest validation ``score`` (the first of equals)."""
    return max(records, key=lambda r: r.metrics["validation"].get("score", float("-inf")))


def partial_footnote(runs: list[tuple[str, int, float]]) -> str:
    """A footnote naming the partial runs (experiment, steps, wall seconds) shown in a
    table, or '' when there are none."""
    if not runs:
        return ""
    return "\n\npartial = stopped at its time limit: " + ", ".join(
        f"{name} (step {steps}, {fmt_seconds(seconds)})" for name, steps, seconds in sorted(set(runs)))


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: list[str], rows: list[list[str]]) -> str:
    return "\n".join([_row(header), "|---" * len(header) + "|", *map(_row, rows)])


# Algorithmic tasks (the paper's section 3: Copy, Reverse, Addition).

MODELS = tuple(MODEL_NAMES[m] for m in MODEL_ORDER)  # row order: LSTM, Transformer, UT, UT+ACT
LSTM_CLASSES = ("LSTMSeq2Seq", "LSTMLanguageModel")


def model_label(config: dict[str, Any]) -> str:
    """LSTM, Transformer, UT or UT+ACT, from a resolved experiment config."""
    if config.get("model_class") in LSTM_CLASSES:
        return "LSTM"
    model = config.get("model") or {}
    if model.get("share_weights", True) is False:
        return "Transformer"
    return "UT+ACT" if model.get("act", False) else "UT"


def inference_window(record: RunRecord) -> int | None:
    """The attention window that ``ut eval --attention-window`` re-scored a record with (a test-time
    change of the model), else None. Such records appear only in tables of rows per record."""
    for split in ("test", "validation"):
        window = record.metrics[split].get("inference_attention_window")
        if window is not None:
            return window
    return None


def inference_steps(record: RunRecord) -> int | None:
    """The recurrent steps (ACT: step limit) that ``ut eval --steps`` re-scored a record at
    (test-time depth; the key is in the re-scored split's metrics), else None. Such records
    are left out of the model tables, which show the depth each model was trained with."""
    for split in ("test", "validation"):
        steps = record.metrics[split].get("inference_steps")
        if steps is not None:
            return steps
    return None


def _algorithmic_groups(records: list[RunRecord]) -> dict[tuple[str, str], list[RunRecord]]:
    """(task, model) -> its records (seeds, and variants such as another width)."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        groups.setdefault((str(record.config["task"].get("task")), model_label(record.config)), []).append(record)
    return groups


def cell_record(group: list[RunRecord]) -> RunRecord:
    """The record a table cell shows for a group of runs (seeds, variants): the best on
    validation among those with test metrics, so that a partial run that was never scored
    on test (its checkpoint gone with its machine) does not hide a finished one; the best
    of all when none has test metrics. The partial run stays in the progress table."""
    return best_on_validation([r for r in group if r.metrics["test"]] or group)


def _cells(groups: dict[tuple[str, str], list[RunRecord]]) -> dict[tuple[str, str], RunRecord]:
    """(task, model) -> the record its cell shows (:func:`cell_record`), of ``groups`` of :func:`_algorithmic_groups`."""
    return {key: cell_record(group) for key, group in groups.items()}


def _algorithmic_cells(records: list[RunRecord]) -> dict[tuple[str, str], RunRecord]:
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


def _ordered(present: set[str], order: tuple[str, ...]) -> list[str]:
    return [x for x in order if x in present] + sorted(present - set(order))


def _accuracy_cell(record: RunRecord, length: int | None, *, label_partial: bool = True, prefix: str = "") -> str:
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


def _task_table(records: list[RunRecord], name: str, order: tuple[str, ...], length: int | None, *,
                prefix: str = "") -> str:
    """Rows = models, columns = tasks of the family ``name``; cells = test char / sequence
    accuracy (at ``length``, or of the one test set; metrics named ``prefix...``) of the best
    seed on validation, "(partial)" after a run stopped by its time limit."""
    groups = _algorithmic_groups(family(records, name))
    cells = _cells(groups)
    if not cells:
        return NO_RECORDS
    tasks = _ordered({t for t, _ in cells}, order)
    models = _ordered({m for _, m in cells}, MODELS)
    rows = [[model, *(_accuracy_cell(cells[t, model], length, prefix=prefix) if (t, model) in cells else "-"
                      for t in tasks)] for model in models]
    suffix = "" if length is None else f" (len {length})"
    return (_table(["model", *(f"{t.capitalize()}{suffix}" for t in tasks)], rows)
            + partial_footnote(_partial_runs(cells)) + variants_footnote(groups))


def algorithmic_table(records: list[RunRecord], length: int, *, name: str = "algorithmic") -> str:
    """The algorithmic tasks at test ``length`` (see :func:`_task_table`)."""
    return _task_table(records, name, TASK_ORDER, length)


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
    for task in _ordered({t for t, _ in cells}, TASK_ORDER):
        for model in _ordered({m for t, m in cells if t == task}, MODELS):
            record = cells[task, model]
            ponder = record.metrics["test"].get(f"len{longest}/encoder_ponder_time")
            rows.append([task, model, *(_accuracy_cell(record, n, label_partial=False, prefix=prefix) for n in lengths)]
                        + ([fmt_accuracy(ponder)] if with_ponder else [])
                        + [str(record.steps), str(record.best_step if record.best_step is not None else "-"),
                           fmt_seconds(record.wall_time_seconds), status_label(record)])
    return _table(header, rows) + variants_footnote(groups)


def mixed_length_table(records: list[RunRecord], *, name: str = "algorithmic") -> str:
    """One row per task and model: char / sequence accuracy on the test sets of lengths 1..N
    (``task.test_lengths_up_to``, metrics ``uptoN/...``), greedy and teacher-forced, the
    shape and scoring of tensor2tensor's evaluation of these problems."""
    cells = _algorithmic_cells(family(records, name))
    tops = _up_to_lengths(list(cells.values()))
    if not tops:
        return NO_RECORDS
    header = ["task", "model"] + [f"lengths 1..{n}, {how}" for n in tops for how in ("greedy", "teacher-forced")]
    rows = []
    for task in _ordered({t for t, _ in cells}, TASK_ORDER):
        for model in _ordered({m for t, m in cells if t == task}, MODELS):
            record = cells[task, model]
            rows.append([task, model, *(_accuracy_cell(record, None, label_partial=False, prefix=f"{forced}upto{n}/")
                                        for n in tops for forced in ("", "teacher_forced/"))])
    return _table(header, rows)


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
             *(_accuracy_cell(r, None, label_partial=False, prefix=decoding + key)
               for _, key in sets for _, decoding in decodings),
             f"{r.steps} ({r.best_step if r.best_step is not None else '-'})", fmt_seconds(r.wall_time_seconds)] for r in runs]
    return _table(header, rows)


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
    return _table(header, rows)


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
        task, model = str(first.config["task"].get("task")), model_label(first.config)
        return task_rank.get(task, len(task_rank)), task, model_rank.get(model, len(model_rank)), first.experiment

    rows = []
    for key, group in sorted(deeper.items(), key=order):
        task, model = str(group[0].config["task"].get("task")), model_label(group[0].config)
        shown = []
        if key in trained:  # the training record itself first, then the shortest name (the run's)
            own = min(trained[key], key=lambda r: (r.status == "rescored", len(r.experiment), r.experiment))
            shown.append((f"{_trained_depth(own.config['model'])} (trained)", own))
        shown += [(str(inference_steps(r)), r) for r in sorted(group, key=inference_steps)]
        rows += [[task, model, steps, *(_accuracy_cell(r, n, label_partial=False, prefix=prefix) for n in lengths)]
                 for steps, r in shown]
    return _table(["task", "model", "steps at test", *(f"len {n}" for n in lengths)], rows)


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
    return _table(header, rows)


def _trained_depth(model: dict[str, Any]) -> str:
    """The recurrent steps a model was trained with (ACT: its step limit), read from the
    record's config as written (records outlive the config classes' keys)."""
    steps = model.get("num_steps")
    if model.get("act"):
        return str(model.get("act_max_steps") or (2 * steps if isinstance(steps, int) else "?"))
    return str(steps if steps is not None else "?")


def length_curves(records: list[RunRecord], *, name: str = "algorithmic", prefix: str = "",
                  select: Callable[[RunRecord], bool] | None = None) -> dict[str, dict[str, list[tuple[int, Any, Any]]]]:
    """Task -> model -> ``(test length, char accuracy, sequence accuracy)`` at every length
    the best seed on validation was tested at (``None`` where not measured), tasks and
    models in the tables' order; runs without test metrics (partial) are left out. ``prefix``
    picks the metrics (``teacher_forced/``: given the true target prefix), ``select`` the
    family's records that compete (all of them by default)."""
    cells = _algorithmic_cells([r for r in family(records, name) if select is None or select(r)])
    curves: dict[str, dict[str, list[tuple[int, Any, Any]]]] = {}
    for task in _ordered({t for t, _ in cells}, TASK_ORDER):
        for model in _ordered({m for t, m in cells if t == task}, MODELS):
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
    from ..visualisation.algorithmic import plot_length_curves  # matplotlib only when drawing

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


@register_table("lte")
def lte_table(records: list[RunRecord]) -> str:
    """Learning to Execute (the paper's Section 3.5): the program evaluation then the
    memorisation tasks (see :func:`_task_table`)."""
    return _task_table(records, "lte", PROGRAM_ORDER + MEMORISATION_ORDER, None)


@register_table("lte-beam")
def lte_beam_table(records: list[RunRecord]) -> str:
    """The Learning to Execute test accuracy by beam search (metrics ``beamK/...``), one
    table per beam size found, in the layout of :func:`lte_table`; ``-`` where a run was
    decoded greedily only."""
    beams = sorted({int(m.group(1)) for r in family(records, "lte") for k in r.metrics["test"]
                    if (m := re.fullmatch(r"beam(\d+)/sequence_accuracy", k))})
    if not beams:
        return NO_RECORDS
    tables = [_task_table(records, "lte", PROGRAM_ORDER + MEMORISATION_ORDER, None, prefix=f"beam{k}/") for k in beams]
    return "\n\n".join(tables if len(beams) == 1 else [f"beam {k}:\n\n{t}" for k, t in zip(beams, tables)])


@register_table("lte-breakdown")
def lte_breakdown_table(records: list[RunRecord]) -> str:
    """Program evaluation by what the mix drew: one row per task and model (the cell of
    :func:`lte_table`), test sequence accuracy (greedy) per length (digits) and per nesting;
    "-" where not measured (records from before the breakdown: ``ut eval --record`` adds it)."""
    return _lte_group_table(records, r"(length|nesting)\d+",
                            lambda g: (not g.startswith("length"), int(re.sub(r"\D", "", g))),
                            lambda g: re.sub(r"(\D+)(\d+)", r"\1 \2", g))


@register_table("lte-operations")
def lte_operations_table(records: list[RunRecord]) -> str:
    """Program evaluation by operation: test sequence accuracy (greedy) of the programs
    that contain each operation (groups ``with_OP``; a program of two operations counts
    in both), in the generator's order of operations."""
    order = {op: i for i, op in enumerate(PROGRAM_OPERATIONS)}
    return _lte_group_table(records, r"with_\w+", lambda g: (order.get(g[5:], len(order)), g), lambda g: g[5:])


def _lte_group_table(records: list[RunRecord], pattern: str, order: Callable[[str], Any], label: Callable[[str], str]) -> str:
    """One row per program task and model (the cell of :func:`lte_table`), one column per
    group of the test metrics ``GROUP/sequence_accuracy`` whose name matches ``pattern``
    (sorted by ``order``, headed by ``label``); "-" where a run was scored without it. A
    run broken down in other groups only (the addition task has one operation) is left out."""
    cells = {key: r for key, r in _algorithmic_cells(family(records, "lte")).items() if key[0] in PROGRAM_ORDER}
    groups = {k.split("/")[0] for r in cells.values() for k in r.metrics["test"]
              if re.fullmatch(pattern + r"/sequence_accuracy", k)}
    if not groups:
        return NO_RECORDS
    columns = sorted(groups, key=order)
    rows = []
    for task in _ordered({t for t, _ in cells}, PROGRAM_ORDER):
        for model in _ordered({m for t, m in cells if t == task}, MODELS):
            test = cells[task, model].metrics["test"]
            if not any(k.split("/")[0] in groups for k in test) and any(_LTE_GROUP.fullmatch(k) for k in test):
                continue
            rows.append([task, model, *(fmt_accuracy(test.get(f"{g}/sequence_accuracy")) for g in columns)])
    return _table(["task", "model", *map(label, columns)], rows)


_LTE_GROUP = re.compile(r"(length\d+|nesting\d+|with_\w+)/sequence_accuracy")  # the groups of LTETask.eval_groups


# Numerics: bf16 autocast against fp32 on the same short runs (configs/checks/precision.grid).

def _precision_result(test: dict[str, Any]) -> tuple[str, float | None]:
    """A check's test result as text, and the number that the mean row averages:
    character / sequence accuracy (sequence tasks) or error % (bAbI)."""
    if "sequence_accuracy" in test:
        return f"{fmt_accuracy(test.get('char_accuracy'))} / {fmt_accuracy(test['sequence_accuracy'], 3)}", test["sequence_accuracy"]
    if "mean_error" in test:
        return f"{test['mean_error']:.1f}% error", test["mean_error"]
    return "-", None


@register_table("precision-check")
def precision_table(records: list[RunRecord]) -> str:
    """One row per run of the ``checks/precision/CHECK-PRECISION-sSEED`` records: its test
    result, ponder time (bAbI), steps and wall time; then per check and precision the mean
    test result over seeds."""
    runs = family(records, "checks/precision")
    if not runs:
        return NO_RECORDS

    def check(record: RunRecord) -> str:
        return re.sub(r"-(fp32|bf16)-s\d+$", "", record.experiment.removeprefix("checks/precision/"))

    def precision(record: RunRecord) -> str:
        return str(record.config["train"].get("precision"))

    rows, means = [], {}
    for r in sorted(runs, key=lambda r: (check(r), r.seeds, precision(r) != "fp32")):
        text, value = _precision_result(r.metrics["test"])
        means.setdefault((check(r), precision(r)), []).append(value)
        rows.append([check(r), precision(r), ", ".join(map(str, r.seeds)), text, role_ponder(r.metrics["test"]) or "-",
                     f"{r.steps} ({r.best_step if r.best_step is not None else '-'})", fmt_seconds(r.wall_time_seconds)])
    table = _table(["check", "precision", "seed", "test: char / seq acc, or error", "ponder: supporting / other / question",
                    "steps (best)", "wall time"], rows)
    summary = [f"{name} {prec}: {sum(v) / len(v):.3f} over {len(v)} seed(s)" for (name, prec), v in means.items()
               if v and None not in v]
    return table + ("\n\nmean test sequence accuracy, or error %: " + "; ".join(summary) if summary else "")


# bAbI (the paper's Table 1 and Appendix C), through babi_report's tables.

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


def _babi_runs(records: list[RunRecord]) -> dict[str, list[dict[str, Any]]]:
    """Column name -> the summaries of its runs with per-task test errors (every seed)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in family(records, "babi"):
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
    than one seed of some task; a joint run counts for each of its tasks."""
    groups: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for name, runs in _babi_runs(records).items():
        for run in runs:
            for task in run_tasks(run):
                groups.setdefault(name, {}).setdefault(task, []).append(run)
    groups = {name: dict(sorted(tasks.items())) for name, tasks in groups.items()
              if any(len(runs) > 1 for runs in tasks.values())}
    return seeds_table(groups) if groups else NO_RECORDS


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
    runs = [f"{label}: {'not measured in full yet' if f is None else _babi_run_label(*f)}" for label, f in found.items()]
    return paper_table({label: f and f[1] for label, f in found.items()}) + "\n\nhere: " + "; ".join(runs)


def _babi_builder(table: Callable[[dict[str, dict[int, dict[str, Any]]]], str]) -> Builder:
    def build(records: list[RunRecord]) -> str:
        columns = babi_columns(records)
        if not columns:
            return NO_RECORDS
        shown = [run for column in columns.values() for run in column.values()]
        partial_runs = [(r["experiment"], r["step"], r["wall_time_seconds"]) for r in shown if r["status"] == "time_limit"]
        return table(columns) + partial_footnote(partial_runs)

    build.__doc__ = f"bAbI: {getattr(table, 'func', table).__doc__}"  # a partial: its function's
    return build


HISTORY_STEPS = (1000, 2000, 5000, 10000, 20000, 50000, 100000)
"""The evaluations a history table shows (and each run's last one)."""


@register_table("babi-joint-history")
def babi_joint_history_table(records: list[RunRecord]) -> str:
    """How the halting pattern of each joint bAbI model (a record without ``/taskN``) with a
    validation history evolved: at the steps of :data:`HISTORY_STEPS` and the run's last
    evaluation, the validation error and the ponder time of supporting facts / other facts /
    the question, averaged over the tasks."""
    rows = []
    for record in family(records, "babi"):
        if _TASK_SUFFIX.search(record.experiment) or not record.history:
            continue
        last = record.history[-1]["step"]
        for entry in record.history:
            if entry["step"] in HISTORY_STEPS or entry["step"] == last:
                error = entry.get("mean_error")
                rows.append([babi_group(record.experiment), str(entry["step"]), "-" if error is None else f"{error:.1f}",
                             role_ponder(entry) or "-"])
    if not rows:
        return NO_RECORDS
    return _table(["model", "step", "validation error %", "supporting / other / question"], rows)


# Stories per step (configs/babi/t2t-v2.grid, the 4- and 8-task mixes): does a task of a joint model learn
# as the same task alone at the same number of its stories seen, whatever the batch holds?
STORIES_STUDY = ("babi/en-10k/ut-act-t2t-v2/task19", "babi/en-10k/ut-act-t2t-v2-mix4-b256",
                 "babi/en-10k/ut-act-t2t-v2-mix4-b64", "babi/en-10k/ut-act-t2t-v2-mix4-b16",
                 "babi/en-10k/ut-act-t2t-v2-mix8-b128")
STORIES_STUDY_TASK = 19
STORIES_ROW = 64_000  # a row every 64,000 of the task's stories: an evaluation of each run


def stories_per_step(record: RunRecord) -> float:
    """The stories of each of a bAbI record's tasks in one training step: ``max_batch_size``
    shared evenly by its tasks (``all``: the 20). Exact for the mixes of :data:`STORIES_STUDY`:
    every batch is full (``batch_tokens`` holds ``max_batch_size`` of their longest stories), every
    bucket mixes the tasks (one bucket), and the tasks' training sets have the same size (9,000
    questions or so each). In the 10k 20-task joint models task 3 trains from its 1k file (its 10k
    one is missing), so each other task's true share is 5% above this (9,000 of 171,900 stories);
    the mix of tasks in a batch varies with the length bucket, the mean over steps does not."""
    return record.config["train"]["max_batch_size"] / len(parse_tasks(record.config["task"]["tasks"]))


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
    batch = record.config["train"]["max_batch_size"]
    return f"{babi_group(record.experiment)} ({stories_per_step(record):g} of {batch} a step)"


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
    return _table(header, rows) + partial_footnote(partial_runs)


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
    from ..visualisation.babi import plot_learning_curves  # matplotlib only when drawing

    plot_learning_curves(curves, out, xlabel=xlabel, ylabel=ylabel)
    return True


FIGURES["babi-stories-per-step"] = partial(_stories_figure, ylabel=f"task {STORIES_STUDY_TASK} validation error %")
# Does the question's halting follow the learning, or lead it? The same runs' question ponder time.
FIGURES["babi-stories-ponder"] = partial(_stories_figure, metric="ponder_question",
                                         ylabel=f"task {STORIES_STUDY_TASK} question ponder time (steps)")


# Are the tasks that every 20-task joint model fails, though trained alone they are learnt, short of
# stories (configs/babi/t2t-v2.grid, the floor of 2 continued)? Each task alone with the joint models'
# recipe, beside the joint models, at equal numbers of the task's stories seen; the joint models see
# a twentieth of theirs.
JOINT_STORIES_TASKS = (17, 18)
JOINT_STORIES_STUDY = ("babi/en-10k/ut-act-t2t-v2/task{task}", "babi/en-10k/ut-t2t-v2-joint-10k",
                       "babi/en-10k/ut-act-t2t-v2-joint-10k-min2", "babi/en-10k/ut-act-t2t-v2-joint-10k-min2-long")
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
    return _table(["task", "stories seen", *labels], rows) + partial_footnote(partial_runs)


FIGURES["babi-stories-joint"] = partial(_stories_figure, ylabel=f"task {JOINT_STORIES_TASKS[0]} validation error %",
                                        study=_joint_stories_study(JOINT_STORIES_TASKS[0]), task=JOINT_STORIES_TASKS[0])


# A floor under the depth (configs/babi/t2t-v2.grid): the 20-task joint v2 model without ACT, and
# with ACT whose positions may not halt before step 2 or 4 (act_min_steps). Task 19 (path finding),
# which no joint model with ACT and its question halting at step 1 learnt, step by step.
FLOOR_STUDY = ("babi/en-10k/ut-t2t-v2-joint-10k", "babi/en-10k/ut-act-t2t-v2-joint-10k-min2",
               "babi/en-10k/ut-act-t2t-v2-joint-10k-min4", "babi/en-10k/ut-act-t2t-v2-joint-10k-pw0")
FLOOR_TASK = 19
FLOOR_ROW = 4_000  # a row every 4,000 steps


def _floor_label(record: RunRecord) -> str:
    return f"{babi_group(record.experiment)} ({_halting_label(record)})"


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


@register_table("babi-floor")
def babi_floor_table(records: list[RunRecord]) -> str:
    """Task :data:`FLOOR_TASK`'s validation error (%) and, in brackets, its question's ponder time
    in the runs of :data:`FLOOR_STUDY`, every :data:`FLOOR_ROW` steps and at each run's last evaluation."""
    runs = _study_runs(records, FLOOR_STUDY)
    curves = [(task_curve(r, FLOOR_TASK), task_curve(r, FLOOR_TASK, "ponder_question")) for r in runs]
    steps = sorted({step for error, _ in curves for step in error
                    if step % FLOOR_ROW == 0 or step == max(error)})
    rows = []
    for step in steps:
        cells = [f"{error[step]:.1f} ({ponder[step]:.1f})" if step in error and step in ponder
                 else f"{error[step]:.1f}" if step in error else "-" for error, ponder in curves]
        rows.append([f"{step:,}", *cells])
    if not rows:
        return NO_RECORDS
    partial_runs = [(r.experiment, r.steps, r.wall_time_seconds) for r in runs if r.partial]
    return _table(["step", *map(_floor_label, runs)], rows) + partial_footnote(partial_runs)


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
    return _table(header, rows) + partial_footnote(partial_runs)


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
    from ..visualisation.babi import plot_ponder_panels  # matplotlib only when drawing

    plot_ponder_panels(panels, out, paper=PAPER_PONDER, styles=styles)
    return True


FIGURES["babi-depth"] = _depth_figure


def _floor_figure(records: list[RunRecord], out: Path) -> bool:
    """Task :data:`FLOOR_TASK`'s validation error against the step in the runs of :data:`FLOOR_STUDY`."""
    curves = {_floor_label(r): sorted(task_curve(r, FLOOR_TASK).items()) for r in _study_runs(records, FLOOR_STUDY)}
    return _draw_curves(curves, out, xlabel="training step", ylabel=f"task {FLOOR_TASK} validation error %")


FIGURES["babi-floor"] = _floor_figure


register_table("babi")(_babi_builder(error_table))
register_table("babi-ponder")(_babi_builder(ponder_table))
register_table("babi-runs")(_babi_builder(runs_table))
register_table("babi-roles")(_babi_builder(role_ponder_table))
register_table("babi-recency")(_babi_builder(baseline_table))
register_table("babi-question")(_babi_builder(partial(baseline_table, baseline="question")))


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
        failed = [t for t in tasks if test.get(f"task{t}/error", 0.0) > FAIL_ABOVE] or tasks

        def cell(metrics: dict[str, Any], task: int) -> str:
            value = metrics.get(f"task{task}/error")
            return "-" if value is None else f"{value:.1f}"

        rows += [[babi_group(record.experiment), str(t), cell(train, t), cell(validation, t), cell(test, t)] for t in failed]
    if not rows:
        return NO_RECORDS
    return _table(["model", "task", "training stories error %", "validation error %", "test error %"], rows)


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
    return _table(header, rows)


# The ponder-time study (configs/babi/ponder-study.grid): which ACT settings make the ponder
# time depend on the number of supporting facts, as the paper's Appendix reports.

PAPER_PONDER = {1: 2.3, 2: 3.1, 3: 3.8}  # the paper's mean ponder time on tasks 1 / 2 / 3


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
    """One row per setting and task: halting bias, ponder weight, test error, mean ponder
    time (± std over positions), and that of supporting facts / other facts / the question."""
    study = ponder_study(records)
    if not study:
        return NO_RECORDS
    rows, partial_runs = [], []
    for setting, tasks in study.items():
        for task, r in tasks.items():
            test, model = r.metrics["test"], r.config["model"]
            ponder = test.get(f"task{task}/ponder_time")
            std = test.get(f"task{task}/ponder_std")
            rows.append([setting, fmt_accuracy(model.get("act_bias_init"), 1), str(model.get("ponder_weight")), str(task),
                         f"{test[f'task{task}/error']:.1f}" if f"task{task}/error" in test else "-",
                         fmt_accuracy(ponder) + (f" ± {fmt_accuracy(std)}" if isinstance(std, float) else ""),
                         role_ponder(test, f"task{task}/") or "-", f"{PAPER_PONDER.get(task, '-')}", str(r.steps),
                         fmt_seconds(r.wall_time_seconds)])
            if r.partial:
                partial_runs.append((r.experiment, r.steps, r.wall_time_seconds))
    header = ["setting", "halting bias", "ponder weight", "task", "test error %", "ponder time",
              "supporting / other / question", "paper's ponder", "steps", "wall time"]
    return _table(header, rows) + partial_footnote(partial_runs)


def _ponder_study_figure(records: list[RunRecord], out: Path) -> bool:
    study = ponder_study(records)
    curves = {setting: {task: (r.metrics["test"].get(f"task{task}/ponder_time"), r.metrics["test"].get(f"task{task}/ponder_std"))
                        for task, r in tasks.items() if f"task{task}/ponder_time" in r.metrics["test"]}
              for setting, tasks in study.items()}
    if not any(len(points) > 1 for points in curves.values()):
        return False
    from ..visualisation.babi import plot_ponder_by_facts  # matplotlib only when drawing

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
    from ..visualisation.babi import plot_ponder_by_facts  # matplotlib only when drawing

    plot_ponder_by_facts(curves, out, paper=PAPER_PONDER)
    return True


FIGURES["babi-ponder"] = _babi_ponder_figure


# Language modelling (the paper's Sections 3.2 and 3.3): Penn Treebank perplexity, subject-verb
# agreement and LAMBADA, all scored by the models trained on Penn Treebank.

LINZEN, GULORDAVA = "subj_agr_filtered", "generated"  # the agreement sets (the tables' columns)
LAMBADA_SETS = {  # set name -> its label, in row order
    "lambada_test_plain_text": "test",
    "lambada_control_test_data_plain_text": "control",
    "lambada_test": "test (OpenAI)",
}


def lm_models(records: list[RunRecord], key: str | None = None) -> dict[str, RunRecord]:
    """Model label -> the best seed on validation among the ``lm/ptb...`` records (those
    with a test metric starting with ``key``, if given), in the models' row order."""
    groups: dict[str, list[RunRecord]] = {}
    for record in family(records, "lm"):
        if not record.experiment.startswith("lm/ptb"):
            continue
        if key is not None and not any(k.startswith(key) for k in record.metrics["test"]):
            continue
        groups.setdefault(model_label(record.config), []).append(record)
    return {model: best_on_validation(groups[model]) for model in _ordered(set(groups), MODELS)}


def _ponder_cell(metrics: dict[str, Any]) -> str:
    """``mean ± std`` ponder time per token; ``-`` for a model without it."""
    mean, std = metrics.get("ponder_time"), metrics.get("ponder_std")
    if not isinstance(mean, (int, float)):
        return "-"
    return fmt_accuracy(mean) + (f" ± {fmt_accuracy(std)}" if isinstance(std, (int, float)) else "")


def _partial_runs(models: dict[Any, RunRecord]) -> list[tuple[str, int, float]]:
    """(experiment, steps, wall seconds) of the runs stopped by their time limit, for :func:`partial_footnote`."""
    return [(r.experiment, r.steps, r.wall_time_seconds) for r in models.values() if r.partial]


def _shared(models: dict[str, RunRecord], key: str) -> Any:
    """The test metric ``key``, when every model that has it has the same value; else None."""
    values = {r.metrics["test"][key] for r in models.values() if key in r.metrics["test"]}
    return values.pop() if len(values) == 1 else None


def _with_items(label: str, models: dict[str, RunRecord], key: str) -> str:
    """A column header with its item count (``label (n=1824)``) when all models scored the same items."""
    items = _shared(models, key)
    return f"{label} (n={items})" if items is not None else label


@register_table("lm-ptb")
def lm_ptb_table(records: list[RunRecord]) -> str:
    """One row per model: parameters, validation and test perplexity, test ponder time per
    token (mean ± std), best step / steps, wall time and status."""
    models = lm_models(records)
    if not models:
        return NO_RECORDS
    rows = []
    for model, r in models.items():
        validation, test = r.metrics["validation"], r.metrics["test"]
        rows.append([model, fmt_parameters(r.parameters), fmt_perplexity(validation.get("perplexity")),
                     fmt_perplexity(test.get("perplexity")), _ponder_cell(test),
                     f"{r.best_step if r.best_step is not None else '-'} / {r.steps}",
                     fmt_seconds(r.wall_time_seconds), status_label(r)])
    return _table(["model", "parameters", "validation perplexity", "test perplexity", "ponder time (test)",
                   "best step / steps", "wall time", "status"], rows)


def _attractors(models: dict[str, RunRecord], name: str) -> list[int]:
    found = {int(m.group(1)) for r in models.values() for k in r.metrics["test"]
             if (m := re.fullmatch(rf"agreement/{re.escape(name)}/attractors(\d+)/accuracy", k))}
    return sorted(found)


@register_table("lm-agreement")
def lm_agreement_table(records: list[RunRecord]) -> str:
    """Subject-verb agreement accuracy (ranking the verb forms): rows = models; columns = the
    Linzen et al. set by number of attractors and overall, the Gulordava et al. set overall
    and by kind (original / generated sentences); the item counts in the header."""
    models = lm_models(records, "agreement/")
    if not models:
        return NO_RECORDS
    linzen, gulordava = f"agreement/{LINZEN}/", f"agreement/{GULORDAVA}/"
    columns: list[tuple[str, str]] = []  # (header, test metric)
    for k in _attractors(models, LINZEN):
        label = str(k) if columns else f"{k} attractor{'' if k == 1 else 's'}"  # the first one names the unit
        columns.append((_with_items(label, models, f"{linzen}attractors{k}/items"), f"{linzen}attractors{k}/accuracy"))
    columns += [(_with_items("Linzen all", models, f"{linzen}items"), f"{linzen}accuracy"),
                (_with_items("Gulordava all", models, f"{gulordava}items"), f"{gulordava}accuracy"),
                (_with_items("original", models, f"{gulordava}original/items"), f"{gulordava}original/accuracy"),
                (_with_items("generated", models, f"{gulordava}generated/items"), f"{gulordava}generated/accuracy")]
    rows = [[model, *(fmt_accuracy(r.metrics["test"].get(key)) for _, key in columns)] for model, r in models.items()]
    skipped = []
    for label, prefix in (("Linzen", linzen), ("Gulordava", gulordava)):
        key = prefix + "skipped_oov"
        shared = _shared(models, key)
        by_model = [f"{r.metrics['test'][key]} ({model})" for model, r in models.items() if key in r.metrics["test"]]
        if by_model:
            skipped.append(f"{label} set {shared if shared is not None else ', '.join(by_model)}")
    caption = "\n\nRanking accuracy (the correct verb form above the wrong one); n = the items ranked."
    if skipped:
        caption += (" Items with a verb form outside the vocabulary cannot be ranked and are skipped: "
                    + "; ".join(skipped) + ".")
    table = _table(["model", *(header for header, _ in columns)], rows)
    return table + caption + partial_footnote(_partial_runs(models))


@register_table("lm-lambada")
def lm_lambada_table(records: list[RunRecord]) -> str:
    """LAMBADA scored by the Penn Treebank models: one row per set and model; last-word
    accuracy, target-word perplexity (in-vocabulary targets), reading-comprehension
    accuracy and the out-of-vocabulary targets among the passages."""
    models = lm_models(records, "lambada/")
    if not models:
        return NO_RECORDS
    found = {k.split("/")[1] for r in models.values() for k in r.metrics["test"] if k.startswith("lambada/")}
    rows = []
    for name in _ordered(found, tuple(LAMBADA_SETS)):
        at = f"lambada/{name}/"
        for model, r in models.items():
            test = r.metrics["test"]
            if not any(k.startswith(at) for k in test):
                continue
            oov, passages = test.get(at + "oov_targets"), test.get(at + "passages")
            oov_cell = "-" if oov is None else str(oov) if passages is None else f"{oov} of {passages}"
            # Three decimals: a 10k-word PTB model scores near zero here.
            rows.append([LAMBADA_SETS.get(name, name), model, fmt_accuracy(test.get(at + "accuracy"), 3),
                         fmt_perplexity(test.get(at + "perplexity")), fmt_accuracy(test.get(at + "rc_accuracy"), 3),
                         oov_cell])
    table = _table(["set", "model", "accuracy", "target perplexity", "RC accuracy", "OOV targets"], rows)
    return table + partial_footnote(_partial_runs(models))


# Machine translation (the paper's Section 3.6, Table 7).

def _bleu_cell(metrics: dict[str, Any]) -> str:
    """``BLEU (beam k, α a, n sent.)`` (α: the GNMT length penalty of a beam search); ``-``
    when not measured."""
    bleu = metrics.get("bleu")
    if not isinstance(bleu, (int, float)):
        return "-"
    alpha = f", α {metrics['length_penalty']:g}" if "length_penalty" in metrics else ""
    return f"{bleu:.2f} (beam {metrics.get('beam_size', '?')}{alpha}, {metrics.get('sentences', '?')} sent.)"


def _decoding_cell(metrics: dict[str, Any]) -> str:
    """``seconds (sentences/s)`` of a decoding; ``-`` when not measured."""
    seconds, rate = metrics.get("decode_seconds"), metrics.get("sentences_per_second")
    if not isinstance(seconds, (int, float)):
        return "-"
    return fmt_seconds(seconds) + (f" ({rate:.1f} sent./s)" if isinstance(rate, (int, float)) else "")


@register_table("mt")
def mt_table(records: list[RunRecord]) -> str:
    """One row per translation record (``mt/...``; a re-scored record, e.g. of averaged
    checkpoints, is a row of its own): model, parameters, validation BLEU as validated
    during training, test BLEU, test decoding time (cached beam search), best step / steps, wall time and status; the sacrebleu
    signature below the table when the rows share it (else in a column)."""
    runs = family(records, "mt", other_depths=True)  # rows of their own, labelled with their depth
    if not runs:
        return NO_RECORDS
    order = {model: i for i, model in enumerate(MODELS)}
    runs.sort(key=lambda r: (order.get(model_label(r.config), len(order)), r.experiment))
    signatures = {r.metrics["test"].get("bleu_signature") for r in runs} - {None}
    shared = signatures.pop() if len(signatures) == 1 else None
    rows = []
    for r in runs:
        validation, test = r.metrics["validation"], r.metrics["test"]
        depth = inference_steps(r)
        row = [r.experiment.removeprefix("mt/"), model_label(r.config) + (f", {depth} steps at test" if depth else ""),
               fmt_parameters(r.parameters),
               _bleu_cell(validation), _bleu_cell(test), _decoding_cell(test),
               f"{r.best_step if r.best_step is not None else '-'} / {r.steps}",
               fmt_seconds(r.wall_time_seconds), status_label(r)]
        if shared is None:
            row.append(str(test.get("bleu_signature", "-")).replace("|", "\\|"))  # its bars are not cell borders
        rows.append(row)
    header = ["run", "model", "parameters", "validation BLEU", "test BLEU", "test decoding", "best step / steps", "wall time", "status"]
    table = _table(header + (["signature"] if shared is None else []), rows)
    caption = f"\n\nsacrebleu signature: `{shared}`." if shared is not None else ""
    return table + caption + partial_footnote(_partial_runs({r.experiment: r for r in runs}))


# Every record.

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
    return _table(["run (partial)", "steps", "best step", "wall time", "validation of the best model so far"], rows)


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
    return _table(["experiment", "parameters", "seeds", "status", "steps", "best step", "wall time", "commit", "machine"], rows)


# -- Where the reproduction stands -----------------------------------------------------------
# One row per number the paper reports for the UT, beside the run here that answers it. The
# bAbI, Learning to Execute and language-model rows pick their run as the sections below do
# (best on validation); the algorithmic and translation rows name the runs those sections'
# text discusses (the algorithmic section's tables show the configs as they are; its best
# models at length 400 are variants of its later parts).

Answer = Callable[[list[RunRecord]], "tuple[str, str] | None"]  # records -> (our number, its run)


@dataclass(frozen=True)
class Headline:
    """A number of the paper's, and how to find ours among the records."""

    section: str  # the paper's table and setting
    measure: str
    paper: str  # as the paper prints it
    ours: Answer


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
    kinds = {babi_group(r.experiment): (not _TASK_SUFFIX.search(r.experiment), model_label(r.config))
             for r in family(records, f"babi/{data}")}
    candidates = []
    for name, column in babi_columns(records).items():
        if kinds.get(name) != (joint, model) or sorted(column) != list(range(1, 21)):
            continue
        validation = [_babi_validation_error(run, task) for task, run in column.items()]
        if None not in validation:
            candidates.append((statistics.mean(validation), name, column))  # type: ignore[arg-type]
    if not candidates:
        return None
    _, name, column = min(candidates, key=lambda c: c[0])
    return name, column


def _babi_run_label(name: str, column: dict[int, dict[str, Any]]) -> str:
    """``babi/NAME``, marked partial where a run of the column stopped at its time limit."""
    partial = any(run["status"] == "time_limit" for run in column.values())
    return f"babi/{name}" + (" (partial)" if partial else "")


def _babi_setting(data: str, joint: bool, model: str) -> Answer:
    """:func:`babi_setting_column`'s average test error and failed tasks (the paper's Table 1)."""

    def ours(records: list[RunRecord]) -> tuple[str, str] | None:
        found = babi_setting_column(records, data, joint, model)
        if found is None:
            return None
        name, column = found
        errors = [run["test"][f"task{task}/error"] for task, run in column.items()]
        value = f"{statistics.mean(errors):.2f} ({sum(e > FAIL_ABOVE for e in errors)} failed)"
        return value, _babi_run_label(name, column)

    return ours


def _lte_cell(task: str) -> Answer:
    """The UT's Learning to Execute cell (:func:`lte_table`): test char / sequence accuracy."""

    def ours(records: list[RunRecord]) -> tuple[str, str] | None:
        cells = _cells(_algorithmic_groups(family(records, "lte")))
        record = cells.get((task, "UT"))
        if record is None or not record.metrics["test"]:
            return None
        return _accuracy_cell(record, None, label_partial=False), record.experiment + (" (partial)" if record.partial else "")

    return ours


def _named(experiment: str, cell: Callable[[RunRecord], str]) -> Answer:
    """``cell(record)`` of the record named ``experiment``; the run is labelled with its model."""

    def ours(records: list[RunRecord]) -> tuple[str, str] | None:
        record = next((r for r in records if r.experiment == experiment and r.metrics["test"]), None)
        if record is None:
            return None
        return cell(record), f"{experiment} ({model_label(record.config)}{', partial' if record.partial else ''})"

    return ours


def _length_400(record: RunRecord) -> str:
    """Greedy char / sequence accuracy at length 400, and teacher-forced where measured."""
    greedy = _accuracy_cell(record, 400, label_partial=False)
    forced = _accuracy_cell(record, 400, label_partial=False, prefix="teacher_forced/")
    return greedy if forced == "-" else f"{greedy} (teacher-forced {forced})"


def _lm_metric(key: str, fmt: Callable[[Any], str], model: str = "UT+ACT") -> Answer:
    """A test metric of the language model :func:`lm_models` shows for ``model``."""

    def ours(records: list[RunRecord]) -> tuple[str, str] | None:
        record = lm_models(records, key).get(model)
        if record is None:
            return None
        return fmt(record.metrics["test"][key]), record.experiment

    return ours


def _bleu_pair(ut: str, transformer: str) -> Answer:
    """Test BLEU of the UT run ``ut`` and the Transformer run ``transformer``, same size."""

    def ours(records: list[RunRecord]) -> tuple[str, str] | None:
        found = {r.experiment: r for r in records if r.experiment in (ut, transformer) and "bleu" in r.metrics["test"]}
        if len(found) < 2:
            return None
        return f"{found[ut].metrics['test']['bleu']:.1f} vs {found[transformer].metrics['test']['bleu']:.1f}", f"{ut}, {transformer}"

    return ours


_LAMBADA = "lambada/lambada_test_plain_text/"
HEADLINES: tuple[Headline, ...] = (
    *(Headline(f"bAbI {label} (Table 1)", "UT+ACT: average test error % (failed tasks)",
               f"{PAPER_AVERAGE[label]:.2f} ({sum(e > FAIL_ABOVE for e in PAPER_BEST_OF_10[label])})",
               _babi_setting(data, joint, "UT+ACT"))
      for label, data, joint in BABI_SETTINGS),
    *(Headline(f"bAbI {label} (Table 1)", "UT: average test error % (failed tasks)", paper,
               _babi_setting(data, joint, "UT"))
      for label, data, joint, paper in (("10k single", "en-10k", False, "0.23 (0)"), ("10k joint", "en-10k", True, "0.47 (0)"),
                                        ("1k single", "en", False, "5.31 (5)"), ("1k joint", "en", True, "8.50 (8)"))),
    *(Headline(f"bAbI {label} (Table 1)", "Transformer baseline: average test error % (failed tasks)", paper,
               _babi_setting(data, joint, "Transformer"))
      for label, data, joint, paper in (("1k single", "en", False, "21.8 (5)"), ("1k joint", "en", True, "26.8 (14)"))),
    Headline("Subject-verb agreement (Table 2)", "UT+ACT: accuracy, all attractors", "0.992",
             _lm_metric(f"agreement/{LINZEN}/accuracy", fmt_accuracy)),
    Headline("LAMBADA, language model (Table 3)", "UT+ACT: test accuracy", "0.19",
             _lm_metric(f"{_LAMBADA}accuracy", lambda v: fmt_accuracy(v, 3))),
    Headline("LAMBADA, language model (Table 3)", "UT+ACT: test perplexity", "142",
             _lm_metric(f"{_LAMBADA}perplexity", fmt_perplexity)),
    Headline("Algorithmic Copy (Table 4)", "char / sequence accuracy at length 400", "0.91 / 0.35",
             _named("algorithmic-prenorm/copy-ut-act-prenorm-hnorm", _length_400)),
    Headline("Algorithmic Reverse (Table 4)", "char / sequence accuracy at length 400", "0.96 / 0.46",
             _named("algorithmic-prenorm/reverse-ut-prenorm-sepconv-nopos-b8k", _length_400)),
    Headline("Algorithmic Addition (Table 4)", "char / sequence accuracy at length 400", "0.34 / 0.02",
             _named("algorithmic/addition-ut-act-warm-b8k", _length_400)),
    *(Headline(f"Learning to Execute, {task.capitalize()} (Table {5 if task in PROGRAM_ORDER else 6})",
               "UT: test char / sequence accuracy", paper, _lte_cell(task))
      for task, paper in (("program", "0.89 / 0.63"), ("control", "1.0 / 1.0"), ("addition", "1.0 / 1.0"),
                          ("copy", "1.0 / 1.0"), ("double", "1.0 / 1.0"), ("reverse", "1.0 / 1.0"))),
    Headline("Translation (Table 7)", "test BLEU, UT vs Transformer of the same size", "28.9 vs 28.0 (WMT14)",
             _bleu_pair("mt/ut", "mt/transformer")),
)


@register_table("standing")
def standing_table(records: list[RunRecord]) -> str:
    """Where the reproduction stands: one row per number of :data:`HEADLINES`, the paper's
    beside ours and the run it comes from ("-" where no run answers it yet)."""
    rows = []
    for headline in HEADLINES:
        found = headline.ours(records)
        value, run = found if found is not None else ("-", "not measured in full yet")
        rows.append([headline.section, headline.measure, headline.paper, value, run])
    return _table(["experiment (the paper's table)", "measure", "the paper", "here", "run"], rows)
