"""Where the reproduction stands: one row per number the paper reports, beside ours."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable

from ..lte_report import PROGRAM_ORDER
from ..babi_report import PAPER_AVERAGE, PAPER_BEST_OF_10, PAPER_SEED_AVERAGE, average_error, fails, seed_averages
from ..records import RunRecord
from .algorithmic import accuracy_cell, algorithmic_cells
from .babi import BABI_SETTINGS, babi_run_label, babi_seed_runs, babi_seeds_label, babi_setting_column
from .common import family, fmt_accuracy, fmt_perplexity, markdown_table, model_label
from .lm import LINZEN, lm_models
from .sections import register_table


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


def _babi_setting(data: str, joint: bool, model: str) -> Answer:
    """:func:`babi_setting_column`'s average test error and failed tasks (the paper's Table 1)."""

    def ours(records: list[RunRecord]) -> tuple[str, str] | None:
        found = babi_setting_column(records, data, joint, model)
        if found is None:
            return None
        name, column = found
        errors = [run["test"][f"task{task}/error"] for task, run in column.items()]
        value = f"{average_error(errors):.2f} ({sum(map(fails, errors))} failed)"
        return value, babi_run_label(name, column)

    return ours


def _babi_seeds(data: str, joint: bool) -> Answer:
    """The average test error over the seeds of :func:`babi_setting_column`'s UT+ACT column,
    mean ± sample standard deviation over the seeds that have all 20 tasks (the paper's Appendix C
    averages its 10 seeds)."""

    def ours(records: list[RunRecord]) -> tuple[str, str] | None:
        found = babi_seed_runs(records, data, joint, "UT+ACT")
        if found is None:
            return None
        name, tasks = found
        averages = seed_averages(tasks)
        if not averages:
            return None
        n = len(averages)
        value = f"{averages[0]:.2f}" if n == 1 else f"{statistics.mean(averages):.2f} ± {statistics.stdev(averages):.2f}"
        return f"{value} ({n} seed{'s' if n > 1 else ''})", babi_seeds_label(name, tasks)

    return ours


def _lte_cell(task: str) -> Answer:
    """The UT's Learning to Execute cell (:func:`lte_table`): test char / sequence accuracy."""

    def ours(records: list[RunRecord]) -> tuple[str, str] | None:
        cells = algorithmic_cells(family(records, "lte"))
        record = cells.get((task, "UT"))
        if record is None or not record.metrics["test"]:
            return None
        return accuracy_cell(record, None, label_partial=False), record.experiment + (" (partial)" if record.partial else "")

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
    greedy = accuracy_cell(record, 400, label_partial=False)
    forced = accuracy_cell(record, 400, label_partial=False, prefix="teacher_forced/")
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
               f"{PAPER_AVERAGE[label]:.2f} ({sum(map(fails, PAPER_BEST_OF_10[label]))})",
               _babi_setting(data, joint, "UT+ACT"))
      for label, data, joint in BABI_SETTINGS),
    *(Headline(f"bAbI {label} (Appendix C)", "UT+ACT: average test error % over seeds",
               f"{PAPER_SEED_AVERAGE[label][0]:.2f} ± {PAPER_SEED_AVERAGE[label][1]:.2f} (10 seeds)",
               _babi_seeds(data, joint))
      for label, data, joint in BABI_SETTINGS),
    *(Headline(f"bAbI {label} (Table 1)", "UT: average test error % (failed tasks)", paper,
               _babi_setting(data, joint, "UT"))
      for (label, data, joint), paper in zip(BABI_SETTINGS, ("0.23 (0)", "0.47 (0)", "5.31 (5)", "8.50 (8)"))),
    *(Headline(f"bAbI {label} (Table 1)", "Transformer baseline: average test error % (failed tasks)", paper,
               _babi_setting(data, joint, "Transformer"))
      for (label, data, joint), paper in zip(BABI_SETTINGS[2:], ("21.8 (5)", "26.8 (14)"))),
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
    *(Headline(f"Learning to Execute, {task.capitalize()} (Table {6 if task in PROGRAM_ORDER else 5})",
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
    return markdown_table(["experiment (the paper's table)", "measure", "the paper", "here", "run"], rows)
