"""Checkpoint averaging: the elementwise mean of the last N checkpoints' model weights."""

from __future__ import annotations

import pytest
import torch

from universal_transformer.config import ConfigError
from universal_transformer.models import PretrainedModel
from universal_transformer.registry import model_class
from universal_transformer.training.averaging import average_checkpoints, average_state_dicts
from universal_transformer.training.checkpoint import CheckpointManager
from universal_transformer.training.config import ExperimentConfig

from .conftest import TINY


def test_average_is_the_elementwise_mean():
    states = [{"w": torch.randn(3, 4), "b": torch.randn(4).half(), "count": torch.tensor([2, 5])} for _ in range(3)]
    avg = average_state_dicts(states)
    for key in ("w", "b"):
        expected = sum(s[key].double() for s in states) / 3
        assert avg[key].dtype == states[0][key].dtype
        torch.testing.assert_close(avg[key].double(), expected.to(states[0][key].dtype).double(), rtol=0, atol=0)
    assert torch.equal(avg["count"], torch.tensor([2, 5]))
    assert torch.equal(average_state_dicts(states[:1])["w"], states[0]["w"])
    states[1]["count"] = torch.tensor([2, 6])
    with pytest.raises(ValueError, match="count: a non-floating-point tensor that differs"):
        average_state_dicts(states)
    with pytest.raises(ValueError, match="state dict 1 has other tensors than state dict 0: extra"):
        average_state_dicts([{"w": torch.ones(1)}, {"w": torch.ones(1), "extra": torch.ones(1)}])


def test_average_checkpoints_writes_the_mean_of_the_last_n_as_a_saved_model(tmp_path):
    experiment = ExperimentConfig.from_dict(TINY)
    run = tmp_path / "run"
    run.mkdir()
    experiment.save(run / "config.yaml")
    manager = CheckpointManager(run / "checkpoints", keep_last=10)
    states = []
    for step in (8, 16, 24):  # train.eval_every is 4
        torch.manual_seed(step)
        state = model_class(experiment.model_class)(experiment.model).state_dict()
        states.append(state)
        manager.save({"model": state, "step": step}, step)

    _, paths = average_checkpoints(run, 2, tmp_path / "avg")
    assert [p.name for p in paths] == ["step-00000016.pt", "step-00000024.pt"]
    loaded = PretrainedModel.from_pretrained(tmp_path / "avg")
    for key, value in loaded.state_dict().items():
        torch.testing.assert_close(value, (states[1][key] + states[2][key]) / 2)
    assert not torch.equal(loaded.state_dict()["src_embed.weight"], states[2]["src_embed.weight"])
    with pytest.raises(ConfigError, match="holds 3 checkpoint\\(s\\) at evaluation steps, fewer than --last 4"):
        average_checkpoints(run, 4, tmp_path / "avg4")
    with pytest.raises(ConfigError, match="config.yaml: not found"):
        average_checkpoints(tmp_path, 1, tmp_path / "x")


def test_checkpoints_where_a_time_limit_stopped_a_chunk_are_not_averaged(tmp_path):
    """A chunk stopped by --time-limit at step 10 (between the evaluations at 8 and 12) leaves
    a checkpoint there; averaging the last 3 must take 4, 8 and 12, evenly spaced."""
    data = {**TINY, "train": {**TINY["train"], "steps": 14}}  # eval_every 4; the final step 14 is off the grid
    experiment = ExperimentConfig.from_dict(data)
    run = tmp_path / "run"
    run.mkdir()
    experiment.save(run / "config.yaml")
    manager = CheckpointManager(run / "checkpoints", keep_last=10)
    for step in (4, 8, 10, 12):
        manager.save({"model": model_class(experiment.model_class)(experiment.model).state_dict(), "step": step}, step)
    _, paths = average_checkpoints(run, 3, tmp_path / "avg")
    assert [p.name for p in paths] == ["step-00000004.pt", "step-00000008.pt", "step-00000012.pt"]
    with pytest.raises(ConfigError, match="holds 3 checkpoint.*1 written where a time limit stopped a chunk do not count"):
        average_checkpoints(run, 4, tmp_path / "avg4")
    manager.save({"model": model_class(experiment.model_class)(experiment.model).state_dict(), "step": 14}, 14)
    _, paths = average_checkpoints(run, 2, tmp_path / "avg2")
    assert [p.name for p in paths] == ["step-00000012.pt", "step-00000014.pt"]  # the last step counts
