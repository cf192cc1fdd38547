"""Tasks: what to train on and how to score it. ``build_task`` picks one by name."""

from __future__ import annotations

from typing import Any

from ..config import ConfigError
from .algorithmic import AlgorithmicTask
from .base import Batch, Task

TASKS: dict[str, type[Task]] = {AlgorithmicTask.name: AlgorithmicTask}


def build_task(options: dict[str, Any], *, seed: int) -> Task:
    name = options.get("name")
    if name not in TASKS:
        raise ConfigError(f"unknown task name {name!r}; known: {', '.join(sorted(TASKS))}")
    return TASKS[name](options, seed=seed)


__all__ = ["AlgorithmicTask", "Batch", "TASKS", "Task", "build_task"]
