"""Transition functions of a UT step (the paper's section 2.1): ``fc``, ``sepconv`` and ``sepconv_t2t``.

A transition is a module ``forward(x [B, L, d], padding [B, L] | None, state: dict | None) ->
[B, L, d]`` (``state``: what incremental decoding keeps between calls, e.g. a convolution's
last inputs) with a class attribute ``pointwise``: True when each position's output depends on
that position alone, which lets ACT skip halted positions (``packed_act.py``). Adding one is a
class here, a line in :data:`TRANSITIONS` and its name in ``UTConfig.transition``'s ``Literal``
(a test checks that the two lists agree).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import ConfigError
from .dropout import Dropout


class FeedForward(nn.Module):
    """Position-wise ``Linear(d, d_ff) -> ReLU -> Dropout -> Linear(d_ff, d)`` (the ``fc`` transition)."""

    pointwise = True

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor, padding: Tensor | None = None, state: dict | None = None) -> Tensor:
        h = F.relu(self.linear1(x))
        return self.linear2(self.dropout(h) if self.training else h)


def _conv_over_positions(
    h: Tensor, conv: nn.Conv1d, *, causal: bool, state: dict | None, key: str
) -> Tensor:
    """Depthwise ``conv`` over positions of ``h [B, C, L]``, keeping the length.

    Non-causal: centred (``w // 2`` zeros each side). Causal: ``w - 1`` zeros on the
    left, so no position sees a later one; with ``state`` (incremental decoding) the
    last ``w - 1`` inputs of earlier calls, kept under ``state[key]``, replace the zeros.
    """
    w = conv.kernel_size[0]
    if not causal:
        return conv(F.pad(h, (w // 2, w // 2)))
    if state is None:
        return conv(F.pad(h, (w - 1, 0)))
    previous = state.get(key)
    if previous is None:
        previous = h.new_zeros(h.shape[0], h.shape[1], w - 1)
    h = torch.cat((previous, h), dim=2)
    state[key] = h[:, :, h.shape[2] - (w - 1) :]
    return conv(h)


def _depthwise(channels: int, kernel_size: int, causal: bool) -> nn.Conv1d:
    if not causal and kernel_size % 2 == 0:
        raise ConfigError(f"conv_kernel_size must be odd for a sepconv transition over a whole sequence (an encoder), "
                          f"so that it is centred on each position; got {kernel_size}")
    return nn.Conv1d(channels, channels, kernel_size, groups=channels, bias=False)


def _zero_padding(x: Tensor, padding: Tensor | None) -> Tensor:
    """Padding positions set to zero, so that a convolution never carries them into real ones."""
    return x if padding is None else x.masked_fill(padding[..., None], 0.0)


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
        self.kernel_size = kernel_size
        self.causal = causal
        self.depthwise = _depthwise(d_model, kernel_size, causal)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor, padding: Tensor | None = None, state: dict | None = None) -> Tensor:
        """``x [B, L, d]``; ``padding [B, L]`` True at padding positions."""
        h = _conv_over_positions(_zero_padding(x, padding).transpose(1, 2), self.depthwise,
                                 causal=self.causal, state=state, key="conv")
        return self.linear2(self.dropout(F.relu(self.linear1(h.transpose(1, 2)))))


class SepConvT2TTransition(nn.Module):
    """tensor2tensor's separable-convolution transition (``sepconv_t2t``).

    Two separable convolutions with a ReLU between: ``depthwise Conv1d(d, 3) ->
    Linear(d, d_ff) -> ReLU -> Dropout -> depthwise Conv1d(d_ff, 5) -> Linear(d_ff, d)``,
    the layout of tensor2tensor's ``sepconv_relu_sepconv`` with kernels (3, 1) and (5, 1)
    as its Universal Transformer uses it: each position sees 1 neighbour on either side
    through the first convolution and 2 more through the second (3 in all; when causal,
    2 + 4 = 6 to the left).
    Padding positions are zeroed before each convolution. ``state`` keeps the last
    inputs of both convolutions for incremental decoding.
    """

    pointwise = False

    def __init__(
        self, d_model: int, d_ff: int, dropout: float = 0.0, causal: bool = False,
        kernel_sizes: tuple[int, int] = (3, 5),
    ) -> None:
        super().__init__()
        self.causal = causal
        self.depthwise1 = _depthwise(d_model, kernel_sizes[0], causal)
        self.pointwise1 = nn.Linear(d_model, d_ff)
        self.depthwise2 = _depthwise(d_ff, kernel_sizes[1], causal)
        self.pointwise2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor, padding: Tensor | None = None, state: dict | None = None) -> Tensor:
        """``x [B, L, d]``; ``padding [B, L]`` True at padding positions."""
        h = _conv_over_positions(_zero_padding(x, padding).transpose(1, 2), self.depthwise1,
                                 causal=self.causal, state=state, key="conv1")
        h = self.dropout(F.relu(self.pointwise1(h.transpose(1, 2))))
        h = _conv_over_positions(_zero_padding(h, padding).transpose(1, 2), self.depthwise2,
                                 causal=self.causal, state=state, key="conv2")
        return self.pointwise2(h.transpose(1, 2))


# Each transition by its config name: a builder of (d_model, d_ff, kernel_size, dropout, causal).
TRANSITIONS: dict[str, Callable[[int, int, int, float, bool], nn.Module]] = {
    "fc": lambda d_model, d_ff, kernel_size, dropout, causal: FeedForward(d_model, d_ff, dropout),
    "sepconv": lambda d_model, d_ff, kernel_size, dropout, causal: SepConvTransition(d_model, d_ff, kernel_size, dropout, causal),
    "sepconv_t2t": lambda d_model, d_ff, kernel_size, dropout, causal: SepConvT2TTransition(d_model, d_ff, dropout, causal),
}


def make_transition(kind: str, d_model: int, d_ff: int, *, kernel_size: int, dropout: float, causal: bool) -> nn.Module:
    """Build the transition named ``kind`` (one of :data:`TRANSITIONS`).

    ``kernel_size`` is the ``sepconv`` width; ``sepconv_t2t`` has tensor2tensor's fixed (3, 5).
    """
    if kind not in TRANSITIONS:
        raise ValueError(f"unknown transition {kind!r}; use one of {', '.join(map(repr, TRANSITIONS))}")
    return TRANSITIONS[kind](d_model, d_ff, kernel_size, dropout, causal)
