"""A run killed at any moment (kill -9) and resumed ends with the same weights as an uninterrupted one."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
import torch

from .conftest import run_ut, ut_command


def _final_weights(run_dir) -> dict[str, torch.Tensor]:
    ckpts = sorted((run_dir / "checkpoints").glob("step-*.pt"))
    return torch.load(ckpts[-1], weights_only=False)["model"]


def test_kill_9_then_resume_gives_identical_weights(tmp_path, tiny_config):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    done = run_ut("train", str(tiny_config), "--out", str(straight), "--no-progress")
    assert done.returncode == 0, done.stderr

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        ut_command("train", str(tiny_config), "--out", str(killed), "--no-progress"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    deadline = time.time() + 120
    while not (killed / "checkpoints" / "step-00000008.pt").exists():  # wait for a checkpoint mid-run
        assert time.time() < deadline and proc.poll() is None, "the run never wrote its step-8 checkpoint"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "metrics.json").exists()  # it really was cut off

    resumed = run_ut("train", str(tiny_config), "--out", str(killed), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming at step" in resumed.stdout
    a, b = _final_weights(straight), _final_weights(killed)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    # the evaluation log has one line per evaluation even across the kill (a few may repeat)
    steps = [int(line.split('"step": ')[1].split(",")[0]) for line in (killed / "metrics.jsonl").read_text().splitlines()]
    assert steps[-1] == 24 and set(steps) == set(range(4, 25, 4))


def test_changed_config_is_refused_and_more_steps_resume(tmp_path, tiny_config):
    run = tmp_path / "run"
    assert run_ut("train", str(tiny_config), "--out", str(run), "--no-progress", "--set", "train.steps=8").returncode == 0
    changed = run_ut("train", str(tiny_config), "--out", str(run), "--set", "model.d_model=32")
    assert changed.returncode == 2
    assert "holds a run with a different config (model.d_model: 16 there, 32 now)" in changed.stderr
    more = run_ut("train", str(tiny_config), "--out", str(run), "--no-progress", "--set", "train.steps=12")
    assert more.returncode == 0 and "resuming at step 8" in more.stdout, more.stderr


def test_an_evaluation_line_torn_by_a_kill_is_dropped_on_resume(tmp_path, tiny_config):
    """A kill (or a full disk) in the middle of appending to metrics.jsonl leaves a line without its
    newline; the next evaluation's line must not be glued to it (every record would then fail)."""
    import json

    run = tmp_path / "run"
    assert run_ut("train", str(tiny_config), "--out", str(run), "--no-progress", "--set", "train.steps=8").returncode == 0
    log = run / "metrics.jsonl"
    log.write_text(log.read_text() + '{"step": 12, "split": "valida')
    more = run_ut("train", str(tiny_config), "--out", str(run), "--no-progress", "--set", "train.steps=12")
    assert more.returncode == 0 and "resuming at step 8" in more.stdout, more.stderr
    assert [json.loads(line)["step"] for line in log.read_text().splitlines()] == [4, 8, 12]
    assert [entry["step"] for entry in json.loads((run / "record.json").read_text())["history"]] == [4, 8, 12]


def test_time_limited_chunks_resume_exactly(tmp_path):
    """``--time-limit`` stops cleanly with a checkpoint; chained runs end where one run ends."""
    import yaml

    from universal_transformer.training.config import ExperimentConfig
    from universal_transformer.training.trainer import Trainer

    from .conftest import TINY

    def experiment(limit):
        data = yaml.safe_load(yaml.safe_dump(TINY))
        data["train"]["time_limit"] = limit
        return ExperimentConfig.from_dict(data)

    straight = Trainer(experiment(None), tmp_path / "straight", progress=False, verbose=False)
    assert straight.fit()["status"] == "done"
    chunks, statuses = tmp_path / "chunks", []
    for _ in range(60):
        trainer = Trainer(experiment(0.05), chunks, progress=False, verbose=False)
        statuses.append(trainer.fit()["status"])
        if statuses[-1] != "time_limit":
            break
    assert statuses[-1] == "done" and statuses.count("time_limit") >= 2, statuses
    a, b = _final_weights(tmp_path / "straight"), _final_weights(chunks)
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_test_only_task_options_may_change_on_resume(tmp_path):
    """A task's test-only options (the LTE beam) may change between chunks; its others may not."""
    from universal_transformer.config import ConfigError
    from universal_transformer.training.config import ExperimentConfig
    from universal_transformer.training.trainer import check_run_config

    def experiment(**task):
        return ExperimentConfig.from_dict({"model": {"d_model": 16, "num_heads": 2, "d_ff": 32, "num_steps": 2},
                                           "task": {"name": "lte", "task": "copy", **task}})

    experiment().save(tmp_path / "config.yaml")
    check_run_config(tmp_path, experiment(beam_size=4, length_penalty=1.0))
    with pytest.raises(ConfigError, match="task.max_length: 55 there, 20 now"):
        check_run_config(tmp_path, experiment(max_length=20))
