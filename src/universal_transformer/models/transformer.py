"""The Universal Transformer models: encoder-decoder, decoder-only LM, encoder classifier.

Each is built from :class:`~universal_transformer.modules.recurrence.RecurrentStack`;
``UTConfig(share_weights=False, ...)`` (see :func:`~universal_transformer.config.transformer_config`)
turns any of them into the vanilla Transformer baseline.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..config import ConfigError, UTClassifierConfig, UTConfig, check_attention_window
from ..modules.dropout import Dropout
from ..modules.embedding import TokenEmbedding
from ..modules.initialisation import init_tensor2tensor_
from ..objective import compute_loss, loss_dtype, ponder_cost, ponder_weight
from ..modules.recurrence import RecurrentStack, StackCache, StackOutput, check_depth
from .base import LanguageModelDecoding, ModelOutput, PretrainedModel

_KEEP = object()  # configure_runtime: leave this choice as it is


@dataclass
class DecodingState:
    """Incremental decoding state: the decoder's cache (holding the encoder memory, if any)."""

    cache: StackCache
    memory_padding: Tensor | None = None

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search), in place."""
        self.cache.reorder(index)
        if self.memory_padding is not None:
            self.memory_padding = self.memory_padding.index_select(0, index)


class _UTBase(PretrainedModel):
    config_class = UTConfig
    config: UTConfig
    # Whether the model reads config.position_restart_id (a source to restart positions in).
    restarts_positions = False

    def __init__(self, config: UTConfig) -> None:
        super().__init__()
        self._set_config(config)
        if config.position_restart_id is not None and not self.restarts_positions:
            raise ConfigError(f"position_restart_id restarts an encoder-decoder's source positions; "
                              f"{type(self).__name__} has no source")
        # Read only by an encoder-decoder's decoder; elsewhere it would be ignored without a word.
        if config.decoder_num_steps is not None and not self.is_encoder_decoder:
            raise ConfigError(f"decoder_num_steps sets the depth of an encoder-decoder's decoder; "
                              f"{type(self).__name__} has one stack, of num_steps ({config.num_steps}) steps")
        self._check_window(config.attention_window, config.attention_window_scope)
        self.embedding_dropout = Dropout(config.embedding_dropout)

    def post_init(self) -> None:
        """Re-initialise the weights as ``config.weight_init`` says: the last line of every
        model's ``__init__``, once all its layers exist (a subclass that adds layers calls
        it again at its own end, which re-draws them all)."""
        if self.config.weight_init == "tensor2tensor":
            init_tensor2tensor_(self)

    @staticmethod
    def _positions(
        tokens: Tensor, offset: Tensor | None, per_step: bool = False, restart_id: int | None = None
    ) -> Tensor | None:
        """Position ids ``offset + 0..L-1`` per example (``offset [B]``), or None for ``0..L-1``;
        with ``per_step`` (a stack of an encoder-decoder) also ``[B, S, L]``, one set per
        recurrent step, for ``offset [B, S]``. With ``restart_id`` the count starts again at 0
        after each such token (the token itself ends the count before it).

        Random offsets are a training-time augmentation (the paper's Section 3.4): the
        trainer draws them and passes them in, so a forward pass is a pure function of
        its inputs and weights. An encoder-decoder shifts source and target of an
        example by the same offset, so positions still align them, unless it is given
        separate ones (see :meth:`UniversalTransformer.forward`).
        """
        index = None
        if restart_id is not None:
            index = torch.arange(tokens.shape[1], device=tokens.device).expand(tokens.shape[0], -1)
            marks = torch.where(tokens == restart_id, index, torch.full_like(index, -1))
            # The last restart token strictly before each position (-1: none).
            before = torch.cat((marks.new_full((tokens.shape[0], 1), -1), marks[:, :-1].cummax(dim=1).values), dim=1)
            index = index - before - 1
        if offset is None:
            return index
        if not (offset.dim() == 1 or (per_step and offset.dim() == 2)):
            raise ValueError(
                f"position offsets of shape {tuple(offset.shape)}: a model with one stack takes one offset per "
                "example [B] (separate source and target offsets, train.position_offset_per=stack or step, need "
                "an encoder-decoder)"
            )
        if index is None:
            index = torch.arange(tokens.shape[1], device=tokens.device)  # broadcast over the rows
        elif offset.dim() == 2:
            index = index.unsqueeze(1)  # [B, 1, L] against [B, S, 1]
        return offset.to(tokens.device).unsqueeze(-1) + index

    def _padding(self, tokens: Tensor) -> Tensor | None:
        padding = tokens == self.config.pad_id
        return padding if bool(padding.any()) else None

    def configure_runtime(
        self,
        *,
        act_packed: bool | None = None,
        gradient_checkpointing: bool | None = None,
        depth: int | None = None,
        attention_window: int | None | object = _KEEP,
        attention_window_scope: str | object = _KEEP,
    ) -> None:
        """Execution choices, not part of the config.

        ``act_packed``: skip halted positions in ACT (default on; the dense loop is the
        reference). ``gradient_checkpointing``: recompute each recurrent step in the
        backward pass, so that memory no longer grows with the number of steps. Both
        leave the function unchanged. ``depth``: the number of recurrent steps of every
        stack (with ACT: the step limit), e.g. more at test time than in training (the
        paper's Section 2: the depth of a UT can adapt; see ``RecurrentStack.set_depth``).
        ``attention_window``: local attention at test time (an int, or None for none), in place
        of the config's ``attention_window``: confines a model to the distances it was trained on;
        ``attention_window_scope``: ``all`` or ``source`` (see :class:`UTConfig`).
        """
        check_attention_window(None if attention_window is _KEEP else attention_window,
                               "all" if attention_window_scope is _KEEP else attention_window_scope)
        for name, flag in (("act_packed", act_packed), ("gradient_checkpointing", gradient_checkpointing)):
            if flag is not None and not isinstance(flag, bool):  # "no" would switch it on
                raise ValueError(f"{name} must be True, False or None (unchanged), got {flag!r}")
        if depth is not None:
            check_depth(depth)
            self._check_depth(depth)
        if attention_window is not _KEEP or attention_window_scope is not _KEEP:
            stack = next(m for m in self.modules() if isinstance(m, RecurrentStack))
            self._check_window(stack.attention_window if attention_window is _KEEP else attention_window,
                               stack.attention_window_scope if attention_window_scope is _KEEP else attention_window_scope)
        for module in self.modules():
            if isinstance(module, RecurrentStack):
                if act_packed is not None:
                    module.act_packed = act_packed
                if gradient_checkpointing is not None:
                    module.gradient_checkpointing = gradient_checkpointing
                if depth is not None:
                    module.set_depth(depth)
                if attention_window is not _KEEP:
                    module.attention_window = attention_window
                if attention_window_scope is not _KEEP:
                    module.attention_window_scope = attention_window_scope

    def _check_depth(self, depth: int) -> None:
        """Refuse a run-time depth this model cannot run, before any stack changes (each
        stack checks its own steps and ACT floor; a model adds floors of its own)."""

    def _check_window(self, window: int | None, scope: str) -> None:
        """Refuse a local attention (config or run time) that would confine none of this model's
        attention, before any stack changes; every scope confines some attention of an encoder."""

    def set_gradient_checkpointing(self, enabled: bool = True) -> None:
        """Shorthand for ``configure_runtime(gradient_checkpointing=enabled)``."""
        self.configure_runtime(gradient_checkpointing=enabled)

    # Labels equal to this id carry no loss (padding for sequences).
    @property
    def ignore_index(self) -> int:
        return self.config.pad_id

    def _finish(self, logits: Tensor, labels: Tensor | None, stacks: dict[str, StackOutput], label_smoothing: float) -> ModelOutput:
        halting = {name: out.halting for name, out in stacks.items()}
        attentions = {name: out.attentions for name, out in stacks.items() if out.attentions is not None}
        output = ModelOutput(logits, halting=halting, attentions=attentions or None)
        if labels is None:
            output.ponder_cost = ponder_cost(halting, dtype=loss_dtype(logits))
            return output
        terms = compute_loss(
            logits, labels, halting, ignore_index=self.ignore_index, label_smoothing=label_smoothing,
            ponder_weight=ponder_weight(self.config),
        )
        output.loss, output.task_loss, output.ponder_cost = terms.loss, terms.task_loss, terms.ponder_cost
        return output


class UniversalTransformer(_UTBase):
    """Encoder-decoder UT (the paper's Section 2.1): ``forward(src, tgt_in, labels)`` with teacher forcing.

    ``tgt_in`` is the target shifted right (starting with ``bos_id``); ``labels`` the
    target itself, ``pad_id`` where no loss is wanted.
    """

    is_encoder_decoder = True
    restarts_positions = True

    def __init__(self, config: UTConfig) -> None:
        super().__init__(config)
        if config.act and config.act_type == "global":
            raise ConfigError("act_type 'global' pools over all positions and would let the causal decoder see the future")
        self.src_embed = TokenEmbedding(config.vocab_size, config.d_model, scale=config.scale_embeddings)
        # One table for source and target when they share a vocabulary (no aliased parameters).
        self.tgt_embed = (
            TokenEmbedding(config.tgt_vocab_size, config.d_model, scale=config.scale_embeddings)
            if config.target_vocab_size is not None
            else None
        )
        self.encoder = RecurrentStack(config, causal=False, cross_attention=False)
        self.decoder = RecurrentStack(config, causal=True, cross_attention=True, num_steps=config.dec_steps)
        self.output = None if config.tie_embeddings else nn.Linear(config.d_model, config.tgt_vocab_size, bias=False)
        self.post_init()

    @property
    def recurrent_steps(self) -> int:
        """The most steps either stack may run (ACT's limit, or the fixed number): how many
        per-step position offsets a forward needs."""
        return max(self.encoder.total_steps, self.decoder.total_steps)

    @property
    def target_embedding(self) -> TokenEmbedding:
        return self.tgt_embed if self.tgt_embed is not None else self.src_embed

    def source_positions(self, src: Tensor, position_offset: Tensor | None = None) -> Tensor | None:
        """The source's position ids (None: ``0..L-1``), restarted at ``config.position_restart_id``."""
        return self._positions(src, position_offset, per_step=True, restart_id=self.config.position_restart_id)

    def encode(self, src: Tensor, *, need_weights: bool = False, position_offset: Tensor | None = None) -> StackOutput:
        """The encoder's output for ``src [B, L]`` (hidden states, halting statistics and, with
        ``need_weights``, attention weights per step)."""
        return self._encode(src, position_offset, need_weights=need_weights)[0]

    def _encode(self, src: Tensor, offset: Tensor | None, *, need_weights: bool = False) -> tuple[StackOutput, Tensor | None]:
        """The encoder's output and the source positions it ran at (which the decoder's window reads)."""
        positions = self.source_positions(src, offset)
        h = self.embedding_dropout(self.src_embed(src))
        return self.encoder(h, padding=self._padding(src), positions=positions, need_weights=need_weights), positions

    def decode(
        self,
        tgt_in: Tensor,
        memory: Tensor | None,
        memory_padding: Tensor | None,
        *,
        cache: StackCache | None = None,
        need_weights: bool = False,
        position_offset: Tensor | None = None,
        memory_positions: Tensor | None = None,
    ) -> tuple[Tensor, StackOutput]:
        """Target logits; ``memory_positions`` are the source's position ids (see
        :meth:`source_positions`), which only local attention (``attention_window``) reads."""
        if cache is not None and position_offset is not None:
            raise ValueError("with a decoding cache the target's offsets are the cache's (start_decoding(position_offset=...))")
        padding = self._padding(tgt_in) if cache is None else None
        h = self.embedding_dropout(self.target_embedding(tgt_in))
        out = self.decoder(
            h,
            padding=padding,
            positions=self._positions(tgt_in, position_offset, per_step=True) if cache is None else None,
            memory=memory,
            memory_padding=memory_padding,
            memory_positions=memory_positions,
            cache=cache,
            need_weights=need_weights,
        )
        return self._logits(out.hidden), out

    def _logits(self, h: Tensor) -> Tensor:
        return self.output(h) if self.output is not None else self.target_embedding.logits(h)

    def forward(
        self,
        src: Tensor,
        tgt_in: Tensor,
        labels: Tensor | None = None,
        *,
        label_smoothing: float = 0.0,
        need_weights: bool = False,
        position_offset: Tensor | None = None,
    ) -> ModelOutput:
        """``position_offset [B]`` shifts every position of an example (source and target alike);
        ``[B, 2]`` shifts the source by column 0 and the target by column 1; ``[B, 2, S]`` does
        so with offsets drawn anew for each recurrent step ``1..S`` (``S >= recurrent_steps``)."""
        src_offset, tgt_offset = self._stack_offsets(position_offset)
        enc, src_positions = self._encode(src, src_offset, need_weights=need_weights)
        logits, dec = self.decode(
            tgt_in, enc.hidden, enc.halting.padding, need_weights=need_weights, position_offset=tgt_offset,
            memory_positions=self._memory_positions(src_positions),
        )
        return self._finish(logits, labels, {"encoder": enc, "decoder": dec}, label_smoothing)

    # -- incremental decoding (see universal_transformer.generation) --------------------

    @staticmethod
    def _stack_offsets(position_offset: Tensor | None) -> tuple[Tensor | None, Tensor | None]:
        """(source, target) offsets: ``[B]`` serves both stacks; ``[B, 2, ...]`` gives each its column."""
        if position_offset is not None and position_offset.dim() >= 2:
            return position_offset[:, 0], position_offset[:, 1]
        return position_offset, position_offset

    def _memory_positions(self, src_positions: Tensor | None) -> Tensor | None:
        """The source positions the decoder's local attention reads (None without a window, or
        for ``0..L-1``, the stack's default)."""
        return src_positions if self.decoder.attention_window is not None else None

    def start_decoding(self, src: Tensor, *, position_offset: Tensor | None = None) -> DecodingState:
        """Encode ``src``; ``position_offset`` as in :meth:`forward` (the target's part stays in
        the cache, so that every new token continues its positions)."""
        src_offset, tgt_offset = self._stack_offsets(position_offset)
        enc, src_positions = self._encode(src, src_offset)
        state = DecodingState(self.decoder.new_cache(), enc.halting.padding)
        state.cache.memory_kv = [blk.memory_kv(enc.hidden) for blk in self.decoder.blocks]
        state.cache.memory_positions = self._memory_positions(src_positions)
        if tgt_offset is not None:
            state.cache.position_offset = tgt_offset.to(src.device)
        return state

    def decode_step(self, tokens: Tensor, state: DecodingState) -> Tensor:
        """Logits ``[B, n, V]`` for new target tokens ``[B, n]``, reusing everything cached."""
        logits, _ = self.decode(tokens, None, state.memory_padding, cache=state.cache)
        return logits

    def prefill(
        self, src: Tensor, prefix: Tensor | None = None, *, position_offset: Tensor | None = None
    ) -> tuple[DecodingState, Tensor]:
        """Encode ``src`` and feed ``bos`` (or a target ``prefix``); returns the state and next-token logits."""
        state = self.start_decoding(src, position_offset=position_offset)
        if prefix is None:
            prefix = src.new_full((src.shape[0], 1), self.config.bos_id)
        return state, self.decode_step(prefix, state)[:, -1]


class UTLanguageModel(LanguageModelDecoding, _UTBase):
    """Decoder-only UT (causal self-attention, no cross-attention): next-token prediction."""

    def __init__(self, config: UTConfig) -> None:
        super().__init__(config)
        if config.act and config.act_type == "global":
            raise ConfigError("act_type 'global' pools over all positions and would let a language model see the future")
        self.embed = TokenEmbedding(config.vocab_size, config.d_model, scale=config.scale_embeddings)
        self.decoder = RecurrentStack(config, causal=True, cross_attention=False)
        self.output = None if config.tie_embeddings else nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.post_init()

    def _check_window(self, window: int | None, scope: str) -> None:
        # Scope "source" leaves a decoder's attention over its own outputs alone: here, all there is.
        if window is not None and scope == "source":
            raise ConfigError(f"attention_window_scope 'source' confines the attention over a source; "
                              f"{type(self).__name__} has none, so attention_window ({window}) would confine "
                              "nothing: use scope 'all'")

    def _logits(self, h: Tensor) -> Tensor:
        return self.output(h) if self.output is not None else self.embed.logits(h)

    def forward(
        self,
        tokens: Tensor,
        labels: Tensor | None = None,
        *,
        cache: StackCache | None = None,
        label_smoothing: float = 0.0,
        need_weights: bool = False,
        position_offset: Tensor | None = None,
    ) -> ModelOutput:
        """``labels`` are the next tokens (``tokens`` shifted left), ``pad_id`` where ignored."""
        padding = self._padding(tokens) if cache is None else None
        h = self.embedding_dropout(self.embed(tokens))
        positions = self._positions(tokens, position_offset) if cache is None else None
        out = self.decoder(h, padding=padding, positions=positions, cache=cache, need_weights=need_weights)
        return self._finish(self._logits(out.hidden), labels, {"decoder": out}, label_smoothing)

    def start_decoding(self) -> DecodingState:
        """An empty key/value cache, for :meth:`decode_step` (``prefill`` feeds it a prompt)."""
        return DecodingState(self.decoder.new_cache())

    def decode_step(self, tokens: Tensor, state: DecodingState) -> Tensor:
        """Feed ``tokens [B, n]`` after those in ``state`` (updated in place); logits ``[B, n, V]``."""
        # The decoder alone: no loss or ponder cost to assemble at every generated token.
        out = self.decoder(self.embedding_dropout(self.embed(tokens)), cache=state.cache)
        return self._logits(out.hidden)


class _UTClassifierBase(_UTBase):
    """An encoder whose pooled output (``config.pooling``) is classified into ``num_classes``
    by ``self.head`` (made last by the subclass, so that initialisation draws stay in order)."""

    config_class = UTClassifierConfig
    config: UTClassifierConfig

    def __init__(self, config: UTClassifierConfig) -> None:
        super().__init__(config)
        if config.num_classes is None:
            raise ConfigError(f"{type(self).__name__} needs num_classes in the config")

    @property
    def ignore_index(self) -> int:
        return -100  # every example has a label

    def _pool(self, h: Tensor, padding: Tensor | None) -> Tensor:
        """``mean`` over the real positions, the ``first`` or the ``last`` real position."""
        kind = self.config.pooling
        if kind == "first":
            return h[:, 0]
        real = torch.ones(h.shape[:2], dtype=torch.bool, device=h.device) if padding is None else ~padding
        if kind == "last":
            last = real.long().cumsum(1).argmax(1)  # index of the last real position
            return h[torch.arange(h.shape[0], device=h.device), last]
        weights = real.to(h.dtype)[..., None]
        return (h * weights).sum(1) / weights.sum(1).clamp(min=1)


class UTEncoderClassifier(_UTClassifierBase):
    """Encoder-only UT with a classification head on the pooled encoder output.

    Takes token ids or, for inputs that are not tokens (bAbI's fact embeddings, any
    embedded sequence), ``inputs_embeds [B, L, d]`` with ``padding``.
    """

    def __init__(self, config: UTClassifierConfig) -> None:
        super().__init__(config)
        self.embed = TokenEmbedding(config.vocab_size, config.d_model, scale=config.scale_embeddings)
        self.encoder = RecurrentStack(config, causal=False, cross_attention=False)
        self.head = nn.Linear(config.d_model, config.num_classes)
        self.post_init()

    def forward(
        self,
        tokens: Tensor | None = None,
        labels: Tensor | None = None,
        *,
        inputs_embeds: Tensor | None = None,
        padding: Tensor | None = None,
        label_smoothing: float = 0.0,
        need_weights: bool = False,
        position_offset: Tensor | None = None,
    ) -> ModelOutput:
        """Class logits ``[B, num_classes]`` of ``tokens [B, L]`` (or of ``inputs_embeds [B, L, d]``
        with ``padding [B, L]``), read by ``config.pooling``; with ``labels [B]`` also the loss."""
        if (tokens is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of tokens or inputs_embeds")
        if tokens is not None:
            if padding is not None:  # it would be replaced by the tokens' own, without a word
                raise ValueError("padding goes with inputs_embeds; with tokens it is where they equal pad_id")
            padding = self._padding(tokens)
            h = self.embed(tokens)
            ref = tokens
        else:
            h = inputs_embeds
            ref = inputs_embeds[..., 0]
        positions = self._positions(ref, position_offset)
        out = self.encoder(self.embedding_dropout(h), padding=padding, positions=positions, need_weights=need_weights)
        logits = self.head(self._pool(out.hidden, padding))
        return self._finish(logits, labels, {"encoder": out}, label_smoothing)
