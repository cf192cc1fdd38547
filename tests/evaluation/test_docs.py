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


def test_error_position_table_lists_the_records_that_measured_it():
    tenths = [0.5, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.125]
    measured = _algorithmic("copy", "UT", 0.9, 0.0)
    measured.metrics["test"].update({"teacher_forced/len400/error_rate_by_tenth": tenths,
                                     "teacher_forced/len400/char_accuracy": 0.9,
                                     "teacher_forced/len400/end_accuracy": 0.25,
                                     "teacher_forced/len400/sequence_accuracy_before_end": 0.5})
    other = _algorithmic("copy", "UT", 0.8, 0.0, family="algorithmic-offsets")
    other.metrics["test"]["teacher_forced/len400/error_rate_by_tenth"] = [0.0] * 10
    other.metrics["test"]["teacher_forced/len400/char_accuracy"] = 1.0
    table = TABLES["algorithmic-error-position"]([measured, other, _algorithmic("reverse", "UT", 0.1, 0.0)])
    again = _algorithmic("copy", "UT", 0.8, 0.0, family="algorithmic-source-eos", command="ut train a")
    again.metrics["test"].update(other.metrics["test"])
    rescored = _algorithmic("copy", "UT", 0.8, 0.0, family="algorithmic-errors", command="ut train a")
    rescored.metrics["test"].update(measured.metrics["test"])
    shown = TABLES["algorithmic-error-position"]([again, rescored]).splitlines()[2:]
    assert len(shown) == 1 and shown[0].startswith("| algorithmic-errors/copy-UT |")  # the re-score only
    assert table.splitlines()[2:] == [
        "| algorithmic-offsets/copy-UT | " + "0.000 | " * 10 + "0.000 | - | - |",  # measured before the ends were
        "| algorithmic/copy-UT | 0.500 | 0.250 | " + "0.000 | " * 7 + "0.125 | 0.100 | 0.25 | 0.50 |",
    ]  # the record without the measurement is left out
    assert TABLES["algorithmic-error-position"]([]) == docs.NO_RECORDS


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


def _lte(task, label, char, seq, *, score=0.5, seed=0, experiment=None, **fields):
    model_class, model = MODELS[label]
    return make_record(experiment or f"lte/{task}-{label}", model_class=model_class, model=model,
                       task={"name": "lte", "task": task}, validation={"score": score},
                       test={"char_accuracy": char, "sequence_accuracy": seq}, seeds=[seed], **fields)


def test_lte_table_program_tasks_then_memorisation():
    records = [
        _lte("copy", "UT", 0.996, 0.93, score=0.2),
        _lte("copy", "UT", 0.999, 0.97, score=0.9, seed=1),  # best on validation
        _lte("copy", "Transformer", 0.98, 0.61, status="time_limit", steps=9000, wall_time_seconds=2400.4),
        _lte("addition", "LSTM", 0.5, 0.1),
        _algorithmic("copy", "UT", 0.09, 0.02),  # another family: not shown
    ]
    assert TABLES["lte"](records) == "\n".join([
        "| model | Addition | Copy |",
        "|---|---|---|",
        "| LSTM | 0.50 / 0.10 | - |",
        "| Transformer | - | 0.98 / 0.61 (partial) |",
        "| UT | - | 1.00 / 0.97 |",
        "",
        "partial = stopped at its time limit: lte/copy-Transformer (step 9000, 2400 s)",
    ])
    assert TABLES["lte"](records[-1:]) == docs.NO_RECORDS


def test_lte_table_names_the_run_chosen_among_variants():
    narrow = _lte("program", "UT", 0.47, 0.22, score=0.22, parameters=119_424)
    wide = _lte("program", "UT", 0.80, 0.55, score=0.55, parameters=468_224, experiment="lte/program-UT-d128")
    table = TABLES["lte"]([narrow, wide, _lte("program", "LSTM", 0.6, 0.4)])
    assert "| UT | 0.80 / 0.55 |" in table
    assert table.endswith("\n\nbest on validation of several runs: program UT: lte/program-UT-d128 "
                          "(0.47M parameters; also lte/program-UT (0.12M))")
    narrow.metrics["validation"]["score"] = 0.9  # the narrow one wins on validation: it is shown
    table = TABLES["lte"]([narrow, wide])
    assert "| UT | 0.47 / 0.22 |" in table and table.endswith("also lte/program-UT-d128 (0.47M))")


def test_lte_table_a_partial_run_without_test_metrics_does_not_hide_a_scored_one():
    narrow = _lte("program", "UT", 0.47, 0.22, score=0.22, parameters=119_424)
    wide = _lte("program", "UT", 0.0, 0.0, score=0.47, parameters=468_224, experiment="lte/program-UT-d128",
                status="time_limit", steps=56_181, wall_time_seconds=14_140.0)
    wide.metrics["test"] = {}  # stopped by its time limit, its checkpoint lost before the test evaluation
    table = TABLES["lte"]([narrow, wide])
    assert "| UT | 0.47 / 0.22 |" in table
    assert table.endswith("program UT: lte/program-UT (0.12M parameters; "
                          "also lte/program-UT-d128 (0.47M, not scored on test))")
    assert TABLES["lte"]([wide]).splitlines()[2] == "| UT | - |"  # alone, it is still the cell: no score to show


def test_lte_breakdown_table_per_length_and_nesting_of_the_program_tasks():
    broken = _lte("program", "UT", 0.5, 0.25)
    broken.metrics["test"].update({"length1/sequence_accuracy": 0.9, "length2/sequence_accuracy": 0.5,
                                   "length10/sequence_accuracy": 0.01, "nesting2/sequence_accuracy": 0.2,
                                   "nesting1/sequence_accuracy": 0.3, "length1/char_accuracy": 0.95})
    before = _lte("addition", "LSTM", 0.5, 0.1)  # scored before the breakdown
    memorisation = _lte("copy", "UT", 1.0, 1.0)
    memorisation.metrics["test"]["length3/sequence_accuracy"] = 1.0  # not a program task: not shown
    assert TABLES["lte-breakdown"]([broken, before, memorisation]) == "\n".join([
        "| task | model | length 1 | length 2 | length 10 | nesting 1 | nesting 2 |",
        "|---|---|---|---|---|---|---|",
        "| program | UT | 0.90 | 0.50 | 0.01 | 0.30 | 0.20 |",
        "| addition | LSTM | - | - | - | - | - |",
    ])
    assert TABLES["lte-breakdown"]([before, memorisation]) == docs.NO_RECORDS


def test_lte_operations_table_in_the_generators_order_of_operations():
    program = _lte("program", "UT", 0.5, 0.25)
    program.metrics["test"].update({"with_small_loop/sequence_accuracy": 0.1, "with_pair/sequence_accuracy": 0.6,
                                    "with_smallmul/sequence_accuracy": 0.05, "length1/sequence_accuracy": 0.9,
                                    "with_pair/char_accuracy": 0.8})
    control = _lte("control", "Transformer", 0.5, 0.3)
    control.metrics["test"].update({"with_ifstat/sequence_accuracy": 0.7, "with_small_loop/sequence_accuracy": 0.2})
    before = _lte("program", "LSTM", 0.5, 0.1)  # scored before the operations were recorded
    addition = _lte("addition", "UT", 1.0, 0.99)  # one operation: broken down by length only, left out
    addition.metrics["test"]["length1/sequence_accuracy"] = 1.0
    assert TABLES["lte-operations"]([control, before, program, addition]) == "\n".join([
        "| task | model | pair | smallmul | small_loop | ifstat |",
        "|---|---|---|---|---|---|",
        "| program | LSTM | - | - | - | - |",
        "| program | UT | 0.60 | 0.05 | 0.10 | - |",
        "| control | Transformer | - | - | 0.20 | 0.70 |",
    ])
    assert TABLES["lte-operations"]([before]) == docs.NO_RECORDS


