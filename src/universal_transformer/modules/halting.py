"""Per-position dynamic halting: ACT (Graves 2016) as the paper's Section 2.2 and Appendix B use it.

Read next to the paper's Listing 2, one step of the loop is::

    p        = halting probability of each position        (HaltingUnit: one per ACT type)
    w, state = act_step(p, state)                           (the accumulators of Listing 2)
    H^t      = step(H^{t-1} + P^t)                          (one block application)
    out      = accumulate(out, H^t, w)                      (weighted mean or weighted sum)
    H^t      = halted_state(H^{t-1}, H^t, running)          (copy: halted positions stay frozen)

Each variant is a small object or function behind one interface, picked once by
:class:`ACTPolicy` from the config: the halting unit (``basic``/``accumulated`` per
position, ``global`` per sequence, ``random`` noise), the accumulation rule, and the
halted-state rule (``copy``, the paper; ``transform``, the reference code).
:func:`dynamic_halting` is the dense loop (one :func:`full_width_step` per step);
:mod:`.packed_act` runs the same loop on the still-running positions only, once no row
runs whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor, nn

from ..config import UTConfig


@dataclass
class ACTState:
    """Accumulators of the halting loop, one entry per position (shape ``[B, L]``).

    ``halted`` is True once a position has halted (and from the start for padding). It
    equals Listing 2's ``not (halting_probability < 1)``; we keep it as a boolean
    rather than comparing floats.
    """

    halt_prob: Tensor
    remainders: Tensor
    n_updates: Tensor
    halted: Tensor

    @classmethod
    def start(cls, padding: Tensor | None, shape: torch.Size, like: Tensor) -> "ACTState":
        """All zeros; padding positions start halted so that they never count as running."""
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
    """One ACT update: the accumulator arithmetic of the paper's Listing 2, line by line.

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


# -- halting probabilities: one unit per ACT type ---------------------------------------


class HaltingUnit(nn.Module):
    """``p = sigmoid(Linear(d, 1)(x))`` per position (Listing 2, line 4), bias initialised to ``bias_init``.

    With ``normalize``, ``x`` is first LayerNorm-ed (the unit's own norm): in a pre-norm stack the
    step input is the raw residual stream, whose norm grows step by step, so that a fixed
    ``Linear`` reads a logit that drifts with depth (``act_halting_norm``, docs/design.md).
    """

    def __init__(self, d_model: int, bias_init: float = 1.0, normalize: bool = False) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model) if normalize else None
        self.linear = nn.Linear(d_model, 1)
        nn.init.constant_(self.linear.bias, bias_init)

    def read(self, x: Tensor) -> Tensor:
        """What the unit's linear layer reads: ``x``, or ``LayerNorm(x)`` with ``normalize``."""
        return x if self.norm is None else self.norm(x)

    def forward(self, x: Tensor, padding: Tensor | None = None) -> Tensor:
        """Halting probabilities ``[B, L]`` for step inputs ``x [B, L, d]``."""
        return torch.sigmoid(self.linear(self.read(x))).squeeze(-1)


class GlobalHaltingUnit(HaltingUnit):
    """One ``p`` per sequence, from the mean step input over its real positions.

    (tensor2tensor's ``global`` ACT instead averages the per-position probabilities,
    padding included; see docs/design.md.)
    """

    def forward(self, x: Tensor, padding: Tensor | None = None) -> Tensor:
        real = x.new_ones(x.shape[:-1]) if padding is None else (~padding).to(x.dtype)
        pooled = (self.read(x) * real[..., None]).sum(1) / real.sum(1, keepdim=True).clamp(min=1)
        return torch.sigmoid(self.linear(pooled)).expand(x.shape[:-1])


class RandomHaltingUnit(HaltingUnit):
    """Uniform noise for ``p`` (an ablation; its linear layer is kept but unused, so that
    checkpoints of every ACT type have the same tensors). Draws from torch's global RNG, like dropout."""

    def forward(self, x: Tensor, padding: Tensor | None = None) -> Tensor:
        return torch.rand(x.shape[:-1], dtype=x.dtype, device=x.device)


# -- how a step's output enters the result ----------------------------------------------


def weighted_mean(out: Tensor, transformed: Tensor, w: Tensor) -> Tensor:
    """``out = w * H^t + (1 - w) * out`` (Listing 2: the running interpolation of ``basic`` ACT)."""
    w = w[..., None]
    return w * transformed + (1.0 - w) * out


def weighted_sum(out: Tensor, transformed: Tensor, w: Tensor) -> Tensor:
    """``out = out + w * H^t`` (``accumulated`` ACT; Graves 2016's mean-field output)."""
    return out + w[..., None] * transformed


# -- what a halted position carries into the next step ----------------------------------


def copy_halted(state: Tensor, transformed: Tensor, running: Tensor) -> Tensor:
    """The paper (Section 2.2): once a position halts, its state is copied forward unchanged."""
    return torch.where(running[..., None], transformed, state)


