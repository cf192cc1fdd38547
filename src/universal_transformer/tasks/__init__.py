"""Tasks: what to train on and how to score it. ``build_task`` picks one by name."""

from __future__ import annotations

from typing import Any

from ..config import ConfigError
from .algorithmic import AlgorithmicTask
from .babi import BabiTask
from .base import Batch, Task

TASKS: dict[str, type[Task]] = {AlgorithmicTask.name: AlgorithmicTask, BabiTask.name: BabiTask}


def build_task(options: dict[str, Any], *, seed: int) -> Task:
    name = options.get("name")
    if name not in TASKS:
        raise ConfigError(f"unknown task name {name!r}; known: {', '.join(sorted(TASKS))}")
    return TASKS[name](options, seed=seed)


__all__ = ["AlgorithmicTask", "BabiTask", "Batch", "TASKS", "Task", "build_task"]
