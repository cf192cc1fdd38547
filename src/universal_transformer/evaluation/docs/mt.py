"""Machine translation (the paper's Section 3.6, Table 7)."""

from __future__ import annotations

from typing import Any
from ..records import RunRecord
from .common import (
    MODELS, NO_RECORDS, family, fmt_parameters, fmt_seconds, inference_steps, markdown_table, model_label,
    partial_footnote, partial_runs, status_label,
)
from .sections import register_table


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
    table = markdown_table(header + (["signature"] if shared is None else []), rows)
    caption = f"\n\nsacrebleu signature: `{shared}`." if shared is not None else ""
    return table + caption + partial_footnote(partial_runs({r.experiment: r for r in runs}))
