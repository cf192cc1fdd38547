"""Supervised number prediction (Linzen et al. 2016) with a UT encoder classifier, on synthetic files."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from universal_transformer.config import ConfigError
from universal_transformer.data.agreement import NUMBER_LABELS
from universal_transformer.tasks.agreement import NumberPredictionOptions, NumberPredictionTask
from universal_transformer.training.config import ExperimentConfig
from universal_transformer.training.trainer import Trainer

from ..data.test_agreement import AGREEMENT

NOUNS = {"dog": "dogs", "key": "keys", "cabinet": "cabinets", "author": "authors"}


def write_numpred(folder: Path, name: str, count: int, attractors: int | None, seed: int) -> None:
    """``VBZ|VBP<TAB>the SUBJECT (of the ATTRACTOR)*``: attractors have the subject's opposite number."""
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        singular = rng.random() < 0.5
        noun = rng.choice(list(NOUNS))
        k = attractors if attractors is not None else rng.randint(0, 2)
        words = ["the", noun if singular else NOUNS[noun]]
        for _ in range(k):
            other = rng.choice(list(NOUNS))
            words += ["of", "the", NOUNS[other] if singular else other]
        lines.append(f"{'VBZ' if singular else 'VBP'}\t{' '.join(words)}")
    (folder / name).write_text("\n".join(lines) + "\n")


@pytest.fixture
def data(tmp_path) -> Path:
    write_numpred(tmp_path, "numpred.train", 600, None, 0)
    write_numpred(tmp_path, "numpred.val", 100, None, 1)
    for k in (0, 1, 2):
        write_numpred(tmp_path, f"numpred.test.{k}", 60, k, 10 + k)
    return tmp_path


def test_task_reads_encodes_and_batches(data):
    task = NumberPredictionTask({"name": "number_prediction", "data_dir": str(data)}, seed=0)
    assert list(task.test_files) == ["attractors0", "attractors1", "attractors2"]
    assert len(task.vocab) == 3 + 1 + 8 + 1  # specials, "the", 8 nouns, "of"
    assert task.model_overrides()["num_classes"] == len(NUMBER_LABELS) == 2
    batch = task.train_batch(0, batch_tokens=0, max_batch_size=16)
    assert batch.tokens.shape[0] == 16 and batch.labels.shape == (16,)
    assert batch.tokens.shape[1] == int((batch.tokens != 0).sum(1).max())  # padded to the longest prefix only
    assert torch.equal(task.train_batch(3, batch_tokens=0, max_batch_size=16).tokens,
                       NumberPredictionTask({"name": "number_prediction", "data_dir": str(data)}, seed=0)
                       .train_batch(3, batch_tokens=0, max_batch_size=16).tokens)
    # 600 examples in batches of 20: the first epoch visits every example once
    def rows(tokens, labels):
        return sorted((int(y), tuple(t for t in x.tolist() if t)) for x, y in zip(tokens, labels))

    epoch = [task.train_batch(s, batch_tokens=0, max_batch_size=20) for s in range(30)]
    assert sorted(sum((rows(b.tokens, b.labels) for b in epoch), [])) == rows(task.train.tokens, task.train.labels)
    short = NumberPredictionTask({"name": "number_prediction", "data_dir": str(data), "max_length": 2}, seed=0)
    assert short.split("attractors2").tokens.shape[1] == 2  # the last words, nearest the verb, are kept


def test_ut_classifier_learns_number_from_the_subject_despite_attractors(data):
    torch.set_num_threads(1)
    experiment = ExperimentConfig.from_dict({
        "model_class": "UTEncoderClassifier",
        "model": {"d_model": 32, "num_heads": 4, "d_ff": 64, "num_steps": 2, "act": True, "dropout": 0.0,
                  "embedding_dropout": 0.0, "pooling": "last"},
        "task": {"name": "number_prediction", "data_dir": str(data)},
        "train": {"steps": 300, "lr": 3e-3, "schedule": "constant", "warmup_steps": 20, "max_batch_size": 32,
                  "eval_every": 25, "stop_at_score": 1.0, "seed": 0},
    })
    trainer = Trainer(experiment, data / "run", progress=False, verbose=False)
    test = trainer.fit()["test"]
    assert test["attractors2/accuracy"] >= 0.95, f"after {trainer.step} steps: {test}"
    assert test["attractors0/items"] == 60 and 1.0 <= test["ponder_time"] <= 4.0


def test_options_and_missing_files(data):
    with pytest.raises(ConfigError, match="task.max_length must be a positive integer"):
        NumberPredictionOptions.from_dict({"name": "number_prediction", "max_length": 0})
    with pytest.raises(ConfigError, match=r"numpred.test.9: no test file matches"):
        NumberPredictionTask({"name": "number_prediction", "data_dir": str(data), "test": "numpred.test.9"}, seed=0)
    (data / "numpred.test.1~").write_text((data / "numpred.test.1").read_text())  # an editor's backup
    with pytest.raises(ConfigError, match=r"numpred.test.1~: matched by task.test pattern 'numpred.test.\*' beside"):
        NumberPredictionTask({"name": "number_prediction", "data_dir": str(data)}, seed=0)
    (data / "extra").mkdir()  # files of other names, by a pattern or by name, are test sets of their own
    (data / "extra" / "heldout-a.txt").write_text((data / "numpred.test.1").read_text())
    task = NumberPredictionTask({"name": "number_prediction", "data_dir": str(data), "test": ["extra/*.txt", "numpred.test.2"]}, seed=0)
    assert list(task.test_files) == ["attractors2", "heldout-a.txt"]


@pytest.mark.skipif(not (AGREEMENT / "rnn_agr_simple").is_dir(), reason="needs ../shared/data/agreement")
def test_the_shared_copy_lacks_the_training_split_and_says_so():
    with pytest.raises(ConfigError, match=r"rnn_agr_simple/numpred.train: file not found"):
        NumberPredictionTask({"name": "number_prediction"}, seed=0)
