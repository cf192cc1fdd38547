"""Shared test helpers: small configs and deterministic settings."""

from __future__ import annotations

import pytest
import torch

from universal_transformer import UTConfig


def small_config(config_class: type[UTConfig] = UTConfig, **overrides) -> UTConfig:
    """A tiny deterministic UT (no dropout) for fast tests, of ``config_class`` (UTConfig or a subclass)."""
    base = dict(
        vocab_size=13, d_model=16, num_heads=4, d_ff=32, num_steps=2,
        dropout=0.0, attention_dropout=0.0, embedding_dropout=0.0,
    )
    base.update(overrides)
    return config_class(**base)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield
