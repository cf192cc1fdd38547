"""The coordinate embedding of the paper's eq. 6-7: a position signal plus a timestep signal."""

from __future__ import annotations

import torch
from torch import Tensor, nn


def sinusoid(index: Tensor, d_model: int, dtype: torch.dtype | None = None) -> Tensor:
    """``S[.., 2j] = sin(i / 10000^(2j/d))``, ``S[.., 2j+1] = cos(i / 10000^(2j/d))`` (eq. 6-7).

    ``index`` is any integer or float tensor; the result has one more dimension of size ``d``.
    Computed in float64 and rounded once to ``dtype`` (default: the default dtype), so large
    positions stay accurate.
    """
    j = torch.arange(0, d_model, 2, dtype=torch.float64, device=index.device)
    angle = index.to(torch.float64)[..., None] / torch.pow(10000.0, j / d_model)
    out = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(-2)
    return out.to(dtype or torch.get_default_dtype())


class CoordinateEmbedding(nn.Module):
    """``P^t[i] = position(i) + timestep(t)`` (eq. 6-7), added to the state at every step.

    Positions count from 0 (as in tensor2tensor; eq. 6-7 start them at 1), timesteps from 1
    (as eq. 6-7; tensor2tensor starts them at 0). Either signal may be
    ``"sinusoid"`` (fixed, default), ``"learned"`` or ``"none"``. Both are additive, which the
    ACT loop relies on: the timestep part is one vector per step, shared by all positions.
    """

    def __init__(
        self,
        d_model: int,
        *,
        position: str = "sinusoid",
        timestep: str = "sinusoid",
        max_position: int = 1024,
        max_steps: int = 8,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.position_kind = position
        self.timestep_kind = timestep
        self.max_position = max_position
        self.max_steps = max_steps
        self.position_table = nn.Embedding(max_position, d_model) if position == "learned" else None
        self.timestep_table = nn.Embedding(max_steps, d_model) if timestep == "learned" else None
        for table in (self.position_table, self.timestep_table):
            if table is not None:
                nn.init.normal_(table.weight, std=d_model**-0.5)
        # Fixed sinusoids, computed once and indexed (not saved with the weights); they grow
        # on demand, so positions are not limited by max_position. Always rounded once from
        # float64 to the tables' dtype (see _apply), never cast from another rounding.
        self.register_buffer("_sin_positions", sinusoid(torch.arange(max_position), d_model), persistent=False)
        self.register_buffer("_sin_steps", sinusoid(torch.arange(max_steps + 1), d_model), persistent=False)

    def _apply(self, fn, *args, **kwargs):  # type: ignore[override]
        """``.double()``, ``.to(dtype)``, ...: recompute the sinusoid tables in the new dtype.

        A plain cast would carry the old dtype's rounding (float32 tables cast to float64
        are only float32-accurate).
        """
        dtype = self._sin_positions.dtype
        super()._apply(fn, *args, **kwargs)
        if self._sin_positions.dtype != dtype:
            self._sin_positions = self._table(self._sin_positions.shape[0], self._sin_positions)
            self._sin_steps = self._table(self._sin_steps.shape[0], self._sin_steps)
        return self

    def _table(self, rows: int, like: Tensor) -> Tensor:
        """Sinusoids of ``0..rows-1`` in ``like``'s dtype and on its device.

        A table that grows during generation (``torch.inference_mode``) must not become an
        inference tensor: training later in the same process could not save it for backward.
        """
        with torch.inference_mode(False), torch.no_grad():
            return sinusoid(torch.arange(rows, device=like.device), self.d_model, like.dtype)

    def position(self, index: Tensor) -> Tensor | None:
        """Position signal for integer positions ``index`` (any shape), or None if disabled."""
        if self.position_kind == "none":
            return None
        if index.numel() and int(index.min()) < 0:
            # The sinusoid table would read -i as its i-th row from the end, a far position,
            # without a word (and the learned table fail with a bare IndexError).
            raise ValueError(f"position {int(index.min())} is negative: positions, offsets included, count from 0")
        if self.position_table is not None:
            if int(index.max()) >= self.max_position:
                raise ValueError(
                    f"position {int(index.max())} exceeds max_position={self.max_position} "
                    "of the learned position embedding; raise max_position in the config"
                )
            return self.position_table(index)
        needed = int(index.max()) + 1 if index.numel() else 0
        if needed > self._sin_positions.shape[0]:
            self._sin_positions = self._table(max(needed, 2 * self._sin_positions.shape[0]), self._sin_positions)
        return self._sin_positions[index]  # the tables follow the module's dtype (_apply)

    def position_span(self, start: int, length: int) -> Tensor | None:
        """Position signal ``[length, d]`` of positions ``start .. start+length-1``, the same for
        every row (a slice of the table: no lookup; what incremental decoding needs), or None."""
        if self.position_kind == "none":
            return None
        end = start + length
        if self.position_table is not None:
            if end > self.max_position:
                raise ValueError(
                    f"position {end - 1} exceeds max_position={self.max_position} "
                    "of the learned position embedding; raise max_position in the config"
                )
            return self.position_table.weight[start:end]
        if end > self._sin_positions.shape[0]:
            self._sin_positions = self._table(max(end, 2 * self._sin_positions.shape[0]), self._sin_positions)
        return self._sin_positions[start:end]  # the tables follow the module's dtype (_apply)

    def timestep(self, step: int) -> Tensor | None:
        """Timestep signal ``[d]`` for step ``step`` (1-based), or None if disabled."""
        if self.timestep_kind == "none":
            return None
        if self.timestep_table is not None:
            # Steps beyond the trained depth (test-time depth) reuse the last learned vector.
            return self.timestep_table.weight[min(step, self.max_steps) - 1]
        if step >= self._sin_steps.shape[0]:
            self._sin_steps = self._table(2 * step, self._sin_steps)
        return self._sin_steps[step]


class TokenEmbedding(nn.Module):
    """Token embedding ``H^0``, scaled by ``sqrt(d)`` (as in Vaswani et al. 2017, where it is tied with the softmax weights).

    :meth:`logits` is the output layer ``O h`` with ``O`` tied to this table.
    """

    def __init__(self, vocab_size: int, d_model: int, *, scale: bool = True, pad_id: int | None = None) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
        nn.init.normal_(self.weight, std=d_model**-0.5)
        self.scale = d_model**0.5 if scale else 1.0
        self.pad_id = pad_id

    def forward(self, tokens: Tensor) -> Tensor:
        return nn.functional.embedding(tokens, self.weight) * self.scale

    def logits(self, h: Tensor) -> Tensor:
        return h @ self.weight.t()
