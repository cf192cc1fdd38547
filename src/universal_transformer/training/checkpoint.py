"""Training checkpoints: written atomically, the last N kept, everything needed to resume exactly."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

_NAME = re.compile(r"^step-(\d{8})\.pt$")


def rng_state() -> dict[str, Any]:
    """Every random number generator the training loop draws from."""
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def atomic_torch_save(obj: Any, path: Path) -> None:
    """``torch.save`` to a temporary file in the same folder, fsync, then rename over ``path``.

    A crash at any moment leaves either the old file or the new one, never a torn one.
    """
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def step_of(path: Path) -> int:
    """The step of a checkpoint file ``step-XXXXXXXX.pt``."""
    match = _NAME.match(path.name)
    if match is None:
        raise ValueError(f"{path}: not a checkpoint file name (step-XXXXXXXX.pt)")
    return int(match.group(1))


class CheckpointManager:
    """``RUN_DIR/checkpoints/step-XXXXXXXX.pt``, keeping the newest ``keep_last``."""

    def __init__(self, directory: Path, keep_last: int = 2) -> None:
        self.directory = Path(directory)
        self.keep_last = keep_last

    def paths(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        found = [(int(m.group(1)), p) for p in self.directory.iterdir() if (m := _NAME.match(p.name))]
        return [p for _, p in sorted(found)]

    def latest(self) -> Path | None:
        paths = self.paths()
        return paths[-1] if paths else None

    def save(self, state: dict[str, Any], step: int, *, supersedes: Callable[[int], bool] | None = None) -> Path:
        """Write the checkpoint of ``step``; then delete the older ones at the steps
        ``supersedes`` names (checkpoints only needed to resume, e.g. where a time limit stopped
        a chunk), and all but the newest ``keep_last``."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"step-{step:08d}.pt"
        atomic_torch_save(state, path)
        if supersedes is not None:
            for old in self.paths():
                if (earlier := step_of(old)) < step and supersedes(earlier):
                    old.unlink(missing_ok=True)
        for old in self.paths()[: -self.keep_last]:
            old.unlink(missing_ok=True)
        for stale in self.directory.glob("*.pt.tmp*"):  # leftovers of a crash mid-write
            stale.unlink(missing_ok=True)
        return path

    def load(self, path: Path) -> dict[str, Any]:
        try:
            return torch.load(path, map_location="cpu", weights_only=False)
        except Exception as err:  # a corrupt file must say which file
            raise RuntimeError(f"{path}: cannot read checkpoint: {err}") from None
