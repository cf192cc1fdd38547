"""A joint bAbI run keeps a model per task (``train.keep_best_per_task``) and ``ut eval --per-task``
scores each task with its own: the reading of tensor2tensor's per-task problems on all tasks' data."""

from __future__ import annotations

import json

import pytest
import yaml

from universal_transformer.evaluation.records import RunRecord
from universal_transformer.training.checkpoint import CheckpointManager

from ..data.test_babi import TINY_BABI, needs_data
from ..training.conftest import run_ut


def _config(tmp_path, tasks, **train):
    config = tmp_path / f"babi-{len(tasks)}.yaml"
    data = {**TINY_BABI, "task": {**TINY_BABI["task"], "tasks": tasks},
            "train": {**TINY_BABI["train"], "steps": 8, "eval_every": 2, "keep_best_per_task": True, **train}}
    config.write_text(yaml.safe_dump(data))
    return config


@needs_data
def test_each_task_keeps_its_best_model_and_is_scored_by_it(tmp_path):
    run, results = tmp_path / "run", tmp_path / "results"
    trained = run_ut("train", str(_config(tmp_path, [1, 2])), "--out", str(run), "--no-progress")
    assert trained.returncode == 0, trained.stderr
    log = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    state = CheckpointManager(run / "checkpoints").load(CheckpointManager(run / "checkpoints").latest())
    for task in (1, 2):
        # the first evaluation with the task's lowest validation error, found from the log
        best = min(log, key=lambda e: (e[f"task{task}/error"], e["step"]))
        selected = json.loads((run / "best-per-task" / f"task{task}" / "selected.json").read_text())
        assert selected["step"] == best["step"] and selected["validation"][f"task{task}/error"] == best[f"task{task}/error"]
        assert set(selected["validation"]) == {k for k in best if k.startswith(f"task{task}/")}
        assert state["best_per_task"][f"task{task}"] == {"step": best["step"], "score": -best[f"task{task}/error"]}

    scored = run_ut("eval", str(run), "--per-task", "--record", "babi/en/tiny-per-task", "--results", str(results))
    assert scored.returncode == 0, scored.stderr
    record = RunRecord.load(results / "babi" / "en" / "tiny-per-task.json")
    test = record.metrics["test"]
    assert test == json.loads((run / "eval-test-per-task.json").read_text())
    for task in (1, 2):  # each task's numbers are those of its own model's evaluation
        alone = run_ut("eval", str(run), "--model", str(run / "best-per-task" / f"task{task}"))
        assert alone.returncode == 0, alone.stderr
        own = json.loads((run / f"eval-test-model=best-per-task_task{task}.json").read_text())
        # equal up to float rounding: packed ACT runs a step dense when some row of the batch
        # runs whole, so a story's ponder statistics may differ in the last bits between batchings
        assert {k: v for k, v in test.items() if k.startswith(f"task{task}/")} == \
            pytest.approx({k: v for k, v in own.items() if k.startswith(f"task{task}/")}, rel=1e-7, abs=1e-9)
    errors = [test["task1/error"], test["task2/error"]]
    assert abs(test["mean_error"] - sum(errors) / 2) < 1e-9 and test["failed_tasks"] == sum(e > 5.0 for e in errors)
    assert test["score"] == -test["mean_error"] and test["selection"] == "per_task"
    assert record.best_step is None and any(n.startswith("per task: ") for n in record.notes)
    selected = [json.loads((run / "best-per-task" / f"task{t}" / "selected.json").read_text()) for t in (1, 2)]
    assert record.metrics["validation"]["task2/error"] == selected[1]["validation"]["task2/error"]
    assert abs(record.metrics["validation"]["mean_error"] - sum(s["validation"][f"task{t}/error"]
                                                               for t, s in zip((1, 2), selected)) / 2) < 1e-9


@needs_data
def test_per_task_refusals_name_what_is_missing(tmp_path):
    single = run_ut("train", str(_config(tmp_path, [2], steps=2)), "--out", str(tmp_path / "one"), "--no-progress")
    assert single.returncode == 2 and "train.keep_best_per_task keeps a model per task of a joint task" in single.stderr
    run = tmp_path / "run"
    trained = run_ut("train", str(_config(tmp_path, [1, 2], steps=2, keep_best_per_task=False)), "--out", str(run),
                     "--no-progress")
    assert trained.returncode == 0, trained.stderr
    none_kept = run_ut("eval", str(run), "--per-task")
    assert none_kept.returncode == 2 and f"{run / 'best-per-task'}: no model kept for task1, task2" in none_kept.stderr
    other_split = run_ut("eval", str(run), "--per-task", "--split", "validation")
    assert other_split.returncode == 2 and "leave out --split validation" in other_split.stderr


def test_eval_refuses_to_change_what_chose_the_kept_model(tmp_path):
    """``task.selection`` chose the kept model during training: ``ut eval --set`` cannot."""
    (tmp_path / "config.yaml").write_text("model_class: UTStoryQA\n")
    refused = run_ut("eval", str(tmp_path), "--split", "test", "--set", "task.selection=pooled")
    assert refused.returncode == 2
    assert "task.selection chose the kept model during training; re-scoring it cannot choose again" in refused.stderr