def transform_halted(state: Tensor, transformed: Tensor, running: Tensor) -> Tensor:
    """The reference code: every position is transformed every step; only its output freezes."""
    return transformed


_UNITS: dict[str, type[HaltingUnit]] = {
    "basic": HaltingUnit, "accumulated": HaltingUnit, "global": GlobalHaltingUnit, "random": RandomHaltingUnit,
}
_ACCUMULATE = {"basic": weighted_mean, "accumulated": weighted_sum, "global": weighted_mean, "random": weighted_mean}
_HALTED_STATE = {"copy": copy_halted, "transform": transform_halted}

Accumulate = Callable[[Tensor, Tensor, Tensor], Tensor]
HaltedState = Callable[[Tensor, Tensor, Tensor], Tensor]


@dataclass(frozen=True)
class ACTPolicy:
    """The choices of one ACT variant: accumulation rule, halted-state rule, threshold and limits."""

    accumulate: Accumulate
    halted_state: HaltedState
    threshold: float
    max_steps: int
    halt_at_max_steps: bool = True
    min_steps: int = 1

    @classmethod
    def from_config(cls, config: UTConfig) -> "ACTPolicy":
        return cls(
            accumulate=_ACCUMULATE[config.act_type],
            halted_state=_HALTED_STATE[config.act_halted_state],
            threshold=1.0 - config.act_epsilon,
            max_steps=config.max_steps,
            halt_at_max_steps=config.act_halt_at_max_steps,
            min_steps=config.act_min_steps,
        )

    @property
    def copies_halted(self) -> bool:
        """Whether halted positions stay frozen (then they need no computation at all)."""
        return self.halted_state is copy_halted

    def force_halt(self, step: int) -> bool:
        return self.halt_at_max_steps and step == self.max_steps

    def halting_probability(self, halting: "HaltingFn", x: Tensor, step: int, floor: Tensor | None = None) -> Tensor:
        """``p`` of this step: the halting unit's, or 0 before ``min_steps`` (no position may halt yet).

        ``floor [B, L]`` raises the floor per position (e.g. one depth for a story's facts and
        another for its question): ``p`` is also 0 where ``step < floor``.
        """
        if step < self.min_steps:
            return x.new_zeros(x.shape[:2])
        p = halting(x)
        return p if floor is None else p.masked_fill(floor > step, 0.0)


def make_halting_unit(config: UTConfig) -> HaltingUnit:
    """The halting unit of ``config.act_type`` with ``config.act_bias_init`` (and ``act_halting_norm``)."""
    return _UNITS[config.act_type](config.d_model, config.act_bias_init, config.act_halting_norm)


StepInput = Callable[[Tensor, int], Tensor]  # (H^{t-1}, t) -> H^{t-1} + P^t
HaltingFn = Callable[[Tensor], Tensor]  # step input -> p [B, L]
Transform = Callable[[int, Tensor], Tensor]  # (t, step input) -> H^t for all positions


def dynamic_halting(
    h: Tensor,
    padding: Tensor | None,
    *,
    policy: ACTPolicy,
    step_input: StepInput,
    halting: HaltingFn,
    transform: Transform,
    all_steps: bool = False,
    floor: Tensor | None = None,
) -> tuple[Tensor, ACTState]:
    """The ACT loop over depth (Listing 1), every position computed at every step.

    Starts from ``h = H^0 [B, L, d]``; returns the weighted output and the final
    accumulators. The loop ends when every position has halted, unless ``all_steps``
    (a caller that needs every step, e.g. to fill a decoding cache). ``floor [B, L]``:
    the first step at which each position may halt (see ``ACTPolicy.halting_probability``).
    """
    state, out = h, torch.zeros_like(h)
    act = ACTState.start(padding, h.shape[:2], h)
    for step in range(1, policy.max_steps + 1):
        if not all_steps and bool(act.halted.all()):
            break
        x = step_input(state, step)
        p = policy.halting_probability(halting, x, step, floor)
        out, state, act = full_width_step(policy, step, p, act, transform(step, x), out, state)
    return out, act


def full_width_step(
    policy: ACTPolicy, step: int, p: Tensor, act: ACTState, transformed: Tensor, out: Tensor, state: Tensor
) -> tuple[Tensor, Tensor, ACTState]:
    """One step of the ACT loop over every position, given its ``p`` and ``H^t``: the new
    output, state and accumulators (Listing 1's body; also packed ACT's step while a row runs whole)."""
    running = ~act.halted
    w, act = act_step(p, act, policy.threshold, policy.force_halt(step))
    return policy.accumulate(out, transformed, w), policy.halted_state(state, transformed, running), act


__all__ = [
    "ACTPolicy", "ACTState", "GlobalHaltingUnit", "HaltingUnit", "RandomHaltingUnit", "act_step", "copy_halted",
    "dynamic_halting", "full_width_step", "make_halting_unit", "transform_halted", "weighted_mean", "weighted_sum",
]
