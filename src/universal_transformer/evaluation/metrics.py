"""Sequence metrics: character (token) accuracy and whole-sequence accuracy."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class AccuracyCounts:
    """Running counts; ``char_accuracy`` and ``sequence_accuracy`` read them."""

    correct_tokens: int = 0
    tokens: int = 0
    correct_sequences: int = 0
    sequences: int = 0

    def update(self, predictions: Tensor, labels: Tensor, pad_id: int) -> None:
        """Add a batch: ``predictions`` and ``labels`` ``[B, L]``, ``pad_id`` marks no-label slots.

        A sequence counts as correct when every labelled position is predicted right.
        """
        if predictions.shape[1] < labels.shape[1]:  # generation stopped early: pad predictions
            fill = predictions.new_full((predictions.shape[0], labels.shape[1] - predictions.shape[1]), pad_id)
            predictions = torch.cat((predictions, fill), dim=1)
        predictions = predictions[:, : labels.shape[1]]
        real = labels != pad_id
        hit = (predictions == labels) & real
        self.correct_tokens += int(hit.sum())
        self.tokens += int(real.sum())
        self.correct_sequences += int((hit | ~real).all(dim=1).sum())
        self.sequences += labels.shape[0]

    @property
    def char_accuracy(self) -> float:
        return self.correct_tokens / max(self.tokens, 1)

    @property
    def sequence_accuracy(self) -> float:
        return self.correct_sequences / max(self.sequences, 1)

    def as_dict(self) -> dict[str, float]:
        return {"char_accuracy": self.char_accuracy, "sequence_accuracy": self.sequence_accuracy}
