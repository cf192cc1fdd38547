"""Generated sections: only the marked bodies change; every table shows the records' numbers."""

from __future__ import annotations

import pytest

from universal_transformer.evaluation import docs
from universal_transformer.evaluation.docs import (
    TABLES, DocsError, model_label, register_table, render, stale_sections, update_file,
)

from .conftest import make_record

PROSE = """# Results

Hand-written prose, kept as it is.
<!-- generated: echo -->
old table
<!-- end generated: echo -->
More prose.

```markdown
<!-- generated: not-a-table -->
```
<!-- generated: echo -->
<!-- end generated: echo -->
"""


@pytest.fixture
def echo(monkeypatch):
    """A table that lists the records' experiments."""
    monkeypatch.setitem(TABLES, "echo", lambda records: "| experiment |\n|---|\n" + "\n".join(
        f"| {r.experiment} |" for r in records))


def test_render_replaces_only_the_marked_bodies(echo):
    records = [make_record("algorithmic/a"), make_record("algorithmic/b")]
    out = render(PROSE, records)
    table = "<!-- generated: echo -->\n\n| experiment |\n|---|\n| algorithmic/a |\n| algorithmic/b |\n\n<!-- end generated: echo -->"
    assert out == f"""# Results

Hand-written prose, kept as it is.
{table}
More prose.

```markdown
<!-- generated: not-a-table -->
```
{table}
"""
    assert render(out, records) == out  # idempotent
    assert stale_sections(out, records) == [] and stale_sections(PROSE, records) == ["echo", "echo"]
    assert stale_sections(out, records[:1]) == ["echo", "echo"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\n<!-- generated: nope -->\n<!-- end generated: nope -->\n", "line 2: unknown table 'nope'; known: "),
        ("a\nb\n<!-- end generated: echo -->\n", "line 3: end marker of 'echo' without its start marker"),
        ("<!-- generated: echo -->\nx\n", "line 1: section 'echo' is never closed"),
        ("<!-- generated: echo -->\n<!-- generated: runs -->\n", "line 2: section 'runs' starts inside section 'echo' (opened on line 1)"),
        ("<!-- generated: echo -->\n<!-- end generated: runs -->\n", "line 2: end marker of 'runs', but section 'echo' (line 1) is open"),
        ("x\n<!-- generated: echo --> trailing\n", "line 2: malformed marker"),
        ("<!-- generated: echo -->\n<!--generated:-->\n<!-- end generated: echo -->", "line 2: malformed marker"),
    ],
)
def test_marker_errors_name_the_line(echo, text, message):
    with pytest.raises(DocsError) as err:
        render(text, [], source="docs/results.md")
    assert str(err.value).startswith("docs/results.md, line ") and message in str(err.value)


def test_register_table_refuses_duplicates_and_spaces():
    with pytest.raises(ValueError, match="registered twice"):
        register_table("runs")(lambda records: "")
    with pytest.raises(ValueError, match="one word"):
        register_table("two words")


def test_update_file_check_mode_writes_nothing(echo, tmp_path):
    path = tmp_path / "results.md"
    path.write_text(PROSE)
    records = [make_record()]
    assert update_file(path, records, check=True) is False
    assert path.read_text() == PROSE
    assert update_file(path, records) is False  # was stale: written
    assert path.read_text() == render(PROSE, records)
    assert update_file(path, records, check=True) is True
    assert update_file(path, records) is True
    with pytest.raises(DocsError, match="absent.md: cannot read"):
        update_file(tmp_path / "absent.md", records)


# The algorithmic tables.

MODELS = {  # label -> (model_class, model section)
    "LSTM": ("LSTMSeq2Seq", {"d_model": 128}),
    "Transformer": ("UniversalTransformer", {"share_weights": False}),
    "UT": ("UniversalTransformer", {"share_weights": True, "act": False}),
    "UT+ACT": ("UniversalTransformer", {"act": True}),
}


def _algorithmic(task, label, char, seq, *, score=0.5, seed=0, family="algorithmic", **fields):
    model_class, model = MODELS[label]
    test = {"len40/char_accuracy": char + 0.5, "len40/sequence_accuracy": seq + 0.5,
            "len400/char_accuracy": char, "len400/sequence_accuracy": seq}
    if label == "UT+ACT":
        test["len400/encoder_ponder_time"] = 2.25
    return make_record(f"{family}/{task}-{label}", model_class=model_class, model=model,
                       task={"name": "algorithmic", "task": task}, validation={"score": score},
                       test=test, seeds=[seed], **fields)


def test_model_label_from_config():
    for label, (model_class, model) in MODELS.items():
        assert model_label({"model_class": model_class, "model": model}) == label


