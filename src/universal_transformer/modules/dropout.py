"""Dropout whose mask is drawn fast on the CPU in bf16."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Dropout(nn.Dropout):
    """``nn.Dropout``, except on the CPU in bf16/fp16 (autocast included), where the mask is
    drawn with ``torch.rand``: PyTorch's own dropout (a bf16 ``bernoulli_``) took twice as
    long there, forward and backward (docs/performance.md), about 6% of a bf16 training step.
    The same distribution and scaling; a different random stream than ``nn.Dropout``."""

    def forward(self, x: Tensor) -> Tensor:
        if self.training and self.p > 0 and x.device.type == "cpu" and x.dtype in (torch.bfloat16, torch.float16):
            if self.p >= 1:
                return x * 0.0
            keep = torch.rand(x.shape, device=x.device) >= self.p
            # Scaled after the mask, by a Python float: each element is rounded once (a bf16
            # scale factor would bias every kept activation).
            return (x * keep).mul_(1.0 / (1.0 - self.p))
        return super().forward(x)
