"""The Learning to Execute tables: program tasks then memorisation, per group and operation, beam."""

from __future__ import annotations

from universal_transformer.evaluation import docs
from universal_transformer.evaluation.docs import TABLES

from .records import algorithmic_record, lte_record


def test_lte_table_program_tasks_then_memorisation():
    records = [
        lte_record("copy", "UT", 0.996, 0.93, score=0.2),
        lte_record("copy", "UT", 0.999, 0.97, score=0.9, seed=1),  # best on validation
        lte_record("copy", "Transformer", 0.98, 0.61, status="time_limit", steps=9000, wall_time_seconds=2400.4),
        lte_record("addition", "LSTM", 0.5, 0.1),
        algorithmic_record("copy", "UT", 0.09, 0.02),  # another family: not shown
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
    narrow = lte_record("program", "UT", 0.47, 0.22, score=0.22, parameters=119_424)
    wide = lte_record("program", "UT", 0.80, 0.55, score=0.55, parameters=468_224, experiment="lte/program-UT-d128")
    table = TABLES["lte"]([narrow, wide, lte_record("program", "LSTM", 0.6, 0.4)])
    assert "| UT | 0.80 / 0.55 |" in table
    assert table.endswith("\n\nbest on validation of several runs: program UT: lte/program-UT-d128 "
                          "(0.47M parameters; also lte/program-UT (0.12M))")
    narrow.metrics["validation"]["score"] = 0.9  # the narrow one wins on validation: it is shown
    table = TABLES["lte"]([narrow, wide])
    assert "| UT | 0.47 / 0.22 |" in table and table.endswith("also lte/program-UT-d128 (0.47M))")


def test_lte_table_a_partial_run_without_test_metrics_does_not_hide_a_scored_one():
    narrow = lte_record("program", "UT", 0.47, 0.22, score=0.22, parameters=119_424)
    wide = lte_record("program", "UT", 0.0, 0.0, score=0.47, parameters=468_224, experiment="lte/program-UT-d128",
                status="time_limit", steps=56_181, wall_time_seconds=14_140.0)
    wide.metrics["test"] = {}  # stopped by its time limit, its checkpoint lost before the test evaluation
    table = TABLES["lte"]([narrow, wide])
    assert "| UT | 0.47 / 0.22 |" in table
    assert table.endswith("program UT: lte/program-UT (0.12M parameters; "
                          "also lte/program-UT-d128 (0.47M, not scored on test))")
    assert TABLES["lte"]([wide]).splitlines()[2] == "| UT | - |"  # alone, it is still the cell: no score to show


def test_a_run_on_other_operations_is_a_task_of_its_own_and_never_the_papers_cell():
    """Control's loops alone, better on its own validation set, gets its own column; the
    Control cell (and the standing table's, which reads the same cells) keeps the Control run."""
    written_out = {"operations": ["ifstat", "small_loop"], "operand_operations": ["pair", "equality"],
                   "max_length": 5, "max_nesting": 2}  # the task's defaults, as a resolved config holds them
    control = lte_record("control", "UT", 0.71, 0.56, score=0.56, options=written_out)
    loops = lte_record("control", "UT", 0.60, 0.30, score=0.9, experiment="lte/control-loop-UT",
                       options={**written_out, "operations": ["small_loop"]})
    shorter = lte_record("program", "UT", 0.9, 0.8, experiment="lte/program-short-UT",
                         options={"max_length": 3, "operations": None})
    assert TABLES["lte"]([control, loops, shorter]).splitlines()[:3] == [
        "| model | Control | Control (small_loop) | Program (length 3) |",
        "|---|---|---|---|",
        "| UT | 0.71 / 0.56 | 0.60 / 0.30 | 0.90 / 0.80 |",
    ]
    original = lte_record("control", "UT", 0.8, 0.6, options={**written_out, "length_draw": "operand"})
    assert "| Control (a length per operand) |" in TABLES["lte"]([control, original])
    loops.metrics["test"]["loops1/sequence_accuracy"] = 0.5
    assert TABLES["lte-loops"]([control, loops]).splitlines()[2:] == [
        "| control | UT | - |",  # scored without the breakdown
        "| control (small_loop) | UT | 0.50 |",
    ]


def test_lte_length_draw_table_sets_each_rescored_model_beside_its_training_record():
    control = lte_record("control", "UT", 0.71, 0.56, experiment="lte/control-UT")
    control.metrics["test"].update({"with_ifstat/sequence_accuracy": 0.88, "with_small_loop/sequence_accuracy": 0.25})
    drawn = lte_record("control", "UT", 0.54, 0.36, experiment="lte-length-draw/control-UT", options={"length_draw": "operand"})
    drawn.metrics["test"].update({"with_ifstat/sequence_accuracy": 0.72, "with_small_loop/sequence_accuracy": 0.03})
    addition = lte_record("addition", "UT", 1.0, 1.0, experiment="lte/addition-UT")
    added = lte_record("addition", "UT", 0.88, 0.81, experiment="lte-length-draw/addition-UT")
    orphan = lte_record("program", "UT", 0.5, 0.5, experiment="lte-length-draw/gone")  # its training record is not here
    assert TABLES["lte-length-draw"]([added, drawn, orphan, control, addition]) == "\n".join([
        "| task | model | trained run | lengths drawn | as trained | the other draw | ifstat | small_loop | pair |",
        "|---|---|---|---|---|---|---|---|---|",
        "| control | UT | lte/control-UT | per program | 0.71 / 0.56 | 0.54 / 0.36 | 0.88 -> 0.72 | 0.25 -> 0.03 | - |",
        "| addition | UT | lte/addition-UT | per program | 1.00 / 1.00 | 0.88 / 0.81 | - | - | - |",
    ])
    operand = lte_record("control", "UT", 0.9, 0.8, experiment="lte/control-op-UT", options={"length_draw": "operand"})
    example = lte_record("control", "UT", 0.6, 0.4, experiment="lte-length-draw/control-op-UT")
    assert TABLES["lte-length-draw"]([operand, example]).splitlines()[2] == (
        "| control | UT | lte/control-op-UT | per operand | 0.90 / 0.80 | 0.60 / 0.40 | - | - | - |")
    assert TABLES["lte-length-draw"]([control, addition]) == docs.NO_RECORDS


def test_lte_digit_gap_table_shows_each_scoring_of_a_run_with_the_groups():
    def groups(record, **accuracies):  # name=(accuracy, examples); "." written "_" in the name
        for name, (accuracy, count) in accuracies.items():
            group = name.replace("_digit", ".digit").replace("gap2", "gap2+")
            record.metrics["test"].update({f"{group}/sequence_accuracy": accuracy, f"{group}/examples": count})
        return record

    own = groups(lte_record("control", "UT", 0.7, 0.56, experiment="lte/control-UT"),
                 digit_gap0=(0.55, 776), digit_gap1=(0.59, 206), small_loop_digit_gap1=(0.04, 67))
    other = groups(lte_record("control", "UT", 0.5, 0.36, experiment="lte-length-draw/control-UT",
                              options={"length_draw": "operand"}), digit_gap2=(0.43, 740), digit_gap0=(0.14, 78))
    addition = groups(lte_record("addition", "UT", 1.0, 1.0, experiment="lte/addition-UT"), digit_gap2=(0.78, 9))
    before = lte_record("program", "UT", 0.8, 0.65, experiment="lte/program-UT")  # scored before the groups
    orphan = groups(lte_record("control", "UT", 0.5, 0.5, experiment="lte-length-draw/gone"), digit_gap0=(0.5, 2))
    assert TABLES["lte-digit-gap"]([addition, other, orphan, before, own]) == "\n".join([
        "| task | model | trained run | lengths drawn | scored on | gap 0 | gap 1 | gap 2+ | ifstat: gap 0 | ifstat: gap 1"
        " | ifstat: gap 2+ | small_loop: gap 0 | small_loop: gap 1 | small_loop: gap 2+ |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        "| control | UT | lte/control-UT | per program | per program | 0.55 (776) | 0.59 (206) | - | - | - | - | - | 0.04 (67) | - |",
        "| control | UT | lte/control-UT | per program | per operand | 0.14 (78) | - | 0.43 (740) | - | - | - | - | - | - |",
        "| addition | UT | lte/addition-UT | per program | per program | - | - | 0.78 (9) | - | - | - | - | - | - |",
    ])
    assert TABLES["lte-digit-gap"]([before]) == docs.NO_RECORDS


def test_lte_breakdown_table_per_length_and_nesting_of_the_program_tasks():
    broken = lte_record("program", "UT", 0.5, 0.25)
    broken.metrics["test"].update({"length1/sequence_accuracy": 0.9, "length2/sequence_accuracy": 0.5,
                                   "length10/sequence_accuracy": 0.01, "nesting2/sequence_accuracy": 0.2,
                                   "nesting1/sequence_accuracy": 0.3, "length1/char_accuracy": 0.95})
    before = lte_record("addition", "LSTM", 0.5, 0.1)  # scored before the breakdown
    memorisation = lte_record("copy", "UT", 1.0, 1.0)
    memorisation.metrics["test"]["length3/sequence_accuracy"] = 1.0  # not a program task: not shown
    assert TABLES["lte-breakdown"]([broken, before, memorisation]) == "\n".join([
        "| task | model | length 1 | length 2 | length 10 | nesting 1 | nesting 2 |",
        "|---|---|---|---|---|---|---|",
        "| program | UT | 0.90 | 0.50 | 0.01 | 0.30 | 0.20 |",
        "| addition | LSTM | - | - | - | - | - |",
    ])
    assert TABLES["lte-breakdown"]([before, memorisation]) == docs.NO_RECORDS


def test_lte_operations_table_in_the_generators_order_of_operations():
    program = lte_record("program", "UT", 0.5, 0.25)
    program.metrics["test"].update({"with_small_loop/sequence_accuracy": 0.1, "with_pair/sequence_accuracy": 0.6,
                                    "with_smallmul/sequence_accuracy": 0.05, "length1/sequence_accuracy": 0.9,
                                    "with_pair/char_accuracy": 0.8})
    control = lte_record("control", "Transformer", 0.5, 0.3)
    control.metrics["test"].update({"with_ifstat/sequence_accuracy": 0.7, "with_small_loop/sequence_accuracy": 0.2})
    before = lte_record("program", "LSTM", 0.5, 0.1)  # scored before the operations were recorded
    addition = lte_record("addition", "UT", 1.0, 0.99)  # one operation: broken down by length only, left out
    addition.metrics["test"]["length1/sequence_accuracy"] = 1.0
    assert TABLES["lte-operations"]([control, before, program, addition]) == "\n".join([
        "| task | model | pair | smallmul | small_loop | ifstat |",
        "|---|---|---|---|---|---|",
        "| program | LSTM | - | - | - | - |",
        "| program | UT | 0.60 | 0.05 | 0.10 | - |",
        "| control | Transformer | - | - | 0.20 | 0.70 |",
    ])
    assert TABLES["lte-operations"]([before]) == docs.NO_RECORDS


def test_lte_loops_table_orders_the_loop_counts_and_leaves_out_runs_scored_before_them():
    control = lte_record("control", "UT", 0.7, 0.5)
    control.metrics["test"].update({"loops11-20/sequence_accuracy": 0.1, "loops1/sequence_accuracy": 0.9,
                                    "loops2-4/sequence_accuracy": 0.5, "with_small_loop/sequence_accuracy": 0.3})
    before = lte_record("control", "LSTM", 0.7, 0.5)  # broken down by operation, not by loop count
    before.metrics["test"]["with_small_loop/sequence_accuracy"] = 0.2
    assert TABLES["lte-loops"]([before, control]) == "\n".join([
        "| task | model | k = 1 | k = 2-4 | k = 11-20 |",
        "|---|---|---|---|---|",
        "| control | UT | 0.90 | 0.50 | 0.10 |",
    ])
    assert TABLES["lte-loops"]([before]) == docs.NO_RECORDS


def test_lte_beam_table_shows_the_beam_metrics_per_beam_size():
    beam4 = lte_record("copy", "UT", 0.99, 0.9)
    beam4.metrics["test"].update({"beam4/char_accuracy": 1.0, "beam4/sequence_accuracy": 0.995})
    greedy_only = lte_record("reverse", "Transformer", 0.9, 0.5)
    assert TABLES["lte-beam"]([beam4, greedy_only]) == "\n".join([
        "| model | Copy | Reverse |",
        "|---|---|---|",
        "| Transformer | - | - |",
        "| UT | 1.00 / 0.99 | - |",  # 0.995 rounds to even
    ])
    beam2 = lte_record("double", "UT", 0.9, 0.8)
    beam2.metrics["test"].update({"beam2/char_accuracy": 0.95, "beam2/sequence_accuracy": 0.85})
    table = TABLES["lte-beam"]([beam4, beam2])
    assert table.startswith("beam 2:\n\n| model | Copy | Double |") and "\n\nbeam 4:\n\n" in table
    assert TABLES["lte-beam"]([greedy_only]) == docs.NO_RECORDS