def test_algorithmic_table_cells_best_seed_and_partial():
    records = [
        _algorithmic("reverse", "UT", 0.061, 0.0),
        _algorithmic("copy", "UT", 0.12, 0.01, score=0.1, seed=0),
        _algorithmic("copy", "UT", 0.09, 0.02, score=0.9, seed=1),  # best on validation
        _algorithmic("copy", "LSTM", 0.13, 0.0),
        _algorithmic("copy", "UT+ACT", 0.034, 0.0, status="time_limit", steps=750, wall_time_seconds=252.3),
        _algorithmic("addition", "Transformer", 0.1, 0.0),
        _algorithmic("copy", "Transformer", 0.99, 0.99, family="demo"),  # another family: not shown
    ]
    assert TABLES["algorithmic-len400"](records) == "\n".join([
        "| model | Copy (len 400) | Reverse (len 400) | Addition (len 400) |",
        "|---|---|---|---|",
        "| LSTM | 0.13 / 0.00 | - | - |",
        "| Transformer | - | - | 0.10 / 0.00 |",
        "| UT | 0.09 / 0.02 | 0.06 / 0.00 | - |",
        "| UT+ACT | 0.03 / 0.00 (partial) | - | - |",
        "",
        "partial = stopped at its time limit: algorithmic/copy-UT+ACT (step 750, 252 s)",
    ])
    assert "| UT | 0.59 / 0.52 | 0.56 / 0.50 | - |" in TABLES["algorithmic-len40"](records)
    assert TABLES["algorithmic-len400"]([]) == docs.NO_RECORDS


def test_algorithmic_curve_all_lengths_ponder_and_status():
    records = [
        _algorithmic("copy", "UT", 0.09, 0.0),
        _algorithmic("copy", "UT+ACT", 0.03, 0.0, status="time_limit", steps=750, best_step=500, wall_time_seconds=252.3),
    ]
    records[0].metrics["test"]["len100/char_accuracy"] = 0.4  # a length only one run has, without seq accuracy
    assert TABLES["algorithmic-curve"](records) == "\n".join([
        "| task | model | len 40 | len 100 | len 400 | ponder (len 400) | steps | best step | wall time | status |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| copy | UT | 0.59 / 0.50 | 0.40 / - | 0.09 / 0.00 | - | 1000 | 800 | 100 s | done |",
        "| copy | UT+ACT | 0.53 / 0.50 | - | 0.03 / 0.00 | 2.25 | 750 | 500 | 252 s | partial |",
    ])
    demo = TABLES["demo"]([_algorithmic("copy", "UT", 0.9, 0.8, family="demo")])
    assert "| copy | UT | 1.40 / 1.30 | 0.90 / 0.80 | 1000 | 800 | 100 s | done |" in demo


# The bAbI tables (babi_report's, over records).

def _babi(experiment, seed, score, errors, **fields):
    test = {f"task{t}/error": e for t, e in errors.items()}
    test.update({f"task{t}/ponder_time": 2.0 + t for t in errors})
    return make_record(experiment, task={"name": "babi", "set": "en"}, validation={"score": score}, test=test,
                       seeds=[seed], **fields)


def test_babi_tables_best_seed_per_group_and_partial():
    records = [
        _babi("babi/en/ut/task1", 0, -3.0, {1: 0.5}, steps=1001, wall_time_seconds=30.0),
        _babi("babi/en/ut/task1", 1, -1.0, {1: 2.0}, steps=1002, wall_time_seconds=40.0),  # best on validation
        _babi("babi/en/ut/task2", 0, -9.0, {2: 12.0}, steps=1003, wall_time_seconds=80.0,
              status="time_limit"),
        _babi("babi/en/ut-act-joint", 0, -5.0, {1: 0.0, 2: 30.0}, wall_time_seconds=600.0),
        make_record("babi/en/ut/task3", task={"name": "babi"}),  # no per-task test errors: left out
    ]
    table = TABLES["babi"](records)
    assert table.split("\n")[:4] == [
        "| task | en/ut | en/ut-act-joint |", "|---|---|---|", "| 1 | 2.0 | 0.0 |", "| 2 | 12.0 | 30.0 |"]
    assert "| average error | 7.00 | 15.00 |" in table and "| failed (> 5%) | 1 | 1 |" in table
    assert table.endswith("\n\npartial = stopped at its time limit: babi/en/ut/task2 (step 1003, 80 s)")
    assert "| 2 | 4.00 | 4.00 |" in TABLES["babi-ponder"](records)
    runs = TABLES["babi-runs"](records)
    assert "| 1 | 1002 / 800 / 40 s | 1000 / 800 / 600 s |" in runs
    assert "| training time of these runs | 2 min | 10 min |" in runs  # the joint run counts once
    assert TABLES["babi"]([]) == docs.NO_RECORDS


def test_runs_table_lists_every_record():
    records = [
        make_record("algorithmic/copy-ut", seeds=[0, 1], commit="abcdef0123456789-dirty", status="early_stopped"),
        make_record("babi/en/ut/task1", commit=None, best_step=None, status="time_limit", wall_time_seconds=59.6,
                    machine={"cpu": "AMD EPYC", "gpus": ["NVIDIA H100", "NVIDIA H100"], "cuda": "12.4"}),
    ]
    assert TABLES["runs"](records) == "\n".join([
        "| experiment | seeds | status | steps | best step | wall time | commit | machine |",
        "|---|---|---|---|---|---|---|---|",
        "| algorithmic/copy-ut | 0 1 | early stopped | 1000 | 800 | 100 s | abcdef0-dirty | Test CPU |",
        "| babi/en/ut/task1 | 0 | partial | 1000 | - | 60 s | - | NVIDIA H100 |",
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
