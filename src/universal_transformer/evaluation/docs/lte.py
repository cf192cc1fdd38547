"""Learning to Execute (the paper's Section 3.5, Tables 5-6): program evaluation and
memorisation, and the program tasks' accuracy per group of programs."""

from __future__ import annotations

import re
from typing import Any, Callable

from ...data.lte import PROGRAM_OPERATIONS
from ..lte_report import MEMORISATION_ORDER, PROGRAM_ORDER
from ..records import RunRecord
from .algorithmic import accuracy_cell, algorithmic_cells, task_table
from .common import MODELS, NO_RECORDS, family, fmt_accuracy, markdown_table, model_label, ordered
from .sections import register_table


@register_table("lte")
def lte_table(records: list[RunRecord]) -> str:
    """Learning to Execute (the paper's Section 3.5): the program evaluation then the
    memorisation tasks (see :func:`task_table`)."""
    return task_table(records, "lte", PROGRAM_ORDER + MEMORISATION_ORDER, None)


@register_table("lte-beam")
def lte_beam_table(records: list[RunRecord]) -> str:
    """The Learning to Execute test accuracy by beam search (metrics ``beamK/...``), one
    table per beam size found, in the layout of :func:`lte_table`; ``-`` where a run was
    decoded greedily only."""
    beams = sorted({int(m.group(1)) for r in family(records, "lte") for k in r.metrics["test"]
                    if (m := re.fullmatch(r"beam(\d+)/sequence_accuracy", k))})
    if not beams:
        return NO_RECORDS
    tables = [task_table(records, "lte", PROGRAM_ORDER + MEMORISATION_ORDER, None, prefix=f"beam{k}/") for k in beams]
    return "\n\n".join(tables if len(beams) == 1 else [f"beam {k}:\n\n{t}" for k, t in zip(beams, tables)])


@register_table("lte-teacher-forced")
def lte_teacher_forced_table(records: list[RunRecord]) -> str:
    """The Learning to Execute test accuracy teacher-forced (metrics ``teacher_forced/...``: the
    argmax at every target position given the true prefix, tensor2tensor's default evaluation),
    in the layout of :func:`lte_table`; ``-`` where a run was scored before it was measured."""
    if not any("teacher_forced/char_accuracy" in r.metrics["test"] for r in family(records, "lte")):
        return NO_RECORDS
    return task_table(records, "lte", PROGRAM_ORDER + MEMORISATION_ORDER, None, prefix="teacher_forced/")


@register_table("lte-breakdown")
def lte_breakdown_table(records: list[RunRecord]) -> str:
    """Program evaluation by what the mix drew: one row per task and model (the cell of
    :func:`lte_table`), test sequence accuracy (greedy) per length (digits) and per nesting;
    "-" where not measured (records from before the breakdown: ``ut eval --record`` adds it)."""
    return _lte_group_table(records, _LENGTH_NESTING,
                            lambda g: (not g.startswith("length"), int(re.sub(r"\D", "", g))),
                            lambda g: re.sub(r"(\D+)(\d+)", r"\1 \2", g))


@register_table("lte-operations")
def lte_operations_table(records: list[RunRecord]) -> str:
    """Program evaluation by operation: test sequence accuracy (greedy) of the programs
    that contain each operation (groups ``with_OP``; a program of two operations counts
    in both), in the generator's order of operations."""
    order = {op: i for i, op in enumerate(PROGRAM_OPERATIONS)}
    return _lte_group_table(records, _OPERATIONS, lambda g: (order.get(g[5:], len(order)), g), lambda g: g[5:])


@register_table("lte-loops")
def lte_loops_table(records: list[RunRecord]) -> str:
    """The programs with a loop (``small_loop``) by its count k (groups ``loopsA-B``, the
    largest count in the program): test sequence accuracy (greedy). A loop adding b k times
    is a multiplication k*b, so this separates the control flow from the arithmetic."""
    return _lte_group_table(records, _LOOPS, lambda g: int(re.match(r"\d+", g[5:]).group()),
                            lambda g: f"k = {g[5:]}")


@register_table("lte-length-draw")
def lte_length_draw_table(records: list[RunRecord]) -> str:
    """Models trained with one draw of the lengths scored on programs of the other
    (:data:`..data.lte.LENGTH_DRAWS`: one length per program, as the configs draw them, or one
    per operand and loop count, as Zaremba & Sutskever's code does; records
    ``lte-length-draw/NAME``, re-scored from ``lte/NAME`` with the other ``task.length_draw``):
    test char / sequence accuracy as trained and with the other draw, and the sequence
    accuracy of the programs with an if-expression, a loop and a sum or difference, as trained
    -> with the other draw ("-" where a task has no such programs)."""
    rows = []
    for own, record in _rescored_on_the_other_draw(records):
        before, after = own.metrics["test"], record.metrics["test"]

        def both(key: str) -> str:
            if key not in before or key not in after:
                return "-"
            return f"{fmt_accuracy(before[key])} -> {fmt_accuracy(after[key])}"

        rows.append([str(record.config["task"].get("task")), model_label(record.config), own.experiment,
                     _drawn(own), accuracy_cell(own, None, label_partial=False), accuracy_cell(record, None, label_partial=False),
                     *(both(f"with_{op}/sequence_accuracy") for op in ("ifstat", "small_loop", "pair"))])
    return _sorted_by_task(["task", "model", "trained run", "lengths drawn", "as trained", "the other draw", "ifstat",
                            "small_loop", "pair"], rows)


