"""The tables over every record: the runs overview and the progress of partial runs."""

from __future__ import annotations

from universal_transformer.evaluation.docs import TABLES

from ..conftest import make_record


def test_runs_table_lists_every_record():
    records = [
        make_record("algorithmic/copy-ut", seeds=[0, 1], commit="abcdef0123456789-dirty", status="early_stopped",
                    parameters=119_424),
        make_record("babi/en/ut/task1", commit=None, best_step=None, status="time_limit", wall_time_seconds=59.6,
                    machine={"cpu": "AMD EPYC", "gpus": ["NVIDIA H100", "NVIDIA H100"], "cuda": "12.4"}),
    ]
    assert TABLES["runs"](records) == "\n".join([
        "| experiment | parameters | seeds | status | steps | best step | wall time | commit | machine |",
        "|---|---|---|---|---|---|---|---|---|",
        "| algorithmic/copy-ut | 0.12M | 0 1 | early stopped | 1000 | 800 | 100 s | abcdef0-dirty | Test CPU |",
        "| babi/en/ut/task1 | - | 0 | partial | 1000 | - | 60 s | - | NVIDIA H100 |",
    ])


def test_progress_table_shows_partial_runs_on_validation():
    partial = make_record("babi/en-10k/joint", task={"name": "babi"}, status="time_limit", steps=3000, best_step=2000,
                          validation={"mean_error": 12.5, "failed_tasks": 7, "task2/error": 30.0, "score": -12.5,
                                      "ponder_question": 3.5, "task2/ponder_time": 2.1})
    lengths = make_record("algorithmic/reverse-ut", status="time_limit",
                          validation={"len400/char_accuracy": 0.5, "len40/char_accuracy": 0.9, "score": 0.0})
    done = make_record("algorithmic/copy-ut", status="done")
    from universal_transformer.evaluation.docs import TABLES

    table = TABLES["progress"]([partial, done, lengths])
    lines = table.splitlines()
    assert len(lines) == 4  # header, rule, the two partial runs
    assert "| babi/en-10k/joint | 3000 | 2000 |" in lines[2]
    assert "failed_tasks 7; mean_error 12.5; ponder_question 3.5 |" in lines[2]  # overall numbers only
    assert "task2" not in lines[2] and "score" not in lines[2]
    assert "len40/char_accuracy 0.9; len400/char_accuracy 0.5" in lines[3]  # lengths in numeric order
    assert TABLES["progress"]([done]) == "_No records yet._"
    program = make_record("lte/program-ut", status="time_limit", task={"name": "lte", "task": "program"},
                          validation={"char_accuracy": 0.48, "sequence_accuracy": 0.25, "score": 0.2505})
    assert TABLES["progress"]([program]).splitlines()[2].endswith("| char_accuracy 0.48; sequence_accuracy 0.25 |")
