"""The batch interface the trainer works with: model inputs, labels, and row selection."""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from torch import Tensor


class Batch(ABC):
    """A batch the trainer can split across devices and accumulation steps."""

    labels: Tensor
    ignore_index: int = -100

    @abstractmethod
    def model_inputs(self) -> dict[str, Tensor]:
        """Keyword arguments of the model's forward."""

    @abstractmethod
    def positions(self) -> dict[str, int]:
        """Real (non-padding) positions per stack, for the ponder cost normaliser."""

    @abstractmethod
    def select(self, rows: slice) -> "Batch":
        """A sub-batch of rows (for data parallelism and gradient accumulation)."""

    @abstractmethod
    def to(self, device: torch.device | str) -> "Batch":
        ...

    @property
    def size(self) -> int:
        return self.labels.shape[0]

    @property
    def num_targets(self) -> int:
        return int((self.labels != self.ignore_index).sum())
