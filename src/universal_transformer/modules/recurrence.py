"""The recurrence over depth: one block applied for ``T`` steps, or per position with ACT.

:class:`RecurrentStack` is the UT encoder (non-causal, no cross-attention), the UT
decoder (causal, cross-attention), and the decoder-only LM (causal). With
``share_weights=False`` it holds ``T`` distinct blocks: the vanilla Transformer.

Halting (the paper's Section 2.2): the stack supplies its step to the ACT loop of
:mod:`.halting` (dense) or :mod:`.packed_act` (halted positions skipped; used with copy
semantics and a pointwise transition unless ``act_packed`` is switched off at run time).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from ..config import UTConfig
from .attention import KVCache, attention_mask
from .block import UTBlock
from .embedding import CoordinateEmbedding
from .halting import ACTPolicy, dynamic_halting, make_halting_unit
from .packed_act import FrozenKeyValues, packed_dynamic_halting


@dataclass
class HaltingStats:
    """Per-position halting statistics of one stack (``[B, L]``; zero at padding)."""

    n_updates: Tensor
    remainders: Tensor
    padding: Tensor | None = None

    @property
    def ponder_time(self) -> Tensor:
        """``n_updates + remainders`` per position: Graves' ponder time N + R, what the ponder
        cost averages. The paper's "ponder time" (its Section 3.1 and Figure 3) is the depth N
        alone, ``n_updates`` (docs/design.md)."""
        return self.n_updates + self.remainders

    def ponder_sum(self) -> tuple[Tensor, int]:
        """Sum of the ponder times over the real positions, and their count."""
        time = self.ponder_time
        if self.padding is None:
            return time.sum(), time.numel()
        return time.masked_fill(self.padding, 0.0).sum(), int((~self.padding).sum())

    @property
    def ponder_cost(self) -> Tensor:
        """Mean ponder time over non-padding positions (a scalar; Graves 2016's ponder cost)."""
        total, count = self.ponder_sum()
        return total / max(count, 1)


@dataclass
class StackOutput:
    hidden: Tensor
    halting: HaltingStats
    attentions: list[dict[str, Tensor]] | None = None


@dataclass
class StackCache:
    """What incremental decoding keeps between calls: per-step keys/values and conv inputs."""

    self_kv: list[KVCache]
    conv: list[dict]
    memory_kv: list[tuple[Tensor, Tensor]] | None = None
    memory_positions: Tensor | None = None  # [B, Lk] position ids of the memory (local attention)
    padding: Tensor | None = None
    length: int = 0
    # Position offsets of the rows ([B], or [B, S] one per step) when decoding continues
    # positions that do not start at 0 (offsets drawn at evaluation, training/offsets.py).
    position_offset: Tensor | None = None

    @classmethod
    def empty(cls, num_steps: int) -> "StackCache":
        return cls(self_kv=[KVCache() for _ in range(num_steps)], conv=[{} for _ in range(num_steps)])

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (in that order)."""
        for kv in self.self_kv:
            kv.reorder(index)
        for state in self.conv:
            for key, value in state.items():
                state[key] = value.index_select(0, index)
        if self.memory_kv is not None:
            self.memory_kv = [(k.index_select(0, index), v.index_select(0, index)) for k, v in self.memory_kv]
        if self.memory_positions is not None:
            self.memory_positions = self.memory_positions.index_select(0, index)
        if self.padding is not None:
            self.padding = self.padding.index_select(0, index)
        if self.position_offset is not None:
            self.position_offset = self.position_offset.index_select(0, index)


@dataclass
class _StepContext:
    """Everything a step needs that does not change over steps."""

    positions: Tensor | None  # [B, L] position ids given to the stack (None: 0..L-1 after the cache), or [B, S, L] per step
    position_signal: Tensor | None  # [B, L, d] (or [L, d] for 0..L-1 after the cache) their signal, once per forward;
    # [B, S, L, d] for positions given per step
    query_index: Tensor | None  # [L] sequence index of each new position (None when no mask needs it)
    key_index: Tensor | None  # [Lk] sequence index of each key (cache + new)
    key_padding: Tensor | None  # [B, Lk]
    self_mask: Tensor | None  # [B, 1, L, Lk] self-attention mask of all new positions (the same every step)
    padding: Tensor | None  # [B, L]
    memory_kv: list[tuple[Tensor, Tensor]] | None
    memory_mask: Tensor | None
    cache: StackCache | None
    need_weights: bool
    # Local attention (config.attention_window): position ids of the new positions [B, L], of
    # every self-attention key [B, Lk] and of the memory [B, Lm], to rebuild masks for packed rows.
    query_position: Tensor | None = None
    key_position: Tensor | None = None
    memory_position: Tensor | None = None
    memory_padding: Tensor | None = None
    act_floor: Tensor | None = None  # [B, L] first step at which each new position may halt (ACT only)
    attentions: list[dict[str, Tensor]] = field(default_factory=list)


def check_depth(steps: object) -> None:
    """Refuse a depth that is not a positive int: a float (or bool) would pass ``set_depth``
    and fail only inside the next forward's step loop."""
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"depth must be a positive number of steps, got {steps!r}")


