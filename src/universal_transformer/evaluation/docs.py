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
``demo/...`` for the demo table; ``runs`` takes all. Where several seeds (records) fill
one cell, the one with the best validation ``score`` is shown, as the paper picks its best
seed. A run stopped by its time limit is labelled *partial*.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

from .algorithmic_report import MODEL_NAMES, MODEL_ORDER, TASK_ORDER
from .babi_report import best_of_seeds, error_table, ponder_table, role_ponder_table, run_tasks, runs_table
from .records import RunRecord

Builder = Callable[[list[RunRecord]], str]
TABLES: dict[str, Builder] = {}
"""Table builders by section name; fill it with :func:`register_table`."""

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


# Shared cell formats, so every table prints numbers the same way.

def fmt_seconds(seconds: float) -> str:
    """Wall time in whole seconds, e.g. ``573 s``."""
    return f"{seconds:.0f} s"


def fmt_accuracy(value: Any) -> str:
    """An accuracy (or ponder time) with two decimals; ``-`` when not a number."""
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"


def status_label(record: RunRecord) -> str:
    """``partial`` for a run stopped by its time limit; else how it ended."""
    return STATUS_LABELS[record.status]


def family(records: list[RunRecord], name: str) -> list[RunRecord]:
    """The records of experiments named ``NAME/...``."""
    return [r for r in records if r.experiment.startswith(name + "/")]


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


def model_label(config: dict[str, Any]) -> str:
    """LSTM, Transformer, UT or UT+ACT, from a resolved experiment config."""
    if config.get("model_class") == "LSTMSeq2Seq":
        return "LSTM"
    model = config.get("model") or {}
    if model.get("share_weights", True) is False:
        return "Transformer"
    return "UT+ACT" if model.get("act", False) else "UT"


def _algorithmic_cells(records: list[RunRecord]) -> dict[tuple[str, str], RunRecord]:
    """(task, model) -> the best seed's record."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        groups.setdefault((str(record.config["task"].get("task")), model_label(record.config)), []).append(record)
    return {key: best_on_validation(group) for key, group in groups.items()}


def _ordered(present: set[str], order: tuple[str, ...]) -> list[str]:
    return [x for x in order if x in present] + sorted(present - set(order))


def _accuracy_cell(record: RunRecord, length: int, *, label_partial: bool = True) -> str:
    """``char / seq`` test accuracy at ``length`` ("-" if not measured)."""
    test = record.metrics["test"]
    char, seq = test.get(f"len{length}/char_accuracy"), test.get(f"len{length}/sequence_accuracy")
    if char is None and seq is None:
        return "-"
    return f"{fmt_accuracy(char)} / {fmt_accuracy(seq)}" + (" (partial)" if label_partial and record.partial else "")


def _lengths(records: list[RunRecord]) -> list[int]:
    found = {int(m.group(1)) for r in records for k in r.metrics["test"] if (m := re.fullmatch(r"len(\d+)/char_accuracy", k))}
    return sorted(found)


def algorithmic_table(records: list[RunRecord], length: int, *, name: str = "algorithmic") -> str:
    """Rows = models, columns = tasks; cells = test char / sequence accuracy at ``length``
    of the best seed on validation, "(partial)" after a run stopped by its time limit."""
    cells = _algorithmic_cells(family(records, name))
    if not cells:
        return NO_RECORDS
    tasks = _ordered({t for t, _ in cells}, TASK_ORDER)
    models = _ordered({m for _, m in cells}, MODELS)
    rows = [[model, *(_accuracy_cell(cells[t, model], length) if (t, model) in cells else "-" for t in tasks)]
            for model in models]
    partial_runs = [(r.experiment, r.steps, r.wall_time_seconds) for r in cells.values() if r.partial]
    return _table(["model", *(f"{t.capitalize()} (len {length})" for t in tasks)], rows) + partial_footnote(partial_runs)


def curve_table(records: list[RunRecord], *, name: str = "algorithmic") -> str:
    """One row per task and model: char / sequence accuracy at every test length, the
    encoder ponder time at the longest length (where measured), steps, best step, wall
    time and status of the run."""
    cells = _algorithmic_cells(family(records, name))
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
            rows.append([task, model, *(_accuracy_cell(record, n, label_partial=False) for n in lengths)]
                        + ([fmt_accuracy(ponder)] if with_ponder else [])
                        + [str(record.steps), str(record.best_step if record.best_step is not None else "-"),
                           fmt_seconds(record.wall_time_seconds), status_label(record)])
    return _table(header, rows)


for _length in (40, 400):  # the paper's training and test lengths
    register_table(f"algorithmic-len{_length}")(partial(algorithmic_table, length=_length))
del _length
register_table("algorithmic-curve")(curve_table)
register_table("demo")(partial(curve_table, name="demo"))


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
        "run_dir": f"{record.experiment} seeds {record.seeds}",
    }


def babi_group(experiment: str) -> str:
    """The column of a bAbI experiment: its name without ``babi/`` and a trailing ``/taskN``
    (the seeds and tasks of one setting share a column; a joint run is its own)."""
    return re.sub(r"/task\d+$", "", experiment.removeprefix("babi/"))


def babi_columns(records: list[RunRecord]) -> dict[str, dict[int, dict[str, Any]]]:
    """Column name -> task -> the best run on validation (``babi_report.best_of_seeds``)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in family(records, "babi"):
        summary = babi_summary(record)
        if run_tasks(summary):  # only runs with per-task test errors
            groups.setdefault(babi_group(record.experiment), []).append(summary)
    return {name: best_of_seeds(runs) for name, runs in groups.items()}


def _babi_builder(table: Callable[[dict[str, dict[int, dict[str, Any]]]], str]) -> Builder:
    def build(records: list[RunRecord]) -> str:
        columns = babi_columns(records)
        if not columns:
            return NO_RECORDS
        shown = [run for column in columns.values() for run in column.values()]
        partial_runs = [(r["experiment"], r["step"], r["wall_time_seconds"]) for r in shown if r["status"] == "time_limit"]
        return table(columns) + partial_footnote(partial_runs)

    build.__doc__ = f"bAbI: {table.__doc__}"
    return build


register_table("babi")(_babi_builder(error_table))
register_table("babi-ponder")(_babi_builder(ponder_table))
register_table("babi-runs")(_babi_builder(runs_table))
register_table("babi-roles")(_babi_builder(role_ponder_table))


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


# Metrics of a run still in progress worth showing: overall errors, perplexity, BLEU and
# ponder times, and accuracies per evaluation length.
_PROGRESS_OVERALL = re.compile(r"^(mean_error|failed_tasks|perplexity|bleu|ponder_\w+)$")
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
    """One row per record: experiment, seeds, status, steps, best step, wall time, commit, machine."""
    if not records:
        return NO_RECORDS
    rows = [[r.experiment, " ".join(map(str, r.seeds)) or "-", status_label(r), str(r.steps),
             str(r.best_step) if r.best_step is not None else "-", fmt_seconds(r.wall_time_seconds),
             _short_commit(r.commit), _machine_label(r.machine)] for r in records]
    return _table(["experiment", "seeds", "status", "steps", "best step", "wall time", "commit", "machine"], rows)
