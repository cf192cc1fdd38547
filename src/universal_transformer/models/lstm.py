"""The LSTM baselines: encoder-decoder with dot-product (Luong) attention, and a language model."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..config import LSTMConfig
from ..modules.dropout import Dropout
from ..modules.embedding import TokenEmbedding
from .base import LanguageModelDecoding, ModelOutput, PretrainedModel
from ..objective import compute_loss


@dataclass
class LSTMDecodingState:
    memory: Tensor
    memory_padding: Tensor | None
    hidden: tuple[Tensor, Tensor]

    def reorder(self, index: Tensor) -> None:
        self.memory = self.memory.index_select(0, index)
        if self.memory_padding is not None:
            self.memory_padding = self.memory_padding.index_select(0, index)
        self.hidden = tuple(h.index_select(1, index) for h in self.hidden)  # type: ignore[assignment]


class LSTMSeq2Seq(PretrainedModel):
    """Bidirectional LSTM encoder, LSTM decoder, attention over the encoder states.

    Same interface as :class:`~universal_transformer.models.transformer.UniversalTransformer`
    (``forward(src, tgt_in, labels)``, ``prefill``/``decode_step``), so that trainers and
    decoders treat both alike.
    """

    config_class = LSTMConfig
    config: LSTMConfig
    is_encoder_decoder = True

    def __init__(self, config: LSTMConfig) -> None:
        super().__init__()
        self._set_config(config)
        d = config.d_model
        self.src_embed = TokenEmbedding(config.vocab_size, d, scale=False)
        self.tgt_embed = TokenEmbedding(config.tgt_vocab_size, d, scale=False) if config.target_vocab_size else None
        enc_hidden = d // 2 if config.bidirectional_encoder else d
        self.encoder = nn.LSTM(
            d, enc_hidden, config.num_layers, batch_first=True,
            bidirectional=config.bidirectional_encoder, dropout=config.dropout if config.num_layers > 1 else 0.0,
        )
        self.decoder = nn.LSTM(d, d, config.num_layers, batch_first=True, dropout=config.dropout if config.num_layers > 1 else 0.0)
        self.combine = nn.Linear(2 * d, d)
        self.dropout = Dropout(config.dropout)
        self.output = None if config.tie_embeddings else nn.Linear(d, config.tgt_vocab_size, bias=False)

    @property
    def target_embedding(self) -> TokenEmbedding:
        return self.tgt_embed if self.tgt_embed is not None else self.src_embed

    def _encode(self, src: Tensor) -> LSTMDecodingState:
        padding = src == self.config.pad_id
        lengths = (~padding).sum(1).clamp(min=1).cpu()
        packed = pack_padded_sequence(self.dropout(self.src_embed(src)), lengths, batch_first=True, enforce_sorted=False)
        out, (h, c) = self.encoder(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        if self.config.bidirectional_encoder:  # join the two directions' final states per layer
            h = torch.cat((h[0::2], h[1::2]), dim=-1)
            c = torch.cat((c[0::2], c[1::2]), dim=-1)
        return LSTMDecodingState(memory, padding if bool(padding.any()) else None, (h.contiguous(), c.contiguous()))

    def _decode(self, tgt_in: Tensor, state: LSTMDecodingState) -> Tensor:
        out, state.hidden = self.decoder(self.dropout(self.target_embedding(tgt_in)), state.hidden)
        scores = out @ state.memory.transpose(1, 2)  # [B, Lt, Ls]
        if state.memory_padding is not None:
            # The lowest finite score, not -inf: a source of padding alone (nothing to attend to)
            # then gets a finite context instead of NaN, as the UT's empty memory does.
            scores = scores.masked_fill(state.memory_padding[:, None, :], torch.finfo(scores.dtype).min)
        context = scores.softmax(-1) @ state.memory
        h = self.dropout(torch.tanh(self.combine(torch.cat((out, context), dim=-1))))
        return self.output(h) if self.output is not None else self.target_embedding.logits(h)

    def forward(
        self,
        src: Tensor,
        tgt_in: Tensor,
        labels: Tensor | None = None,
        *,
        label_smoothing: float = 0.0,
        position_offset: Tensor | None = None,
    ) -> ModelOutput:
        """``position_offset`` is accepted and ignored: an LSTM reads no position signal."""
        logits = self._decode(tgt_in, self._encode(src))
        output = ModelOutput(logits, ponder_cost=logits.new_zeros(()))
        if labels is not None:
            terms = compute_loss(logits, labels, {}, ignore_index=self.ignore_index, label_smoothing=label_smoothing)
            output.task_loss = output.loss = terms.loss
        return output

    @property
    def ignore_index(self) -> int:
        return self.config.pad_id

    def prefill(self, src: Tensor, prefix: Tensor | None = None) -> tuple[LSTMDecodingState, Tensor]:
        """Encode ``src [B, L]`` and feed ``prefix`` (default ``bos``); returns the state and the
        next-token logits ``[B, V]``."""
        state = self._encode(src)
        if prefix is None:
            prefix = src.new_full((src.shape[0], 1), self.config.bos_id)
        return state, self._decode(prefix, state)[:, -1]

    def decode_step(self, tokens: Tensor, state: LSTMDecodingState) -> Tensor:
        """Feed ``tokens [B, n]`` after those in ``state`` (updated in place); logits ``[B, n, V]``."""
        return self._decode(tokens, state)


@dataclass
class LSTMLMState:
    """Incremental decoding state of :class:`LSTMLanguageModel`: the LSTM's ``(h, c)``, or None before the first token."""

    hidden: tuple[Tensor, Tensor] | None = None

    def reorder(self, index: Tensor) -> None:
        if self.hidden is not None:
            self.hidden = tuple(h.index_select(1, index) for h in self.hidden)  # type: ignore[assignment]


