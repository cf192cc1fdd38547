"""``ut train --record`` and ``ut eval --record`` write run records that ``ut report`` can read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from universal_transformer.cli.run import changed_eval_options, load_run
from universal_transformer.evaluation.records import RunRecord
from universal_transformer.models.base import PretrainedModel
from universal_transformer.training.checkpoint import CheckpointManager

from ..data.test_babi import TINY_BABI, needs_data
from ..evaluation.conftest import make_record
from ..training.conftest import run_ut, tiny_config  # noqa: F401 (a fixture)

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_train_writes_records_partial_then_done_and_eval_rescores(tmp_path, tiny_config):
    run, results = tmp_path / "run", tmp_path / "results"
    name = "algorithmic/tiny-ut"
    common = ["--out", str(run), "--no-progress", "--record", name, "--results", str(results)]
    partial = run_ut("train", str(tiny_config), *common, "--time-limit", "0.01")
    assert partial.returncode == 0, partial.stderr
    record = RunRecord.load(results / f"{name}.json")
    assert record.status == "time_limit" and record.partial and 0 < record.steps < 24
    assert record.metrics["test"] == {}
    assert record.command.startswith("ut train ") and "--time-limit 0.01" in record.command
    assert record.config["task"]["name"] == "algorithmic" and record.seeds == [0]
    assert record.machine["logical_cores"] >= 1 and record.commit  # the repository's commit

    done = run_ut("train", str(tiny_config), *common)
    assert done.returncode == 0, done.stderr
    record = RunRecord.load(results / f"{name}.json")
    summary = json.loads((run / "metrics.json").read_text())
    assert record.status == "done" and record.steps == 24 and record.best_step == summary["best_step"]
    assert record.metrics["test"]["len12/char_accuracy"] == summary["test"]["len12/char_accuracy"]
    assert RunRecord.load(run / "record.json").to_dict() == record.to_dict()
    assert record.parameters == PretrainedModel.from_pretrained(run / "best").num_parameters()
    logged = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [e["step"] for e in record.history] == sorted({line["step"] for line in logged})  # the validation curve
    assert record.history[-1]["score"] == logged[-1]["score"]

    rescored = run_ut("eval", str(run), "--split", "test", "--set", "task.test_lengths=[5]",
                      "--record", "algorithmic/tiny-ut-len5", "--results", str(results))
    assert rescored.returncode == 0, rescored.stderr
    again = RunRecord.load(results / "algorithmic/tiny-ut-len5.json")
    assert again.status == "rescored" and again.steps == 24 and "len5/char_accuracy" in again.metrics["test"]
    assert again.metrics["validation"] == record.metrics["validation"]
    assert again.parameters == record.parameters and again.history == record.history
    # Re-scoring the other split into the same record keeps the first re-score (the run's own
    # record.json still has the run's test metrics): one record, both splits re-scored.
    rescored = run_ut("eval", str(run), "--split", "validation", "--record", "algorithmic/tiny-ut-len5",
                      "--results", str(results))
    assert rescored.returncode == 0, rescored.stderr
    both = RunRecord.load(results / "algorithmic/tiny-ut-len5.json")
    assert both.metrics["test"] == again.metrics["test"] and "len5/char_accuracy" in both.metrics["test"]
    assert both.metrics["validation"] and both.status == "rescored"
    assert sorted(n.split(":")[0] for n in both.notes if " re-scored by" in n) == ["test re-scored by", "validation re-scored by"]

    # Scoring a partial run's best model on test (what the lanes do at their deadline) keeps it
    # partial: the run's record as a time limit would have left it, best model and all.
    stopped = RunRecord.load(run / "record.json").to_dict() | {"status": "time_limit", "steps": 24, "best_step": 16}
    stopped["metrics"]["test"] = {}
    RunRecord.from_dict(stopped).save(run / "record.json")
    scored = run_ut("eval", str(run), "--split", "test", "--record", name, "--results", str(results))
    assert scored.returncode == 0, scored.stderr
    record = RunRecord.load(results / f"{name}.json")
    assert record.partial and record.steps == 24 and "len12/char_accuracy" in record.metrics["test"]
    assert "partial: the best model at step 16 of a run stopped at step 24" in record.notes

    # A run killed mid-chunk has checkpoints newer than its last record: the re-scored record
    # takes steps, wall time, best step and validation from the latest checkpoint, and says so.
    behind = RunRecord.load(run / "record.json").to_dict() | {"steps": 8, "best_step": 4, "wall_time_seconds": 1e-3}
    behind["metrics"]["validation"] = {"score": -1.0}
    behind.pop("history")  # as a record written before histories: the re-scored one reads the log
    RunRecord.from_dict(behind).save(run / "record.json")
    scored = run_ut("eval", str(run), "--split", "test", "--record", name, "--results", str(results))
    assert scored.returncode == 0, scored.stderr
    record = RunRecord.load(results / f"{name}.json")
    assert record.partial and record.steps == 24 and record.best_step == summary["best_step"]
    assert record.metrics["validation"] == summary["validation"]
    # the wall time is the checkpoint's (compared, not "> 0.5": a fast machine trains this run in 0.5 s)
    checkpoints = CheckpointManager(run / "checkpoints")
    assert record.wall_time_seconds == round(float(checkpoints.load(checkpoints.latest())["elapsed"]), 1)
    assert any("went on after its last record (step 8)" in note for note in record.notes)
    assert record.history == RunRecord.load(results / "algorithmic/tiny-ut-len5.json").history
    assert f"partial: the best model at step {summary['best_step']} of a run stopped at step 24" in record.notes


def test_eval_scores_a_run_on_the_data_of_its_data_seed(tmp_path, tiny_config):
    # the algorithmic task draws its test examples from its seed: `ut eval` must draw them from
    # train.data_seed as training did, or it would score the model on other examples
    run = tmp_path / "run"
    trained = run_ut("train", str(tiny_config), "--out", str(run), "--no-progress", "--set", "train.steps=4",
                     "--set", "train.data_seed=7")
    assert trained.returncode == 0, trained.stderr
    rescored = run_ut("eval", str(run), "--split", "test")
    assert rescored.returncode == 0, rescored.stderr
    own = json.loads((run / "metrics.json").read_text())["test"]
    again = json.loads((run / "eval-test.json").read_text())
    assert again["teacher_forced/len12/loss"] == own["teacher_forced/len12/loss"]


def test_a_fresh_run_keeps_a_committed_record_that_went_further_until_it_passes_it(tmp_path, tiny_config):
    # the record of a run that reached step 20, its run folder gone (another machine)
    run, results = tmp_path / "run", tmp_path / "results"
    name = "algorithmic/tiny-ut"
    common = ["--out", str(run), "--no-progress", "--record", name, "--results", str(results)]
    assert run_ut("train", str(tiny_config), *common, "--set", "train.steps=20").returncode == 0
    committed = RunRecord.load(results / f"{name}.json").to_dict() | {"status": "time_limit"}
    RunRecord.from_dict(committed).save(results / f"{name}.json")
    before = (results / f"{name}.json").read_text()
    shutil.rmtree(run)
    fresh = run_ut("train", str(tiny_config), *common, "--set", "train.steps=8", "--set", "train.eval_every=4",
                   "--time-limit", "0.01")
    assert fresh.returncode == 0, fresh.stderr
    assert f"kept {results / name}.json: it records 20 steps (time_limit)" in fresh.stdout
    assert (results / f"{name}.json").read_text() == before and RunRecord.load(run / "record.json").steps < 20
    done = run_ut("train", str(tiny_config), *common, "--set", "train.steps=8", "--set", "train.eval_every=4")
    assert done.returncode == 0, done.stderr  # finished: a finished run replaces a partial record
    assert RunRecord.load(results / f"{name}.json").to_dict() == RunRecord.load(run / "record.json").to_dict()

    # Scoring a partial run at the lanes' deadline does not replace the record either.
    (results / f"{name}.json").write_text(before)
    stopped = RunRecord.load(run / "record.json").to_dict() | {"status": "time_limit"}
    RunRecord.from_dict(stopped).save(run / "record.json")
    scored = run_ut("eval", str(run), "--split", "test", "--record", name, "--results", str(results))
    assert scored.returncode != 0 and f"{results / name}.json kept: it records 20 steps" in scored.stderr
    assert (run / "eval-test.json").is_file() and (results / f"{name}.json").read_text() == before

    # A file there that is not a record is not overwritten either: the run says so and goes on.
    (results / f"{name}.json").write_text("{not a record")
    other = run_ut("train", str(tiny_config), "--out", str(tmp_path / "other"), "--no-progress", "--record", name,
                   "--results", str(results), "--set", "train.steps=4")
    assert other.returncode == 0, other.stderr
    assert f"kept {results / name}.json: " in other.stdout and "not valid JSON" in other.stdout
    assert (results / f"{name}.json").read_text() == "{not a record"


def test_a_run_killed_before_its_first_record_is_scored_as_partial(tmp_path, tiny_config):
    run, results = tmp_path / "run", tmp_path / "results"
    assert run_ut("train", str(tiny_config), "--out", str(run), "--no-progress").returncode == 0
    (run / "record.json").unlink()  # as if killed mid-chunk: checkpoints and log, no record, no summary
    (run / "metrics.json").unlink()
    scored = run_ut("eval", str(run), "--split", "test", "--record", "algorithmic/killed", "--results", str(results))
    assert scored.returncode == 0, scored.stderr
    record = RunRecord.load(results / "algorithmic" / "killed.json")
    assert record.partial and record.steps == 24 and "len12/char_accuracy" in record.metrics["test"]
    assert "the run stopped before its first record (killed mid-chunk): partial" in record.notes[0]


def test_publish_copies_the_best_model_and_config_and_eval_reads_it(tmp_path, tiny_config):
    run, results = tmp_path / "run", tmp_path / "results"
    assert run_ut("train", str(tiny_config), "--out", str(run), "--no-progress", "--set", "train.steps=4",
                  "--set", "train.eval_every=2").returncode == 0
    published = run_ut("publish", str(run), "--name", "algorithmic/tiny", "--results", str(results))
    assert published.returncode == 0, published.stderr
    target = results / "models" / "algorithmic" / "tiny"
    assert (target / "config.yaml").is_file() and (target / "best" / "model.safetensors").is_file()
    assert not (target / "checkpoints").exists()
    rescored = run_ut("eval", str(target), "--split", "test", "--set", "task.test_lengths=[5]")
    assert rescored.returncode == 0 and "len5/char_accuracy" in rescored.stdout, rescored.stderr
    # local attention at test time: its own file, the window named in the metrics and the file name
    windowed = run_ut("eval", str(target), "--split", "test", "--set", "task.test_lengths=[5]", "--attention-window", "1")
    assert windowed.returncode == 0, windowed.stderr
    metrics = json.loads((target / "eval-test-window1-test_lengths=5.json").read_text())  # and its own test set
    assert metrics["inference_attention_window"] == 1 and "len5/char_accuracy" in metrics
    generated = run_ut("generate", str(target), "--input", "0123", "--attention-window", "0", "--attention-window-scope", "source")
    assert generated.returncode == 0 and generated.stdout.strip(), generated.stderr
    refused = run_ut("eval", str(target), "--attention-window", "-1")
    assert refused.returncode == 2 and "--attention-window: attention_window must be a number of positions >= 0" in refused.stderr
    refused = run_ut("eval", str(target), "--attention-window-scope", "source")  # a scope with no window to scope
    assert refused.returncode == 2 and "--attention-window-scope says which attention" in refused.stderr
    plotted = run_ut("plot", str(target), "--set", "task.test_lengths=[5]", "--out", str(tmp_path / "w"),
                     "--attention-window", "1", "--attention-window-scope", "source")
    assert plotted.returncode == 0 and (tmp_path / "w-len5-attention.png").is_file(), plotted.stderr
    refused = run_ut("plot", str(target), "--attention-window", "-1")
    assert refused.returncode == 2 and "--attention-window: attention_window must be" in refused.stderr
    missing = run_ut("publish", str(tmp_path / "nope"), "--name", "x", "--results", str(results))
    assert missing.returncode == 2 and "not found" in missing.stderr
    # re-scored with --record, a published model keeps the training facts of the record it came from
    record = make_record("algorithmic/tiny", steps=4, best_step=4, wall_time_seconds=3.5, history=[{"step": 2, "score": 0.1}])
    record.save(results / "algorithmic" / "tiny.json")
    again = run_ut("eval", str(target), "--split", "test", "--set", "task.test_lengths=[5]", "--record", "algorithmic/tiny",
                   "--results", str(results))
    assert again.returncode == 0, again.stderr
    rescored = RunRecord.load(results / "algorithmic" / "tiny.json")
    assert (rescored.steps, rescored.wall_time_seconds, rescored.history, rescored.status) == (4, 3.5, record.history, "rescored")
    assert "len5/char_accuracy" in rescored.metrics["test"] and rescored.metrics["validation"] == record.metrics["validation"]
    # the same command again: the same model re-scored, its note not repeated
    assert run_ut("eval", str(target), "--split", "test", "--set", "task.test_lengths=[5]", "--record", "algorithmic/tiny",
                  "--results", str(results)).returncode == 0
    notes = RunRecord.load(results / "algorithmic" / "tiny.json").notes
    assert sum(n.startswith("test re-scored by: ") for n in notes) == 1, notes
    # a run trained on a copy of its data is published naming where the data is kept
    moved = run_ut("publish", str(run), "--name", "algorithmic/moved", "--results", str(results),
                   "--set", "task.test_lengths=[5]")
    assert moved.returncode == 0, moved.stderr
    saved = yaml.safe_load((results / "models" / "algorithmic" / "moved" / "config.yaml").read_text())
    assert saved["task"]["test_lengths"] == [5] and saved["model"] == yaml.safe_load((run / "config.yaml").read_text())["model"]
    refused = run_ut("publish", str(run), "--name", "algorithmic/other", "--results", str(results), "--set", "model.d_model=8")
    assert refused.returncode == 2 and "only task options" in refused.stderr
    assert not (results / "models" / "algorithmic" / "other").exists()


@needs_data
def test_babi_train_split_adds_training_error_to_the_record_and_keeps_its_scores(tmp_path):
    config, run, results = tmp_path / "babi.yaml", tmp_path / "run", tmp_path / "results"
    config.write_text(yaml.safe_dump(TINY_BABI))
    name = "babi/en/tiny/task2"
    trained = run_ut("train", str(config), "--out", str(run), "--no-progress", "--record", name, "--results", str(results))
    assert trained.returncode == 0, trained.stderr
    before = RunRecord.load(results / f"{name}.json")

    fit = run_ut("eval", str(run), "--split", "train", "--record", name, "--results", str(results))
    assert fit.returncode == 0, fit.stderr
    record = RunRecord.load(results / f"{name}.json")
    assert json.loads((run / "eval-train.json").read_text()) == record.metrics["train"]
    assert 0.0 <= record.metrics["train"]["task2/error"] <= 100.0
    # a diagnostic beside the scores: the record is otherwise the one it replaced
    assert record.to_dict() | {"metrics": {}, "notes": []} == before.to_dict() | {"metrics": {}, "notes": []}
    assert record.metrics == before.metrics | {"train": record.metrics["train"]}

    # re-scoring test measures the same model: the training-set metrics stay
    rescored = run_ut("eval", str(run), "--split", "test", "--record", name, "--results", str(results))
    assert rescored.returncode == 0, rescored.stderr
    again = RunRecord.load(results / f"{name}.json")
    assert again.metrics["train"] == record.metrics["train"] and any(n.startswith("train scored by: ut eval") for n in again.notes)

    # refused: no record to add to; a record of another model than the run's best
    alone = run_ut("eval", str(run), "--split", "train", "--record", "babi/other", "--results", str(results))
    assert alone.returncode == 2 and "no record to add the training-set metrics to; score the run first" in alone.stderr
    RunRecord.from_dict(before.to_dict() | {"steps": 2, "best_step": 2}).save(results / f"{name}.json")
    stale = run_ut("eval", str(run), "--split", "train", "--record", name, "--results", str(results))
    assert stale.returncode == 2 and "measured the best model at step 2 of 2; the run's is at step" in stale.stderr

    wrong = run_ut("eval", str(run), "--split", "dev")
    assert wrong.returncode == 2 and "unknown split 'dev'; bAbI evaluates validation, test and train" in wrong.stderr


def test_eval_names_its_file_by_the_options_that_change_what_is_scored(tmp_path, tiny_config):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(tiny_config, run / "config.yaml")

    def changed(*overrides: str) -> list:
        return changed_eval_options(load_run(run, []), load_run(run, list(overrides)))

    own = yaml.safe_load(tiny_config.read_text())["task"]
    # how much is scored at once, or a value as trained: the run's own score
    assert changed("task.eval_batch_size=3", f"task.test_lengths={own['test_lengths']}") == []
    assert changed("task.test_lengths=[400,800]", "train.eval_position_offsets=true") == [
        ("test_lengths", [400, 800]), ("eval_position_offsets", True)]
    # where the data lies (a copy carried to another machine) is not what is scored; the data is
    shutil.copy(CONFIGS / "babi" / "ut-t2t.yaml", run / "config.yaml")
    assert changed(f"task.data_dir={tmp_path}") == []
    assert changed("task.set=en", "task.tasks=[1,2]") == [("set", "en"), ("tasks", [1, 2])]
