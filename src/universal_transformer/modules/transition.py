"""Transition functions of a UT step (SPEC section 1): ``fc`` and ``sepconv``."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class FeedForward(nn.Module):
    """Position-wise ``Linear(d, d_ff) -> ReLU -> Dropout -> Linear(d_ff, d)`` (the ``fc`` transition)."""

    pointwise = True

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, padding: Tensor | None = None, state: dict | None = None) -> Tensor:
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class SepConvTransition(nn.Module):
    """Depthwise-separable convolution over positions (the ``sepconv`` transition).

    ``depthwise Conv1d(d, kernel w) -> pointwise Linear(d, d_ff) -> ReLU -> Dropout ->
    Linear(d_ff, d)``: a separable convolution to ``d_ff`` channels, then a projection
    back, mirroring ``fc`` so both transitions have comparable size. With ``causal``
    the convolution is left-padded, so no position sees a later one (the decoder).
    Padding positions are zeroed before the convolution so that padding never leaks
    into real positions.

    For incremental decoding, ``state`` (a dict owned by the caller) keeps the last
    ``w - 1`` inputs of the previous calls.
    """

    pointwise = False

    def __init__(self, d_model: int, d_ff: int, kernel_size: int = 3, dropout: float = 0.0, causal: bool = False) -> None:
        super().__init__()
        if not causal and kernel_size % 2 == 0:
            raise ValueError(f"a non-causal sepconv needs an odd kernel size, got {kernel_size}")
        self.kernel_size = kernel_size
        self.causal = causal
        self.depthwise = nn.Conv1d(d_model, d_model, kernel_size, groups=d_model, bias=False)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, padding: Tensor | None = None, state: dict | None = None) -> Tensor:
        """``x [B, L, d]``; ``padding [B, L]`` True at padding positions."""
        if padding is not None:
            x = x.masked_fill(padding[..., None], 0.0)
        h = x.transpose(1, 2)  # [B, d, L]
        w = self.kernel_size
        if self.causal:
            if state is not None:
                previous = state.get("conv")
                if previous is None:
                    previous = h.new_zeros(h.shape[0], h.shape[1], w - 1)
                h = torch.cat((previous, h), dim=2)
                state["conv"] = h[:, :, h.shape[2] - (w - 1) :] if w > 1 else h[:, :, :0]
            else:
                h = F.pad(h, (w - 1, 0))
        else:
            h = F.pad(h, (w // 2, w // 2))
        h = self.depthwise(h).transpose(1, 2)
        return self.linear2(self.dropout(F.relu(self.linear1(h))))


def make_transition(kind: str, d_model: int, d_ff: int, *, kernel_size: int, dropout: float, causal: bool) -> nn.Module:
    """Build the transition named ``kind`` (``"fc"`` or ``"sepconv"``)."""
    if kind == "fc":
        return FeedForward(d_model, d_ff, dropout)
    if kind == "sepconv":
        return SepConvTransition(d_model, d_ff, kernel_size, dropout, causal)
    raise ValueError(f"unknown transition {kind!r}; use 'fc' or 'sepconv'")
