"""The training objective, in one place: cross-entropy plus the ACT ponder cost.

``loss = CE + ponder_weight * ponder_cost`` where

* ``CE`` is the cross-entropy of the labels (``ignore_index`` where no loss is wanted,
  optional label smoothing), averaged over the labelled targets;
* ``ponder_cost`` is, for every stack (encoder, decoder), the mean ponder time
  ``N(t) + R(t)`` over its real positions (Graves 2016, eq. 11-12; the paper's Section
  2.2), summed over the stacks; it enters the loss only for ACT models.

Both averages can be taken over a larger batch than the one at hand: the trainer splits
each global batch across processes and accumulation steps and passes the global counts
(``num_targets``, ``positions``), so the parts' losses add up to the global batch's loss.
The models' own ``loss`` uses the counts of the batch they were given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import torch
import torch.nn.functional as F
from torch import Tensor

from .modules.recurrence import HaltingStats


@dataclass
class LossTerms:
    """``loss`` to differentiate; ``task_loss`` (the cross-entropy) and ``ponder_cost`` to report."""

    loss: Tensor
    task_loss: Tensor
    ponder_cost: Tensor


def ponder_weight(config: Any) -> float:
    """The weight of the ponder cost in the loss: ``config.ponder_weight`` for ACT models, else 0."""
    return float(config.ponder_weight) if getattr(config, "act", False) else 0.0


def loss_dtype(logits: Tensor) -> torch.dtype:
    """Losses are computed in float32, or in float64 for a float64 model (never in bf16/fp16)."""
    return torch.float64 if logits.dtype == torch.float64 else torch.float32


def cross_entropy_sum(logits: Tensor, labels: Tensor, *, ignore_index: int, label_smoothing: float = 0.0) -> Tensor:
    """Summed cross-entropy of ``labels [...]`` under ``logits [..., V]``, skipping ``ignore_index``."""
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).to(loss_dtype(logits)),
        labels.reshape(-1),
        ignore_index=ignore_index,
        reduction="sum",
        label_smoothing=label_smoothing,
    )


def ponder_cost(
    halting: Mapping[str, HaltingStats], positions: Mapping[str, int] | None = None, *, dtype: torch.dtype = torch.float32
) -> Tensor:
    """Sum over stacks of the mean ponder time over real positions.

    ``positions`` gives each stack's count of real positions in the global batch; by
    default the counts of the batch at hand.
    """
    total = torch.zeros((), dtype=dtype)
    for name, stats in halting.items():
        ponder_sum, count = stats.ponder_sum()
        if positions is not None:
            count = positions[name]
        total = total.to(ponder_sum.device) + ponder_sum.to(dtype) / max(count, 1)
    return total


def compute_loss(
    logits: Tensor,
    labels: Tensor,
    halting: Mapping[str, HaltingStats],
    *,
    ignore_index: int,
    label_smoothing: float = 0.0,
    ponder_weight: float = 0.0,
    num_targets: int | None = None,
    positions: Mapping[str, int] | None = None,
) -> LossTerms:
    """The objective of one batch, or of one part of a global batch given its counts."""
    if num_targets is None:
        num_targets = int((labels != ignore_index).sum())
    ce = cross_entropy_sum(logits, labels, ignore_index=ignore_index, label_smoothing=label_smoothing) / max(num_targets, 1)
    ponder = ponder_cost(halting, positions, dtype=ce.dtype).to(ce.device)
    loss = ce + ponder_weight * ponder if ponder_weight else ce
    return LossTerms(loss=loss, task_loss=ce, ponder_cost=ponder)


__all__ = ["LossTerms", "compute_loss", "cross_entropy_sum", "loss_dtype", "ponder_cost", "ponder_weight"]
