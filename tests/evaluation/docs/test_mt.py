"""The translation table: one row per record, BLEU with its signature."""

from __future__ import annotations

from universal_transformer.evaluation import docs
from universal_transformer.evaluation.docs import TABLES

from ..conftest import make_record
from .records import algorithmic_record


SIGNATURE = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"


def _mt(experiment, model, validation_bleu, test_bleu=None, **fields):
    task = {"name": "translation", "source_lang": "en", "target_lang": "de"}
    validation = {"score": validation_bleu, "bleu": validation_bleu, "beam_size": 1, "sentences": 500}
    test = {} if test_bleu is None else {"bleu": test_bleu, "beam_size": 4, "sentences": 1000,
                                          "bleu_signature": fields.pop("signature", SIGNATURE),
                                          "decode_seconds": 80.4, "sentences_per_second": 12.44, "length_penalty": 0.6}
    model_config = {"share_weights": model != "Transformer", "act": model == "UT+ACT"}
    return make_record(experiment, model=model_config, task=task, validation=validation, test=test, **fields)


def test_mt_table_one_row_per_record_in_model_order_with_the_shared_signature():
    records = [
        _mt("mt/ut", "UT", 30.123, 31.456, parameters=3_825_536, steps=2500, best_step=2500),
        _mt("mt/ut-avg5", "UT", 30.123, 32.0, parameters=3_825_536, status="rescored"),
        _mt("mt/transformer", "Transformer", 29.5, 30.25, parameters=3_801_088),
        _mt("mt/ut-act", "UT+ACT", 12.0, status="time_limit", steps=700, best_step=500, wall_time_seconds=1800.4),
        algorithmic_record("copy", "UT", 0.5, 0.1),  # another family: not shown
    ]
    assert TABLES["mt"](records) == "\n".join([
        "| run | model | parameters | validation BLEU | test BLEU | test decoding | best step / steps | wall time "
        "| status |",
        "|---|---|---|---|---|---|---|---|---|",
        "| transformer | Transformer | 3.80M | 29.50 (beam 1, 500 sent.) | 30.25 (beam 4, α 0.6, 1000 sent.) "
        "| 80 s (12.4 sent./s) | 800 / 1000 | 100 s | done |",
        "| ut | UT | 3.83M | 30.12 (beam 1, 500 sent.) | 31.46 (beam 4, α 0.6, 1000 sent.) | 80 s (12.4 sent./s) "
        "| 2500 / 2500 | 100 s | done |",
        "| ut-avg5 | UT | 3.83M | 30.12 (beam 1, 500 sent.) | 32.00 (beam 4, α 0.6, 1000 sent.) | 80 s (12.4 sent./s) "
        "| 800 / 1000 | 100 s | rescored |",
        "| ut-act | UT+ACT | - | 12.00 (beam 1, 500 sent.) | - | - | 500 / 700 | 1800 s | partial |",
        "",
        f"sacrebleu signature: `{SIGNATURE}`.",
        "",
        "partial = stopped at its time limit: mt/ut-act (step 700, 1800 s)",
    ])


def test_mt_table_shows_each_signature_when_they_differ():
    records = [_mt("mt/ut", "UT", 30.0, 31.0), _mt("mt/transformer", "Transformer", 29.0, 30.0, signature="other|sig")]
    table = TABLES["mt"](records)
    assert table.splitlines()[0].endswith("| status | signature |")
    assert "| other\\|sig |" in table and "sacrebleu signature" not in table
    assert TABLES["mt"]([algorithmic_record("copy", "UT", 0.5, 0.1)]) == docs.NO_RECORDS
