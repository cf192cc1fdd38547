"""Run records round-trip exactly, and a malformed record is an error naming its file and key."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from universal_transformer.evaluation.records import RecordError, RunRecord, git_commit, load_records, machine_info

from .conftest import make_record


def test_round_trip_is_exact_and_deterministic(tmp_path):
    record = make_record(test={"len40/char_accuracy": 0.93, "per_length": [0.5, 0.25], "note": "x"}, notes=["n"])
    path = record.save(tmp_path / "sub" / "run.json")
    text = path.read_text()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    data = json.loads(text)
    assert list(data) == sorted(data)  # sorted keys
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    loaded = RunRecord.load(path)
    assert loaded == record
    loaded.save(path)
    assert path.read_text() == text  # re-saving changes nothing
    assert [p.name for p in path.parent.iterdir()] == ["run.json"]  # no temporary file left behind


def test_parameters_are_optional_and_older_records_resave_unchanged(tmp_path):
    counted = make_record(parameters=1_905_281)
    path = counted.save(tmp_path / "counted.json")
    assert json.loads(path.read_text())["parameters"] == 1_905_281
    assert RunRecord.load(path) == counted

    older = make_record().to_dict()  # a record written before records had a parameter count
    assert "parameters" not in older
    path = tmp_path / "older.json"
    path.write_text(json.dumps(older, indent=2, sort_keys=True) + "\n")
    text = path.read_text()
    record = RunRecord.load(path)
    assert record.parameters is None
    record.save(path)
    assert path.read_text() == text  # no "parameters": null added


def _write(tmp_path, data, name="bad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(colour="red"), "unknown key(s) 'colour'"),
        (lambda d: d.pop("steps"), "missing key(s) 'steps'"),
        (lambda d: d.update(steps="1000"), "key 'steps' must be an integer >= 0, got str '1000'"),
        (lambda d: d.update(steps=True), "key 'steps' must be an integer"),
        (lambda d: d.update(seeds=[0, "1"]), "key 'seeds' must be a list of integers"),
        (lambda d: d.update(status="finished"), "key 'status' must be one of done, early_stopped, time_limit, rescored"),
        (lambda d: d.update(schema=2), "key 'schema' is 2"),
        (lambda d: d["config"].pop("train"), "key 'config' lacks section(s) train"),
        (lambda d: d["metrics"].pop("test"), "key 'metrics' must have the keys validation and test (and maybe train), got validation"),
        (lambda d: d["metrics"].update(dev={}), "key 'metrics' must have the keys validation and test (and maybe train), got dev, test"),
        (lambda d: d["metrics"].update(train={"error": "x", "loss": [1, {}]}), "key 'metrics.train.loss' must be a finite number"),
        (lambda d: d["metrics"]["test"].update(acc={"a": 1}), "key 'metrics.test.acc' must be a finite number"),
        (lambda d: d.update(created="yesterday"), "key 'created' must be an ISO 8601 time"),
        (lambda d: d.update(wall_time_seconds=-1.0), "key 'wall_time_seconds' must be a number >= 0"),
        (lambda d: d.update(parameters=1.5e6), "key 'parameters' must be an integer >= 0 or null, got float"),
    ],
)
def test_malformed_record_names_file_and_key(tmp_path, change, message):
    data = make_record().to_dict()
    change(data)
    path = _write(tmp_path, data)
    with pytest.raises(RecordError) as err:
        RunRecord.load(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)


def test_train_metrics_are_optional_and_round_trip(tmp_path):
    record = make_record()
    record.metrics["train"] = {"mean_error": 5.1}
    path = record.save(tmp_path / "run.json")
    assert RunRecord.load(path).metrics["train"] == {"mean_error": 5.1}


def test_bad_json_and_missing_file_name_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"experiment": "x",\n  oops}')
    with pytest.raises(RecordError, match=r"broken\.json: not valid JSON: .*line 2"):
        RunRecord.load(path)
    with pytest.raises(RecordError, match=r"absent\.json: record file not found"):
        RunRecord.load(tmp_path / "absent.json")
    with pytest.raises(RecordError, match=r"list\.json: expected a JSON object"):
        RunRecord.load(_write(tmp_path, [1, 2], "list.json"))


def test_invalid_record_cannot_be_built_or_saved(tmp_path):
    with pytest.raises(RecordError, match="RunRecord: key 'best_step'"):
        make_record(best_step=1.5)
    record = make_record()
    record.metrics["test"]["loss"] = float("nan")  # changed after construction
    with pytest.raises(RecordError, match=r"run\.json: key 'metrics\.test\.loss'"):
        record.save(tmp_path / "run.json")
    assert not (tmp_path / "run.json").exists()


def test_machine_info_describes_this_machine():
    info = machine_info()
    assert set(info) == {"cpu", "logical_cores", "memory_gib", "torch_threads", "torch", "python", "platform", "gpus", "cuda"}
    assert isinstance(info["cpu"], str) and info["cpu"]
    assert info["logical_cores"] >= 1 and info["torch_threads"] >= 1
    assert isinstance(info["gpus"], list) and (info["cuda"] is None) == (not info["gpus"])
    json.dumps(info)  # storable as is


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_commit_clean_dirty_and_outside_git(tmp_path):
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_commit(outside) is None
    assert git_commit(tmp_path / "missing") is None

    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                              check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (repo / "a.txt").write_text("1")
    git("add", "a.txt")
    git("commit", "-q", "-m", "one")
    head = git("rev-parse", "HEAD")
    assert git_commit(repo) == head
    (repo / "untracked.txt").write_text("x")
    assert git_commit(repo) == head  # untracked files do not make it dirty
    (repo / "a.txt").write_text("2")
    assert git_commit(repo) == head + "-dirty"


def test_load_records_sorted_and_errors_name_the_file(tmp_path):
    make_record("babi/en/ut/task2").save(tmp_path / "z.json")
    make_record("algorithmic/reverse-ut", seeds=[1]).save(tmp_path / "deep" / "er" / "a.json")
    make_record("algorithmic/reverse-ut", seeds=[0]).save(tmp_path / "b.json")
    (tmp_path / "README.md").write_text("not a record")
    published = tmp_path / "models" / "lte" / "copy-ut" / "best"  # `ut publish`: models, not records
    published.mkdir(parents=True)
    (published / "config.json").write_text('{"d_model": 64}')
    analysis = tmp_path / "examples" / "step-offsets"  # an analysis script's output: not a record
    analysis.mkdir(parents=True)
    (analysis / "teacher-forced.json").write_text('{"accuracy": {}}')
    records = load_records(tmp_path)
    assert [(r.experiment, r.seeds) for r in records] == [
        ("algorithmic/reverse-ut", [0]), ("algorithmic/reverse-ut", [1]), ("babi/en/ut/task2", [0])]

    make_record("algorithmic/reverse-ut", seeds=[0]).save(tmp_path / "c.json")
    with pytest.raises(RecordError, match=r"c\.json: records experiment 'algorithmic/reverse-ut' with seeds \[0\] again"):
        load_records(tmp_path)
    (tmp_path / "c.json").unlink()
    (tmp_path / "deep" / "bad.json").write_text("{")
    with pytest.raises(RecordError, match=r"deep/bad\.json: not valid JSON"):
        load_records(tmp_path)
    with pytest.raises(RecordError, match="nowhere: results folder not found"):
        load_records(tmp_path / "nowhere")


def test_history_from_log_keeps_summary_metrics_last_line_per_step_and_names_bad_lines(tmp_path):
    from universal_transformer.evaluation.records import history_from_log

    log = tmp_path / "metrics.jsonl"
    lines = [
        {"step": 2, "split": "validation", "lr": 0.1, "train_loss": 1.0, "score": -9.0, "task1/error": 9.0},
        {"step": 4, "split": "validation", "train_loss": 0.5, "score": -5.0, "ponder_question": 3.1234567891},
        {"step": 6, "split": "validation", "train_loss": 0.4, "score": -4.0},  # a killed chunk's evaluation
        {"step": 4, "split": "validation", "train_loss": 0.6, "score": -6.0, "note": "x", "flag": True},  # redone
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert history_from_log(log, up_to=5) == [
        {"step": 2, "train_loss": 1.0, "score": -9.0},  # per-task metrics, lr and split left out
        {"step": 4, "train_loss": 0.6, "score": -6.0},  # the last line of step 4; strings and flags left out
    ]
    assert [e["step"] for e in history_from_log(log)] == [2, 4, 6]
    assert history_from_log(tmp_path / "none.jsonl") is None
    record = make_record(history=history_from_log(log))
    path = record.save(tmp_path / "run.json")
    assert RunRecord.load(path) == record and json.loads(path.read_text())["history"][0]["step"] == 2
    assert "history" not in make_record().to_dict()  # optional: older records re-save unchanged

    log.write_text(json.dumps(lines[0]) + "\n{not json\n")
    with pytest.raises(RecordError, match=r"metrics.jsonl:2: not valid JSON"):
        history_from_log(log)
    log.write_text(json.dumps({"score": 1.0}) + "\n")
    with pytest.raises(RecordError, match=r"metrics.jsonl:1: an evaluation line needs an integer 'step'"):
        history_from_log(log)
    # a run over several bAbI tasks keeps each task's error and question ponder time (the joint
    # model's per-task curves); a run over one task keeps neither (its summary metrics are them)
    log.write_text(json.dumps({"step": 2, "score": -4.0, "task1/error": 1.0, "task19/error": 7.0,
                               "task19/ponder_question": 9.5, "task19/ponder_time": 2.0,
                               "task19/error_if_recent_right": 3.0}) + "\n")
    assert history_from_log(log) == [{"step": 2, "score": -4.0, "task1/error": 1.0, "task19/error": 7.0,
                                      "task19/ponder_question": 9.5}]
    log.write_text(json.dumps({"step": 2, "score": -4.0, "task19/error": 7.0, "task19/ponder_question": 9.5}) + "\n")
    assert history_from_log(log) == [{"step": 2, "score": -4.0}]
    with pytest.raises(RecordError, match=r"key 'history\[0\]' must map names to finite numbers"):
        make_record(history=[{"step": 1, "score": float("nan")}])
    with pytest.raises(RecordError, match=r"key 'history' must be a list of objects or null"):
        make_record(history={"step": 1})


def test_a_committed_record_is_kept_over_a_partial_run_that_has_not_passed_it():
    old = make_record(steps=12_000, status="time_limit")
    assert old.kept_over(make_record(steps=3_000, status="time_limit")).startswith("it records 12000 steps (time_limit)")
    assert old.kept_over(make_record(steps=12_500, status="time_limit")) is None  # past it
    assert old.kept_over(make_record(steps=3_000, status="early_stopped")) is None  # finished
    done = make_record(steps=8_000, status="early_stopped")
    assert done.kept_over(make_record(steps=500, status="time_limit")) is not None  # a rerun of a finished run
    assert done.kept_over(make_record(steps=9_000, status="time_limit")) is None  # a finished run trained on
