"""The bAbI tables and figures: per task, over seeds, and the halting, depth and stories studies."""

from __future__ import annotations

import pytest

from universal_transformer.evaluation import docs
from universal_transformer.evaluation.docs import TABLES

from ..conftest import make_record
from .records import babi_record


def test_babi_tables_best_seed_per_group_and_partial():
    records = [
        babi_record("babi/en/ut/task1", 0, -3.0, {1: 0.5}, steps=1001, wall_time_seconds=30.0),
        babi_record("babi/en/ut/task1", 1, -1.0, {1: 2.0}, steps=1002, wall_time_seconds=40.0),  # best on validation
        babi_record("babi/en/ut/task2", 0, -9.0, {2: 12.0}, steps=1003, wall_time_seconds=80.0,
              status="time_limit"),
        babi_record("babi/en/ut-act-joint", 0, -5.0, {1: 0.0, 2: 30.0}, wall_time_seconds=600.0),
        make_record("babi/en/ut/task3", task={"name": "babi"}),  # no per-task test errors: left out
    ]
    table = TABLES["babi"](records)  # one row per model, the tasks and the summaries across
    assert table.split("\n")[:4] == [
        "| model / task | 1 | 2 | average error | failed (> 5%) | tasks run |", "|---|---|---|---|---|---|",
        "| en/ut | 2.0 | 12.0 | 7.00 | 1 | 2 |", "| en/ut-act-joint | 0.0 | 30.0 | 15.00 | 1 | 2 |"]
    assert table.endswith("\n\npartial = stopped at its time limit: babi/en/ut/task2 (step 1003, 80 s)")
    assert "| en/ut | 3.00 | 4.00 | 3.50 |" in TABLES["babi-ponder"](records)  # task t ponders t + 2
    runs = TABLES["babi-runs"](records)
    assert "| en/ut | 1002 / 800 / 40 s | 1003 / 800 / 80 s | 2 min |" in runs
    assert "| en/ut-act-joint | 1000 / 800 / 600 s | 1000 / 800 / 600 s | 10 min |" in runs  # the joint run counts once
    assert TABLES["babi"]([]) == docs.NO_RECORDS


def test_transpose_markdown_swaps_rows_and_columns_and_refuses_a_ragged_table():
    table = docs.common.markdown_table(["task", "UT", "UT+ACT"], [["1", "0.0", "0.1"], ["average", "0.00", "0.10"]])
    assert docs.common.transpose_markdown(table, "model / task").split("\n") == [
        "| model / task | 1 | average |", "|---|---|---|", "| UT | 0.0 | 0.00 |", "| UT+ACT | 0.1 | 0.10 |"]
    with pytest.raises(ValueError, match="unequal length"):
        docs.common.transpose_markdown("| task | UT |\n|---|---|\n| 1 |", "model")


