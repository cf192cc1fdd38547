"""Models actually learn: copy of length-8 digit strings, greedy decoding, far above chance.

Chance is 0.1 per digit and 1e-8 per sequence; each test asks for at least 0.9 of the
test sequences right. Trained with the package's own trainer and task, with fixed seeds
and one thread (the same float operations on any machine); a run stops once validation
reaches ``STOP_AT`` (which leaves room above the asserted margin), and the bounded number
of steps makes the test fail if learning breaks.
"""

from __future__ import annotations

import pytest
import torch

from universal_transformer.training.config import ExperimentConfig
from universal_transformer.training.trainer import Trainer

MAX_STEPS = 1200
STOP_AT = 0.98  # validation sequence accuracy that ends training
MARGIN = 0.9  # test sequence accuracy every model must reach


@pytest.fixture(autouse=True)
def one_thread():
    """The trainer sets the thread count for the process; give the other tests theirs back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _learn_copy(tmp_path, model_class: str, model: dict, lr: float = 3e-3) -> tuple[dict, Trainer]:
    experiment = ExperimentConfig.from_dict({
        "model_class": model_class,
        "model": model,
        "task": {"name": "algorithmic", "task": "copy", "train_min_length": 8, "train_max_length": 8,
                 "validation_lengths": [8], "test_lengths": [8], "eval_examples": 200, "eval_batch_size": 200},
        "train": {"steps": MAX_STEPS, "lr": lr, "schedule": "constant", "warmup_steps": 50, "batch_tokens": 576,
                  "eval_every": 50, "stop_at_score": STOP_AT, "seed": 0, "threads": 1},
    })
    trainer = Trainer(experiment, tmp_path, progress=False)
    summary = trainer.fit()
    return summary, trainer


UT = dict(d_model=32, num_heads=4, d_ff=64, num_steps=2, dropout=0.0, embedding_dropout=0.0)


def test_ut_learns_copy(tmp_path):
    summary, trainer = _learn_copy(tmp_path, "UniversalTransformer", UT)
    assert summary["test"]["len8/sequence_accuracy"] >= MARGIN, f"after {trainer.step} steps: {summary['test']}"


def test_ut_act_learns_copy_and_reports_ponder_time(tmp_path, capsys):
    summary, trainer = _learn_copy(tmp_path, "UniversalTransformer", {**UT, "act": True, "act_bias_init": -1.0})
    test = summary["test"]
    with capsys.disabled():
        print(f"\nUT+ACT copy: seq acc {test['len8/sequence_accuracy']:.3f} after {trainer.step} steps; "
              f"mean encoder ponder time {test['len8/encoder_ponder_time']:.2f}")
    assert test["len8/sequence_accuracy"] >= MARGIN, f"after {trainer.step} steps: {test}"
    assert 1.0 <= test["len8/encoder_ponder_time"] <= 2 * UT["num_steps"] + 1.0


@pytest.mark.slow
def test_lstm_learns_copy(tmp_path):
    summary, trainer = _learn_copy(tmp_path, "LSTMSeq2Seq", {"d_model": 64, "num_layers": 1, "dropout": 0.0}, lr=1e-2)
    assert summary["test"]["len8/sequence_accuracy"] >= MARGIN, f"after {trainer.step} steps: {summary['test']}"
