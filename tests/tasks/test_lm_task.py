"""The language-modelling task: options, vocabulary, batches, evaluation, learning, the command line."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
import yaml

from universal_transformer import LSTMConfig, LSTMLanguageModel, UTLanguageModel
from universal_transformer.config import ConfigError
from universal_transformer.data.text import EOS_ID, PAD_ID, UNK_ID
from universal_transformer.registry import build_task, model_class, task_class
from universal_transformer.tasks.lm import LMOptions, LMTask
from universal_transformer.training.config import ExperimentConfig, load_experiment
from universal_transformer.training.trainer import Trainer

from ..conftest import small_config
from ..data.test_text import DATA, needs_ptb
from ..training.conftest import run_ut

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "lm"
LINES = ["the cat sat on the mat", "a dog ran in the park"]


def corpus(folder: Path, repeats: int = 50) -> dict:
    """A tiny repetitive corpus (the two lines alternate) and the lm task options that read it."""
    text = "\n".join(LINES * repeats) + "\n"
    for name in ("train.txt", "valid.txt", "test.txt"):
        (folder / name).write_text(text)
    return {"name": "lm", "data_dir": str(folder), "train": "train.txt", "validation": "valid.txt", "test": "test.txt",
            "context_length": 16, "eval_batch_size": 8}


def agreement_set(folder: Path) -> str:
    (folder / "agr.text").write_text("the cat sat on the mat\nthe dog ran\n")
    (folder / "agr.gold").write_text("2\tsat\tran\t0\n2\tran\tsat\t1\n")
    return str(folder / "agr")


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"colour": "red"}, "unknown option.* colour"),
        ({"eval_stride": 65}, r"eval_stride \(65\) must be at most task.context_length \(64\)"),
        ({"context_length": 0}, "task.context_length must be a positive integer"),
        ({"vocab_file": "v.txt", "vocab_min_count": 2}, "vocab_min_count applies to a vocabulary built from the data"),
        ({"eval_format": "words"}, "eval_format must be one of stream, lambada"),
        ({"agreement": "a/b"}, "task.agreement must be a list of strings"),
        ({"vocab_max_size": 3}, "must leave room for a word"),
    ],
)
def test_options_validate_themselves(changes, message):
    with pytest.raises(ConfigError, match=message):
        LMOptions.from_dict({"name": "lm", **changes})


def test_vocabulary_and_model_fields_come_from_the_training_file(tmp_path):
    task = LMTask(corpus(tmp_path), seed=0)
    assert task.vocab.words[:4] == ["<pad>", "<unk>", "<eos>", "the"]  # "the" is the most frequent word
    assert len(task.vocab) == 3 + 10
    assert task.model_overrides() == {"vocab_size": 13, "pad_id": PAD_ID, "bos_id": EOS_ID, "eos_id": EOS_ID}
    capped = LMTask({**corpus(tmp_path), "vocab_max_size": 5}, seed=0)
    assert capped.vocab.words == ["<pad>", "<unk>", "<eos>", "the", "a"]
    assert capped.encode_text("the zebra sat").tolist() == [[EOS_ID, 3, UNK_ID, UNK_ID]]
    assert task.decode_tokens(task.encode_text("a dog ran")[0, 1:].tolist() + [EOS_ID, 3]) == "a dog ran"
    task.vocab.save(tmp_path / "vocab.txt")
    pinned = LMTask({**corpus(tmp_path), "vocab_file": str(tmp_path / "vocab.txt")}, seed=0)
    assert pinned.vocab.words == task.vocab.words


def test_batches_are_windows_of_the_stream_and_pure_in_seed_and_step(tmp_path):
    task = LMTask(corpus(tmp_path), seed=3)
    batch = task.train_batch(7, batch_tokens=100, max_batch_size=512)
    assert batch.tokens.shape == batch.labels.shape == (100 // 16, 16)
    assert torch.equal(batch.tokens[:, 1:], batch.labels[:, :-1])  # labels are the next tokens
    stream = task.train_stream.long()
    for row in batch.tokens:  # every window is a slice of the training stream
        assert any(torch.equal(stream[s : s + 16], row) for s in range(stream.numel() - 16))
    again = LMTask(corpus(tmp_path), seed=3).train_batch(7, batch_tokens=100, max_batch_size=512)
    assert torch.equal(again.tokens, batch.tokens)
    assert not torch.equal(task.train_batch(8, batch_tokens=100, max_batch_size=512).tokens, batch.tokens)
    assert not torch.equal(LMTask(corpus(tmp_path), seed=4).train_batch(7, batch_tokens=100, max_batch_size=512).tokens, batch.tokens)
    assert task.train_batch(0, batch_tokens=10_000, max_batch_size=3).size == 3
    assert batch.positions() == {"decoder": 6 * 16} and batch.num_targets == 6 * 16


def test_evaluation_perplexity_score_and_benchmarks(tmp_path):
    (tmp_path / "lam.txt").write_text("the cat sat on the mat a dog ran in the park\nthe dog sat on the zebra\n")
    options = {**corpus(tmp_path), "agreement": [agreement_set(tmp_path)], "lambada": [str(tmp_path / "lam.txt")]}
    task = LMTask(options, seed=0)
    model = UTLanguageModel(small_config(vocab_size=13, act=True)).eval()
    validation = task.evaluate(model, "validation")
    assert validation["score"] == pytest.approx(-math.log(validation["perplexity"]))
    assert validation["tokens"] == 100 * 7  # six words and an <eos> per line
    assert 1.0 <= validation["ponder_time"] <= 4.0 and "agreement/agr/accuracy" not in validation
    test = task.evaluate(model, "test")
    assert {"perplexity", "agreement/agr/accuracy", "agreement/agr/attractors1/accuracy", "lambada/lam/accuracy",
            "lambada/lam/rc_accuracy", "lambada/lam/ponder_time"} <= set(test)
    assert test["lambada/lam/oov_targets"] == 1
    benchmarks = task.evaluate(model, "benchmarks")
    assert "perplexity" not in benchmarks and "score" not in benchmarks
    assert benchmarks["agreement/agr/items"] == 2
    with pytest.raises(ConfigError, match="unknown split 'dev'"):
        task.evaluate(model, "dev")
    with pytest.raises(ConfigError, match="the model's vocabulary has 14 entries, the task's 13"):
        task.evaluate(UTLanguageModel(small_config(vocab_size=14)), "validation")


def test_missing_and_broken_files_are_config_errors(tmp_path):
    options = corpus(tmp_path)
    with pytest.raises(ConfigError, match="nope.txt: file not found"):
        LMTask({**options, "train": "nope.txt"}, seed=0)
    with pytest.raises(ConfigError, match=r"agr.text: file not found \(an agreement set is NAME.text"):
        LMTask({**options, "agreement": [str(tmp_path / "agr")]}, seed=0)
    with pytest.raises(ConfigError, match="fewer than task.context_length"):
        LMTask({**options, "context_length": 10_000}, seed=0).train_batch(0, batch_tokens=10_000, max_batch_size=1)
    (tmp_path / "valid.txt").write_bytes(b"ok\n\xff\n")
    with pytest.raises(ConfigError, match=r"valid.txt:2: not valid UTF-8"):
        LMTask(options, seed=0).evaluate(UTLanguageModel(small_config(vocab_size=13)), "validation")


@pytest.mark.parametrize("split, content", [("validation", b""), ("test", b"\n\n")])
def test_a_bad_or_empty_evaluation_file_fails_before_the_first_step(tmp_path, split, content):
    """An empty file would score a perplexity of 1 (the best there is, picking the model and
    stopping early); a bad one would fail at the first evaluation, losing the steps before it."""
    options = corpus(tmp_path)
    (tmp_path / f"{split}.txt").write_bytes(content)
    experiment = ExperimentConfig.from_dict({
        "model_class": "UTLanguageModel", "model": dict(d_model=16, num_heads=2, d_ff=32, num_steps=1),
        "task": {**options, split: f"{split}.txt"}, "train": {"steps": 5, "eval_every": 5, "threads": 1},
    })
    trainer = Trainer(experiment, tmp_path / "run", progress=False, verbose=False)
    with pytest.raises(ConfigError, match=rf"{split}.txt: no words to score \(task.{split}\)"):
        trainer.fit()
    assert trainer.step == 0
    (tmp_path / f"{split}.txt").write_bytes(b"the cat\n\xff\n")
    with pytest.raises(ConfigError, match=rf"{split}.txt:2: not valid UTF-8"):
        Trainer(experiment, tmp_path / "run2", progress=False, verbose=False).fit()


def test_lambada_format_trains_on_a_novels_folder(tmp_path):
    novels = tmp_path / "train-novels"
    for genre, novel in (("Adventure", "a.txt"), ("Romance", "b.txt")):
        (novels / genre).mkdir(parents=True)
        (novels / genre / novel).write_text("\n".join(LINES * 20) + "\n")
    (tmp_path / "dev.txt").write_text("the cat sat on the mat a dog ran in the park\nthe dog sat on the cat\n")
    task = build_task({"name": "lm", "data_dir": str(tmp_path), "train": "train-novels", "validation": "dev.txt",
                       "test": "dev.txt", "eval_format": "lambada", "context_length": 16}, seed=0)
    assert task.train_stream.numel() == 1 + 2 * 20 * 2 * 7  # both novels, in genre order
    model = LSTMLanguageModel(LSTMConfig(vocab_size=len(task.vocab), d_model=16, num_layers=1))
    result = task.evaluate(model, "validation")
    assert {"accuracy", "perplexity", "rc_accuracy", "target_in_context"} <= set(result)
    assert result["score"] == pytest.approx(-math.log(result["perplexity"]))


@pytest.mark.parametrize("name, model, lr", [
    ("UTLanguageModel", dict(d_model=32, num_heads=4, d_ff=64, num_steps=2, dropout=0.0, embedding_dropout=0.0), 3e-3),
    ("LSTMLanguageModel", dict(d_model=32, num_layers=1, dropout=0.0), 1e-2),
])
def test_a_tiny_lm_learns_a_repetitive_corpus(tmp_path, name, model, lr):
    """Two alternating sentences: after the first word everything is determined. Chance is ~13."""
    torch.set_num_threads(1)
    experiment = ExperimentConfig.from_dict({
        "model_class": name, "model": model, "task": corpus(tmp_path),
        "train": {"steps": 400, "lr": lr, "schedule": "constant", "warmup_steps": 20, "batch_tokens": 256,
                  "eval_every": 25, "stop_at_score": -math.log(1.1), "seed": 0},
    })
    trainer = Trainer(experiment, tmp_path / "run", progress=False, verbose=False)
    summary = trainer.fit()
    assert summary["test"]["perplexity"] < 1.2, f"after {trainer.step} steps: {summary['test']}"
    # Prompts of different lengths, decoded together, continue each as it does alone: a language
    # model's prompts cannot be padded, so `ut generate` batches them by length.
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("the cat\na dog ran\nthe\na dog\n\n")
    together = run_ut("generate", str(tmp_path / "run"), "--input-file", str(prompts), "--max-new-tokens", "3")
    assert together.returncode == 0, together.stderr
    lines = together.stdout.splitlines()
    assert lines[:4] == ["sat on the", "in the park", "cat sat on", "ran in the"]
    assert lines[4] in ("the cat sat", "a dog ran")  # an empty prompt: a sentence from its start
    alone = run_ut("generate", str(tmp_path / "run"), "--input", "a dog ran", "--max-new-tokens", "3", "--beam", "2")
    assert alone.returncode == 0 and alone.stdout == "in the park\n", alone.stderr


def test_configs_load_and_have_similar_parameter_counts():
    counts = {}
    for path in sorted(CONFIGS.glob("ptb-*.yaml")):
        experiment = load_experiment(path)
        assert experiment.task.name == "lm"
        config = experiment.model.replace(vocab_size=10_001)  # the Penn Treebank vocabulary
        counts[path.stem] = model_class(experiment.model_class)(config).num_parameters()
    assert counts == {"ptb-lstm": 2_012_320, "ptb-transformer": 2_073_216, "ptb-ut": 1_909_440, "ptb-ut-act": 1_909_601}
    assert max(counts.values()) / min(counts.values()) < 1.1


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")) + sorted((CONFIGS.parent / "agreement").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_every_language_config_is_valid(path):
    experiment = load_experiment(path)
    assert experiment.model_class in task_class(experiment.task.name).model_classes


@needs_ptb
def test_penn_treebank_task():
    task = build_task({"name": "lm"}, seed=0)  # the defaults read ../shared/data/lm/ptb
    assert task.model_overrides()["vocab_size"] == 10_001
    assert task.stream("validation").numel() == 73_761


@pytest.mark.skipif(not (DATA / "agreement").is_dir(), reason="needs ../shared/data/agreement")
def test_command_line_trains_then_evaluates_agreement_on_the_saved_model(tmp_path):
    config = {
        "model_class": "UTLanguageModel",
        "model": {"d_model": 16, "num_heads": 2, "d_ff": 32, "num_steps": 2, "act": True},
        "task": corpus(tmp_path, repeats=5),
        "train": {"steps": 2, "eval_every": 2, "batch_tokens": 64, "threads": 1},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    run = tmp_path / "run"
    done = run_ut("train", str(tmp_path / "c.yaml"), "--out", str(run), "--no-progress")
    assert done.returncode == 0, done.stderr
    linzen = DATA / "agreement" / "colorlessgreen" / "linzen_testset" / "subj_agr_filtered"
    done = run_ut("eval", str(run), "--split", "benchmarks", "--set", f"task.agreement=[{linzen}]")
    assert done.returncode == 0, done.stderr
    # the benchmark files are options the run was trained without: a file of their own, named by their hash
    written = sorted(run.glob("eval-benchmarks-agreement=*.json"))
    assert len(written) == 1 and re.fullmatch(r"eval-benchmarks-agreement=[0-9a-f]{8}\.json", written[0].name), written
    metrics = json.loads(written[0].read_text())
    # a 13-word vocabulary knows none of the verbs: every item is skipped, and said to be
    assert metrics["agreement/subj_agr_filtered/skipped_oov"] == 7489
    assert "agreement/subj_agr_filtered/skipped_oov" in done.stdout
