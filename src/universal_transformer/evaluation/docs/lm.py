"""Language modelling (the paper's Sections 3.2 and 3.3): Penn Treebank perplexity, subject-verb
agreement and LAMBADA, all scored by the models trained on Penn Treebank."""

from __future__ import annotations

import re
from typing import Any
from ..records import RunRecord
from .common import (
    MODELS, NO_RECORDS, best_on_validation, family, fmt_accuracy, fmt_mean_std, fmt_parameters, fmt_perplexity,
    fmt_seconds, markdown_table, model_label, ordered, partial_footnote, partial_runs, status_label,
)
from .sections import register_table


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
    return {model: best_on_validation(groups[model]) for model in ordered(set(groups), MODELS)}


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
                     fmt_perplexity(test.get("perplexity")), fmt_mean_std(test, "ponder_time", "ponder_std"),
                     f"{r.best_step if r.best_step is not None else '-'} / {r.steps}",
                     fmt_seconds(r.wall_time_seconds), status_label(r)])
    return markdown_table(["model", "parameters", "validation perplexity", "test perplexity", "ponder time (test)",
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
    table = markdown_table(["model", *(header for header, _ in columns)], rows)
    return table + caption + partial_footnote(partial_runs(models))


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
    for name in ordered(found, tuple(LAMBADA_SETS)):
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
    table = markdown_table(["set", "model", "accuracy", "target perplexity", "RC accuracy", "OOV targets"], rows)
    return table + partial_footnote(partial_runs(models))
