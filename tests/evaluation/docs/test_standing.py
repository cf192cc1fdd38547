"""Where the reproduction stands: the paper's numbers beside the runs that answer them."""

from __future__ import annotations

from universal_transformer.evaluation import docs
from universal_transformer.evaluation.docs import TABLES

from ..conftest import make_record
from .records import babi_record


def _joint(experiment, validation, test, *, act=True, shared=True, selection=None, **fields):
    """A joint bAbI record on all 20 tasks: per-task validation and test errors (%); ``selection``
    "per_task" for models picked per task (``ut eval --per-task``)."""
    picked = {"selection": selection} if selection else {}
    return make_record(experiment, task={"name": "babi", "set": "en-10k"}, model={"act": act, "share_weights": shared},
                       validation={"score": -validation, **{f"task{t}/error": validation for t in range(1, 21)}},
                       test={**{f"task{t}/error": test[t - 1] for t in range(1, 21)}, **picked}, **fields)


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
        babi_record("babi/en-10k/single/task1", 0, -1.0, {1: 0.0}),  # single runs of one task only: no row
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
        # a joint run's models picked per task (ut eval --per-task): neither reading, whatever its validation
        _joint("babi/en-10k/joint-b-per-task", 0.1, [0.0] * 20, selection="per_task"),
        # trained on resampled tasks (task.repeat, a diagnostic): not the paper's data, whatever its validation
        _joint("babi/en-10k/joint-b-r16x8", 0.1, [0.0] * 20),
        # started from another run's model at step 0 (a curriculum): not the paper's protocol either
        _joint("babi/en-10k/joint-b-after-task16", 0.1, [0.0] * 20),
        # trained on batches of one task each (task.batch_by_task, a diagnostic): not the paper's batches
        _joint("babi/en-10k/joint-b-by-task", 0.1, [0.0] * 20),
        # a run continued from its own model at its step: the protocol, its own column
        _joint("babi/en-10k/joint-b-long", 1.5, [1.0] * 19 + [12.0], status="time_limit"),
        # continued at its step, but from the resampled run's model (a curriculum), and a leg on from that
        _joint("babi/en-10k/joint-b-after-r16x8", 0.1, [0.0] * 20),
        _joint("babi/en-10k/joint-b-after-r16x8-long", 0.1, [0.0] * 20),
    ]
    records[4].config["task"]["repeat"] = {16: 8}
    records[5].config["train"].update(init_from="runs/task16/best", init_step=0)
    records[6].config["task"]["batch_by_task"] = True
    records[7].config["train"].update(init_from="results/models/babi/en-10k/joint-b/best", init_step=88000)
    records[8].config["train"].update(init_from="/home/me/ut/runs/babi/en-10k/joint-b-r16x8/best", init_step=24000)
    records[9].config["train"].update(init_from="results/models/babi/en-10k/joint-b-after-r16x8/best", init_step=90000)
    table = TABLES["babi-paper"](records)
    lines = table.split("\n")
    assert lines[0] == ("| task | 10k single: paper | here | 10k joint: paper | here | 1k single: paper | here "
                        "| 1k joint: paper | here |")
    assert lines[2] == "| 1 | 0.0 | - | 0.0 | 1.0 | 0.0 | - | 0.0 | - |"
    assert "| average error | 0.21 | - | 0.29 | 1.55 | 4.55 | - | 7.78 | - |" in lines
    assert table.endswith("here: 10k single: not measured in full yet; 10k joint: babi/en-10k/joint-b-long (partial); "
                          "1k single: not measured in full yet; 1k joint: not measured in full yet")
    assert TABLES["babi-paper"](records[2:7]) == docs.NO_RECORDS


def test_babi_paper_seeds_table_shows_every_seed_of_the_column_the_paper_table_shows():
    records = [
        _joint("babi/en/joint", 3.0, [2.0] * 20),
        _joint("babi/en/joint/seed-1", 2.0, [4.0] * 20, seeds=[1], status="time_limit"),  # best on validation
        _joint("babi/en/other", 5.0, [0.0] * 20),  # worse on validation: another column, not shown
    ]
    for record in records:
        record.config["task"]["set"] = "en"
    table = TABLES["babi-paper-seeds"](records)
    lines = table.split("\n")
    assert lines[2] == "| 1 | 0.0 ± 0.0 | - | 0.0 ± 0.0 | - | 0.2 ± 0.3 | - | 0.1 ± 0.2 | 3.0 ± 1.4 (2) |"
    assert lines[22] == "| average error | 0.73 ± 0.89 | - | 1.12 ± 1.62 | - | 6.34 ± 3.32 | - | 11.21 ± 6.65 | 3.00 ± 1.41 (2) |"
    assert table.endswith("here: 10k single: not measured in full yet; 10k joint: not measured in full yet; "
                          "1k single: not measured in full yet; 1k joint: babi/en/joint (seeds 0, 1; partial)")
    assert TABLES["babi-paper-seeds"]([_joint("babi/en-10k/ut", 1.0, [0.5] * 20, act=False)]) == docs.NO_RECORDS


