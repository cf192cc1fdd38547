"""``ut sweep`` (alias ``babi-train``): runs over seeds, bAbI single and joint sweeps, resumable, with the table;
``ut report`` picks the task's table from the runs."""

from __future__ import annotations

import json

import yaml

from ..data.test_babi import TINY_BABI, needs_data
from ..training.conftest import TINY, run_ut


@needs_data
def test_single_sweep_over_tasks_and_seeds_then_skips_finished_runs(tmp_path):
    config = tmp_path / "babi.yaml"
    config.write_text(yaml.safe_dump(TINY_BABI))
    out = tmp_path / "runs"
    result = run_ut("sweep", str(config), "--out", str(out), "--tasks", "1", "3", "--seeds", "0", "1")
    assert result.returncode == 0, result.stderr
    for seed in (0, 1):
        for task in (1, 3):
            summary = json.loads((out / f"seed-{seed}" / f"task{task}" / "metrics.json").read_text())
            assert list(k for k in summary["test"] if k.endswith("/error")) == [f"task{task}/error"]
            saved = yaml.safe_load((out / f"seed-{seed}" / f"task{task}" / "config.yaml").read_text())
            assert saved["train"]["seed"] == seed
    assert "| 1 |" in result.stdout and "| 3 |" in result.stdout and "| tasks run | 2 |" in result.stdout
    again = run_ut("babi-train", str(config), "--out", str(out), "--tasks", "1", "--seeds", "0")
    assert again.returncode == 0 and "finished earlier, skipped" in again.stdout
    # a finished run is only skipped when it is the run asked for
    other = run_ut("babi-train", str(config), "--out", str(out), "--tasks", "1", "--data", "en-10k")
    assert other.returncode == 2 and "task1 holds a run with a different config (task.set: 'en' there, 'en-10k' now)" in other.stderr


@needs_data
def test_joint_trains_one_model_on_all_tasks_given(tmp_path):
    config = tmp_path / "babi.yaml"
    config.write_text(yaml.safe_dump(TINY_BABI))
    out = tmp_path / "joint"
    result = run_ut("babi-train", str(config), "--out", str(out), "--tasks", "1", "2", "3", "--joint")
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "seed-0" / "joint" / "metrics.json").read_text())
    assert {k for k in summary["test"] if k.endswith("/error")} == {"task1/error", "task2/error", "task3/error"}
    assert "| tasks run | 3 |" in result.stdout


def test_bad_task_list_names_the_flag(tmp_path):
    config = tmp_path / "babi.yaml"
    config.write_text(yaml.safe_dump(TINY_BABI))
    result = run_ut("babi-train", str(config), "--out", str(tmp_path / "runs"), "--tasks", "1,2")
    assert result.returncode == 2 and "--tasks takes task numbers 1..20 or 'all'; got '1,2'" in result.stderr


def test_refuses_a_config_that_is_not_babi(tmp_path):
    config = tmp_path / "copy.yaml"
    config.write_text(yaml.safe_dump(TINY))
    result = run_ut("babi-train", str(config), "--out", str(tmp_path / "runs"), "--tasks", "1")
    assert result.returncode == 2 and "--tasks, --joint and --data are for bAbI sweeps" in result.stderr


def test_sweep_over_seeds_for_any_task_and_report_reads_the_task(tmp_path):
    config = tmp_path / "copy.yaml"
    config.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "copy-ut"
    result = run_ut("sweep", str(config), "--out", str(out), "--seeds", "0", "1", "--set", "train.steps=4",
                    "--set", "train.eval_every=2")
    assert result.returncode == 0, result.stderr
    for seed in (0, 1):
        saved = yaml.safe_load((out / f"seed-{seed}" / "config.yaml").read_text())
        assert saved["train"]["seed"] == seed and (out / f"seed-{seed}" / "metrics.json").is_file()
    report = run_ut("report", str(tmp_path / "copy-ut"))
    assert report.returncode == 0, report.stderr
    assert "| model | Copy (len 400) | Reverse (len 400) | Addition (len 400) |" in report.stdout
    mixed = tmp_path / "mixed"
    (mixed / "a").mkdir(parents=True)
    (mixed / "a" / "config.yaml").write_text(yaml.safe_dump(TINY))
    (mixed / "b").mkdir()
    (mixed / "b" / "config.yaml").write_text(yaml.safe_dump({**TINY, "task": {"name": "babi"}}))
    refused = run_ut("report", str(mixed))
    assert refused.returncode == 2 and "runs of several tasks (algorithmic, babi)" in refused.stderr
