"""Checkpoint averaging: the elementwise mean of the model weights of a run's last N checkpoints.

Vaswani et al. (2017) evaluate the average of the last 5 (base) or 20 (big) checkpoints;
``ut average RUN --last N --out DIR`` writes that average as a ``save_pretrained`` model,
which ``ut eval RUN --model DIR`` and ``ut translate RUN --model DIR`` read. The trainer
keeps ``train.keep_last`` checkpoints, written every ``train.eval_every`` steps (and where a
``--time-limit`` stopped a chunk: those are not averaged).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch
from torch import Tensor

from ..config import ConfigError, load_yaml
from ..models import PretrainedModel
from ..registry import model_class
from .checkpoint import CheckpointManager, step_of
from .config import ExperimentConfig


def average_state_dicts(states: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
    """The elementwise mean of floating-point tensors (summed in float64, returned in
    their own dtype); other tensors (integer buffers) must be equal in every state."""
    if not states:
        raise ValueError("no state dicts to average")
    keys = list(states[0])
    for i, state in enumerate(states[1:], start=1):
        if set(state) != set(keys):
            diff = sorted(set(state) ^ set(keys))
            raise ValueError(f"state dict {i} has other tensors than state dict 0: {', '.join(diff[:8])}")
    out = {}
    for key in keys:
        first = states[0][key]
        if first.is_floating_point():
            total = torch.zeros(first.shape, dtype=torch.float64)
            for state in states:
                total += state[key].to(torch.float64)
            out[key] = (total / len(states)).to(first.dtype)
        else:
            if any(not torch.equal(state[key], first) for state in states[1:]):
                raise ValueError(f"{key}: a non-floating-point tensor that differs between the checkpoints")
            out[key] = first.clone()
    return out


def last_checkpoints(run_dir: str | Path, last: int, *, every: int | None = None, final: int | None = None) -> list[Path]:
    """The newest ``last`` checkpoints of a run, oldest first; an error if it has fewer.

    With ``every`` (the run's ``train.eval_every``), only checkpoints at multiples of it, or at
    the ``final`` step, count: a chunk stopped by ``--time-limit`` writes one where it stopped,
    between two evaluations (the trainer deletes it at the next evaluation), and the average
    would weigh that stretch of training twice.
    """
    if last < 1:
        raise ConfigError(f"--last must be a positive integer, got {last}")
    paths = CheckpointManager(Path(run_dir) / "checkpoints").paths()
    kept = paths if every is None else [p for p in paths if (s := step_of(p)) % every == 0 or s == final]
    if len(kept) < last:
        skipped = len(paths) - len(kept)
        raise ConfigError(
            f"{run_dir}/checkpoints holds {len(kept)} checkpoint(s) at evaluation steps, fewer than --last {last} "
            f"(the trainer keeps train.keep_last of them"
            + (f"; {skipped} written where a time limit stopped a chunk do not count)" if skipped else ")")
        )
    return kept[-last:]


def average_checkpoints(run_dir: str | Path, last: int, out: str | Path) -> tuple[PretrainedModel, list[Path]]:
    """Average the model weights of the last ``last`` checkpoints of ``run_dir`` and save the
    model (its config from ``RUN_DIR/config.yaml``) to ``out``; returns it and the files averaged."""
    run_dir = Path(run_dir)
    config_path = run_dir / "config.yaml"
    if not config_path.is_file():
        raise ConfigError(f"{config_path}: not found; is {run_dir} a run directory written by 'ut train'?")
    experiment = ExperimentConfig.from_dict(load_yaml(config_path.read_text()), source=str(config_path))
    paths = last_checkpoints(run_dir, last, every=experiment.train.eval_every, final=experiment.train.steps)
    manager = CheckpointManager(run_dir / "checkpoints")
    try:
        states = [manager.load(path)["model"] for path in paths]
    except RuntimeError as err:  # a corrupt file; the message names it
        raise ConfigError(str(err)) from None
    model = model_class(experiment.model_class)(experiment.model)
    model.load_state_dict(average_state_dicts(states))
    model.save_pretrained(out)
    return model, paths


__all__ = ["average_checkpoints", "average_state_dicts", "last_checkpoints"]
