"""Numerics: bf16 autocast against fp32 on the same short runs (configs/checks/precision.grid)."""

from __future__ import annotations

import re
from typing import Any

from ..babi_report import role_ponder
from ..records import RunRecord
from .common import NO_RECORDS, family, fmt_accuracy, fmt_seconds, markdown_table
from .sections import register_table


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
    table = markdown_table(["check", "precision", "seed", "test: char / seq acc, or error", "ponder: supporting / other / question",
                    "steps (best)", "wall time"], rows)
    summary = [f"{name} {prec}: {sum(v) / len(v):.3f} over {len(v)} seed(s)" for (name, prec), v in means.items()
               if v and None not in v]
    return table + ("\n\nmean test sequence accuracy, or error %: " + "; ".join(summary) if summary else "")