def test_standing_averages_the_seeds_of_the_column_it_shows_over_seeds_with_every_task():
    records = [
        _joint("babi/en/joint", 3.0, [2.0] * 20),
        _joint("babi/en/joint/seed-1", 2.0, [4.0] * 20, seeds=[1], status="time_limit"),
        _joint("babi/en/joint/seed-2", 4.0, [9.0] * 20, seeds=[2]),
        _joint("babi/en-10k/joint", 1.0, [1.0] * 20),  # one seed: its average, named so
    ]
    records[-1].config["task"]["set"] = "en-10k"
    for record in records[:3]:
        record.config["task"]["set"] = "en"
    table = TABLES["standing"](records)
    assert _row(table, "bAbI 1k joint (Appendix C)", "UT+ACT: average test error % over seeds") == (
        "| bAbI 1k joint (Appendix C) | UT+ACT: average test error % over seeds | 11.21 ± 6.65 (10 seeds) | "
        "5.00 ± 3.61 (3 seeds) | babi/en/joint (seeds 0, 1, 2; partial) |")
    assert _row(table, "bAbI 10k joint (Appendix C)", "UT+ACT: average test error % over seeds").endswith(
        "| 1.12 ± 1.62 (10 seeds) | 1.00 (1 seed) | babi/en-10k/joint (seed 0) |")
    assert _row(table, "bAbI 1k single (Appendix C)", "UT+ACT: average test error % over seeds").endswith(
        "| 6.34 ± 3.32 (10 seeds) | - | not measured in full yet |")


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
    assert _row(table, "Learning to Execute, Control (Table 6)", "UT: test char / sequence accuracy").endswith(
        "| 1.0 / 1.0 | 0.71 / 0.50 | lte/control-ut |")
    assert _row(table, "Algorithmic Addition (Table 4)", "char / sequence accuracy at length 400").endswith(
        "| 0.34 / 0.02 | 0.12 / 0.00 | algorithmic/addition-ut-act-warm-b8k (UT) |")
    assert _row(table, "Translation (Table 7)", "test BLEU, UT vs Transformer of the same size").endswith(
        "| - | not measured in full yet |")


def _alone(experiment, task, validation, test):
    """A UT run of one bAbI 10k task trained alone: validation and test error (%)."""
    return make_record(experiment, task={"name": "babi", "set": "en-10k", "tasks": [task]}, model={"act": False},
                       validation={"score": -validation, "mean_error": validation},
                       test={f"task{task}/error": test, "mean_error": test})


def test_babi_readings_table_sets_alone_joint_and_per_task_side_by_side():
    records = [
        _joint("babi/en-10k/joint", 2.0, [10.0] + [1.0] * 19, act=False),
        _joint("babi/en-10k/joint-per-task", 1.0, [4.0] + [1.0] * 19, act=False, selection="per_task"),
        # single runs of the same model, each on its task alone: the column best on validation
        *(_alone(f"babi/en-10k/alone/task{t}", t, 3.0, 2.0) for t in range(1, 21)),
        *(_alone(f"babi/en-10k/alone-worse/task{t}", t, 9.0, 0.0) for t in range(1, 21)),
        # a per-task record of another model, with no joint record and no single runs
        _joint("babi/en-10k/act-per-task", 1.0, [0.5] * 20, selection="per_task"),
    ]
    table = TABLES["babi-readings"](records)
    ut, act = table.split("\n\n10k UT+ACT ")
    assert ut.startswith("10k UT (alone: babi/en-10k/alone; joint: babi/en-10k/joint; joint, per task: "
                         "babi/en-10k/joint-per-task):\n\n| task | alone | joint | joint, per task |")
    assert "| 1 | 2.0 | 10.0 | 4.0 |" in ut and "| average error | 2.00 | 1.45 | 1.15 |" in ut
    assert "| failed (> 5%) | 0 | 1 | 0 |" in ut
    assert act.startswith("(alone: not measured in full yet; joint: not measured in full yet; joint, per task: "
                          "babi/en-10k/act-per-task):\n\n| task | joint, per task |")
    assert TABLES["babi-readings"](records[:1]) == docs.NO_RECORDS


def test_babi_readings_table_shows_the_seeds_of_a_run_once_and_names_the_seed_picked():
    records = [
        _joint("babi/en-10k/joint", 2.0, [10.0] * 20, act=False),
        _joint("babi/en-10k/joint/seed-1", 1.0, [3.0] * 20, act=False, seeds=[1]),  # better on validation
        _joint("babi/en-10k/joint-per-task", 1.0, [4.0] * 20, act=False, selection="per_task"),
        _joint("babi/en-10k/joint-per-task/seed-1", 2.0, [1.0] * 20, act=False, selection="per_task", seeds=[1]),
    ]
    table = TABLES["babi-readings"](records)
    assert table.count("| task |") == 1  # one table for the two seeds' per-task records
    assert table.startswith("10k UT (alone: not measured in full yet; joint: babi/en-10k/joint (seed 1); "
                            "joint, per task: babi/en-10k/joint-per-task; joint, best seed per task: "
                            "babi/en-10k/joint (seed 1); joint, per task, best seed per task: babi/en-10k/joint-per-task):")
    lines = table.split("\n")
    assert lines[2] == "| task | joint | joint, per task | joint, best seed per task | joint, per task, best seed per task |"
    # each whole column the seed best on validation (1, then 0); per task the same here
    assert "| 1 | 3.0 | 4.0 | 3.0 | 4.0 |" in table


def test_best_seed_per_task_picks_each_task_on_its_own_validation():
    from universal_transformer.evaluation.docs.babi import best_seed_per_task

    def run(seed, validation):
        return {"seeds": [seed], "validation": {f"task{t}/error": e for t, e in validation.items()},
                "test": {f"task{t}/error": 0.0 for t in validation}}

    seeds = [run(0, {1: 5.0, 2: 1.0, 3: 2.0}), run(1, {1: 1.0, 2: 3.0, 3: 2.0}), run(2, {1: 2.0, 2: 4.0})]
    best = best_seed_per_task(seeds)
    assert {task: r["seeds"] for task, r in best.items()} == {1: [1], 2: [0], 3: [0]}  # task 3: a tie, the first
