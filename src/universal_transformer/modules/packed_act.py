"""Packed ACT: the loop of :func:`.halting.dynamic_halting`, computing only the running positions.

With copy semantics (the paper's Section 2.2) a halted position's state is frozen, so
recomputing it is waste. Once every row has a halted (or padding) position, each step
gathers the still-running positions of every row to the left (``[B, max running, d]``)
and runs queries, attention output and transition on them alone; all positions still
serve as keys and values. A step in which some row still runs whole (the first, as a
rule) is the dense loop's step, since packing would save nothing there. The results equal
the dense loop's up to float rounding (tests/modules/test_packed_act.py checks outputs,
halting statistics and gradients). It needs a pointwise transition (one whose class sets
``pointwise = True``, as ``fc`` does): a convolution needs its neighbours.

The caller supplies the step as functions, so this module knows nothing of blocks or
caches: ``transform_rows`` applies the block to the chosen rows, ``key_values`` may
supply this step's self-attention keys/values (see :class:`FrozenKeyValues`), and
``idle`` is called for steps after every position has halted when the caller needs
every step (a decoding cache).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from .block import UTBlock
from .halting import ACTPolicy, ACTState, HaltingFn, StepInput, act_step, full_width_step

KeyValues = tuple[Tensor, Tensor]
TransformRows = Callable[[int, Tensor, "Tensor | None", "Tensor | None", "KeyValues | None"], Tensor]  # (t, x, rows, valid, kv)
KeyValuesFn = Callable[[int, Tensor, "Tensor | None"], KeyValues]  # (t, x, rows updated at t-1)
Idle = Callable[[int, Tensor, "KeyValues | None"], None]  # (t, x, kv)


def packed_dynamic_halting(
    h: Tensor,
    padding: Tensor | None,
    *,
    policy: ACTPolicy,
    step_input: StepInput,
    halting: HaltingFn,
    transform_rows: TransformRows,
    key_values: KeyValuesFn | None = None,
    idle: Idle | None = None,
    floor: Tensor | None = None,
) -> tuple[Tensor, ACTState]:
    """The ACT loop with halted positions skipped; same inputs and results as ``dynamic_halting``.

    ``transform_rows(t, x, rows, valid, kv)`` returns ``H^t`` at positions ``rows [B, W]``
    of the step input ``x [B, L, d]`` (slots with ``valid`` False hold no running
    position; their output is discarded), or at every position when ``rows`` and ``valid``
    are None (a step in which some row still runs whole).
    """
    if not policy.copies_halted:
        raise ValueError("packed ACT needs copy semantics (act_halted_state='copy'): transformed halted states change")
    state, out = h, torch.zeros_like(h)
    act = ACTState.start(padding, h.shape[:2], h)
    fresh: Tensor | None = None  # the rows whose state changed in the previous step
    for step in range(1, policy.max_steps + 1):
        all_halted = bool(act.halted.all())
        if all_halted and idle is None:
            break
        x = step_input(state, step)
        kv = key_values(step, x, fresh) if key_values is not None else None
        if all_halted:
            idle(step, x, kv)  # type: ignore[misc]
            fresh = torch.zeros(x.shape[0], 0, dtype=torch.long, device=x.device)
            continue
        p = policy.halting_probability(halting, x, step, floor)
        running = ~act.halted
        width = int(running.sum(1).max())
        if width == running.shape[1]:
            # Some row runs whole (the first step, as a rule): packing saves nothing, and
            # its gathers and scatters cost up to a quarter of a small model's step.
            # The dense loop's step instead.
            out, state, act = full_width_step(policy, step, p, act, transform_rows(step, x, None, None, kv), out, state)
            fresh = None  # every row may have changed: keys/values projected anew
            continue
        rows = torch.argsort(act.halted.to(torch.int8), dim=1, stable=True)[:, :width]
        valid = running.gather(1, rows)
        w, part = act_step(p.gather(1, rows), act.gather(rows), policy.threshold, policy.force_halt(step))
        act = act.scatter(rows, part)  # slots holding halted positions write back unchanged values
        transformed = transform_rows(step, x, rows, valid, kv)
        index = rows[..., None].expand(-1, -1, x.shape[-1])
        new_out = policy.accumulate(out.gather(1, index), transformed, w)  # w = 0 in invalid slots
        new_state = torch.where(valid[..., None], transformed, state.gather(1, index))
        state, out = state.scatter(1, index, new_state), out.scatter(1, index, new_out)
        fresh = rows
    return out, act


class FrozenKeyValues:
    """Self-attention keys/values of every position, projected anew only where the state changed.

    With post-norm, keys/values are ``kv_proj(X^t)`` and ``X^t = H^{t-1} + pos + time_t``
    (eq. 5), so ``kv_proj(X^t) = kv_proj(H^{t-1} + pos) + W_kv time_t``. A halted
    position's state is frozen: its ``kv_proj(H + pos)`` is kept as ``base`` and only the
    timestep term ``W_kv time_t`` (one vector per step) moves. Positions updated in the
    previous step are projected exactly. Halted positions thus cost an addition
    instead of a ``d x 2d`` projection per step.
    """

    def __init__(self) -> None:
        self.base: Tensor | None = None

    def __call__(self, blk: UTBlock, x: Tensor, time: Tensor | None, fresh_rows: Tensor | None) -> KeyValues:
        proj = blk.self_attn.kv_proj
        shift = None if time is None else time.to(x.dtype) @ proj.weight.t()
        if self.base is None or fresh_rows is None:
            kv = proj(x)
            self.base = kv if shift is None else kv - shift
        else:
            rows = fresh_rows[..., None]
            fresh = proj(x.gather(1, rows.expand(-1, -1, x.shape[-1])))
            self.base = self.base.scatter(1, rows.expand(-1, -1, fresh.shape[-1]), fresh if shift is None else fresh - shift)
            kv = self.base if shift is None else self.base + shift
        return blk.self_attn.split_kv(kv)


__all__ = ["FrozenKeyValues", "packed_dynamic_halting"]
