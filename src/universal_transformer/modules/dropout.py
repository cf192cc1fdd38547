"""Dropout whose mask is drawn fast on the CPU.

PyTorch's CPU dropout draws one random number per element (``bernoulli_``); in the training
step of the small models this library trains on CPUs that was 17-20% of all the time
(d=64 and d=128 UTs, 1 thread, docs/performance.md). Here every 64-bit random integer
gives four 16-bit lanes, so the mask costs a quarter of the draws."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

_LANES = 4  # 16-bit lanes per 64-bit draw
_LEVELS = 1 << 16


def keep_mask(shape: torch.Size | tuple[int, ...], p: float, *, device: torch.device | str = "cpu",
              generator: torch.Generator | None = None) -> tuple[Tensor, float]:
    """A bool mask of ``shape``, each element True (kept) independently with probability
    ``1 - q``, where ``q`` is ``p`` rounded to a multiple of 2^-16; returns the mask and
    ``1 - q`` (divide the kept values by it to keep the expectation). Each uniform 16-bit
    lane of a 64-bit draw from torch's generator decides one element."""
    numel = math.prod(shape)
    words = torch.randint(-(1 << 63), (1 << 63) - 1, (-(-numel // _LANES),), dtype=torch.int64,
                          device=device, generator=generator)
    dropped = round(p * _LEVELS)
    # int16 lanes are uniform on -2^15..2^15-1: exactly LEVELS - dropped of them are kept.
    keep = words.view(torch.int16)[:numel].view(shape) >= dropped - (_LEVELS >> 1)
    return keep, 1.0 - dropped / _LEVELS


class Dropout(nn.Dropout):
    """``nn.Dropout``, except on the CPU, where the mask comes from :func:`keep_mask`:
    forward and backward about twice as fast as PyTorch's (its ``bernoulli_`` draws one
    random number per element; in bf16 it was slower still). ``p`` is used rounded to a
    multiple of 2^-16 (at most 8e-6 off); the kept values are scaled by the exact inverse of
    the keep probability, so the expectation is unchanged. Its random stream differs from
    ``nn.Dropout``'s; it comes from torch's generator, so seeding and resuming are exact."""

    def forward(self, x: Tensor) -> Tensor:
        if not (self.training and self.p > 0 and x.device.type == "cpu"):
            return super().forward(x)
        if self.p >= 1:
            return x * 0.0
        keep, kept = keep_mask(x.shape, self.p, device=x.device)
        if x.dtype in (torch.float32, torch.float64):
            # One multiply by a scaled float mask (what nn.Dropout does): faster here than
            # multiplying by the bool mask, which converts it on every use, backward included.
            mask = keep.to(x.dtype).mul_(1.0 / kept)
            return x.mul_(mask) if self.inplace else x * mask
        # bf16/fp16: scaled after the mask, by a Python float, so each element is rounded once
        # (a bf16 scale factor would bias every kept activation).
        return (x.mul_(keep) if self.inplace else x * keep).mul_(1.0 / kept)