class RecurrentStack(nn.Module):
    """A UT encoder/decoder: the block of eq. 4-5 applied over depth, with or without ACT."""

    def __init__(self, config: UTConfig, *, causal: bool, cross_attention: bool, num_steps: int | None = None) -> None:
        super().__init__()
        self.config = config
        self.causal = causal
        self.num_steps = num_steps or config.num_steps
        self.act = config.act
        self.total_steps = config.max_steps if config.act else self.num_steps
        n_blocks = 1 if config.share_weights else self.num_steps
        self.blocks = nn.ModuleList(
            UTBlock(
                config.d_model,
                config.num_heads,
                config.d_ff,
                dropout=config.dropout,
                attention_dropout=config.attention_dropout,
                norm=config.norm,
                transition=config.transition,
                kernel_size=config.conv_kernel_size,
                causal=causal,
                cross_attention=cross_attention,
            )
            for _ in range(n_blocks)
        )
        self.coordinates = CoordinateEmbedding(
            config.d_model,
            position=config.position_embedding,
            timestep=config.timestep_embedding,
            max_position=config.max_position,
            max_steps=self.total_steps,
        )
        self.halting = make_halting_unit(config) if config.act else None
        self.policy = ACTPolicy.from_config(config)
        self.final_norm = nn.LayerNorm(config.d_model) if config.norm == "pre" else None
        # Run-time choices (not architecture; see configure_runtime on the models).
        self.gradient_checkpointing = False
        self.act_packed = True
        # Local attention, the config's unless set at test time (configure_runtime on the models).
        self.attention_window = config.attention_window
        self.attention_window_scope = config.attention_window_scope

    @property
    def self_attention_window(self) -> int | None:
        """The window of this stack's self-attention: every stack's with scope ``all``; with
        ``source`` only a non-causal one's (an encoder's), not a decoder's over its own outputs."""
        return self.attention_window if self.attention_window_scope == "all" or not self.causal else None

    def set_depth(self, steps: int) -> None:
        """Run ``steps`` recurrent steps from now on (with ACT: at most ``steps``).

        Shared weights make any depth a valid model; the timestep signal of steps beyond
        the training depth is the sinusoid's continuation (a learned timestep table repeats
        its last row). The untied Transformer has no weights for extra layers: refused.
        """
        check_depth(steps)
        if len(self.blocks) > 1 and steps != len(self.blocks):
            raise ValueError(f"an untied stack has {len(self.blocks)} layers; its depth cannot change to {steps}")
        # As the config refuses act_min_steps > max_steps: no position could halt by its own
        # choice, and without halt_at_max_steps none would halt at all.
        if self.act and steps < self.policy.min_steps:
            raise ValueError(f"depth {steps} is below ACT's floor (act_min_steps={self.policy.min_steps}): "
                             "no position may halt before that step")
        if self.act:
            self.policy = dataclasses.replace(self.policy, max_steps=steps)
        else:
            self.num_steps = steps
        self.total_steps = steps

    def block(self, step: int) -> UTBlock:
        """The block of step ``step`` (1-based): the shared one, or that layer's own."""
        return self.blocks[0] if len(self.blocks) == 1 else self.blocks[step - 1]

    def signal(self, positions: Tensor | None, step: int, position_signal: Tensor | None = None) -> Tensor | None:
        """``P^t`` for ``positions [B, L]`` (eq. 6-7); position only at step 1 unless every step.

        ``position_signal`` is the position part if already computed. Positions given per step,
        ``[B, S, L]`` (random offsets drawn anew at every step, as tensor2tensor's
        ``position_start_index="random"``), and their signal ``[B, S, L, d]``, give step ``t``
        its slice ``t - 1``.
        """
        time = self.coordinates.timestep(step)
        pos = None
        if step == 1 or self.config.embed_every_step:
            pos = position_signal if position_signal is not None else self.coordinates.position(positions)
            if pos is not None and positions is not None and positions.dim() == 3:
                pos = pos[:, step - 1]
        if pos is None:
            return time
        return pos if time is None else pos + time

    def new_cache(self) -> StackCache:
        return StackCache.empty(self.total_steps)

    def forward(
        self,
        h: Tensor,
        *,
        padding: Tensor | None = None,
        positions: Tensor | None = None,
        memory: Tensor | None = None,
        memory_padding: Tensor | None = None,
        memory_positions: Tensor | None = None,
        cache: StackCache | None = None,
        need_weights: bool = False,
        act_floor: Tensor | None = None,
        masked_keys: Tensor | None = None,
    ) -> StackOutput:
        """Run the recurrence on embedded inputs ``h = H^0 [B, L, d]``.

        ``padding [B, L]`` is True at padding positions; ``masked_keys [B, L]`` at positions
        that no position attends to but that run like any other (not with a cache:
        tensor2tensor's bAbI stories, whose empty slots are computed); ``positions [B, L]`` are the
        position ids (default ``0..L-1``, after the cached ones, shifted by the cache's
        ``position_offset`` if it has one), or ``[B, S, L]`` one set per step for at least the
        ``S >= total_steps`` steps the stack may run (not with a cache: there they come from
        its offsets); ``memory`` is the encoder output for cross-attention, ``memory_positions
        [B, Lm]`` its position ids (default ``0..Lm-1``; read only with ``config.attention_window``,
        kept in ``cache``); ``cache`` enables incremental decoding. ``act_floor [B, L]`` (ACT
        only) is a floor under each position's depth: no position halts before its step
        (``config.act_min_steps`` still applies to all).
        """
        if act_floor is not None:
            if not self.act:
                raise ValueError("act_floor sets where ACT may halt, but this stack has act=False")
            if act_floor.shape != h.shape[:2]:
                raise ValueError(f"act_floor must have shape {tuple(h.shape[:2])} (one step per position), "
                                 f"got {tuple(act_floor.shape)}")
        b, n, _ = h.shape
        start = cache.length if cache is not None else 0
        if cache is not None and positions is not None:
            raise ValueError("with a decoding cache positions continue the cached ones (cache.position_offset + index)")
        if cache is not None and cache.position_offset is not None:
            positions = cache.position_offset.unsqueeze(-1) + torch.arange(start, start + n, device=h.device)
        if positions is not None and positions.dim() == 3 and positions.shape[1] < self.total_steps:
            raise ValueError(f"positions for {positions.shape[1]} steps, but the stack may run {self.total_steps} steps")
        # Sequence indices build causal masks; one new token after the cache needs none (it
        # sees every key), so incremental decoding without ACT skips them.
        indexed = self.act or (self.causal and n > 1)
        query_index = torch.arange(start, start + n, device=h.device) if indexed else None
        key_index = torch.arange(start + n, device=h.device) if indexed else None
        if positions is None:
            position_signal = self.coordinates.position_span(start, n)  # [n, d], broadcast over rows
        else:
            position_signal = self.coordinates.position(positions)
        window = self.attention_window
        query_position = key_position = memory_position = None
        if window is not None:
            if positions is not None and positions.dim() == 3:
                raise ValueError("attention_window needs one set of positions per stack, not positions drawn per step")
            query_position = positions if positions is not None else torch.arange(start, start + n, device=h.device).expand(b, n)
            key_position = query_position
            if cache is not None:
                offset = cache.position_offset.unsqueeze(-1) if cache.position_offset is not None else 0
                key_position = (offset + torch.arange(start + n, device=h.device)).expand(b, start + n)
        key_padding = padding
        if masked_keys is not None:
            if cache is not None:
                raise ValueError("masked_keys are for a whole sequence at once, not with a decoding cache")
            key_padding = masked_keys if padding is None else padding | masked_keys
        if cache is not None:
            if padding is not None or cache.padding is not None:
                old = cache.padding if cache.padding is not None else torch.zeros(b, start, dtype=torch.bool, device=h.device)
                new = padding if padding is not None else torch.zeros(b, n, dtype=torch.bool, device=h.device)
                cache.padding = torch.cat((old, new), dim=1)
                key_padding = cache.padding
            cache.length += n
        memory_kv = None
        if memory is not None or (cache is not None and cache.memory_kv is not None):
            if cache is not None and cache.memory_kv is not None:
                memory_kv = cache.memory_kv
            else:
                memory_kv = [blk.memory_kv(memory) for blk in self.blocks]
                if cache is not None:
                    cache.memory_kv = memory_kv
                    cache.memory_positions = memory_positions
            if window is not None:
                if cache is not None and memory is None:
                    memory_positions = cache.memory_positions
                length = memory_kv[0][0].shape[2]
                memory_position = (memory_positions if memory_positions is not None
                                   else torch.arange(length, device=h.device).expand(b, length))
        ctx = _StepContext(
            positions=positions,
            position_signal=position_signal,
            query_index=query_index,
            key_index=key_index,
            key_padding=key_padding,
            # One new token after the cache sees every key: no causal mask to build.
            self_mask=attention_mask(
                key_padding, causal=self.causal and n > 1,
                query_index=query_index.expand(b, n) if query_index is not None else None, key_index=key_index,
                window=self.self_attention_window, query_position=query_position, key_position=key_position,
            ),
            padding=padding,
            memory_kv=memory_kv,
            memory_mask=attention_mask(memory_padding, window=window if memory_position is not None else None,
                                       query_position=query_position, key_position=memory_position),
            cache=cache,
            need_weights=need_weights,
            query_position=query_position,
            key_position=key_position,
            memory_position=memory_position,
            memory_padding=memory_padding,
            act_floor=act_floor,
        )
        if self.act:
            hidden, stats = self._act(h, ctx)
        else:
            hidden, stats = self._fixed(h, ctx)
        if self.final_norm is not None:
            hidden = self.final_norm(hidden)
        return StackOutput(hidden, stats, ctx.attentions if need_weights else None)

    # -- fixed number of steps -------------------------------------------------------

    def _fixed(self, h: Tensor, ctx: _StepContext) -> tuple[Tensor, HaltingStats]:
        for step in range(1, self.num_steps + 1):
            h = self._step(step, self._step_input(h, ctx, step), ctx)
        steps = h.new_full(h.shape[:2], float(self.num_steps))
        if ctx.padding is not None:
            steps = steps.masked_fill(ctx.padding, 0.0)
        return h, HaltingStats(steps, torch.zeros_like(steps), ctx.padding)

    def _step_input(self, h: Tensor, ctx: _StepContext, step: int) -> Tensor:
        p = self.signal(ctx.positions, step, ctx.position_signal)
        return h if p is None else h + p.to(h.dtype)

    def _step(
        self,
        step: int,
        x: Tensor,
        ctx: _StepContext,
        rows: Tensor | None = None,
        valid: Tensor | None = None,
        kv: tuple[Tensor, Tensor] | None = None,
    ) -> Tensor:
        """One block application: keys/values from all of ``x`` (or ``kv``), queries from ``rows`` of it."""
        given_kv = kv
        blk = self.block(step)
        xq = x if rows is None else x.gather(1, rows[..., None].expand(-1, -1, x.shape[-1]))
        memory_mask = ctx.memory_mask
        if rows is None:
            mask = ctx.self_mask
        else:  # packed ACT: the rows still running at this step
            window = self.attention_window
            query_position = ctx.query_position.gather(1, rows) if ctx.query_position is not None else None
            mask = attention_mask(
                ctx.key_padding, causal=self.causal, query_index=ctx.query_index[rows], key_index=ctx.key_index,
                query_valid=valid, window=self.self_attention_window, query_position=query_position,
                key_position=ctx.key_position,
            )
            if ctx.memory_position is not None:
                memory_mask = attention_mask(ctx.memory_padding, query_valid=valid, window=window,
                                             query_position=query_position, key_position=ctx.memory_position)
        memory_kv = ctx.memory_kv[0 if len(ctx.memory_kv) == 1 else step - 1] if ctx.memory_kv is not None else None
        conv_state = ctx.cache.conv[step - 1] if ctx.cache is not None else None
        kv_cache = ctx.cache.self_kv[step - 1] if ctx.cache is not None else None
        padding = ctx.padding if rows is None else None

        def run(x: Tensor, xq: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
            kv = None  # every row is a query: the block projects queries, keys and values together
            if rows is not None or given_kv is not None:
                kv = blk.self_kv(x) if given_kv is None else given_kv
                if kv_cache is not None:
                    kv = kv_cache.append(*kv)
            return blk(
                xq, kv, mask, kv_cache=kv_cache if kv is None else None, memory_kv=memory_kv,
                memory_mask=memory_mask, padding=padding, conv_state=conv_state, need_weights=ctx.need_weights,
            )

        if self.gradient_checkpointing and self.training and torch.is_grad_enabled() and ctx.cache is None:
            out, weights = checkpoint(run, x, xq, use_reentrant=False)
        else:
            out, weights = run(x, xq)
        if ctx.need_weights:
            ctx.attentions.append(weights)
        return out

    # -- dynamic halting (ACT) -------------------------------------------------------

    def uses_packed_act(self, need_weights: bool = False) -> bool:
        """Whether ACT runs packed (halted positions skipped): copy semantics, a pointwise
        transition, ``act_packed`` on, and no attention weights asked for."""
        return (
            self.act and self.act_packed and self.policy.copies_halted
            and self.blocks[0].pointwise and not need_weights
        )

    def _act(self, h: Tensor, ctx: _StepContext) -> tuple[Tensor, HaltingStats]:
        assert self.halting is not None
        halting = self.halting
        common = dict(
            policy=self.policy,
            step_input=lambda state, step: self._step_input(state, ctx, step),
            halting=lambda x: halting(x, ctx.padding),
            floor=ctx.act_floor,
        )
        if self.uses_packed_act(ctx.need_weights):
            cfg = self.config
            # Post-norm attends over X itself, which is linear in the timestep signal: frozen
            # positions then need no new key/value projection (see FrozenKeyValues). Not when
            # the positions too change from step to step (offsets drawn per step).
            per_step_positions = ctx.positions is not None and ctx.positions.dim() == 3
            frozen = FrozenKeyValues() if cfg.norm == "post" and cfg.embed_every_step and not per_step_positions else None
            out, act = packed_dynamic_halting(
                h, ctx.padding, **common,
                transform_rows=lambda step, x, rows, valid, kv: self._step(step, x, ctx, rows=rows, valid=valid, kv=kv),
                key_values=(lambda step, x, fresh: frozen(self.block(step), x, self.coordinates.timestep(step), fresh))
                if frozen is not None else None,
                idle=self._cache_filler(ctx) if ctx.cache is not None else None,
            )
        else:
            out, act = dynamic_halting(
                h, ctx.padding, **common, transform=lambda step, x: self._step(step, x, ctx),
                all_steps=ctx.cache is not None,  # later tokens need keys/values at every step
            )
        return out, HaltingStats(act.n_updates, act.remainders, ctx.padding)

    def _cache_filler(self, ctx: _StepContext):
        """For steps after every new position has halted: only this step's keys/values, for the cache."""
        cache = ctx.cache
        assert cache is not None

        def fill(step: int, x: Tensor, kv: tuple[Tensor, Tensor] | None) -> None:
            cache.self_kv[step - 1].append(*(kv if kv is not None else self.block(step).self_kv(x)))

        return fill
