"""What every table shares: cell formats, record families, model labels, markdown tables."""

from __future__ import annotations

from typing import Any

from ...data.lte import TASK_DEFAULTS as LTE_TASK_DEFAULTS
from ..algorithmic_report import MODEL_NAMES, MODEL_ORDER
from ..records import RunRecord


STATUS_LABELS = {"done": "done", "early_stopped": "early stopped", "time_limit": "partial", "rescored": "rescored"}
NO_RECORDS = "_No records yet._"
MODELS = tuple(MODEL_NAMES[m] for m in MODEL_ORDER)  # row order: LSTM, Transformer, UT, UT+ACT


# Shared cell formats, so every table prints numbers the same way.

def fmt_seconds(seconds: float) -> str:
    """Wall time in whole seconds, e.g. ``573 s``."""
    return f"{seconds:.0f} s"


def fmt_accuracy(value: Any, digits: int = 2) -> str:
    """An accuracy (or ponder time) with two decimals (or ``digits``); ``-`` when not a number."""
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "-"


def fmt_mean_std(metrics: dict[str, Any], mean: str, std: str) -> str:
    """``mean ± std`` of two metrics (the ± part only where the std is there); ``-`` where the
    record has no mean (a model without it, or a record scored before it was measured)."""
    value, spread = metrics.get(mean), metrics.get(std)
    if not isinstance(value, (int, float)):
        return "-"
    return fmt_accuracy(value) + (f" ± {fmt_accuracy(spread)}" if isinstance(spread, (int, float)) else "")


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


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table: the header row, its rule, then the rows (cells already formatted)."""
    return "\n".join([_row(header), "|---" * len(header) + "|", *map(_row, rows)])


def transpose_markdown(table: str, corner: str) -> str:
    """The markdown ``table`` (as :func:`markdown_table` writes it; no cell holds a ``|``) with
    rows and columns swapped and ``corner`` as its top-left cell: a table of many models by
    a few tasks reads down the page rather than across it."""
    rows = [[cell.strip() for cell in line.strip()[1:-1].split("|")] for line in table.split("\n")]
    del rows[1]  # the rule
    if len({len(row) for row in rows}) != 1:
        raise ValueError(f"transpose_markdown: rows of unequal length in a table headed {rows[0]}")
    columns = [list(column) for column in zip(*rows)]
    columns[0][0] = corner
    return markdown_table(columns[0], columns[1:])


LSTM_CLASSES = ("LSTMSeq2Seq", "LSTMLanguageModel")


def model_label(config: dict[str, Any]) -> str:
    """LSTM, Transformer, UT or UT+ACT, from a resolved experiment config."""
    if config.get("model_class") in LSTM_CLASSES:
        return "LSTM"
    model = config.get("model") or {}
    if model.get("share_weights", True) is False:
        return "Transformer"
    return "UT+ACT" if model.get("act", False) else "UT"


# The Learning to Execute options that change what a task holds, as a task label names them.
_LTE_CONTENT = {"operations": "{}", "operand_operations": "operands {}", "max_length": "length {}", "max_nesting": "nesting {}",
                "length_draw": "a length per {}"}


def task_label(config: dict[str, Any]) -> str:
    """The task of a resolved experiment config (``task.task``), and for a Learning to Execute
    task whose operations, lengths, nesting or length draw differ from the task's own
    (Control's loops alone, say) what differs, e.g. ``control (small_loop)``: another task, whose runs must not
    fill the paper's cells."""
    task = config.get("task") or {}
    name = str(task.get("task"))
    if task.get("name") != "lte":
        return name
    defaults = {**LTE_TASK_DEFAULTS.get(name, {}), "length_draw": "example"}
    changed = []
    for key, form in _LTE_CONTENT.items():
        value, default = task.get(key), defaults.get(key)
        if value is None or default is None:
            continue
        if isinstance(value, (list, tuple)):
            if list(value) != list(default):
                changed.append(form.format("+".join(value)))
        elif value != default:
            changed.append(form.format(value))
    return f"{name} ({', '.join(changed)})" if changed else name


def trained_depth(model: dict[str, Any]) -> str:
    """The recurrent steps a model was trained with (ACT: its step limit), read from the
    record's config as written (records outlive the config classes' keys)."""
    steps = model.get("num_steps")
    if model.get("act"):
        return str(model.get("act_max_steps") or (2 * steps if isinstance(steps, int) else "?"))
    return str(steps if steps is not None else "?")


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


def cell_record(group: list[RunRecord]) -> RunRecord:
    """The record a table cell shows for a group of runs (seeds, variants): the best on
    validation among those with test metrics, so that a partial run that was never scored
    on test (its checkpoint gone with its machine) does not hide a finished one; the best
    of all when none has test metrics. The partial run stays in the progress table."""
    return best_on_validation([r for r in group if r.metrics["test"]] or group)


def ordered(present: set[str], order: tuple[str, ...]) -> list[str]:
    """``present`` in the order of ``order``, then those it does not name, sorted."""
    return [x for x in order if x in present] + sorted(present - set(order))


def partial_runs(models: dict[Any, RunRecord]) -> list[tuple[str, int, float]]:
    """(experiment, steps, wall seconds) of the runs stopped by their time limit, for :func:`partial_footnote`."""
    return [(r.experiment, r.steps, r.wall_time_seconds) for r in models.values() if r.partial]
