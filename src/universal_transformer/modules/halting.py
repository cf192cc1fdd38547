"""Per-position dynamic halting (ACT, Graves 2016) as SPEC section 2 states it."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn


@dataclass
class ACTState:
    """Accumulators of the halting loop, one entry per position (shape ``[B, L]``).

    ``halted`` is True once a position has halted (and from the start for padding).
    It equals SPEC's ``not (halt_prob < 1)``; we keep it as a boolean rather than
    comparing floats.
    """

    halt_prob: Tensor
    remainders: Tensor
    n_updates: Tensor
    halted: Tensor

    @classmethod
    def start(cls, padding: Tensor | None, shape: torch.Size, like: Tensor) -> "ACTState":
        """All zeros; padding positions start halted so they never count as running (SPEC)."""
        halted = padding.clone() if padding is not None else torch.zeros(shape, dtype=torch.bool, device=like.device)
        zeros = like.new_zeros(shape)
        return cls(halt_prob=halted.to(like.dtype), remainders=zeros, n_updates=zeros.clone(), halted=halted)

    def gather(self, index: Tensor) -> "ACTState":
        return ACTState(*(t.gather(1, index) for t in self._tensors()))

    def scatter(self, index: Tensor, part: "ACTState") -> "ACTState":
        """A copy with the entries at ``index`` replaced by ``part`` (out of place, for autograd)."""
        return ACTState(*(full.scatter(1, index, new) for full, new in zip(self._tensors(), part._tensors())))

    def _tensors(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        return self.halt_prob, self.remainders, self.n_updates, self.halted


def act_step(p: Tensor, state: ACTState, threshold: float, force_halt: bool = False) -> tuple[Tensor, ACTState]:
    """One ACT update (SPEC section 2, transcribed line by line).

    ``p`` is the halting probability of this step for every position. With
    ``force_halt`` (the last allowed step, Graves' ``N = min(.., max_steps)``), every
    running position halts now and takes its remainder, so that its halting weights
    sum to 1 (the reference code instead leaves them short of 1).

    Returns the update weight ``w`` of this step (0 for positions halted earlier) and
    the new state.
    """
    running = ~state.halted
    running_f = running.to(p.dtype)
    reach = state.halt_prob + p * running_f
    new_halted = (reach > threshold) & running
    if force_halt:
        new_halted = running
    still_running = running & ~new_halted
    still_f, new_f = still_running.to(p.dtype), new_halted.to(p.dtype)
    halt_prob = state.halt_prob + p * still_f
    remainders = state.remainders + new_f * (1.0 - halt_prob)
    halt_prob = halt_prob + new_f * remainders
    n_updates = state.n_updates + still_f + new_f
    w = p * still_f + new_f * remainders
    return w, ACTState(halt_prob, remainders, n_updates, state.halted | new_halted)


class HaltingUnit(nn.Module):
    """``p = sigmoid(Linear(d, 1)(state))`` with a configurable bias init (SPEC: +1.0).

    ``act_type`` selects how ``p`` is made: ``basic``/``accumulated`` per position,
    ``global`` one value per sequence (from the mean state over real positions),
    ``random`` uniform noise (an ablation; the linear layer is unused).
    """

    def __init__(self, d_model: int, act_type: str = "basic", bias_init: float = 1.0) -> None:
        super().__init__()
        self.act_type = act_type
        self.linear = nn.Linear(d_model, 1)
        nn.init.constant_(self.linear.bias, bias_init)

    def forward(self, x: Tensor, padding: Tensor | None = None) -> Tensor:
        """Halting probabilities ``[B, L]`` for states ``x [B, L, d]``."""
        if self.act_type == "random":
            return torch.rand(x.shape[:-1], dtype=x.dtype, device=x.device)
        if self.act_type == "global":
            real = x.new_ones(x.shape[:-1]) if padding is None else (~padding).to(x.dtype)
            pooled = (x * real[..., None]).sum(1) / real.sum(1, keepdim=True).clamp(min=1)
            return torch.sigmoid(self.linear(pooled)).expand(x.shape[:-1])
        return torch.sigmoid(self.linear(x)).squeeze(-1)