def test_babi_ponder_figure_one_line_per_act_column_with_two_tasks(tmp_path):
    act = {"act": True}
    records = [
        babi_record("babi/en/joint", 0, -5.0, {1: 0.0, 2: 30.0, 3: 40.0}, model=act),  # ponder 3, 4, 5 (_babi)
        babi_record("babi/en/single/task1", 0, -1.0, {1: 0.0}, model=act),  # one point: no line of its own
        babi_record("babi/en/fixed-depth", 0, -5.0, {1: 0.0, 2: 30.0}),  # no ACT: nothing to show
    ]
    assert docs.FIGURES["babi-ponder"](records, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert not docs.FIGURES["babi-ponder"](records[1:], tmp_path / "q.png")
    assert not (tmp_path / "q.png").exists()


def test_babi_seeds_table_mean_and_std_over_seeds():
    records = [
        babi_record("babi/en/ut/task1", 0, -3.0, {1: 0.5}),
        babi_record("babi/en/ut/task1", 1, -1.0, {1: 2.0}),
        babi_record("babi/en/ut/task1", 2, -2.0, {1: 3.5}),  # no task 2 run of seed 2: not in the average row
        babi_record("babi/en/ut/task2", 0, -9.0, {2: 12.0}),
        babi_record("babi/en/ut/task2", 1, -9.0, {2: 10.0}),
        babi_record("babi/en/joint", 0, -5.0, {1: 0.0, 2: 30.0}),
        babi_record("babi/en/joint", 1, -5.0, {1: 1.0, 2: 20.0}),
        babi_record("babi/en/one-seed/task1", 0, -1.0, {1: 9.0}),  # one seed per task: no column
    ]
    # Seeds recorded apart, as ut sweep lays them out (SETTING/seed-N/taskN), share the column.
    apart = [babi_record("babi/en/ut/task1", 0, -3.0, {1: 0.5}), babi_record("babi/en/ut/seed-1/task1", 1, -1.0, {1: 2.0}),
             babi_record("babi/en/joint", 0, -5.0, {1: 0.0}), babi_record("babi/en/joint/seed-1", 1, -5.0, {1: 1.0})]
    assert TABLES["babi-seeds"](apart).split("\n")[:3] == [
        "| model / task | 1 | average error (per seed) |", "|---|---|---|", "| en/ut | 1.2 ± 1.1 (2) | 1.2 ± 1.1 (2) |"]
    assert list(docs.babi_columns(apart)) == ["en/ut", "en/joint"]
    assert TABLES["babi-seeds"](records) == "\n".join([
        "| model / task | 1 | 2 | average error (per seed) |",
        "|---|---|---|---|",
        "| en/ut | 2.0 ± 1.5 (3) | 11.0 ± 1.4 (2) | 6.1 ± 0.2 (2) |",
        "| en/joint | 0.5 ± 0.7 (2) | 25.0 ± 7.1 (2) | 12.8 ± 3.2 (2) |",
    ])
    assert TABLES["babi-seeds"](records[-1:] + records[:1]) == docs.NO_RECORDS


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


def _ponder(setting, task, bias, weight, error, ponder, depth=None, limit=None, **fields):
    test = {f"task{task}/error": error, f"task{task}/ponder_time": ponder, f"task{task}/ponder_std": 0.5,
            f"task{task}/ponder_supporting": ponder + 0.25, f"task{task}/ponder_other": ponder - 0.25,
            f"task{task}/ponder_question": 3.0}
    if depth is not None:  # records scored before the depth was measured have none
        test |= {f"task{task}/depth": depth, f"task{task}/depth_std": 0.25}
    return make_record(f"babi-ponder/{setting}/task{task}", model_class="UTStoryQA",
                       model={"act": True, "act_bias_init": bias, "ponder_weight": weight, "num_steps": 4,
                              "act_max_steps": limit}, task={"name": "babi"}, test=test, **fields)


def test_ponder_study_table_and_figure(tmp_path):
    records = [
        _ponder("pw0", 2, -3.0, 0.0, 3.0, 4.5),
        _ponder("t2t", 1, 1.0, 0.01, 0.0, 2.0, status="time_limit", steps=500, wall_time_seconds=60.0),
        _ponder("t2t", 2, 1.0, 0.01, 12.5, 2.25, depth=1.5, limit=3),
        make_record("babi/en/ut-act/task1", task={"name": "babi"}, test={"task1/error": 0.0}),  # not the study
    ]
    assert TABLES["babi-ponder-study"](records) == "\n".join([
        "| setting | halting bias | ponder weight | step limit | task | test error % | ponder time N + R "
        "| supporting / other / question | depth N | paper's ponder time | steps | wall time |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        "| t2t | 1.0 | 0.01 | 8 | 1 | 0.0 | 2.00 ± 0.50 | 2.25 / 1.75 / 3.00 | - | 2.3 | 500 | 60 s |",
        "| t2t | 1.0 | 0.01 | 3 | 2 | 12.5 | 2.25 ± 0.50 | 2.50 / 2.00 / 3.00 | 1.50 ± 0.25 | 3.1 | 1000 | 100 s |",
        "| pw0 | -3.0 | 0.0 | 8 | 2 | 3.0 | 4.50 ± 0.50 | 4.75 / 4.25 / 3.00 | - | 3.1 | 1000 | 100 s |",
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
        make_record("babi/en/joint/seed-1", task={"name": "babi"}, history=history[:1]),  # another seed: named so
    ]
    assert TABLES["babi-joint-history"](records) == "\n".join([
        "| model | step | validation error % | supporting / other / question |",
        "|---|---|---|---|",
        "| en/joint | 1000 | 40.0 | 3.00 / 2.00 / 3.00 |",
        "| en/joint | 2000 | 13.3 | 2.33 / 2.00 / 3.00 |",
        "| en/joint | 2500 | 10.0 | 2.25 / 2.00 / 3.00 |",  # the last evaluation
        "| en/joint/seed-1 | 1000 | 40.0 | 3.00 / 2.00 / 3.00 |",
    ])
    assert TABLES["babi-joint-history"](records[1:3]) == docs.NO_RECORDS


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
                {"step": 5000, "task19/error": 89.0}], status="time_limit", test={"task19/error": 88.25})
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
        "| test | - | **88.2** | - |",  # only min2 is scored on test
    ])
    assert "partial = stopped at its time limit: babi/en-10k/ut-act-t2t-v2-joint-10k-min2" in table
    assert TABLES["babi-floor"]([other]) == docs.NO_RECORDS
    assert docs.task_curve(no_act, 19) == {4000: 91.0, 6000: 80.0, 8000: 50.0}
    assert docs.task_curve(no_act, 1) == {4000: 0.0}
    assert docs.FIGURES["babi-floor"]([no_act, min2], tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes().startswith(b"\x89PNG")
    assert not docs.FIGURES["babi-floor"]([no_act, other], tmp_path / "g.png")  # one curve: no figure


def test_task17_floor_table_puts_each_seed_of_each_floor_in_a_column_with_its_test_error(tmp_path):
    def run(name, model, history, seed=0, **fields):
        record = _babi_history_record(name, 17, history, model={"num_steps": 8, "act": True, **model}, **fields)
        record.config["train"]["seed"] = seed
        return record

    alone = run("ut-act-t2t-v2/task17", {}, [{"step": 2000, "mean_error": 37.0, "ponder_question": 14.0}],
                test={"task17/error": 1.0, "mean_error": 1.0})
    seed1 = run("ut-act-t2t-v2/seed-1/task17", {}, [{"step": 2000, "mean_error": 30.0, "ponder_question": 12.0},
                                                   {"step": 3000, "mean_error": 20.0}], seed=1)
    question2 = run("ut-act-t2t-v2-qmin2/task17", {"act_question_min_steps": 2},
                    [{"step": 2000, "mean_error": 40.0, "ponder_question": 3.0}], test={"task17/error": 7.5})
    other = run("ut-act-t2t-v2/task18", {}, [{"step": 2000, "mean_error": 5.0}])  # not in the study
    table = TABLES["babi-floor-task17"]([question2, other, seed1, alone])
    assert table == "\n".join([
        "| step | en-10k/ut-act-t2t-v2 (ACT, floor 1) | en-10k/ut-act-t2t-v2 (ACT, floor 1), seed 1 "
        "| en-10k/ut-act-t2t-v2-qmin2 (ACT, facts' floor 1, question's 2) |",
        "|---|---|---|---|",
        "| 2,000 | 37.0 (14.0) | 30.0 (12.0) | 40.0 (3.0) |",
        "| 3,000 | - | 20.0 | - |",  # seed 1's last evaluation
        "| test | **1.0** | - | **7.5** |",
    ])
    assert docs.FIGURES["babi-floor-task17"]([alone, seed1, other], tmp_path / "f.png")  # seeds 0 and 1: two curves
    assert not docs.FIGURES["babi-floor-task17"]([alone, other], tmp_path / "g.png")


def test_joint17_floor_table_reads_task_17_from_the_joint_models_every_10000_steps(tmp_path):
    def run(name, model, history, seed=0, **fields):
        record = _babi_history_record(name, "all", history, model={"num_steps": 8, "act": True, "act_min_steps": 2, **model},
                                      **fields)
        record.config["train"]["seed"] = seed
        return record

    floor2 = run("ut-act-t2t-v2-joint-10k-min2", {}, [
        {"step": 10000, "task17/error": 38.0, "task17/ponder_question": 3.0, "task19/error": 1.0},
        {"step": 15000, "task17/error": 37.0}, {"step": 20000, "task17/error": 36.5, "task17/ponder_question": 3.1}],
        test={"task17/error": 36.0, "mean_error": 6.0})
    q8 = run("ut-act-t2t-v2-joint-10k-min2-q8", {"act_question_min_steps": 8}, [
        {"step": 10000, "task17/error": 30.0, "task17/ponder_question": 9.0}, {"step": 12000, "task17/error": 25.0}],
        status="time_limit", steps=12345)
    alone = _babi_history_record("ut-act-t2t-v2-qmin8/task17", 17, [{"step": 10000, "mean_error": 9.0}])  # not in the study
    def rows(floor2_label, *body):
        """The table before its footnote: the floor-2 column named ``floor2_label``, then q8's."""
        return "\n".join([f"| step | en-10k/ut-act-t2t-v2-joint-10k-min2 (ACT, floor 2){floor2_label} "
                          "| en-10k/ut-act-t2t-v2-joint-10k-min2-q8 (ACT, facts' floor 2, question's 8) |",
                          "|---|---|---|", "| 10,000 | 38.0 (3.0) | 30.0 (9.0) |",
                          "| 12,000 | - | 25.0 |", *body])  # 12,000: the partial q8 run's last evaluation

    table = TABLES["babi-floor-joint17"]([q8, alone, floor2])
    assert table.split("\n\n")[0] == rows("", "| 20,000 | 36.5 (3.1) | - |", "| test | **36.0** | - |")
    assert "ut-act-t2t-v2-joint-10k-min2-q8 (step 12345" in table  # partial, said so
    assert docs.FIGURES["babi-floor-joint17"]([floor2, q8], tmp_path / "f.png")
    assert not docs.FIGURES["babi-floor-joint17"]([floor2, alone], tmp_path / "g.png")

    # Seed 0 trained on from its step 15,000 model: one column, the new leg from step 15,000 on.
    on = run("ut-act-t2t-v2-joint-10k-min2-long", {}, [
        {"step": 16000, "task17/error": 33.0}, {"step": 20000, "task17/error": 30.0, "task17/ponder_question": 4.0},
        {"step": 30000, "task17/error": 28.0, "task17/ponder_question": 4.5}],
        test={"task17/error": 27.0, "mean_error": 5.0}, status="time_limit", steps=30500)
    on.config["train"]["init_step"] = 15000
    table = TABLES["babi-floor-joint17"]([q8, on, floor2])
    assert table.split("\n\n")[0] == rows(", trained on as -long",
                                           "| 20,000 | 30.0 (4.0) | - |",  # the later leg's, not the first leg's 36.5
                                           "| 30,000 | 28.0 (4.5) | - |",
                                           "| test | **27.0** | - |")  # the last leg's model
    assert "ut-act-t2t-v2-joint-10k-min2-long (step 30500" in table
    assert docs.FIGURES["babi-floor-joint17"]([on, floor2], tmp_path / "h.png") is False  # one lineage: one curve
    assert docs.FIGURES["babi-floor-joint17"]([on, floor2, q8], tmp_path / "i.png")


def test_task16_joint_table_names_the_resampled_task_the_seed_and_the_warm_start_in_their_columns():
    def run(name, history, repeat=None, **fields):
        record = _babi_history_record(f"ut-t2t-v2-steps2-nopatience-joint-10k-{name}", "all", history,
                                      model={"num_steps": 2, "act": False}, **fields)
        if repeat:
            record.config["task"]["repeat"] = repeat
        return record

    plain = run("t2topt-t2tinit", [{"step": 10000, "task16/error": 52.0}, {"step": 20000, "task16/error": 50.0}],
                test={"task16/error": 52.8})
    share = run("t2topt-t2tinit-r16x8", [{"step": 10000, "task16/error": 49.0}, {"step": 15000, "task16/error": 3.0}],
                repeat={16: 8}, status="time_limit", steps=15500)
    seed1 = run("t2topt-t2tinit/seed-1", [{"step": 10000, "task16/error": 48.0}])
    seed1.config["train"]["seed"] = 1
    after = run("t2topt-t2tinit-after16", [{"step": 10000, "task16/error": 0.7}])
    after.config["train"].update(init_from="runs/task16/best", init_step=0)
    other = run("t2topt-t2tinit-r17x8", [{"step": 10000, "task16/error": 1.0}], repeat={17: 8})  # not in the study
    # a curriculum in the mix, seed 1: task 16 x19 to step 12,000, the plain joint on from its model at that step
    x19 = _babi_history_record("ut-t2t-v2-steps2-nopatience-t2topt-t2tinit-pairs/seed-1/16x19-with-19", "all",
                               [{"step": 10000, "task16/error": 45.0}, {"step": 12000, "task16/error": 40.0},
                                {"step": 13000, "task16/error": 39.0}], model={"num_steps": 2, "act": False})
    x19.config["task"]["repeat"] = {"16": 19}
    x19.config["train"]["seed"] = 1
    on = run("t2topt-t2tinit-afterx19/seed-1", [{"step": 13000, "task16/error": 41.0}, {"step": 20000, "task16/error": 30.0}],
             test={"task16/error": 31.0})
    on.config["train"].update(seed=1, init_from="runs/babi/en-10k/ut-t2t-v2-steps2-nopatience-t2topt-t2tinit-pairs/"
                                                "seed-1/16x19-with-19/best", init_step=12000)
    table = TABLES["babi-task16-joint"]([share, other, on, after, seed1, x19, plain])
    name = "en-10k/ut-t2t-v2-steps2-nopatience-joint-10k-t2topt-t2tinit"
    assert table.split("\n\n")[0] == "\n".join([
        f"| step | {name} (no ACT, 2 steps) | {name} (no ACT, 2 steps), seed 1 | {name}-r16x8 (no ACT, 2 steps, task 16 x8) "
        f"| {name}-after16 (no ACT, 2 steps, from another run's model) | en-10k/ut-t2t-v2-steps2-nopatience-t2topt-t2tinit-"
        f"pairs/16x19-with-19 (no ACT, 2 steps, task 16 x19), seed 1, trained on as {name}-afterx19 |",
        "|---|---|---|---|---|---|", "| 10,000 | 52.0 | 48.0 | 49.0 | 0.7 | 45.0 |", "| 15,000 | - | - | 3.0 | - | - |",
        "| 20,000 | 50.0 | - | - | - | 30.0 |", "| test | **52.8** | - | - | - | **31.0** |"])
    assert "t2topt-t2tinit-r16x8 (step 15500" in table  # partial, said so


def test_task16_pairs_table_aligns_runs_at_equal_task_16_questions_seen():
    def pair(name, tasks, history, seed=2, repeat=None, **fields):
        record = _babi_history_record(f"ut-t2t-v2-steps2-nopatience-t2topt-t2tinit-pairs/seed-{seed}/{name}", tasks,
                                      history, model={"num_steps": 2, "act": False}, **fields)
        if repeat:
            record.config["task"]["repeat"] = repeat
        return record

    def alone(seed, history, **fields):
        return _babi_history_record(f"ut-t2t-v2-steps2-nopatience-10k-t2topt-t2tinit-jointvocab/seed-{seed}/task16", 16,
                                    history, model={"num_steps": 2, "act": False}, **fields)

    alone2 = alone(2, [{"step": 5000, "mean_error": 54.3}, {"step": 10000, "mean_error": 42.0},
                       {"step": 13000, "mean_error": 30.6}], test={"mean_error": 0.8})
    alone5 = alone(5, [{"step": 5000, "mean_error": 1.0}])  # no run with company and seed 5: left out
    # A pair's step 2n has seen n steps' worth of task 16's questions (half of each step).
    with15 = pair("16-with-15", [15, 16], [{"step": 10000, "task16/error": 52.0}, {"step": 16000, "task16/error": 51.0},
                                          {"step": 26000, "task16/error": 50.0}],
                  test={"task16/error": 51.5, "task15/error": 0.0})
    with4 = pair("16-with-4", [4, 16], [{"step": 10000, "task16/error": 50.0}, {"step": 17000, "task16/error": 44.0},
                                       {"step": 20000, "task16/error": 30.0}], status="time_limit", steps=20500)
    with4_seed3 = pair("16-with-4", [4, 16], [{"step": 10000, "task16/error": 40.0}], seed=3)
    # All 20 tasks, task 16 listed 19 times: 171,000 of 334,000 questions (task 3 has 1,000).
    with19 = pair("16x19-with-19", "all", [{"step": 10000, "task16/error": 50.0}, {"step": 20000, "task16/error": 44.0}],
                  repeat={"16": 19}, test={"task16/error": 51.0})
    with3 = pair("16x3-with-3", [15, 16, 17, 19], [{"step": 10000, "task16/error": 50.0}], repeat={"16": 3},
                 test={"task16/error": 50.5, "task15/error": 1.0, "task17/error": 20.0, "task19/error": 30.0})
    # The 20-task model at x8 (72,000 of 235,000 questions), seed 0's from the joint study under the
    # decaying rate, and with the rate held at its peak after the warm-up.
    x8 = _babi_history_record("ut-t2t-v2-steps2-nopatience-joint-10k-t2topt-t2tinit-r16x8", "all",
                              [{"step": 16000, "task16/error": 50.0}, {"step": 32000, "task16/error": 49.0}],
                              model={"num_steps": 2, "act": False}, test={"task16/error": 51.5})
    x8.config["task"]["repeat"] = {"16": 8}
    x8_held = pair("16x8-with-19-constant", "all", [{"step": 16000, "task16/error": 48.0},
                                                    {"step": 26000, "task16/error": 30.0}],
                   repeat={"16": 8}, test={"task16/error": 29.0})
    x8_held.config["train"]["schedule"] = "constant"
    # In batches of 128: a step is two steps' worth of 64.
    x8_b128 = pair("16x8-with-19-b128", "all", [{"step": 8000, "task16/error": 47.0}], repeat={"16": 8}, batch=128)
    table = TABLES["babi-task16-pairs"]([with15, x8_held, with19, with4_seed3, alone5, alone2, with3, x8, x8_b128, with4])
    assert table.split("\n\n")[0] == "\n".join([
        "| task 16 | share | 5,000 | 8,000 | 10,000 | 13,000 | first below 45% | test: task 16 | test: the others' mean |",
        "|---|---|---|---|---|---|---|---|---|",
        "| alone, seed 2 | 100% | 54.3 | - | 42.0 | 30.6 | 10,000 | 0.8 | - |",
        "| with task 4, seed 2 | 50% | 50.0 | 44.0 | 30.0 | - | 8,500 | - | - |",
        "| with task 4, seed 3 | 50% | 40.0 | - | - | - | 5,000 | - | - |",
        "| with task 15, seed 2 | 50% | 52.0 | 51.0 | - | 50.0 | not by 13,000 | 51.5 | 0.0 |",
        "| with 3 (15, 17, 19), x3, seed 2 | 50% | 50.0 | - | - | - | not by 5,000 | 50.5 | 17.0 |",
        "| with the other 19, x8, seed 0 | 31% | 50.0 | - | 49.0 | - | not by 9,804 | 51.5 | - |",
        "| with the other 19, x8, 128 a step, seed 2 | 31% | 47.0 | - | - | - | not by 4,902 | - | - |",
        "| with the other 19, x8, peak rate held, seed 2 | 31% | 48.0 | 30.0 | - | - | 7,966 | 29.0 | - |",
        "| with the other 19, x19, seed 2 | 51% | 50.0 | - | 44.0 | - | 10,240 | 51.0 | - |"])
    assert "16-with-4 (step 20500" in table  # partial, said so
    assert TABLES["babi-task16-pairs"]([alone2]) == "_No records yet._"
    # The study's runs belong to this table alone, not to the model tables.
    with15.metrics["test"].update(mean_error=16.95)
    assert "16-with-15" not in str(docs.babi_columns([with15, alone2]))
    assert TABLES["babi-joint-history"]([with15, with19, x8_held]) == "_No records yet._"


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


def test_paper_depth_table_sets_the_depth_of_runs_that_have_it_beside_the_papers():
    depth = {"task1/error": 0.0, "task1/depth": 2.0, "task1/depth_std": 0.0, "task3/error": 22.8, "task3/depth": 4.48,
             "task3/depth_std": 0.91, "task3/depth_supporting": 4.1, "task3/depth_other": 4.5, "task3/depth_question": 2.0}
    records = [
        make_record("babi/en-10k/mix123-meanpool", model_class="UTStoryQA", task={"name": "babi"}, test=depth,
                    model={"act": True, "num_steps": 8, "pooling": "mean"}),
        make_record("babi/en-10k/old", model_class="UTStoryQA", task={"name": "babi"},  # scored before the depth
                    model={"act": True, "num_steps": 8}, test={"task1/error": 0.0, "task1/ponder_time": 2.0}),
        make_record("babi/en-10k/fixed", model_class="UTStoryQA", task={"name": "babi"},  # no ACT: no depth to show
                    model={"act": False, "num_steps": 8}, test={"task1/error": 0.0, "task1/depth": 8.0}),
    ]
    assert TABLES["babi-paper-depth"](records) == "\n".join([
        "| run | readout | step limit | halting | test error % (tasks 1 / 2 / 3) | depth N (tasks 1 / 2 / 3) "
        "| task 3 depth (supporting / other / question) |",
        "|---|---|---|---|---|---|---|",
        "| the paper (Section 3.1) | - | - | - | - | 2.3 ± 0.8 / 3.1 ± 1.1 / 3.8 ± 2.2 | - |",
        "| en-10k/mix123-meanpool | mean | 16 | ACT, floor 1 | 0.0 / - / 22.8 | 2.00 ± 0.00 / - / 4.48 ± 0.91 "
        "| 4.10 / 4.50 / 2.00 |",
    ])
    assert TABLES["babi-paper-depth"](records[1:]) == docs.NO_RECORDS


def test_1k_levers_table_sets_each_lever_beside_the_recipe_on_the_same_tasks():
    recipe = [babi_record(f"babi/en/ut-t2t-v2-steps2/task{t}", 0, -1.0, {t: e}) for t, e in ((1, 0.5), (2, 50.0), (7, 20.0))]
    records = recipe + [
        babi_record("babi/en/ut-t2t-v2-steps2-drop3/task2", 0, -1.0, {2: 60.0}),
        babi_record("babi/en/ut-t2t-v2-steps2-drop3/task7", 0, -1.0, {7: 10.0}, status="time_limit"),
        babi_record("babi/en/ut-t2t-v2-steps2-half/task2", 0, -1.0, {2: 40.0}),
        babi_record("babi/en/something-else/task2", 0, -1.0, {2: 1.0}),  # not a lever: left out
    ]
    assert TABLES["babi-1k-levers"](records) == "\n".join([
        "| column | lever | task 2 | task 7 | mean over its tasks (the recipe's) |",
        "|---|---|---|---|---|",
        "| en/ut-t2t-v2-steps2 | the recipe (depth 2, patience 10) | 50.0 | 20.0 | 35.0 (35.0) |",
        "| en/ut-t2t-v2-steps2-drop3 (partial) | dropout 0.3 (from 0.1) | 60.0 | 10.0 | 35.0 (35.0) |",
        "| en/ut-t2t-v2-steps2-half | half the width (d_model 64, filter 256) | 40.0 | - | 40.0 (50.0) |",
    ])
    assert TABLES["babi-1k-levers"](recipe) == docs.NO_RECORDS


def _joint_record(experiment, depth, decay, errors, *, best_step=800, history=None, **fields):
    test = {f"task{t}/error": e for t, e in errors.items()}
    test.update(mean_error=sum(errors.values()) / len(errors), failed_tasks=sum(e > 5.0 for e in errors.values()))
    config = {"model_class": "UTStoryQA", "model": {"num_steps": depth, "act": False}, "task": {"name": "babi"},
              "train": {"seed": 0, "weight_decay": decay}}
    return make_record(experiment, task={"name": "babi"}, config=config, test=test, best_step=best_step,
                       validation={"score": -10.0, "mean_error": 10.0}, history=history, **fields)


def test_1k_joint_decay_table_orders_by_depth_then_decay_and_shows_the_failed_tasks():
    records = [
        _joint_record("babi/en/ut-t2t-v2-steps2-nopatience-wd1-joint", 2, 1.0, {1: 0.0, 2: 60.0, 15: 46.0},
                      history=[{"step": 800, "train_loss": 1.36}]),
        _joint_record("babi/en/ut-t2t-v2-joint", 8, 0.01, {1: 0.0, 2: 20.0, 15: 0.0}, steps=48000, best_step=28000),
        _joint_record("babi/en/ut-t2t-v2-steps2-joint", 2, 0.01, {1: 0.5, 2: 45.0, 15: 0.0}, status="time_limit",
                      history=[{"step": 700, "train_loss": 0.9}, {"step": 800, "train_loss": 0.8}]),
        _joint_record("babi/en/ut-t2t-v2-steps2", 2, 0.01, {1: 0.0, 2: 1.0, 15: 0.0}),  # not in the study
    ]
    unscored = _joint_record("babi/en/ut-t2t-v2-joint-wd01", 8, 0.1, {2: 1.0}, status="time_limit")
    del unscored.metrics["test"]["task2/error"]  # a chunk's partial record: no test metrics yet
    records.append(unscored)
    assert TABLES["babi-1k-joint-decay"](records) == "\n".join([
        "| run | depth | weight decay | steps (best at) | training loss at the best | validation error % "
        "| test error % (failed) | task 2 | task 15 |",
        "|---|---|---|---|---|---|---|---|---|",
        "| en/ut-t2t-v2-steps2-joint (partial) | 2 | 0.01 | 1,000 (800) | 0.80 | 10.00 | 15.17 (1) | 45.0 | 0.0 |",
        "| en/ut-t2t-v2-steps2-nopatience-wd1-joint | 2 | 1 | 1,000 (800) | 1.36 | 10.00 | 35.33 (2) | 60.0 | 46.0 |",
        "| en/ut-t2t-v2-joint | 8 | 0.01 | 48,000 (28,000) | - | 10.00 | 6.67 (1) | 20.0 | 0.0 |",
    ])
    assert TABLES["babi-1k-joint-decay"](records[-1:]) == docs.NO_RECORDS


def test_port_protocol_table_sets_each_task_beside_its_held_out_counterpart():
    records = [
        babi_record("babi/en/ut/task2", 0, -40.0, {2: 55.9}, best_step=5500),
        babi_record("babi/en/ut/task5", 0, -10.0, {5: 17.5}, best_step=2000),
        babi_record("babi/en/ut/task7", 0, -10.0, {7: 21.0}),  # no port run: not in the table
        babi_record("babi-port/en/ut/task2", 0, -50.0, {2: 50.0}, best_step=9000),
        babi_record("babi-port/en/ut/task5", 0, -4.0, {5: 4.0}, best_step=3000, status="time_limit"),
        babi_record("babi-port/en/other/task1", 0, -1.0, {1: 1.0}),  # no held-out counterpart: left out
    ]
    rows = TABLES["babi-port"](records).split("\n")[2:]
    assert rows == ["| en/ut | 2 | 55.9 (5,500) | 50.0 (9,000) | -5.9 |",
                    "| en/ut | 5 | 17.5 (2,000) | 4.0 (3,000, partial) | -13.5 |",
                    "| en/ut | mean of 2 | 36.70 (2 failed) | 27.00 (1 failed) | -9.70 |"]
    assert "babi-port" not in TABLES["babi"](records)  # the port's runs stay out of the other tables
    assert TABLES["babi-port"](records[:3]) == docs.NO_RECORDS


def test_data_table_sets_each_fraction_of_the_10k_file_beside_the_1k_file():
    def scaled(task, fraction, error, **fields):
        record = babi_record(f"babi-data/en-10k/ut/frac{fraction}/task{task}", 0, -error, {task: error}, **fields)
        record.config["task"] = {"name": "babi", "set": "en-10k", "train_fraction": fraction}
        return record
    records = [
        babi_record("babi/en/ut/task6", 0, -8.0, {6: 8.4}, best_step=3000),
        babi_record("babi/en/ut/task9", 0, -8.0, {9: 8.5}, best_step=1500),
        babi_record("babi/en/other/task6", 0, -1.0, {6: 1.0}),  # no scaled run of its recipe: left out
        scaled(6, 0.1, 9.0, best_step=2500), scaled(6, 1.0, 0.1, best_step=3000),
        scaled(9, 1.0, 0.5, best_step=5500, status="time_limit"),  # no 0.1 run: the means say over which tasks
    ]
    rows = TABLES["babi-data"](records).split("\n")
    assert rows[0] == ("| recipe | task | the 1k file: test error % (kept step) | the first 0.1 of the 10k file "
                       "| the whole 10k file |")
    assert rows[2:] == ["| ut | 6 | 8.4 (3,000) | 9.0 (2,500) | 0.1 (3,000) |",
                        "| ut | 9 | 8.5 (1,500) | - | 0.5 (5,500, partial) |",
                        "| ut | mean | 8.45 (2 of 2 failed) | 9.00 (1 of 1 failed; the 1k file 8.40) "
                        "| 0.30 (0 of 2 failed; the 1k file 8.45) |"]
    assert "babi-data" not in TABLES["babi"](records)  # the scaled runs stay out of the other tables
    assert TABLES["babi-data"](records[:3]) == docs.NO_RECORDS


def test_seed_spread_table_sets_a_tasks_seeds_beside_the_papers_ten():
    errors = [50.0, 60.0, 40.0, 4.0, 46.0]
    records = [babi_record(f"babi/en/ut/seed-{s}/task16" if s else "babi/en/ut/task16", s, -e, {16: e})
               for s, e in enumerate(errors)]
    records[1] = babi_record("babi/en/ut/seed-1/task16", 1, -1.0, {16: 60.0}, status="time_limit")  # best on validation
    records += [babi_record(f"babi/en/few/seed-{s}/task2", s, -1.0, {2: 1.0}) for s in range(4)]  # 4 seeds: too few
    records += [babi_record("babi/en/joint", s, -1.0, {2: 1.0, 16: 2.0}) for s in range(5)]  # joint runs: left out
    rows = TABLES["babi-seed-spread"](records).split("\n")[2:]
    # The mean and sample standard deviation, computed here independently:
    mean = sum(errors) / 5
    std = (sum((e - mean) ** 2 for e in errors) / 4) ** 0.5
    assert rows == [f"| en/ut | 16 | 5 (1 partial) | {mean:.1f} ± {std:.1f} | 4.0 | 60.0 | 60.0 | 1 | 9.1 ± 8.1 | 5.8 |"]
    assert TABLES["babi-seed-spread"](records[:4]) == docs.NO_RECORDS


def pair_run(name, seed, data_seed, error_at_10k, *, tasks=16, **fields):
    """A task-16 lottery run of ``babi/en-10k/NAME``: its validation error at step 10,000 (None: stopped before)."""
    config = {"model_class": "UTStoryQA", "model": {}, "task": {"name": "babi", "tasks": tasks},
              "train": {"seed": seed, "data_seed": data_seed}}
    history = [{"step": 5000, "mean_error": 51.0}] + ([{"step": 10_000, "mean_error": error_at_10k}] if error_at_10k else [])
    return make_record(f"babi/en-10k/{name}", task={"name": "babi"}, config=config, history=history,
                       test={"task16/error": error_at_10k or 51.0}, validation={"score": -(error_at_10k or 51.0)},
                       seeds=[seed], **fields)


def test_seed_pairs_table_crosses_the_seeds_of_weights_and_stories_and_the_model_tables_leave_it_out():
    own = [pair_run("ut-t2t-v2-steps2-nopatience/task16", 0, None, 49.2),  # one seed draws both
           pair_run("ut-t2t-v2-steps2-nopatience/seed-2/task16", 2, None, 36.8)]
    pairs = [pair_run("ut-t2t-v2-steps2-nopatience-s10k/weights-2-data-0/task16", 2, 0, 38.0),
             pair_run("ut-t2t-v2-steps2-nopatience-s10k/weights-2-data-2/task16", 2, 2, 36.9),  # seed 2's own, again
             pair_run("ut-t2t-v2-steps2-nopatience-s10k/weights-0-data-4/task16", 0, 4, None, status="time_limit", steps=6000)]
    others = [pair_run("ut-t2t-v2-steps2-nopatience/task17", 0, None, 10.0, tasks=17),  # another task
              pair_run("ut-t2t-v2-steps2-nopatience-b512/task16", 0, None, 50.0)]  # another folder
    table = TABLES["babi-seed-pairs"](pairs + others + own)
    assert table.split("\n") == [
        "| task 16, step 10,000 | stories 0 | stories 2 |", "|---|---|---|",
        "| weights 0 | 49.2 | - |", "| weights 2 | 38.0 | 36.8 / 36.9 |", "",  # in the order of the study's folders
        "partial = stopped at its time limit: babi/en-10k/ut-t2t-v2-steps2-nopatience-s10k/weights-0-data-4/task16 "
        "(step 6000, 100 s)"]
    assert TABLES["babi-seed-pairs"](others) == docs.NO_RECORDS
    # the same pairs under tensor2tensor's optimiser: a table of their own, the default study's runs left out
    t2t = [pair_run("ut-t2t-v2-steps2-nopatience-s10k-t2topt/weights-2-data-0/task16", 2, 0, 3.5)]
    assert TABLES["babi-seed-pairs-t2t-optimiser"](pairs + own + t2t).split("\n") == [
        "| task 16, step 10,000 | stories 0 |", "|---|---|", "| weights 2 | 3.5 |"]
    assert "3.5" not in TABLES["babi-seed-pairs"](pairs + own + t2t)
    # the pairs are a seed study, not models: the per-task tables show the seeds' own runs only
    assert [row.split(" |")[0] for row in TABLES["babi"](pairs + own).split("\n")[2:]] == ["| en-10k/ut-t2t-v2-steps2-nopatience"]


def test_seed_pairs_levers_table_sets_the_pairs_every_lever_ran_side_by_side():
    folders = {"ours": "ut-t2t-v2-steps2-nopatience-s10k", "t2t": "ut-t2t-v2-steps2-nopatience-s10k-t2topt",
               "mean": "ut-t2t-v2-steps2-nopatience-s10k-t2topt-meanpool",
               "init": "ut-t2t-v2-steps2-nopatience-s10k-t2topt-t2tinit"}
    errors = {"ours": {(0, 0): 52.0, (2, 0): 40.0, (1, 1): 50.0}, "t2t": {(0, 0): 38.0, (2, 0): 24.0, (1, 1): 50.0},
              "mean": {(0, 0): 51.0, (2, 0): 44.0}, "init": {(0, 0): 20.0, (2, 0): 46.0, (1, 1): 30.0}}
    records = [pair_run(f"{folders[lever]}/weights-{w}-data-{d}/task16", w, d, e)
               for lever, cells in errors.items() for (w, d), e in cells.items()]
    records.append(pair_run("ut-t2t-v2-steps2-nopatience/task16", 0, None, 99.0))  # seed 0's own run: the rerun counts
    stopped = pair_run(f"{folders['mean']}/weights-1-data-1/task16", 1, 1, None, status="time_limit", steps=6000)
    rows = TABLES["babi-seed-pairs-levers"](records + [stopped]).split("\n")
    assert rows[0] == ("| task 16, step 10,000 | our optimiser | t2t optimiser | t2t optimiser + mean readout "
                       "| t2t optimiser + t2t initialiser |")
    # each column's mean over its own pairs, and over the two pairs every column ran (computed here)
    own = {lever: f"**{sum(cells.values()) / len(cells):.1f}** ({len(cells)})" for lever, cells in errors.items()}
    common = {lever: f"{(cells[(0, 0)] + cells[(2, 0)]) / 2:.1f}" for lever, cells in errors.items()}
    assert rows[2:] == [
        "| weights 0, stories 0 | 52.0 | 38.0 | 51.0 | 20.0 |", "| weights 1, stories 1 | 50.0 | 50.0 | - | 30.0 |",
        "| weights 2, stories 0 | 40.0 | 24.0 | 44.0 | 46.0 |",
        "| mean over its pairs | " + " | ".join(own.values()) + " |",
        "| mean over the 2 pairs all ran | " + " | ".join(common.values()) + " |",
        "| below 45% | 1 of 3 | 2 of 3 | 1 of 2 | 2 of 3 |", "",
        f"partial = stopped at its time limit: babi/en-10k/{folders['mean']}/weights-1-data-1/task16 (step 6000, 100 s)"]
    # a lever without runs shows "-" and leaves the pairs the others all ran
    without_mean = TABLES["babi-seed-pairs-levers"]([r for r in records if "-meanpool/" not in r.experiment]).split("\n")
    assert without_mean[5:8] == ["| mean over its pairs | " + " | ".join([*list(own.values())[:2], "-", own["init"]]) + " |",
                                 "| mean over the 3 pairs all ran | 47.3 | 37.3 | - | 32.0 |",
                                 "| below 45% | 1 of 3 | 2 of 3 | - | 2 of 3 |"]
    only_ours = [r for r in records if "-s10k/" in r.experiment or "-s10k" not in r.experiment]
    assert TABLES["babi-seed-pairs-levers"](only_ours) == docs.NO_RECORDS