class LSTMLanguageModel(LanguageModelDecoding, PretrainedModel):
    """A multi-layer LSTM language model (embedding, LSTM, tied softmax; dropout between, as
    Zaremba et al. 2014): the baseline of the language-modelling tasks.

    Same interface as :class:`~universal_transformer.models.transformer.UTLanguageModel`:
    ``forward(tokens, labels)``, ``prefill``/``decode_step``. ``position_offset`` is
    accepted and ignored (an LSTM has no position signal); ``bidirectional_encoder`` of
    :class:`LSTMConfig` does not apply. Right padding needs no mask: a position's output
    only depends on the positions before it.
    """

    config_class = LSTMConfig
    config: LSTMConfig

    def __init__(self, config: LSTMConfig) -> None:
        super().__init__()
        self._set_config(config)
        d = config.d_model
        self.embed = TokenEmbedding(config.vocab_size, d, scale=False)
        self.lstm = nn.LSTM(d, d, config.num_layers, batch_first=True, dropout=config.dropout if config.num_layers > 1 else 0.0)
        self.dropout = Dropout(config.dropout)
        self.output = None if config.tie_embeddings else nn.Linear(d, config.vocab_size, bias=False)

    @property
    def ignore_index(self) -> int:
        return self.config.pad_id

    def forward(
        self,
        tokens: Tensor,
        labels: Tensor | None = None,
        *,
        cache: LSTMLMState | None = None,
        label_smoothing: float = 0.0,
        position_offset: Tensor | None = None,
    ) -> ModelOutput:
        """``labels`` are the next tokens, ``pad_id`` where ignored; ``cache`` carries the state between calls."""
        out, hidden = self.lstm(self.dropout(self.embed(tokens)), cache.hidden if cache is not None else None)
        if cache is not None:
            cache.hidden = hidden
        h = self.dropout(out)
        logits = self.output(h) if self.output is not None else self.embed.logits(h)
        output = ModelOutput(logits, ponder_cost=logits.new_zeros(()))
        if labels is not None:
            terms = compute_loss(logits, labels, {}, ignore_index=self.ignore_index, label_smoothing=label_smoothing)
            output.task_loss = output.loss = terms.loss
        return output

    def start_decoding(self) -> LSTMLMState:
        """An empty state, for :meth:`decode_step` (``prefill`` feeds it a prompt)."""
        return LSTMLMState()

    def decode_step(self, tokens: Tensor, state: LSTMLMState) -> Tensor:
        """Feed ``tokens [B, n]`` after those in ``state`` (updated in place); logits ``[B, n, V]``."""
        return self(tokens, cache=state).logits
