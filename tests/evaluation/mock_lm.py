"""Language models whose predictions the tests control."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import torch
from torch import Tensor, nn

from universal_transformer.models.base import ModelOutput


class MockLM(nn.Module):
    """``logits [B, L, V] = rule(tokens)``; ``calls`` records the shape of every input."""

    def __init__(self, vocab_size: int, rule: Callable[[Tensor], Tensor]) -> None:
        super().__init__()
        self.config = SimpleNamespace(vocab_size=vocab_size)
        self.rule = rule
        self.anchor = nn.Parameter(torch.zeros(()))  # gives the scorers a device
        self.calls: list[tuple[int, ...]] = []

    def forward(self, tokens: Tensor) -> ModelOutput:
        self.calls.append(tuple(tokens.shape))
        return ModelOutput(self.rule(tokens).float())


def bigram_lm(table: Tensor) -> MockLM:
    """A bigram model: the next-token logits are ``table[previous token]``."""
    return MockLM(table.shape[0], lambda tokens: table[tokens])


def preference_lm(scores: Tensor) -> MockLM:
    """The same next-token logits ``scores [V]`` at every position."""
    return MockLM(scores.shape[0], lambda tokens: scores.expand(*tokens.shape, -1))
