"""Every model published under ``results/models/NAME`` (``ut publish``) re-scores, from this
clone, to the test metrics of its record ``results/NAME.json``: the published numbers can be
checked by anyone, and a model that no longer loads or scores differently is caught."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from universal_transformer.evaluation.records import RunRecord

from ..training.conftest import run_ut

RESULTS = Path(__file__).resolve().parents[2] / "results"
PUBLISHED = sorted(p.parent.relative_to(RESULTS / "models").as_posix()
                   for p in (RESULTS / "models").glob("**/config.yaml"))
# Greedy decoding only (the records' beam metrics take longer); float sums differ in the last
# bits between thread counts, which can flip a near-tie here and there.
TOLERANCE = 0.003
# What to re-score, per task: the algorithmic tasks at their training length, 40, which shows that
# a model loads and decodes as recorded, and at 100 under `pytest -m slow` (twice the time of 40;
# 400 and 800 digits, or the mixed lengths up to 400, take minutes); Learning to Execute greedily.
CHECKED_LENGTHS = (40,)
SLOW_LENGTHS = (100,)
KEYS = ("char_accuracy", "sequence_accuracy", "mean_error", "accuracy")
# Tasks whose full test set takes minutes to score on one core (bAbI 10k joint: 20,000 stories),
# and which read data files (../shared/data) that a clone elsewhere may not see: `pytest -m slow`.
SLOW_TASKS = {"babi"}


TASK_OF = {name: json.loads((RESULTS / f"{name}.json").read_text())["task"] for name in PUBLISHED}


def _case(name: str):
    return pytest.param(name, marks=pytest.mark.slow) if TASK_OF[name] in SLOW_TASKS else name


def test_published_models_are_found():
    assert (RESULTS / "models").is_dir() and PUBLISHED


@pytest.mark.parametrize("name", [_case(name) for name in PUBLISHED])
def test_published_model_rescores_to_its_record(name, tmp_path):
    _rescore(name, tmp_path, CHECKED_LENGTHS)


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in PUBLISHED if TASK_OF[name] == "algorithmic"])
def test_published_algorithmic_model_rescores_to_its_record_at_longer_lengths(name, tmp_path):
    _rescore(name, tmp_path, SLOW_LENGTHS)


def _rescore(name: str, tmp_path: Path, lengths: tuple[int, ...]) -> None:
    """``ut eval`` of the published model (the algorithmic tasks at ``lengths``) gives the test
    metrics of its record, within :data:`TOLERANCE`."""
    record = RunRecord.load(RESULTS / f"{name}.json")
    # The published config's, not the record's: a run trained on a GPU machine read a carried
    # copy of its data files (docs/compute.md), and its published config names the original.
    data_dir = yaml.safe_load((RESULTS / "models" / name / "config.yaml").read_text())["task"].get("data_dir")
    if data_dir is not None and not Path(data_dir).is_dir():
        pytest.skip(f"{name} reads {data_dir}, which is not here")
    run = tmp_path / "run"
    shutil.copytree(RESULTS / "models" / name, run)  # eval writes its scores beside the model
    overrides = {"lte": ["task.beam_size=1"],
                 "algorithmic": [f"task.test_lengths={list(lengths)}", "task.test_lengths_up_to=[]"]}.get(record.task, [])
    overrides = [arg for value in overrides for arg in ("--set", value)]
    result = run_ut("eval", str(run), "--split", "test", "--threads", "1", *overrides)
    assert result.returncode == 0, result.stderr
    # eval-test.json, or eval-test-OPTION=VALUE.json where an option above changes the test set
    written = re.search(r"^wrote (\S*eval-test\S*\.json)$", result.stdout, re.MULTILINE)
    assert written, result.stdout
    measured = json.loads(Path(written.group(1)).read_text())
    measured = measured.get("metrics", measured)
    expected = record.metrics["test"]
    prefixes = [""] + [f"{forced}len{n}/" for forced in ("", "teacher_forced/") for n in lengths]
    keys = [prefix + k for prefix in prefixes for k in KEYS if prefix + k in expected]
    assert keys, f"{name}: the record has no test metric this test knows"
    for key in keys:
        assert measured[key] == pytest.approx(expected[key], abs=TOLERANCE * (100 if key == "mean_error" else 1)), key
