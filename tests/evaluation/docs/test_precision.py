"""The precision check: bf16 beside fp32 per check and seed, with the mean over seeds."""

from __future__ import annotations

from universal_transformer.evaluation import docs
from universal_transformer.evaluation.docs import TABLES

from ..conftest import make_record
from .records import lte_record


def _precision(check, precision, seed, test, **fields):
    record = make_record(f"checks/precision/{check}-{precision}-s{seed}", test=test, seeds=[seed], **fields)
    record.config["train"]["precision"] = precision
    return record


def test_precision_check_table_pairs_the_precisions_and_averages_over_seeds():
    babi = {"mean_error": 2.0, "ponder_supporting": 2.5, "ponder_other": 2.25, "ponder_question": 3.0}
    records = [
        _precision("copy", "bf16", 0, {"char_accuracy": 0.99, "sequence_accuracy": 0.9}),
        _precision("copy", "fp32", 1, {"char_accuracy": 1.0, "sequence_accuracy": 0.996}),
        _precision("copy", "fp32", 0, {"char_accuracy": 1.0, "sequence_accuracy": 1.0}, wall_time_seconds=80.4),
        _precision("babi1", "bf16", 0, {**babi, "mean_error": 4.0}),
        _precision("babi1", "fp32", 0, babi),
        lte_record("copy", "UT", 0.996, 0.93),  # another family: not shown
    ]
    assert TABLES["precision-check"](records) == "\n".join([
        "| check | precision | seed | test: char / seq acc, or error | ponder: supporting / other / question "
        "| steps (best) | wall time |",
        "|---|---|---|---|---|---|---|",
        "| babi1 | fp32 | 0 | 2.0% error | 2.50 / 2.25 / 3.00 | 1000 (800) | 100 s |",
        "| babi1 | bf16 | 0 | 4.0% error | 2.50 / 2.25 / 3.00 | 1000 (800) | 100 s |",
        "| copy | fp32 | 0 | 1.00 / 1.000 | - | 1000 (800) | 80 s |",
        "| copy | bf16 | 0 | 0.99 / 0.900 | - | 1000 (800) | 100 s |",
        "| copy | fp32 | 1 | 1.00 / 0.996 | - | 1000 (800) | 100 s |",
        "",
        "mean test sequence accuracy, or error %: babi1 fp32: 2.000 over 1 seed(s); babi1 bf16: 4.000 over 1 seed(s); "
        "copy fp32: 0.998 over 2 seed(s); copy bf16: 0.900 over 1 seed(s)",
    ])
    assert TABLES["precision-check"](records[-1:]) == docs.NO_RECORDS
