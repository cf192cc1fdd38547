"""What the trainer needs from a task: global batches by step, evaluation, and text I/O."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch
from torch import Tensor, nn

from ..config import ConfigError
from ..data.batch import Batch


class Task(ABC):
    """A task builds batches, evaluates a model and converts text to and from tokens.

    ``train_batch(step)`` must be a pure function of the task's seed and ``step`` (this
    is what makes resuming exact and data parallelism equal to one big batch).
    """

    name: str = ""
    model_classes: tuple[str, ...] = ()

    def __init__(self, options: dict[str, Any], *, seed: int) -> None:
        self.options = dict(options)
        self.seed = seed

    @abstractmethod
    def train_batch(self, step: int, *, batch_tokens: int, max_batch_size: int) -> Batch:
        ...

    @abstractmethod
    def evaluate(self, model: nn.Module, split: str) -> dict[str, Any]:
        """Metrics of ``split`` (``validation`` or ``test``); ``score`` (higher is better) selects checkpoints."""

    def model_overrides(self) -> dict[str, Any]:
        """Config values the task dictates (vocabulary size, special ids, ...)."""
        return {}

    def encode_text(self, text: str) -> Tensor:
        raise ConfigError(f"task {self.name!r} does not take text input")

    def decode_tokens(self, tokens: list[int]) -> str:
        raise ConfigError(f"task {self.name!r} does not produce text output")

    def check_options(self, known: set[str]) -> None:
        unknown = sorted(set(self.options) - known - {"name"})
        if unknown:
            raise ConfigError(f"task {self.name}: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
