"""Learning-rate schedules, as multipliers of the base rate for ``torch.optim.lr_scheduler.LambdaLR``."""

from __future__ import annotations

import math
from typing import Callable

SCHEDULES = ("inverse_sqrt", "cosine", "constant")


def lr_multiplier(kind: str, *, warmup_steps: int, total_steps: int) -> Callable[[int], float]:
    """``inverse_sqrt``: linear warmup then ``sqrt(warmup / step)`` (Vaswani et al. 2017, with the
    peak at the base rate); ``cosine``: warmup then cosine decay to 0 at ``total_steps``;
    ``constant``: warmup then flat."""
    warmup = max(warmup_steps, 0)

    def warm(step: int) -> float | None:
        if warmup and step < warmup:
            return (step + 1) / warmup
        return None

    if kind == "inverse_sqrt":
        return lambda step: warm(step) or math.sqrt(max(warmup, 1) / (step + 1))
    if kind == "cosine":
        span = max(total_steps - warmup, 1)
        return lambda step: warm(step) or 0.5 * (1 + math.cos(math.pi * min(step - warmup, span) / span))
    if kind == "constant":
        return lambda step: warm(step) or 1.0
    raise ValueError(f"unknown schedule {kind!r}; choose from {', '.join(SCHEDULES)}")
