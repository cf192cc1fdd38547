"""Trainer behaviour: divergence stops cleanly, time limits resume, bad configs give one clear line."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from universal_transformer.config import ConfigError, dump_yaml, load_yaml
from universal_transformer.training.config import ExperimentConfig, load_experiment
from universal_transformer.training.schedules import lr_multiplier
from universal_transformer.training.trainer import Trainer, TrainingDiverged, selection_key

from .conftest import TINY, run_ut, ut_command


def _experiment(**train) -> ExperimentConfig:
    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["train"].update(train)
    return ExperimentConfig.from_dict(data)


def test_nan_loss_stops_with_a_clear_message_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    trainer = Trainer(_experiment(steps=12), tmp_path, progress=False)
    real_step = trainer.train_step

    def poisoned() -> dict:
        if trainer.step == 9:  # make the loss NaN at step 9 by poisoning a weight
            with torch.no_grad():
                next(trainer.model.parameters()).fill_(float("nan"))
        return real_step()

    monkeypatch.setattr(trainer, "train_step", poisoned)
    with pytest.raises(TrainingDiverged, match=r"step 9: the loss is nan.*Last good checkpoint: .*step-00000008.pt"):
        trainer.fit()
    good = torch.load(tmp_path / "checkpoints" / "step-00000008.pt", weights_only=False)
    assert all(torch.isfinite(t).all() for t in good["model"].values())


def test_time_limit_stops_and_the_same_command_resumes(tmp_path):
    first = Trainer(_experiment(steps=10, time_limit=0.0), tmp_path, progress=False).fit()
    assert first == {"status": "time_limit", "step": 1}
    second = Trainer(_experiment(steps=10), tmp_path, progress=False).fit()
    assert second["status"] == "done" and second["step"] == 10
    summary = json.loads((tmp_path / "metrics.json").read_text())
    assert set(summary["test"]) >= {"len6/sequence_accuracy", "len12/char_accuracy", "score"}


def test_the_checkpoint_where_a_time_limit_stopped_goes_at_the_next_evaluation(tmp_path):
    """It is only there to resume from: kept, it took one of keep_last's places and made the
    checkpoints ut average takes uneven (eval_every is 4; steps 1 and 6 are off that grid)."""
    folder = tmp_path / "checkpoints"
    Trainer(_experiment(steps=14, time_limit=0.0, keep_last=3), tmp_path, progress=False, verbose=False).fit()
    assert [p.name for p in sorted(folder.iterdir())] == ["step-00000001.pt"]
    Trainer(_experiment(steps=6, keep_last=3), tmp_path, progress=False, verbose=False).fit()  # ends at step 6
    assert [p.name for p in sorted(folder.iterdir())] == ["step-00000004.pt", "step-00000006.pt"]
    Trainer(_experiment(steps=14, keep_last=3), tmp_path, progress=False, verbose=False).fit()
    assert [p.name for p in sorted(folder.iterdir())] == ["step-00000008.pt", "step-00000012.pt", "step-00000014.pt"]


def test_a_run_whose_last_step_passes_the_time_limit_finishes(tmp_path):
    summary = Trainer(_experiment(steps=1, time_limit=0.0), tmp_path, progress=False, verbose=False).fit()
    assert summary["status"] == "done" and summary["step"] == 1 and "test" in summary
    assert (tmp_path / "metrics.json").is_file()
    assert json.loads((tmp_path / "record.json").read_text())["status"] == "done"


@pytest.mark.parametrize("stop", [{"early_stopping": 1}, {"stop_at_score": 0.0}])
def test_a_run_killed_after_it_stopped_early_does_not_train_on_when_resumed(tmp_path, stop):
    first = Trainer(_experiment(steps=40, **stop), tmp_path, progress=False, verbose=False).fit()
    assert first["status"] == "early_stopped" and first["step"] < 40
    (tmp_path / "metrics.json").unlink()  # as if killed during the final test evaluation
    checkpoints = sorted((tmp_path / "checkpoints").iterdir())
    again = Trainer(_experiment(steps=40, **stop), tmp_path, progress=False, verbose=False).fit()
    assert again["status"] == "early_stopped" and again["step"] == first["step"]
    assert again["best_step"] == first["best_step"] and again["test"] == first["test"]
    assert sorted((tmp_path / "checkpoints").iterdir()) == checkpoints  # no step trained after the stop
    assert json.loads((tmp_path / "record.json").read_text())["steps"] == first["step"]


def test_schedules():
    inv = lr_multiplier("inverse_sqrt", warmup_steps=100, total_steps=1000)
    assert inv(0) == pytest.approx(0.01) and inv(99) == pytest.approx(1.0) and inv(399) == pytest.approx(0.5)
    cos = lr_multiplier("cosine", warmup_steps=0, total_steps=100)
    assert cos(0) == pytest.approx(1.0) and cos(50) == pytest.approx(0.5) and cos(100) == pytest.approx(0.0)
    assert lr_multiplier("constant", warmup_steps=10, total_steps=5)(50) == 1.0
    with pytest.raises(ValueError, match="unknown schedule 'linear'"):
        lr_multiplier("linear", warmup_steps=0, total_steps=1)


def test_a_saved_config_reads_back_with_strings_that_look_like_floats(tmp_path, tiny_config):
    """PyYAML (YAML 1.1) writes the string "1e5" plain, and YAML 1.2's floats read it back as 100000.0."""
    data = yaml.safe_load(tiny_config.read_text())
    data["train"]["init_from"] = "1e5"  # a string field: a folder of that name
    ExperimentConfig.from_dict(data).save(tmp_path / "saved.yaml")
    assert load_experiment(tmp_path / "saved.yaml", []).train.init_from == "1e5"
    assert load_yaml(dump_yaml({"a": "1e5", "b": "+1e3", "c": 1e-3, "d": ".5", "e": "en-10k"})) == {
        "a": "1e5", "b": "+1e3", "c": 0.001, "d": ".5", "e": "en-10k"}


def test_overrides_and_config_errors(tmp_path, tiny_config):
    exp = load_experiment(tiny_config, ["train.lr=0.5", "model.num_steps=3", "task.test_lengths=[7, 9]"])
    assert exp.train.lr == 0.5 and exp.model.num_steps == 3 and exp.task.test_lengths == [7, 9]
    assert load_experiment(tiny_config, ["train.lr=1e-3"]).train.lr == 0.001  # YAML 1.2's float, not a string
    with pytest.raises(ConfigError, match="unknown train key\\(s\\) learning_rate"):
        load_experiment(tiny_config, ["train.learning_rate=1"])
    with pytest.raises(ConfigError, match="key must be model.NAME, task.NAME or train.NAME"):
        load_experiment(tiny_config, ["lr=1"])
    with pytest.raises(ConfigError, match="expected key=value"):
        load_experiment(tiny_config, ["train.lr"])
    with pytest.raises(ConfigError, match=r"model: d_model \(15\) must be divisible by num_heads \(2\)"):
        load_experiment(tiny_config, ["model.d_model=15"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "missing.yaml", "--out", "x"], "missing.yaml: config file not found"),
        (["eval", "nowhere"], "nowhere/config.yaml: not found"),
        (["train", "{cfg}", "--out", "{tmp}/r", "--set", "train.optimizer=sgd"], "train.optimizer must be one of 'adam', 'adamw', got 'sgd'"),
        (["train", "{cfg}", "--out", "{tmp}/r", "--set", "task.task=sort"], "task.task must be one of copy, reverse, addition"),
        (["train", "{cfg}", "--out", "{tmp}/r", "--set", "task.colour=red"], "unknown option(s) colour"),
        (["train", "{cfg}", "--out", "{tmp}/r", "--set", "model_class=UTStoryQA"], "task 'algorithmic' trains UniversalTransformer, LSTMSeq2Seq, not UTStoryQA"),
        # values of the wrong type or out of range, named with their section
        (["train", "{cfg}", "--out", "{tmp}/r", "--set", "model.dropout=high"], "model: dropout must be a number, got 'high'"),
        (["train", "{cfg}", "--out", "{tmp}/r", "--set", "train.lr=abc"], "train.lr must be a number, got 'abc'"),
        (["train", "{cfg}", "--out", "{tmp}/r", "--set", "train.clip_norm=-1"], "train.clip_norm must be > 0 or null, got -1"),
        (["train", "{cfg}", "--out", "{tmp}/r", "--set", "train.early_stopping=0"], "train.early_stopping must be a positive integer or null"),
        (["train", "{cfg}", "--out", "{tmp}/r", "--set", "model.transition=sepconv", "--set", "model.conv_kernel_size=4"],
         "conv_kernel_size must be odd for a sepconv transition over a whole sequence"),
    ],
)
def test_cli_errors_are_one_line_without_traceback(tmp_path, tiny_config, args, message):
    args = [a.format(cfg=tiny_config, tmp=tmp_path) for a in args]
    result = run_ut(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_installed_command_runs_as_a_subprocess(tmp_path):
    """run_ut calls the entry point in this process; here the command runs as users run it:
    `python -m universal_transformer` and the `ut` script pip installed, its errors one line,
    and the same training as run_ut's, warnings (an old config key) and all."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    script = Path(sys.executable).with_name("ut")
    commands = [ut_command("eval", "nowhere")] + ([[str(script), "eval", "nowhere"]] if script.is_file() else [])
    for command in commands:
        refused = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode == 2 and len(lines) == 1 and lines[0].startswith("ut: error: nowhere/config.yaml: not found"), command
    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["model"]["act_packed"] = False  # moved to a run-time choice: loads with a FutureWarning
    config = tmp_path / "old.yaml"
    config.write_text(yaml.safe_dump(data))
    args = ["train", str(config), "--no-progress", "--set", "train.steps=2", "--set", "train.eval_every=2", "--out"]
    trained = subprocess.run(ut_command(*args, str(tmp_path / "sub")), capture_output=True, text=True, timeout=300, env=env)
    here = run_ut(*args, str(tmp_path / "here"))
    for result in (trained, here):
        assert result.returncode == 0, result.stderr
        assert "FutureWarning" in result.stderr and "act_packed" in result.stderr, result.stderr
    for run in ("sub", "here"):
        assert (tmp_path / run / "best" / "model.safetensors").is_file()
    sub, here = (json.loads((tmp_path / run / "metrics.json").read_text()) for run in ("sub", "here"))
    assert (sub["validation"], sub["test"]) == (here["validation"], here["test"])  # one thread both ways


def test_cli_train_eval_generate_end_to_end(tmp_path, tiny_config):
    run = tmp_path / "run"
    trained = run_ut("train", str(tiny_config), "--out", str(run), "--no-progress", "--set", "train.steps=8")
    assert trained.returncode == 0, trained.stderr
    for name in ("config.yaml", "metrics.jsonl", "metrics.json", "best/config.json", "best/model.safetensors"):
        assert (run / name).is_file(), name
    evaluated = run_ut("eval", str(run), "--split", "test", "--set", "task.test_lengths=[5]")
    assert evaluated.returncode == 0, evaluated.stderr
    assert "len5/sequence_accuracy" in evaluated.stdout
    # another test set than the run's (here lengths [5], trained with [6, 12]): a file of its own
    assert "len5/char_accuracy" in json.loads((run / "eval-test-test_lengths=5.json").read_text())
    assert not (run / "eval-test.json").exists()
    generated = run_ut("generate", str(run), "--input", "1234")
    assert generated.returncode == 0, generated.stderr
    assert set(generated.stdout.strip()) <= set("0123456789+")
    bad = run_ut("generate", str(run), "--input", "12a4")
    assert bad.returncode == 2 and "character 'a' at position 2" in bad.stderr
    # many inputs from a file, one output per line; beam search with an n-best list; more steps
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("1234\r\n56\n777\n")
    greedy = run_ut("generate", str(run), "--input-file", str(inputs))
    assert greedy.returncode == 0 and len(greedy.stdout.splitlines()) == 3, greedy.stderr
    single = [run_ut("generate", str(run), "--input", text, "--threads", "1").stdout.strip() for text in ("1234", "56", "777")]
    assert greedy.stdout.splitlines() == single  # batched with padding = one at a time (on one thread too)
    assert run_ut("generate", str(run), "--input", "1", "--threads", "0").returncode == 2
    beam1 = run_ut("generate", str(run), "--input-file", str(inputs), "--beam", "1")
    assert beam1.stdout == greedy.stdout, beam1.stderr
    nbest = run_ut("generate", str(run), "--input", "1234", "--beam", "3", "--nbest", "3")
    scores = [float(line.split("\t")[0]) for line in nbest.stdout.splitlines()]
    assert nbest.returncode == 0 and len(scores) == 3 and scores == sorted(scores, reverse=True), nbest.stderr
    own = run_ut("eval", str(run), "--split", "test", "--set", "task.test_lengths=[6,12]")  # as trained: its own score
    assert own.returncode == 0 and "len12/char_accuracy" in json.loads((run / "eval-test.json").read_text()), own.stderr
    deeper = run_ut("eval", str(run), "--split", "test", "--steps", "5")
    assert deeper.returncode == 0, deeper.stderr
    assert json.loads((run / "eval-test-steps5.json").read_text())["inference_steps"] == 5  # tables tell it from training depth
    assert "inference_steps" not in json.loads((run / "eval-test.json").read_text())  # the trained depth's stays
    inputs.write_text("12\n3x\n")
    bad_line = run_ut("generate", str(run), "--input-file", str(inputs))
    assert bad_line.returncode == 2 and f"{inputs}:2: character 'x' at position 1" in bad_line.stderr
    inputs.write_text("1234\n\n777\n\n")  # blank lines: blank outputs, as ut translate writes them
    blank = run_ut("generate", str(run), "--input-file", str(inputs))
    assert blank.returncode == 0 and blank.stdout.split("\n") == [single[0], "", single[2], "", ""], blank.stderr
    inputs.write_bytes(b"12\n3\xe94\n")  # latin-1, read as every data file is
    latin = run_ut("generate", str(run), "--input-file", str(inputs))
    assert latin.returncode == 2 and f"{inputs}:2: not valid UTF-8" in latin.stderr and "Traceback" not in latin.stderr
    # decoding options out of range, or ignored, are refused with the flag named
    for options, message in ((["--beam", "0"], "--beam must be >= 1, got 0"),
                             (["--beam", "2", "--nbest", "5"], "--nbest (5) cannot exceed --beam (2)"),
                             (["--batch-size", "0"], "--batch-size must be >= 1, got 0"),
                             (["--temperature", "0.5"], "--temperature shape(s) sampling: add --sample"),
                             (["--sample", "--temperature", "0"], "--temperature must be > 0, got 0.0"),
                             (["--sample", "--top-p", "2"], "--top-p must be in (0, 1], got 2.0"),
                             (["--sample", "--beam", "2"], "--sample and --beam exclude each other")):
        refused = run_ut("generate", str(run), "--input", "12", *options)
        assert refused.returncode == 2 and message in refused.stderr, (options, refused.stderr)
        assert "Traceback" not in refused.stderr
    sampled = run_ut("generate", str(run), "--input", "12", "--sample", "--temperature", "0.7", "--top-k", "3")
    assert sampled.returncode == 0 and set(sampled.stdout.strip()) <= set("0123456789+"), sampled.stderr
    if not torch.cuda.is_available():
        no_gpu = run_ut("eval", str(run), "--device", "cuda")
        assert no_gpu.returncode == 2 and "no CUDA device is visible" in no_gpu.stderr and "Traceback" not in no_gpu.stderr


def test_gradient_accumulation_equals_one_big_batch(tmp_path):
    # no dropout: it draws different random numbers per micro-batch. Random position
    # offsets stay on: the trainer draws them once per global batch from (seed, step).
    quiet = {"dropout": 0.0, "embedding_dropout": 0.0}
    results = []
    for accum in (1, 3):
        data = yaml.safe_load(yaml.safe_dump(TINY))
        data["model"].update(quiet)
        data["train"].update(steps=3, grad_accum=accum, eps=1e-3, eval_every=3)
        assert data["train"]["max_position_offset"] > 0
        trainer = Trainer(ExperimentConfig.from_dict(data), tmp_path / f"accum{accum}", progress=False)
        for _ in range(3):
            trainer.train_step()
        results.append(trainer.model.state_dict())
    for key in results[0]:
        torch.testing.assert_close(results[0][key], results[1][key], atol=1e-5, rtol=1e-4)


def test_how_often_a_run_is_evaluated_leaves_its_training_as_it_is(tmp_path):
    """Evaluation draws no random numbers the training draws (dropout, position offsets), so
    two runs of a config that differ only in ``eval_every`` train the same weights, bit for bit:
    a run evaluated more often to follow it is the same run."""
    assert TINY["model"]["dropout"] > 0 and TINY["train"]["max_position_offset"] > 0
    weights = []
    for every in (4, 12):
        trainer = Trainer(_experiment(steps=12, eval_every=every), tmp_path / f"every{every}", progress=False, verbose=False)
        trainer.fit()
        weights.append(torch.cat([p.detach().flatten() for p in trainer.model.parameters()]))
        assert len(list((tmp_path / f"every{every}" / "checkpoints").glob("step-*.pt"))) == 12 // every
    assert torch.equal(weights[0], weights[1])


def test_bf16_autocast_tracks_fp32(tmp_path):
    losses = {}
    for precision in ("fp32", "bf16"):
        trainer = Trainer(_experiment(steps=40, precision=precision, lr=0.01, allow_slow_bf16=True), tmp_path / precision, progress=False)
        losses[precision] = [trainer.train_step()["loss"] for _ in range(40)]
    gap = max(abs(a - b) for a, b in zip(losses["fp32"], losses["bf16"]))
    assert gap < 0.15, f"bf16 drifted from fp32 by {gap:.3f}"
    assert sum(losses["bf16"][-5:]) < sum(losses["bf16"][:5])  # and it learns


def test_position_offsets_are_drawn_from_seed_and_step():
    from universal_transformer.training.offsets import position_offsets

    a = position_offsets(0, 5, 64, maximum=400, per="example")
    assert torch.equal(a, position_offsets(0, 5, 64, maximum=400, per="example"))  # pure in (seed, step)
    assert not torch.equal(a, position_offsets(0, 6, 64, maximum=400, per="example"))
    assert not torch.equal(a, position_offsets(1, 5, 64, maximum=400, per="example"))
    assert 0 <= int(a.min()) and int(a.max()) <= 400 and a.unique().numel() > 20
    one = position_offsets(0, 5, 64, maximum=400, per="batch")
    assert one.unique().numel() == 1 and one.shape == (64,)
    pair = position_offsets(0, 5, 64, maximum=400, per="stack")  # source, target apart
    assert pair.shape == (64, 2) and torch.equal(pair, position_offsets(0, 5, 64, maximum=400, per="stack"))
    assert 0 <= int(pair.min()) and int(pair.max()) <= 400 and (pair[:, 0] != pair[:, 1]).float().mean() > 0.9
    steps = position_offsets(0, 5, 64, maximum=400, per="step", steps=16)  # source, target and every step apart
    assert steps.shape == (64, 2, 16) and torch.equal(steps, position_offsets(0, 5, 64, maximum=400, per="step", steps=16))
    assert 0 <= int(steps.min()) and int(steps.max()) <= 400 and steps[0].unique().numel() > 20


def test_data_seed_draws_the_data_and_seed_the_weights(tmp_path, monkeypatch):
    runs = iter(range(10))

    def first(**train):  # the initial weights, and the batch (with its position offsets) of step 0
        trainer = Trainer(_experiment(**train), tmp_path / f"run-{next(runs)}", progress=False)
        weights = torch.cat([p.detach().flatten() for p in trainer.model.parameters()])

        class Seen(Exception):  # stops the step at its loss, carrying the batch it was given
            pass

        def caught(model, part, *rest):
            raise Seen(part)

        monkeypatch.setattr("universal_transformer.training.trainer.batch_loss", caught)
        with pytest.raises(Seen) as stop:
            trainer.train_step()
        part = stop.value.args[0]
        return weights, part.src, part.position_offset

    weights, data, offsets = first(seed=3)
    same_weights, other_data, other_offsets = first(seed=3, data_seed=5)
    assert torch.equal(weights, same_weights)
    assert not torch.equal(data, other_data) and not torch.equal(offsets, other_offsets)
    other_weights, data5, offsets5 = first(seed=4, data_seed=5)  # the data follow data_seed alone
    assert not torch.equal(weights, other_weights)
    assert torch.equal(data5, other_data) and torch.equal(offsets5, other_offsets)
    _, data_seed5, offsets_seed5 = first(seed=5)  # null: seed draws the data too, as before
    assert torch.equal(data_seed5, other_data) and torch.equal(offsets_seed5, other_offsets)
    from universal_transformer.training.offsets import evaluated

    cfg = _experiment(seed=3, data_seed=5, eval_position_offsets=True).train  # evaluation draws its offsets alike
    assert evaluated(torch.nn.Identity(), cfg).seed == 5
    with pytest.raises(ConfigError, match="train.data_seed"):
        _experiment(data_seed="five")


def test_offsets_per_stack_train_an_encoder_decoder_and_are_refused_by_one_stack(tmp_path):
    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["train"].update(steps=3, eval_every=3, position_offset_per="stack")
    trainer = Trainer(ExperimentConfig.from_dict(data, source="stack.yaml"), tmp_path / "ed", progress=False)
    assert math.isfinite(trainer.train_step()["loss"])
    model = trainer.model
    from universal_transformer.data.batch import Seq2SeqBatch

    batch = Seq2SeqBatch(src=torch.ones(2, 3, dtype=torch.long), tgt_in=torch.ones(2, 3, dtype=torch.long),
                         labels=torch.ones(2, 3, dtype=torch.long), position_offset=torch.tensor([5, 6]))
    summed = batch.with_position_offset(torch.tensor([[1, 2], [3, 4]])).position_offset
    assert torch.equal(summed, torch.tensor([[6, 7], [9, 10]]))  # a task's own offset, then the trainer's
    from universal_transformer.models import UTLanguageModel

    lm = UTLanguageModel(model.config)
    with pytest.raises(ValueError, match=r"shape \(2, 2\).*need an encoder-decoder"):
        lm(torch.ones(2, 3, dtype=torch.long), position_offset=torch.tensor([[1, 2], [3, 4]]))


def test_offsets_per_step_train_an_encoder_decoder_and_refuse_other_models(tmp_path):
    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["train"].update(steps=3, eval_every=3, position_offset_per="step")
    data["model"].update(act=True, num_steps=2)  # ACT: as many offsets as its step limit
    trainer = Trainer(ExperimentConfig.from_dict(data, source="step.yaml"), tmp_path / "ed", progress=False)
    assert trainer._offset_steps == trainer.model.recurrent_steps == 4
    assert math.isfinite(trainer.train_step()["loss"])
    lstm = yaml.safe_load(yaml.safe_dump(TINY))
    lstm["model_class"] = "LSTMSeq2Seq"
    lstm["model"] = {"d_model": 16, "num_layers": 1}
    lstm["train"].update(position_offset_per="step")
    with pytest.raises(ConfigError, match="position_offset_per=step.*LSTMSeq2Seq has none"):
        Trainer(ExperimentConfig.from_dict(lstm, source="lstm.yaml"), tmp_path / "lstm", progress=False)
    lstm["train"].update(position_offset_per="example", gradient_checkpointing=True)
    with pytest.raises(ConfigError, match="gradient_checkpointing.*LSTMSeq2Seq has none"):
        Trainer(ExperimentConfig.from_dict(lstm, source="lstm.yaml"), tmp_path / "lstm", progress=False)
    lstm["train"].update(gradient_checkpointing=False)  # TINY's max_position_offset: 8
    with pytest.raises(ConfigError, match="max_position_offset shifts the positions.*LSTMSeq2Seq reads none"):
        Trainer(ExperimentConfig.from_dict(lstm, source="lstm.yaml"), tmp_path / "lstm", progress=False)
    lstm["train"].update(max_position_offset=0)
    Trainer(ExperimentConfig.from_dict(lstm, source="lstm.yaml"), tmp_path / "lstm", progress=False)


def test_old_experiment_configs_still_load(tmp_path):
    """model.max_position_offset and act_packed moved; an old YAML still loads, with a warning."""
    data = yaml.safe_load(yaml.safe_dump(TINY))
    offset = data["train"].pop("max_position_offset")
    data["model"].update(max_position_offset=offset, act_packed=False)
    with pytest.warns(FutureWarning, match="max_position_offset"):
        experiment = ExperimentConfig.from_dict(data, source="old.yaml")
    assert experiment.train.max_position_offset == offset
    assert not hasattr(experiment.model, "act_packed")


def test_unknown_task_option_is_named(tmp_path):
    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["task"]["lenght"] = 3
    with pytest.raises(ConfigError, match=r"unknown option\(s\) lenght for task 'algorithmic'; known: .*bucket_width"):
        ExperimentConfig.from_dict(data, source="exp.yaml")


def test_bf16_where_it_is_slower_is_refused_with_the_reason(tmp_path, monkeypatch):
    from universal_transformer.training import trainer as trainer_module

    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"cpu_name": "Old CPU", "avx512_bf16": False})
    with pytest.raises(ConfigError, match=r"Old CPU\) has no bf16 instructions.*allow_slow_bf16"):
        Trainer(_experiment(steps=2, precision="bf16"), tmp_path / "a", progress=False)
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"cpu_name": "New CPU", "avx512_bf16": True})
    with pytest.raises(ConfigError, match="at d_model=16 bf16 autocast is slower"):
        Trainer(_experiment(steps=2, precision="bf16"), tmp_path / "b", progress=False)
    assert trainer_module.bf16_cpu_problem(1024) is None
    auto = Trainer(_experiment(steps=2, precision="auto"), tmp_path / "c", progress=False)
    assert auto.precision == "fp32"  # auto: bf16 only on a CUDA device that has it


def test_equal_scores_keep_the_model_with_the_better_tie_break(tmp_path, monkeypatch):
    """A saturated validation score: the kept model is the one with the lowest loss (tie_break),
    and early stopping counts evaluations that improve neither."""
    trainer = Trainer(_experiment(steps=40, eval_every=4, early_stopping=3), tmp_path, progress=False)
    losses = iter([0.9, 0.5, 0.3, 0.4, 0.3, 0.2, 0.25, 0.3, 0.2, 0.21] + [1.0] * 10)
    monkeypatch.setattr(trainer, "evaluate", lambda split: {"score": 1.0, "tie_break": -next(losses)}
                        if split == "validation" else {"score": 1.0})
    summary = trainer.fit()
    # best: 0.2 at step 24; 0.25, 0.3 and 0.2 (equal, not better) at 28-36 end the run
    assert summary["status"] == "early_stopped" and summary["step"] == 36 and summary["best_step"] == 24
    assert selection_key({"score": 0.5, "tie_break": 9.0}) < selection_key({"score": 0.6}) < selection_key(
        {"score": 0.6, "tie_break": -9.0})
    assert selection_key(None) < selection_key({"score": -1e9})


def test_warm_start_continues_from_saved_weights_at_init_step(tmp_path):
    source = Trainer(_experiment(steps=8), tmp_path / "a", progress=False)
    assert source.fit()["step"] == 8
    saved = source.model.save_pretrained(tmp_path / "saved")
    lr_at_8 = source.optimizer.param_groups[0]["lr"]  # what the source would use for its step 8

    warm = Trainer(_experiment(steps=12, init_from=str(saved), init_step=8), tmp_path / "b", progress=False)
    assert warm.prepare_run_dir() is False
    assert warm.step == 8
    for key, value in source.model.state_dict().items():
        assert torch.equal(warm.model.state_dict()[key], value), key
    assert warm.optimizer.param_groups[0]["lr"] == pytest.approx(lr_at_8)
    assert not warm.optimizer.state  # fresh moments
    done = warm.fit()
    assert done["status"] == "done" and done["step"] == 12
    notes = json.loads((tmp_path / "b" / "record.json").read_text())["notes"]
    assert any(n.startswith(f"warm start: the weights of {saved} at step 8") for n in notes)

    # Stopped by time and run again, it resumes its own checkpoint, not the saved weights.
    cont = Trainer(_experiment(steps=10, init_from=str(saved), init_step=8, time_limit=0.0), tmp_path / "c", progress=False)
    assert cont.fit() == {"status": "time_limit", "step": 9}
    again = Trainer(_experiment(steps=10, init_from=str(saved), init_step=8), tmp_path / "c", progress=False)
    assert again.prepare_run_dir() is True and again.step == 9


def test_warm_start_may_change_the_settings_it_names_and_no_other(tmp_path):
    source = Trainer(_experiment(steps=1), tmp_path / "a", progress=False)
    saved = source.model.save_pretrained(tmp_path / "saved")

    def run(out, changes, **model):
        data = yaml.safe_load(yaml.safe_dump(TINY))
        data["model"].update(model)
        data["train"].update(steps=2, init_from=str(saved), init_changes=changes)
        return Trainer(ExperimentConfig.from_dict(data), tmp_path / out, progress=False)

    floor = run("b", ["act_min_steps"], act_min_steps=2)  # ACT's floor: no weight depends on it
    floor.prepare_run_dir()
    assert floor.model.config.act_min_steps == 2
    for key, value in source.model.state_dict().items():
        assert torch.equal(floor.model.state_dict()[key], value), key
    assert floor.fit()["status"] == "done"
    notes = json.loads((tmp_path / "b" / "record.json").read_text())["notes"]
    assert any(n.endswith("; model settings changed from it: act_min_steps") for n in notes)
    with pytest.raises(ConfigError, match=r"not this run's model \(dropout: 0.1 there, 0.2 here"):
        run("c", ["act_min_steps"], act_min_steps=2, dropout=0.2).prepare_run_dir()  # one change not named
    with pytest.raises(ConfigError, match=r"(?s)its weights do not fit this run's model: .*size mismatch"):
        run("d", ["d_ff"], d_ff=64).prepare_run_dir()
    with pytest.raises(ConfigError, match=r"train.init_changes: act_floor not a setting of this run's model"):
        run("e", ["act_floor"]).prepare_run_dir()
    with pytest.raises(ConfigError, match="init_changes names model settings changed from train.init_from's model: it needs"):
        _experiment(init_changes=["dropout"])


def test_warm_start_refuses_another_model_and_bad_steps(tmp_path):
    saved = Trainer(_experiment(steps=1), tmp_path / "a", progress=False).model.save_pretrained(tmp_path / "saved")
    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["model"]["d_model"] = 2 * data["model"]["d_model"]
    data["train"].update(init_from=str(saved))
    with pytest.raises(ConfigError, match=r"init_from=.*saved: the saved model is not this run's model \(.*d_model: 16 there, 32 here"):
        Trainer(ExperimentConfig.from_dict(data), tmp_path / "b", progress=False).prepare_run_dir()
    with pytest.raises(ConfigError, match="needs train.init_from"):
        _experiment(init_step=5)
    with pytest.raises(ConfigError, match=r"init_step \(12\) must be below train.steps \(12\)"):
        _experiment(steps=12, init_from=str(saved), init_step=12)
    from universal_transformer.models.base import LoadError
    with pytest.raises(LoadError, match="nowhere: no such directory"):
        Trainer(_experiment(init_from=str(tmp_path / "nowhere")), tmp_path / "c", progress=False).prepare_run_dir()
