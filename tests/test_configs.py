"""Every committed experiment config loads, and its task and model build."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.scripts.grid_reader import grid_runs
from universal_transformer.registry import build_task
from universal_transformer.training.config import load_experiment
from universal_transformer.training.trainer import build_model

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "configs").glob("**/*.yaml"))
GRIDS = sorted((ROOT / "configs").glob("**/*.grid"))
CHEAP_TASKS = {"algorithmic", "lte"}  # built from a seed, no data files to read


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_config_loads_without_deprecated_keys(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # committed configs use the current keys
        experiment = load_experiment(path)
    if experiment.task.name in CHEAP_TASKS:
        task = build_task(experiment.task, seed=0)
        model = build_model(experiment, task)
        assert model.num_parameters() > 0


@pytest.mark.parametrize("path", GRIDS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_run_of_a_grid_loads_with_its_overrides(path):
    runs = grid_runs(path)  # read by scripts/grid.sh itself
    assert runs, f"{path} names no runs"
    names = [name for name, _, _ in runs]
    assert len(set(names)) == len(names), f"{path}: a run name appears twice"
    for name, config, overrides in runs:
        experiment = load_experiment(ROOT / config, overrides)  # a mistyped key or value fails here
        assert experiment.task.name, name


def test_lstm_accepts_position_offsets_and_ignores_them():
    # An LSTM reads no positions: the trainer may pass offsets; they change nothing.
    import torch

    from universal_transformer import LSTMConfig, LSTMSeq2Seq

    model = LSTMSeq2Seq(LSTMConfig(vocab_size=13, d_model=16, num_layers=1, dropout=0.0)).eval()
    src, tgt = torch.randint(3, 13, (2, 5)), torch.randint(3, 13, (2, 4))
    assert torch.equal(model(src, tgt).logits, model(src, tgt, position_offset=torch.tensor([3, 9])).logits)