def test_lte_beam_table_shows_the_beam_metrics_per_beam_size():
    beam4 = _lte("copy", "UT", 0.99, 0.9)
    beam4.metrics["test"].update({"beam4/char_accuracy": 1.0, "beam4/sequence_accuracy": 0.995})
    greedy_only = _lte("reverse", "Transformer", 0.9, 0.5)
    assert TABLES["lte-beam"]([beam4, greedy_only]) == "\n".join([
        "| model | Copy | Reverse |",
        "|---|---|---|",
        "| Transformer | - | - |",
        "| UT | 1.00 / 0.99 | - |",  # 0.995 rounds to even
    ])
    beam2 = _lte("double", "UT", 0.9, 0.8)
    beam2.metrics["test"].update({"beam2/char_accuracy": 0.95, "beam2/sequence_accuracy": 0.85})
    table = TABLES["lte-beam"]([beam4, beam2])
    assert table.startswith("beam 2:\n\n| model | Copy | Double |") and "\n\nbeam 4:\n\n" in table
    assert TABLES["lte-beam"]([greedy_only]) == docs.NO_RECORDS


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
    # the same runs scored teacher-forced (metrics teacher_forced/lenN/...): "-" where a run has none
    records[0].metrics["test"].update({"teacher_forced/len40/char_accuracy": 1.0,
                                       "teacher_forced/len40/sequence_accuracy": 1.0,
                                       "teacher_forced/len400/char_accuracy": 0.948,
                                       "teacher_forced/len400/sequence_accuracy": 0.0})
    forced = TABLES["algorithmic-curve-teacher-forced"](records).splitlines()
    assert forced[2] == "| copy | UT | 1.00 / 1.00 | - | 0.95 / 0.00 | - | 1000 | 800 | 100 s | done |"
    assert forced[3].startswith("| copy | UT+ACT | - | - | - | 2.25 |")
    # a cell that one of several runs fills: the footnote names the run shown and the others
    bigger = _algorithmic("copy", "UT", 0.5, 0.25, score=0.9)
    bigger.experiment = "algorithmic/copy-UT-b8k"
    table = TABLES["algorithmic-curve"]([*records, bigger])
    assert "| copy | UT | 1.00 / 0.75 | 0.50 / 0.25 |" in table  # the better on validation
    assert table.endswith("\n\nbest on validation of several runs: copy UT: algorithmic/copy-UT-b8k "
                          "(- parameters; also algorithmic/copy-UT (-))")
    assert TABLES["algorithmic-mixed-lengths"](records) == docs.NO_RECORDS
    records[0].metrics["test"].update({"upto400/char_accuracy": 0.5, "upto400/sequence_accuracy": 0.25,
                                       "teacher_forced/upto400/char_accuracy": 0.97,
                                       "teacher_forced/upto400/sequence_accuracy": 0.41})
    assert TABLES["algorithmic-mixed-lengths"](records) == "\n".join([
        "| task | model | lengths 1..400, greedy | lengths 1..400, teacher-forced |",
        "|---|---|---|---|",
        "| copy | UT | 0.50 / 0.25 | 0.97 / 0.41 |",
        "| copy | UT+ACT | - | - |",
    ])
    longer = [_algorithmic("copy", "UT", 0.1, 0.0, family="algorithmic-longer"),
              _algorithmic("copy", "UT", 0.3, 0.1, family="algorithmic-longer")]
    longer[0].experiment, longer[1].experiment = "algorithmic-longer/copy-ut-step8000", "algorithmic-longer/copy-ut-step5000"
    longer[1].metrics["test"].update({"teacher_forced/len400/char_accuracy": 0.95, "upto400/char_accuracy": 0.4,
                                      "upto400/sequence_accuracy": 0.2})
    assert TABLES["algorithmic-longer"](longer + records) == "\n".join([
        "| model | len 40, greedy | len 40, forced | len 400, greedy | len 400, forced | 1..400, greedy | 1..400, forced "
        "| steps (best) | wall time |",
        "|---|---|---|---|---|---|---|---|---|",
        "| copy-ut-step5000 | 0.80 / 0.60 | - | 0.30 / 0.10 | 0.95 / - | 0.40 / 0.20 | - | 1000 (800) | 100 s |",
        "| copy-ut-step8000 | 0.60 / 0.50 | - | 0.10 / 0.00 | - | - | - | 1000 (800) | 100 s |",
    ])
    beam = _algorithmic("reverse", "UT", 0.3, 0.1, family="algorithmic-beam")
    beam.metrics["test"].update({"beam4/len40/char_accuracy": 0.9, "beam4/len40/sequence_accuracy": 0.7,
                                 "beam4/len400/char_accuracy": 0.35, "beam4/len400/sequence_accuracy": 0.125})
    assert TABLES["algorithmic-beam"]([beam]) == "\n".join([
        "| model | len 40, greedy | len 40, forced | len 40, beam 4 | len 400, greedy | len 400, forced | len 400, beam 4 "
        "| steps (best) | wall time |",
        "|---|---|---|---|---|---|---|---|---|",
        "| reverse-UT | 0.80 / 0.60 | - | 0.90 / 0.70 | 0.30 / 0.10 | - | 0.35 / 0.12 | 1000 (800) | 100 s |",
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


def test_babi_ponder_figure_one_line_per_act_column_with_two_tasks(tmp_path):
    act = {"act": True}
    records = [
        _babi("babi/en/joint", 0, -5.0, {1: 0.0, 2: 30.0, 3: 40.0}, model=act),  # ponder 3, 4, 5 (_babi)
        _babi("babi/en/single/task1", 0, -1.0, {1: 0.0}, model=act),  # one point: no line of its own
        _babi("babi/en/fixed-depth", 0, -5.0, {1: 0.0, 2: 30.0}),  # no ACT: nothing to show
    ]
    assert docs.FIGURES["babi-ponder"](records, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert not docs.FIGURES["babi-ponder"](records[1:], tmp_path / "q.png")
    assert not (tmp_path / "q.png").exists()


def test_babi_seeds_table_mean_and_std_over_seeds():
    records = [
        _babi("babi/en/ut/task1", 0, -3.0, {1: 0.5}),
        _babi("babi/en/ut/task1", 1, -1.0, {1: 2.0}),
        _babi("babi/en/ut/task1", 2, -2.0, {1: 3.5}),  # no task 2 run of seed 2: not in the average row
        _babi("babi/en/ut/task2", 0, -9.0, {2: 12.0}),
        _babi("babi/en/ut/task2", 1, -9.0, {2: 10.0}),
        _babi("babi/en/joint", 0, -5.0, {1: 0.0, 2: 30.0}),
        _babi("babi/en/joint", 1, -5.0, {1: 1.0, 2: 20.0}),
        _babi("babi/en/one-seed/task1", 0, -1.0, {1: 9.0}),  # one seed per task: no column
    ]
    # Seeds recorded apart, as ut sweep lays them out (SETTING/seed-N/taskN), share the column.
    apart = [_babi("babi/en/ut/task1", 0, -3.0, {1: 0.5}), _babi("babi/en/ut/seed-1/task1", 1, -1.0, {1: 2.0}),
             _babi("babi/en/joint", 0, -5.0, {1: 0.0}), _babi("babi/en/joint/seed-1", 1, -5.0, {1: 1.0})]
    assert TABLES["babi-seeds"](apart).split("\n")[:3] == [
        "| task | en/ut | en/joint |", "|---|---|---|", "| 1 | 1.2 ± 1.1 (2) | 0.5 ± 0.7 (2) |"]
    assert list(docs.babi_columns(apart)) == ["en/ut", "en/joint"]
    assert TABLES["babi-seeds"](records) == "\n".join([
        "| task | en/ut | en/joint |",
        "|---|---|---|",
        "| 1 | 2.0 ± 1.5 (3) | 0.5 ± 0.7 (2) |",
        "| 2 | 11.0 ± 1.4 (2) | 25.0 ± 7.1 (2) |",
        "| average error (per seed) | 6.1 ± 0.2 (2) | 12.8 ± 3.2 (2) |",
    ])
    assert TABLES["babi-seeds"](records[-1:] + records[:1]) == docs.NO_RECORDS


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


# The language-modelling tables (Penn Treebank models; agreement and LAMBADA on their test split).

LM_MODELS = {  # label -> (model_class, model section)
    "LSTM": ("LSTMLanguageModel", {"d_model": 160, "num_layers": 2}),
    "Transformer": ("UTLanguageModel", {"share_weights": False, "act": False}),
    "UT": ("UTLanguageModel", {"share_weights": True, "act": False}),
    "UT+ACT": ("UTLanguageModel", {"share_weights": True, "act": True}),
}
LINZEN_ITEMS = {0: 1824, 1: 1911, 2: 1889, 3: 1249, 4: 314}


def _lm(label, validation_perplexity, test=None, *, experiment=None, **fields):
    model_class, model = LM_MODELS[label]
    name = experiment or "lm/ptb-" + label.lower().replace("+", "-")
    validation = {"perplexity": validation_perplexity, "score": -validation_perplexity}  # lower perplexity, higher score
    return make_record(name, model_class=model_class, model=model, task={"name": "lm", "test": "ptb.test.txt"},
                       validation=validation, test=test or {}, **fields)


def _ptb(perplexity, ponder=None):
    test = {"perplexity": perplexity, "nll": 5.0, "tokens": 82430}
    if ponder is not None:
        test.update(ponder_time=ponder[0], ponder_std=ponder[1])
    return test


def _agreement(by_attractors, overall, gulordava, original, generated, *, items=LINZEN_ITEMS, skipped=(302, 72)):
    linzen, gul = "agreement/subj_agr_filtered/", "agreement/generated/"
    test = {f"{linzen}attractors{k}/accuracy": a for k, a in zip(items, by_attractors)}
    test.update({f"{linzen}attractors{k}/items": n for k, n in items.items()})
    test.update({f"{linzen}accuracy": overall, f"{linzen}items": sum(items.values()), f"{linzen}skipped_oov": skipped[0],
                 f"{linzen}prefix_unk_rate": 0.18, f"{gul}accuracy": gulordava, f"{gul}items": 338,
                 f"{gul}skipped_oov": skipped[1], f"{gul}original/accuracy": original, f"{gul}original/items": 40,
                 f"{gul}generated/accuracy": generated, f"{gul}generated/items": 298,
                 f"{gul}attractors0/accuracy": 0.99, f"{gul}attractors0/items": 269})  # not a column
    return test


def _lambada(name, accuracy, perplexity, rc_accuracy, oov, passages):
    at = f"lambada/{name}/"
    return {at + "accuracy": accuracy, at + "perplexity": perplexity, at + "rc_accuracy": rc_accuracy,
            at + "oov_targets": oov, at + "passages": passages, at + "target_in_context": 0.8,
            at + "ponder_time": 3.0, at + "ponder_std": 0.5}


def test_model_label_of_the_language_models():
    for label, (model_class, model) in LM_MODELS.items():
        assert model_label({"model_class": model_class, "model": model}) == label


def test_lm_ptb_table_best_seed_parameters_ponder_and_partial():
    records = [
        _lm("UT+ACT", 158.9, status="time_limit", steps=2100, best_step=2000, wall_time_seconds=6000.2,
            parameters=1_906_082),  # partial: no test metrics yet
        _lm("UT", 150.36, _ptb(143.87, (4.0, 0.0)), parameters=1_905_281, status="early_stopped", steps=3500,
            best_step=3000, wall_time_seconds=8420.6),
        _lm("UT", 155.2, _ptb(140.01, (4.0, 0.0)), seeds=[1], parameters=1_905_281),  # worse on validation
        _lm("Transformer", 171.07, _ptb(165.73, (4.0, 0.0))),  # a record without a parameter count
        _lm("LSTM", 160.44, _ptb(154.26), parameters=2_010_001, steps=3500, best_step=3500, wall_time_seconds=5412.3),
        _lm("UT+ACT", 99.0, _ptb(98.0), experiment="lm/lambada-ut-act"),  # not trained on PTB: not shown
        _algorithmic("copy", "UT", 0.5, 0.1),
    ]
    assert TABLES["lm-ptb"](records) == "\n".join([
        "| model | parameters | validation perplexity | test perplexity | ponder time (test) | best step / steps "
        "| wall time | status |",
        "|---|---|---|---|---|---|---|---|",
        "| LSTM | 2.01M | 160.4 | 154.3 | - | 3500 / 3500 | 5412 s | done |",
        "| Transformer | - | 171.1 | 165.7 | 4.00 ± 0.00 | 800 / 1000 | 100 s | done |",
        "| UT | 1.91M | 150.4 | 143.9 | 4.00 ± 0.00 | 3000 / 3500 | 8421 s | early stopped |",
        "| UT+ACT | 1.91M | 158.9 | - | - | 2000 / 2100 | 6000 s | partial |",
    ])


def test_lm_agreement_table_attractor_columns_item_counts_and_skipped():
    records = [
        _lm("UT", 150.0, _agreement([0.93, 0.81, 0.72, 0.64, 0.58], 0.86, 0.71, 0.66, 0.73)),
        _lm("LSTM", 160.0, _agreement([0.95, 0.77, 0.61, 0.55, 0.49], 0.83, 0.69, 0.62, 0.70)),
        _lm("UT+ACT", 158.0, status="time_limit"),  # no test metrics: no row
    ]
    assert TABLES["lm-agreement"](records) == "\n".join([
        "| model | 0 attractors (n=1824) | 1 (n=1911) | 2 (n=1889) | 3 (n=1249) | 4 (n=314) | Linzen all (n=7187) "
        "| Gulordava all (n=338) | original (n=40) | generated (n=298) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| LSTM | 0.95 | 0.77 | 0.61 | 0.55 | 0.49 | 0.83 | 0.69 | 0.62 | 0.70 |",
        "| UT | 0.93 | 0.81 | 0.72 | 0.64 | 0.58 | 0.86 | 0.71 | 0.66 | 0.73 |",
        "",
        "Ranking accuracy (the correct verb form above the wrong one); n = the items ranked. Items with a verb form "
        "outside the vocabulary cannot be ranked and are skipped: Linzen set 302; Gulordava set 72.",
    ])
    # Models that ranked different items: no count in the header, the skipped items per model.
    scores = _agreement([0.9, 0.8], 0.85, 0.7, 0.6, 0.75, items={0: 1800, 1: 1900}, skipped=(310, 72))
    other = _lm("Transformer", 170.0, scores, status="time_limit", steps=10, wall_time_seconds=9.0)
    table = TABLES["lm-agreement"]([*records, other])
    assert table.split("\n")[0].startswith("| model | 0 attractors | 1 | 2 (n=1889) |")
    assert "| Transformer | 0.90 | 0.80 | - | - | - | 0.85 |" in table
    assert "skipped: Linzen set 302 (LSTM), 310 (Transformer), 302 (UT); Gulordava set 72." in table
    assert table.endswith("partial = stopped at its time limit: lm/ptb-transformer (step 10, 9 s)")


def test_lm_lambada_table_rows_by_set_then_model():
    ut = {**_lambada("lambada_test", 0.031, 4316.14, 0.277, 2934, 5153),
          **_lambada("lambada_test_plain_text", 0.012, 5210.52, 0.241, 2210, 5153),
          **_lambada("lambada_control_test_data_plain_text", 0.046, 901.37, 0.109, 688, 5000)}
    lstm = _lambada("lambada_test_plain_text", 0.018, 4627.83, 0.253, 2210, 5153)
    records = [_lm("UT", 150.0, ut), _lm("LSTM", 160.0, lstm), _lm("Transformer", 170.0, _ptb(165.0))]
    assert TABLES["lm-lambada"](records) == "\n".join([
        "| set | model | accuracy | target perplexity | RC accuracy | OOV targets |",
        "|---|---|---|---|---|---|",
        "| test | LSTM | 0.018 | 4627.8 | 0.253 | 2210 of 5153 |",
        "| test | UT | 0.012 | 5210.5 | 0.241 | 2210 of 5153 |",
        "| control | UT | 0.046 | 901.4 | 0.109 | 688 of 5000 |",
        "| test (OpenAI) | UT | 0.031 | 4316.1 | 0.277 | 2934 of 5153 |",
    ])


def test_lm_tables_without_records():
    others = [_algorithmic("copy", "UT", 0.5, 0.1), _lm("UT+ACT", 99.0, _ptb(98.0), experiment="lm/lambada-ut-act")]
    partial = _lm("UT", 150.0, status="time_limit")
    for name in ("lm-ptb", "lm-agreement", "lm-lambada"):
        assert TABLES[name]([]) == TABLES[name](others) == docs.NO_RECORDS
    assert TABLES["lm-agreement"]([partial]) == TABLES["lm-lambada"]([partial]) == docs.NO_RECORDS
    assert "| UT | - | 150.0 | - | - | 800 / 1000 | 100 s | partial |" in TABLES["lm-ptb"]([partial])


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
        _algorithmic("copy", "UT", 0.5, 0.1),  # another family: not shown
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
    assert TABLES["mt"]([_algorithmic("copy", "UT", 0.5, 0.1)]) == docs.NO_RECORDS


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
        _lte("copy", "UT", 0.996, 0.93),  # another family: not shown
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


def test_length_curves_and_their_figure(tmp_path):
    records = [
        _algorithmic("copy", "UT", 0.9, 0.3),
        _algorithmic("copy", "LSTM", 0.4, 0.1),
        make_record("algorithmic/reverse-UT", task={"name": "algorithmic", "task": "reverse"},
                    status="time_limit"),  # partial: no test metrics
        _algorithmic("copy", "UT", 0.1, 0.1, family="demo"),  # another family
    ]
    assert docs.length_curves(records) == {  # (_algorithmic puts char + 0.5, seq + 0.5 at length 40)
        "copy": {"LSTM": [(40, 0.4 + 0.5, 0.1 + 0.5), (400, 0.4, 0.1)], "UT": [(40, 0.9 + 0.5, 0.3 + 0.5), (400, 0.9, 0.3)]},
    }
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    assert docs.FIGURES["algorithmic-length"](records, first) and docs.FIGURES["algorithmic-length"](records, second)
    assert first.read_bytes() == second.read_bytes()  # no time stamp: the same records draw the same file
    assert not docs.FIGURES["algorithmic-length"](records[2:3], tmp_path / "c.png")
    assert not (tmp_path / "c.png").exists()
    written = docs.update_figures(tmp_path / "figures", records)
    assert written == {"algorithmic-length": tmp_path / "figures" / "algorithmic-length.png",
                       "demo-length": tmp_path / "figures" / "demo-length.png", "babi-ponder-study": None,
                       "babi-ponder": None, "algorithmic-position-free-length": None, "babi-stories-per-step": None,
                       "babi-stories-ponder": None, "babi-floor": None, "babi-stories-joint": None, "babi-depth": None}
    docs.update_figures(tmp_path / "figures", records[2:3])  # nothing to draw any more: the figures go
    assert not list((tmp_path / "figures").iterdir())


def test_position_free_curves_pick_those_runs_greedy_and_teacher_forced(tmp_path):
    def run(label, char, *, positions, score):
        record = _algorithmic("reverse", label, char, char / 2, family="algorithmic-prenorm", score=score)
        record.config["model"] = {**record.config["model"], "position_embedding": "sinusoid" if positions else "none"}
        record.metrics["test"].update({"teacher_forced/len40/char_accuracy": 1.0, "teacher_forced/len40/sequence_accuracy": 0.75,
                                       "teacher_forced/len400/char_accuracy": char + 0.25,
                                       "teacher_forced/len400/sequence_accuracy": 0.0})
        return record

    # the positional UT is best on validation, but only the position-free ones compete here
    records = [run("UT", 0.1, positions=True, score=0.9), run("UT", 0.25, positions=False, score=0.5),
               run("Transformer", 0.125, positions=False, score=0.5)]
    free = lambda r: r.config["model"]["position_embedding"] == "none"  # noqa: E731
    assert docs.length_curves(records, name="algorithmic-prenorm", prefix="teacher_forced/", select=free) == {
        "reverse": {"UT": [(40, 1.0, 0.75), (400, 0.5, 0.0)], "Transformer": [(40, 1.0, 0.75), (400, 0.375, 0.0)]}}
    assert docs.length_curves(records, name="algorithmic-prenorm")["reverse"]["UT"][1] == (400, 0.1, 0.05)
    assert docs.FIGURES["algorithmic-position-free-length"](records, tmp_path / "free.png")
    assert (tmp_path / "free.png").stat().st_size > 0
    assert not docs.FIGURES["algorithmic-position-free-length"](records[:1], tmp_path / "none.png")


def test_depth_table_puts_test_time_depths_under_their_trained_run():
    def rescored(record, steps, char, seq):
        return make_record(record.experiment + f"-steps{steps}", model_class=record.config["model_class"],
                           model=record.config["model"], task=record.config["task"], command=record.command,
                           test={"len40/char_accuracy": char, "len40/sequence_accuracy": seq, "inference_steps": steps},
                           status="rescored")

    ut = _algorithmic("reverse", "UT", 0.5, 0.1, command="ut train configs/algorithmic/reverse-ut.yaml")
    ut.config["model"] = {**ut.config["model"], "num_steps": 4}  # a copy: MODELS is shared
    act = _algorithmic("copy", "UT+ACT", 0.2, 0.0, command="ut train configs/algorithmic/copy-ut-act.yaml")
    act.config["model"] = {**act.config["model"], "num_steps": 4, "act_max_steps": 6}
    records = [ut, rescored(ut, 8, 0.75, 0.25), rescored(ut, 6, 0.625, 0.125), act, rescored(act, 12, 0.5, 0.0)]
    assert TABLES["algorithmic-depth"](records) == "\n".join([
        "| task | model | steps at test | len 40 |",
        "|---|---|---|---|",
        "| copy | UT+ACT | 6 (trained) | 0.70 / 0.50 |",
        "| copy | UT+ACT | 12 | 0.50 / 0.00 |",
        "| reverse | UT | 4 (trained) | 1.00 / 0.60 |",
        "| reverse | UT | 6 | 0.62 / 0.12 |",
        "| reverse | UT | 8 | 0.75 / 0.25 |",
    ])
    # the model tables keep showing the trained depth
    assert "| UT | - | 0.50 / 0.10 |" in TABLES["algorithmic-len400"](records)
    assert TABLES["algorithmic-depth"](records[:1]) == docs.NO_RECORDS
    # the demo's three runs share one command: their configs tell them apart
    demo = [_algorithmic("copy", label, 0.5, 0.1, family="demo", command="ut demo --record") for label in ("UT", "UT+ACT")]
    table = TABLES["demo-depth"]([*demo, rescored(demo[0], 8, 0.75, 0.25)])
    assert [line.split(" | ")[2] for line in table.splitlines()[2:]] == ["? (trained)", "8"]  # no num_steps: unknown
    # another re-score of the run at its own depth (e.g. averaged checkpoints) is not its trained row
    averaged = make_record("algorithmic/reverse-UT-averaged", model_class=ut.config["model_class"], model=ut.config["model"],
                           task=ut.config["task"], command=ut.command, test={"len40/char_accuracy": 0.1}, status="rescored")
    assert "| reverse | UT | 4 (trained) | 1.00 / 0.60 |" in TABLES["algorithmic-depth"]([averaged, *records])
    # a depth re-score of the validation split stays out of the model tables too
    validation = make_record("algorithmic/reverse-UT-steps8", model_class=ut.config["model_class"], model=ut.config["model"],
                             task=ut.config["task"], command=ut.command, validation={"score": 9.0, "inference_steps": 8},
                             test=ut.metrics["test"], status="rescored")
    assert docs.inference_steps(validation) == 8
    assert "| reverse | UT | 4 (trained) |" in TABLES["algorithmic-depth"]([validation, ut])
    assert "rescored" not in TABLES["algorithmic-curve"]([validation, ut])
    # with a prefix, the metrics named so (teacher-forced); "-" where a run has none
    forced = rescored(ut, 8, 0.75, 0.25)
    forced.metrics["test"]["teacher_forced/len40/char_accuracy"] = 0.875
    forced.metrics["test"]["teacher_forced/len40/sequence_accuracy"] = 0.5
    assert docs.depth_table([ut, forced], name="algorithmic", prefix="teacher_forced/").splitlines()[2:] == [
        "| reverse | UT | 4 (trained) | - |", "| reverse | UT | 8 | 0.88 / 0.50 |"]


def test_depth_records_stay_out_of_the_lm_and_babi_tables():
    ptb = make_record("lm/ptb-ut", model={"share_weights": True}, task={"name": "lm"},
                      validation={"score": -100.0}, test={"perplexity": 100.0})
    deeper = make_record("lm/ptb-ut-deep8", model={"share_weights": True}, task={"name": "lm"},
                         validation={"score": -100.0}, test={"perplexity": 500.0, "inference_steps": 8})
    assert docs.lm_models([deeper, ptb]) == {"UT": ptb}
    babi = {"task2/error": 10.0, "mean_error": 10.0}
    runs = [make_record("babi/en/ut-act/task2", task={"name": "babi"}, test=babi),
            make_record("babi/en/ut-act/task2-steps12", task={"name": "babi"}, test={**babi, "inference_steps": 12})]
    assert list(docs.babi_columns(runs)) == ["en/ut-act"]


def _ponder(setting, task, bias, weight, error, ponder, **fields):
    test = {f"task{task}/error": error, f"task{task}/ponder_time": ponder, f"task{task}/ponder_std": 0.5,
            f"task{task}/ponder_supporting": ponder + 0.25, f"task{task}/ponder_other": ponder - 0.25,
            f"task{task}/ponder_question": 3.0}
    return make_record(f"babi-ponder/{setting}/task{task}", model_class="UTStoryQA",
                       model={"act": True, "act_bias_init": bias, "ponder_weight": weight}, task={"name": "babi"},
                       test=test, **fields)


def test_ponder_study_table_and_figure(tmp_path):
    records = [
        _ponder("pw0", 2, -3.0, 0.0, 3.0, 4.5),
        _ponder("t2t", 1, 1.0, 0.01, 0.0, 2.0, status="time_limit", steps=500, wall_time_seconds=60.0),
        _ponder("t2t", 2, 1.0, 0.01, 12.5, 2.25),
        make_record("babi/en/ut-act/task1", task={"name": "babi"}, test={"task1/error": 0.0}),  # not the study
    ]
    assert TABLES["babi-ponder-study"](records) == "\n".join([
        "| setting | halting bias | ponder weight | task | test error % | ponder time | supporting / other / question "
        "| paper's ponder | steps | wall time |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| t2t | 1.0 | 0.01 | 1 | 0.0 | 2.00 ± 0.50 | 2.25 / 1.75 / 3.00 | 2.3 | 500 | 60 s |",
        "| t2t | 1.0 | 0.01 | 2 | 12.5 | 2.25 ± 0.50 | 2.50 / 2.00 / 3.00 | 3.1 | 1000 | 100 s |",
        "| pw0 | -3.0 | 0.0 | 2 | 3.0 | 4.50 ± 0.50 | 4.75 / 4.25 / 3.00 | 3.1 | 1000 | 100 s |",
        "",
        "partial = stopped at its time limit: babi-ponder/t2t/task1 (step 500, 60 s)",
    ])
    assert TABLES["babi-ponder-study"](records[-1:]) == docs.NO_RECORDS
    assert docs.FIGURES["babi-ponder-study"](records, tmp_path / "p.png")  # t2t has two tasks: a line
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")
    assert not docs.FIGURES["babi-ponder-study"](records[:1], tmp_path / "q.png")  # one point per setting: no line


def test_babi_attention_table_one_row_per_model_and_task():
    looks = {"attention_supporting1": 0.031, "attention_supporting2": 0.01, "attention_supporting3": 0.24,
             "attention_other": 0.68, "attention_question": 0.039, "story_facts": 9.0}
    records = [
        make_record("babi-attention/en-10k/joint", task={"name": "babi"},
                    test={"task16/error": 52.7, **{f"task16/{k}": v for k, v in looks.items()},
                          "task1/error": 0.0, "task1/attention_supporting1": 0.88, "task1/attention_other": 0.08}),
        make_record("babi/en-10k/joint", task={"name": "babi"}, test={"task1/error": 0.0}),  # no attention: left out
    ]
    assert TABLES["babi-attention"](records) == "\n".join([
        "| model | task | test error % | supporting 1 | supporting 2 | supporting 3 | other facts | question "
        "| facts per story |",
        "|---|---|---|---|---|---|---|---|---|",
        "| en-10k/joint | 1 | 0.0 | 0.88 | - | - | 0.08 | - | - |",
        "| en-10k/joint | 16 | 52.7 | 0.03 | 0.01 | 0.24 | 0.68 | 0.04 | 9.0 |",
    ])
    assert TABLES["babi-attention"](records[1:]) == docs.NO_RECORDS


def test_babi_fit_table_sets_training_error_beside_validation_and_test():
    joint = make_record("babi/en-10k/joint", task={"name": "babi"}, validation={"score": -3.0, "task18/error": 4.0},
                        test={"task1/error": 0.0, "task18/error": 7.4})
    joint.metrics["train"] = {"task1/error": 0.0, "task18/error": 5.13}
    single = make_record("babi/en-10k/single/task1", task={"name": "babi"}, test={"task1/error": 0.1})
    single.metrics["train"] = {"task1/error": 0.04}  # fails nothing: its one task is shown
    records = [joint, single, make_record("babi/en/other", task={"name": "babi"}, test={"task1/error": 9.0})]
    assert TABLES["babi-fit"](records) == "\n".join([
        "| model | task | training stories error % | validation error % | test error % |",
        "|---|---|---|---|---|",
        "| en-10k/joint | 18 | 5.1 | 4.0 | 7.4 |",  # failed on test: task 1 is not shown
        "| en-10k/single | 1 | 0.0 | - | 0.1 |",
    ])
    assert TABLES["babi-fit"](records[2:]) == docs.NO_RECORDS


def test_babi_joint_history_table_shows_the_halting_pattern_over_training():
    history = [{"step": step, "mean_error": 40.0 / k, "ponder_supporting": 2.0 + 1 / k, "ponder_other": 2.0,
                "ponder_question": 3.0} for k, step in enumerate((1000, 1500, 2000, 2500), start=1)]
    records = [
        make_record("babi/en/joint", task={"name": "babi"}, history=history),
        make_record("babi/en/single/task1", task={"name": "babi"}, history=history),  # single task: left out
        make_record("babi/en/old-joint", task={"name": "babi"}),  # no history: left out
    ]
    assert TABLES["babi-joint-history"](records) == "\n".join([
        "| model | step | validation error % | supporting / other / question |",
        "|---|---|---|---|",
        "| en/joint | 1000 | 40.0 | 3.00 / 2.00 / 3.00 |",
        "| en/joint | 2000 | 13.3 | 2.33 / 2.00 / 3.00 |",
        "| en/joint | 2500 | 10.0 | 2.25 / 2.00 / 3.00 |",  # the last evaluation
    ])
    assert TABLES["babi-joint-history"](records[1:]) == docs.NO_RECORDS


def test_seeds_rows_table_mean_and_sample_sd_over_the_seeds_of_an_experiment():
    def run(experiment, seed, char, seq, **test):
        return make_record(f"algorithmic-prenorm/{experiment}", seeds=[seed],
                           test={"len400/char_accuracy": char, "len400/sequence_accuracy": seq, **test})

    records = [run("rev-ut", 0, 0.5, 0.25), run("rev-ut/seed-1", 1, 0.75, 0.75), run("rev-ut/seed-2", 2, 1.0, 0.5),
               run("copy-ut", 0, 0.5, 0.0),  # one seed: no row
               make_record("algorithmic-prenorm/copy-ut/seed-1", seeds=[1]),  # not scored on test: left out
               run("add-ut", 0, 0.25, 0.0, **{"teacher_forced/len400/char_accuracy": 0.5,
                                              "teacher_forced/len400/sequence_accuracy": 0.0}),
               run("add-ut/seed-1", 1, 0.25, 0.0)]  # one seed lacks teacher forcing: "-"
    assert TABLES["algorithmic-prenorm-seeds"](records) == "\n".join([
        "| model | seeds | len 400, greedy | len 400, forced |",
        "|---|---|---|---|",
        "| add-ut | 0, 1 | 0.25 ± 0.00 / 0.00 ± 0.00 | - |",
        "| rev-ut | 0, 1, 2 | 0.75 ± 0.25 / 0.50 ± 0.25 | - |",
    ])
    assert TABLES["algorithmic-prenorm-seeds"](records[3:5]) == docs.NO_RECORDS


def test_window_rescores_are_rows_of_their_own_and_stay_out_of_the_model_tables():
    """A record re-scored with local attention at test time (``ut eval --attention-window``) is a
    different model: it is a row of the per-record tables, never a cell of the model tables, even
    where its validation score ties with its run's."""
    ut = _algorithmic("copy", "UT", 0.5, 0.1, family="algorithmic-prenorm")
    windowed = make_record(ut.experiment + "-test-window2-source", model_class=ut.config["model_class"],
                           model=ut.config["model"], task=ut.config["task"], command=ut.command,
                           validation=ut.metrics["validation"], status="rescored",
                           test={"len40/char_accuracy": 1.0, "len40/sequence_accuracy": 1.0, "inference_attention_window": 2})
    assert docs.inference_window(windowed) == 2 and docs.inference_window(ut) is None
    assert docs.family([windowed, ut], "algorithmic-prenorm") == [ut]
    rows = TABLES["algorithmic-prenorm"]([windowed, ut])
    assert "| copy-UT-test-window2-source | 1.00 / 1.00 |" in rows and "| copy-UT | 1.00 / 0.60 |" in rows
    assert docs.length_curves([windowed, ut], name="algorithmic-prenorm")["copy"]["UT"] == [(40, 1.0, 0.6), (400, 0.5, 0.1)]


def _babi_history_record(name, tasks, history, *, batch=64, model=None, **fields):
    """A 10k bAbI record with a validation ``history``, trained on ``tasks`` in batches of ``batch`` stories."""
    config = {"model_class": "UTStoryQA", "model": dict(model or {}), "task": {"name": "babi", "tasks": tasks},
              "train": {"seed": 0, "max_batch_size": batch}}
    return make_record(f"babi/en-10k/{name}", task={"name": "babi"}, config=config, history=history, **fields)


def test_stories_per_step_table_matches_runs_at_equal_numbers_of_the_tasks_stories_seen(tmp_path):
    def run(name, tasks, batch, history, **fields):
        return _babi_history_record(name, tasks, history, batch=batch, **fields)

    single = run("ut-act-t2t-v2/task19", 19, 64, [{"step": 500, "mean_error": 90.0}, {"step": 1000, "mean_error": 70.0},
                                                  {"step": 2000, "mean_error": 9.5, "ponder_question": 12.0}])
    mix64 = run("ut-act-t2t-v2-mix4-b64", [1, 6, 12, 19], 64,  # 16 of task 19's stories a step
                [{"step": 4000, "task19/error": 80.0, "task1/error": 0.0, "task19/ponder_question": 2.5},
                 {"step": 6000, "task19/error": 75.0}], status="time_limit")
    mix256 = run("ut-act-t2t-v2-mix4-b256", [1, 6, 12, 19], 256, [{"step": 1000, "task19/error": 71.0}])
    mix8 = run("ut-act-t2t-v2-mix8-b128", [1, 4, 6, 9, 12, 15, 19, 20], 128,  # 16 a step, an eighth of the batch
               [{"step": 4000, "task19/error": 85.0, "task4/error": 1.0}])
    other = run("ut-act-t2t-v2/task18", 18, 64, [{"step": 1000, "mean_error": 5.0}])  # not in the study
    table = TABLES["babi-stories-per-step"]([mix64, other, mix8, single, mix256])
    assert table.split("\n\n")[0] == "\n".join([
        "| task 19 stories seen | en-10k/ut-act-t2t-v2 (64 of 64 a step) | en-10k/ut-act-t2t-v2-mix4-b256 (64 of 256 a step) "
        "| en-10k/ut-act-t2t-v2-mix4-b64 (16 of 64 a step) | en-10k/ut-act-t2t-v2-mix8-b128 (16 of 128 a step) |",
        "|---|---|---|---|---|",
        "| 64,000 | 70.0 (1,000) | 71.0 (1,000) | 80.0 (4,000) | 85.0 (4,000) |",
        "| 128,000 | 9.5 (2,000) | - | - | - |",  # b64's step 6,000 is 96,000 stories: no row of its own
    ])
    assert "partial = stopped at its time limit: babi/en-10k/ut-act-t2t-v2-mix4-b64" in table
    assert TABLES["babi-stories-per-step"]([other]) == docs.NO_RECORDS
    assert docs.FIGURES["babi-stories-per-step"]([single, mix64], tmp_path / "s.png")
    assert (tmp_path / "s.png").read_bytes().startswith(b"\x89PNG")
    assert not docs.FIGURES["babi-stories-per-step"]([single, other], tmp_path / "t.png")  # one curve: no figure
    # the question's ponder time: a mixed run's per-task entry, a single run's summary
    assert [(r.experiment, c) for r, c in docs.stories_curves([mix64, single, mix256], "ponder_question")] == [
        ("babi/en-10k/ut-act-t2t-v2/task19", {128_000: (12.0, 2000)}),
        ("babi/en-10k/ut-act-t2t-v2-mix4-b64", {64_000: (2.5, 4000)})]  # mix256 has none: no curve
    assert docs.FIGURES["babi-stories-ponder"]([single, mix64], tmp_path / "p.png")
    assert not docs.FIGURES["babi-stories-ponder"]([single, mix256], tmp_path / "q.png")


def test_joint_stories_table_sets_each_task_alone_beside_the_joint_models_at_equal_stories_seen(tmp_path):
    run = _babi_history_record
    alone17 = run("ut-act-t2t-v2/task17", 17, [{"step": 4000, "mean_error": 37.0}, {"step": 8000, "mean_error": 36.0},
                                               {"step": 12000, "mean_error": 3.0}])
    alone18 = run("ut-act-t2t-v2/task18", 18, [{"step": 4000, "mean_error": 5.5}])
    # "all" is the 20 tasks: 3.2 of each a step, so step 80,000 is 256,000 stories of each
    floor2 = run("ut-act-t2t-v2-joint-10k-min2", "all",
                 [{"step": 80000, "task17/error": 38.0, "task18/error": 5.0, "task19/error": 0.5},
                  {"step": 100000, "task17/error": 39.0}])
    longer = run("ut-act-t2t-v2-joint-10k-min2-long", "all", [{"step": 160000, "task17/error": 20.0}],
                 status="time_limit")
    unrelated = run("ut-act-t2t-v2/task19", 19, [{"step": 4000, "mean_error": 1.0}])
    assert docs.stories_per_step(floor2) == 3.2
    table = TABLES["babi-stories-joint"]([longer, unrelated, floor2, alone18, alone17])
    assert table.split("\n\n")[0] == "\n".join([
        "| task | stories seen | en-10k/ut-act-t2t-v2 (64 of 64 a step) | en-10k/ut-act-t2t-v2-joint-10k-min2 (3.2 of 64 a step) "
        "| en-10k/ut-act-t2t-v2-joint-10k-min2-long (3.2 of 64 a step) |",
        "|---|---|---|---|---|",
        "| 17 | 256,000 | 37.0 (4,000) | 38.0 (80,000) | - |",
        "| 17 | 320,000 | - | 39.0 (100,000) | - |",  # a run's last evaluation has a row
        "| 17 | 512,000 | 36.0 (8,000) | - | 20.0 (160,000) |",
        "| 17 | 768,000 | 3.0 (12,000) | - | - |",
        "| 18 | 256,000 | 5.5 (4,000) | 5.0 (80,000) | - |",  # the no-ACT joint run is absent: no column
    ])
    assert "partial = stopped at its time limit: babi/en-10k/ut-act-t2t-v2-joint-10k-min2-long" in table
    assert TABLES["babi-stories-joint"]([unrelated]) == docs.NO_RECORDS
    assert docs.FIGURES["babi-stories-joint"]([alone17, floor2], tmp_path / "j.png")  # task 17's curves
    assert not docs.FIGURES["babi-stories-joint"]([alone18, floor2], tmp_path / "k.png")  # task 18 alone: one curve


def test_floor_table_follows_task_19_of_the_joint_models_step_by_step(tmp_path):
    def run(name, model, history, **fields):
        return _babi_history_record(name, "all", history, model={"num_steps": 8, **model}, **fields)

    no_act = run("ut-t2t-v2-joint-10k", {"act": False},
                 [{"step": 4000, "task19/error": 91.0, "task19/ponder_question": 8.0, "task1/error": 0.0},
                  {"step": 6000, "task19/error": 80.0, "task19/ponder_question": 8.0},
                  {"step": 8000, "task19/error": 50.0, "task19/ponder_question": 8.0}])
    min2 = run("ut-act-t2t-v2-joint-10k-min2", {"act": True, "act_min_steps": 2},
               [{"step": 4000, "task19/error": 90.5, "task19/ponder_question": 3.0},
                {"step": 5000, "task19/error": 89.0}], status="time_limit")
    pw0 = run("ut-act-t2t-v2-joint-10k-pw0", {"act": True, "ponder_weight": 0.0},
              [{"step": 4000, "task19/error": 91.5, "task19/ponder_question": 2.0}])
    other = run("ut-act-t2t-v2-joint-10k", {"act": True}, [{"step": 4000, "task19/error": 90.0}])  # not in the study
    table = TABLES["babi-floor"]([min2, other, pw0, no_act])
    assert table.split("\n\n")[0] == "\n".join([
        "| step | en-10k/ut-t2t-v2-joint-10k (no ACT, 8 steps) | en-10k/ut-act-t2t-v2-joint-10k-min2 (ACT, floor 2) "
        "| en-10k/ut-act-t2t-v2-joint-10k-pw0 (ACT, floor 1, no ponder cost) |",
        "|---|---|---|---|",
        "| 4,000 | 91.0 (8.0) | 90.5 (3.0) | 91.5 (2.0) |",
        "| 5,000 | - | 89.0 | - |",  # min2's last evaluation, no ponder kept
        "| 8,000 | 50.0 (8.0) | - | - |",  # 6,000 is neither a multiple of 4,000 nor a run's last
    ])
    assert "partial = stopped at its time limit: babi/en-10k/ut-act-t2t-v2-joint-10k-min2" in table
    assert TABLES["babi-floor"]([other]) == docs.NO_RECORDS
    assert docs.task_curve(no_act, 19) == {4000: 91.0, 6000: 80.0, 8000: 50.0}
    assert docs.task_curve(no_act, 1) == {4000: 0.0}
    assert docs.FIGURES["babi-floor"]([no_act, min2], tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes().startswith(b"\x89PNG")
    assert not docs.FIGURES["babi-floor"]([no_act, other], tmp_path / "g.png")  # one curve: no figure


# Where the reproduction stands.

def _joint(experiment, validation, test, *, act=True, shared=True, **fields):
    """A joint bAbI record on all 20 tasks: per-task validation and test errors (%)."""
    return make_record(experiment, task={"name": "babi", "set": "en-10k"}, model={"act": act, "share_weights": shared},
                       validation={"score": -validation, **{f"task{t}/error": validation for t in range(1, 21)}},
                       test={f"task{t}/error": test[t - 1] for t in range(1, 21)}, **fields)


def _row(table, section, measure):
    return next(line for line in table.split("\n") if line.startswith(f"| {section} | {measure} |"))


def test_standing_picks_the_setting_best_on_validation_and_counts_failed_tasks():
    worse_on_test = [0.0] * 20  # better on test but worse on validation: not the one shown
    shown = [10.0, 6.0] + [1.0] * 18  # average 1.7, two tasks above 5%
    records = [
        _joint("babi/en-10k/joint-a", 3.0, worse_on_test),
        _joint("babi/en-10k/joint-b", 2.0, shown, status="time_limit"),
        _joint("babi/en-10k/joint-ut", 1.0, [0.5] * 20, act=False),  # another model: another row
        _joint("babi/en/joint-1k", 0.5, [0.0] * 20),  # another data set: another row
        _joint("babi/en/joint-transformer", 0.5, [20.0] * 20, act=False, shared=False),  # the baseline's row
        _babi("babi/en-10k/single/task1", 0, -1.0, {1: 0.0}),  # single runs of one task only: no row
    ]
    table = TABLES["standing"](records)
    assert _row(table, "bAbI 10k joint (Table 1)", "UT+ACT: average test error % (failed tasks)") == (
        "| bAbI 10k joint (Table 1) | UT+ACT: average test error % (failed tasks) | 0.29 (0) | 1.70 (2 failed) | "
        "babi/en-10k/joint-b (partial) |")
    assert _row(table, "bAbI 10k joint (Table 1)", "UT: average test error % (failed tasks)").endswith(
        "| 0.47 (0) | 0.50 (0 failed) | babi/en-10k/joint-ut |")
    assert _row(table, "bAbI 10k single (Table 1)", "UT+ACT: average test error % (failed tasks)").endswith(
        "| - | not measured in full yet |")
    assert "| 0.00 (0 failed) | babi/en/joint-1k |" in _row(table, "bAbI 1k joint (Table 1)", "UT+ACT: average test error % (failed tasks)")
    assert _row(table, "bAbI 1k joint (Table 1)", "Transformer baseline: average test error % (failed tasks)").endswith(
        "| 26.8 (14) | 20.00 (20 failed) | babi/en/joint-transformer |")
    assert _row(table, "bAbI 1k single (Table 1)", "Transformer baseline: average test error % (failed tasks)").endswith(
        "| 21.8 (5) | - | not measured in full yet |")


def test_babi_paper_table_shows_the_standing_column_of_each_setting_per_task():
    records = [
        _joint("babi/en-10k/joint-a", 3.0, [0.0] * 20),  # worse on validation: not shown
        _joint("babi/en-10k/joint-b", 2.0, [10.0] + [1.0] * 19, status="time_limit"),
        _joint("babi/en-10k/joint-ut", 1.0, [0.5] * 20, act=False),  # no ACT: not Appendix C's model
    ]
    table = TABLES["babi-paper"](records)
    lines = table.split("\n")
    assert lines[0] == ("| task | 10k single: paper | here | 10k joint: paper | here | 1k single: paper | here "
                        "| 1k joint: paper | here |")
    assert lines[2] == "| 1 | 0.0 | - | 0.0 | **10.0** | 0.0 | - | 0.0 | - |"
    assert "| average error | 0.21 | - | 0.29 | 1.45 | 4.55 | - | 7.78 | - |" in lines
    assert table.endswith("here: 10k single: not measured in full yet; 10k joint: babi/en-10k/joint-b (partial); "
                          "1k single: not measured in full yet; 1k joint: not measured in full yet")
    assert TABLES["babi-paper"](records[2:]) == docs.NO_RECORDS


def test_standing_reads_lte_cells_and_named_runs():
    records = [
        make_record("lte/control-ut", task={"name": "lte", "task": "control"}, validation={"score": 0.4},
                    test={"char_accuracy": 0.71, "sequence_accuracy": 0.5}),
        make_record("lte/control-ut-wide", task={"name": "lte", "task": "control"}, validation={"score": 0.2},
                    test={"char_accuracy": 0.99, "sequence_accuracy": 0.99}),  # worse on validation
        make_record("algorithmic/addition-ut-act-warm-b8k", task={"name": "algorithmic", "task": "addition"},
                    test={"len400/char_accuracy": 0.12, "len400/sequence_accuracy": 0.0}),
    ]
    table = TABLES["standing"](records)
    assert _row(table, "Learning to Execute, Control (Table 5)", "UT: test char / sequence accuracy").endswith(
        "| 1.0 / 1.0 | 0.71 / 0.50 | lte/control-ut |")
    assert _row(table, "Algorithmic Addition (Table 4)", "char / sequence accuracy at length 400").endswith(
        "| 0.34 / 0.02 | 0.12 / 0.00 | algorithmic/addition-ut-act-warm-b8k (UT) |")
    assert _row(table, "Translation (Table 7)", "test BLEU, UT vs Transformer of the same size").endswith(
        "| - | not measured in full yet |")


def test_depth_table_lists_every_seed_of_the_task_3_study_with_its_ponder_times():
    def run(name, model, test, seed=0, **fields):
        record = _babi_history_record(name, [1, 2, 3], [{"step": 500, "mean_error": 9.0}],
                                      model={"num_steps": 8, **model}, **fields)
        record.config["train"]["seed"] = seed
        record.metrics["test"] = test
        return record

    full = {"task1/error": 0.0, "task2/error": 0.25, "task3/error": 24.8, "task3/ponder_supporting": 3.01,
            "task3/ponder_other": 3.0, "task1/ponder_question": 3.4, "task2/ponder_question": 8.7,
            "task3/ponder_question": 7.3}
    floor2 = run("ut-act-t2t-v2-mix123", {"act": True, "act_min_steps": 2}, full, best_step=8000, steps=13000)
    facts8 = run("ut-act-t2t-v2-mix123-facts8/seed-1", {"act": True, "act_min_steps": 2, "act_fact_min_steps": 8},
                 {"task3/error": 9.5}, seed=1, best_step=5000, steps=6834, status="time_limit")
    no_test = run("ut-act-t2t-v2-mix123-facts8", {"act": True, "act_min_steps": 2, "act_fact_min_steps": 8}, {},
                  best_step=500, steps=500, status="time_limit")  # a chunk's record, not scored on test yet
    other = run("ut-act-t2t-v2-mix4-b64", {"act": True}, full)  # not in the study
    table = TABLES["babi-depth"]([facts8, other, no_test, floor2])
    assert table.split("\n\n")[0] == "\n".join([
        "| run | seed | best step | test error % (tasks 1 / 2 / 3) | task 3 facts' ponder (supporting / other) "
        "| question's ponder (tasks 1 / 2 / 3) |",
        "|---|---|---|---|---|---|",
        "| en-10k/ut-act-t2t-v2-mix123 (ACT, floor 2) | 0 | 8,000 of 13,000 | 0.0 / 0.2 / 24.8 | 3.0 / 3.0 | 3.4 / 8.7 / 7.3 |",
        "| en-10k/ut-act-t2t-v2-mix123-facts8 (ACT, facts' floor 8, question's 2) | 1 | 5,000 of 6,834 (partial) "
        "| - / - / 9.5 | - / - | - / - / - |",
    ])
    assert "partial = stopped at its time limit: babi/en-10k/ut-act-t2t-v2-mix123-facts8/seed-1" in table
    assert TABLES["babi-depth"]([other, no_test]) == docs.NO_RECORDS


def test_depth_figure_draws_the_act_runs_ponder_over_all_positions_and_of_the_question(tmp_path):
    def run(name, model, seed, ponder):
        record = _babi_history_record(name, [1, 2, 3], [{"step": 500, "mean_error": 9.0}], model={"num_steps": 8, **model})
        record.config["train"]["seed"] = seed
        record.metrics["test"] = {"task3/error": 20.0, **{f"task{t}/ponder_time": p for t, p in ponder.items()},
                                  "task1/ponder_std": 0.5, **{f"task{t}/ponder_question": 2 * p for t, p in ponder.items()}}
        return record

    floor2 = run("ut-act-t2t-v2-mix123", {"act": True, "act_min_steps": 2}, 0, {1: 3.0, 2: 3.1, 3: 3.2})
    facts8 = run("ut-act-t2t-v2-mix123-facts8/seed-1", {"act": True, "act_min_steps": 2, "act_fact_min_steps": 8}, 1,
                 {1: 9.0, 3: 9.5})
    fixed = run("ut-t2t-v2-mix123", {"act": False}, 0, {1: 8.0, 2: 8.0, 3: 8.0})  # a fixed depth: not drawn
    panels, styles = docs.depth_ponder_panels([facts8, fixed, floor2])
    assert panels == {
        "all positions": {"ACT, floor 2, seed 0": {1: (3.0, 0.5), 2: (3.1, None), 3: (3.2, None)},
                          "ACT, facts' floor 8, question's 2, seed 1": {1: (9.0, 0.5), 3: (9.5, None)}},
        "the question": {"ACT, floor 2, seed 0": {1: (6.0, None), 2: (6.2, None), 3: (6.4, None)},
                         "ACT, facts' floor 8, question's 2, seed 1": {1: (18.0, None), 3: (19.0, None)}},
    }
    assert styles == {"ACT, floor 2, seed 0": {"color": "C0", "linestyle": "-"},
                      "ACT, facts' floor 8, question's 2, seed 1": {"color": "C1", "linestyle": ":"}}
    assert docs.FIGURES["babi-depth"]([facts8, fixed, floor2], tmp_path / "d.png")
    assert (tmp_path / "d.png").read_bytes()[:4] == b"\x89PNG"
    assert not docs.FIGURES["babi-depth"]([fixed], tmp_path / "e.png")