_GAPS = ("digit_gap0", "digit_gap1", "digit_gap2+")


@register_table("lte-digit-gap")
def lte_digit_gap_table(records: list[RunRecord]) -> str:
    """Program evaluation by the gap between the lengths of a program's numbers (groups
    ``digit_gapG`` of ``LTETask.eval_groups``: the largest difference in digits between two
    numbers drawn as its operands, 0, 1, or 2 and more; programs of one number are in none):
    test sequence accuracy (greedy) of all such programs and of those ending in an
    if-expression and in a loop, the number of programs in parentheses. One row per record
    scored with the groups: trained runs (``lte/NAME``) on their own draw of the lengths and
    their re-scorings on the other (``lte-length-draw/NAME``)."""
    rows = []
    for own, record in [(r, r) for r in family(records, "lte")] + _rescored_on_the_other_draw(records):
        test = record.metrics["test"]
        if not any(f"{gap}/sequence_accuracy" in test for gap in _GAPS):
            continue

        def cell(group: str) -> str:
            count = test.get(f"{group}/examples")
            return "-" if count is None else f"{fmt_accuracy(test[f'{group}/sequence_accuracy'])} ({count})"

        rows.append([str(record.config["task"].get("task")), model_label(record.config), own.experiment, _drawn(own),
                     _drawn(record), *(cell(prefix + gap) for prefix in ("", "ifstat.", "small_loop.") for gap in _GAPS)])
    rows.sort(key=lambda row: row[3] != row[4])  # within a run (stable in the task sort), its own draw first
    return _sorted_by_task(["task", "model", "trained run", "lengths drawn", "scored on",
                            *(f"{what}gap {g.removeprefix('digit_gap')}" for what in ("", "ifstat: ", "small_loop: ")
                              for g in _GAPS)], rows)


def _rescored_on_the_other_draw(records: list[RunRecord]) -> list[tuple[RunRecord, RunRecord]]:
    """(``lte/NAME``, ``lte-length-draw/NAME``) for each re-scoring whose trained run is here."""
    trained = {r.experiment: r for r in family(records, "lte")}
    pairs = [(trained.get("lte/" + r.experiment.split("/", 1)[1]), r) for r in family(records, "lte-length-draw")]
    return [(own, record) for own, record in pairs if own is not None]


def _drawn(record: RunRecord) -> str:
    """How the record's programs drew their lengths (``task.length_draw``), in words."""
    return {"example": "per program", "operand": "per operand"}[record.config["task"].get("length_draw") or "example"]


def _sorted_by_task(header: list[str], rows: list[list[str]]) -> str:
    """The rows (task first, trained run third) in the program tasks' order, then by run."""
    if not rows:
        return NO_RECORDS
    rank = {task: i for i, task in enumerate(PROGRAM_ORDER)}
    return markdown_table(header, sorted(rows, key=lambda row: (rank.get(row[0], len(rank)), row[2])))


def _lte_group_table(records: list[RunRecord], pattern: str, order: Callable[[str], Any], label: Callable[[str], str]) -> str:
    """One row per program task and model (the cell of :func:`lte_table`), one column per
    group of the test metrics ``GROUP/sequence_accuracy`` whose name matches ``pattern``
    (sorted by ``order``, headed by ``label``); "-" where a run was scored without it. A
    run broken down in other groups only (the addition task has one operation) is left out."""
    cells = algorithmic_cells([r for r in family(records, "lte") if r.config["task"].get("task") in PROGRAM_ORDER])
    groups = {k.split("/")[0] for r in cells.values() for k in r.metrics["test"]
              if re.fullmatch(pattern + r"/sequence_accuracy", k)}
    if not groups:
        return NO_RECORDS
    columns = sorted(groups, key=order)
    rows = []
    for task in ordered({t for t, _ in cells}, PROGRAM_ORDER):
        for model in ordered({m for t, m in cells if t == task}, MODELS):
            test = cells[task, model].metrics["test"]
            if not any(k.split("/")[0] in groups for k in test) and any(_LTE_GROUP.fullmatch(k) for k in test):
                continue
            rows.append([task, model, *(fmt_accuracy(test.get(f"{g}/sequence_accuracy")) for g in columns)])
    return markdown_table(["task", "model", *map(label, columns)], rows)


# The groups of LTETask.eval_groups, one pattern per table.
_LENGTH_NESTING, _OPERATIONS, _LOOPS = r"(length|nesting)\d+", r"with_\w+", r"loops[\d+-]+"
_LTE_GROUP = re.compile(f"({_LENGTH_NESTING}|{_OPERATIONS}|{_LOOPS})/sequence_accuracy")
