"""What a model must offer to be decoded: the :class:`Decoder` protocol and state helpers.

Every decoder here (greedy and sampling in :mod:`.decoding`, beam search in :mod:`.beam`)
talks to a model only through

* ``prefill(inputs) -> (state, next_logits [B, V])``: encode the source (encoder-decoder,
  then feed ``bos``) or run the prompt (language model);
* ``decode_step(tokens [B, n], state) -> logits [B, n, V]``: feed new tokens, updating
  ``state`` in place;
* :func:`reorder_state`: keep, repeat or permute the batch rows of a state (beam search
  reorders beams after every step; :func:`expand_state` repeats each sentence's row once
  per beam).

:class:`UncachedDecoder` implements the same protocol by rerunning the full model over the
whole prefix at every step: the reference that cached decoding is tested and benchmarked
against.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch
from torch import Tensor, nn


class SpecialIds(Protocol):
    """The token ids a decoder needs from the model's config."""

    pad_id: int
    bos_id: int
    eos_id: int


@runtime_checkable
class Reorderable(Protocol):
    """A decoding state that can select its own batch rows (in place)."""

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (a 1-D long tensor; rows may repeat), in that order."""


@runtime_checkable
class Decoder(Protocol):
    """A model that can be decoded token by token (see the module docstring).

    ``UniversalTransformer``, ``UTLanguageModel`` (and the Transformer baseline, which
    is a ``UniversalTransformer``), ``LSTMSeq2Seq`` and :class:`UncachedDecoder` are
    decoders. The state they return must be accepted by :func:`reorder_state`.
    """

    config: Any  # has pad_id, bos_id, eos_id (SpecialIds)
    training: bool

    def prefill(self, inputs: Tensor) -> tuple[Any, Tensor]:
        """Start decoding ``inputs [B, L]``: the state and the first next-token logits ``[B, V]``."""
        ...

    def decode_step(self, tokens: Tensor, state: Any) -> Tensor:
        """Feed ``tokens [B, n]``; logits ``[B, n, V]`` for the token after each."""
        ...

    def train(self, mode: bool = True) -> Any: ...


def check_decoder(model: Any, eos_id: int) -> None:
    """Refuse a model that cannot be decoded token by token (a classifier, say), naming it,
    and an end-of-sequence id that is the padding id (padding is never generated, so such
    a sequence could never end)."""
    if not (callable(getattr(model, "prefill", None)) and callable(getattr(model, "decode_step", None))):
        raise TypeError(f"a {type(model).__name__} is not a decoder (it has no prefill/decode_step): generation "
                        "takes an encoder-decoder or a language model")
    if eos_id == model.config.pad_id:
        raise ValueError(f"eos_id ({eos_id}) must differ from pad_id: padding is never generated")


def check_eos(eos_id: int, vocab_size: int) -> None:
    """Refuse, for beam search, an end-of-sequence id that is not a token of the model's
    vocabulary (``vocab_size``, the width of its logits): no hypothesis could end, so none
    would be returned, and a negative one would read another token's log-probability.
    (:func:`~.decoding.generate` takes one: ``eos_id=-1`` decodes without ever stopping.)"""
    if not 0 <= eos_id < vocab_size:
        raise ValueError(f"eos_id ({eos_id}) is not a token of the model's vocabulary of {vocab_size}: "
                         "beam search ends every hypothesis with it")


def check_prompt(prompt: Tensor, pad_id: int) -> None:
    """Refuse a language model's batch of prompts that holds padding: prompts of different
    lengths, padded to one. Its next-token logits would be read at a padding position (or,
    left-padded, after padding the model attends to), so those rows would get another model's
    output without an error. Decode prompts of one length together (``ut generate`` groups
    them so). An empty prompt is refused too: there is no position to read the next token at."""
    if prompt.dim() == 2 and prompt.shape[1] == 0:
        raise ValueError("the prompts are empty: a language model continues at least one token "
                         "(to generate from a sentence start, give the start token)")
    padded = (prompt == pad_id).any(dim=1)
    if bool(padded.any()):
        row = int(padded.nonzero()[0, 0])
        raise ValueError(
            f"prompt row {row} holds the padding id {pad_id}: a language model decodes a batch of prompts of one "
            "length (padding would be read as context); decode prompts of different lengths in separate batches"
        )


def reorder_state(state: Any, index: Tensor) -> None:
    """Keep batch rows ``index`` of a decoding state, in place (beam reordering, expansion, pruning).

    A state with its own ``reorder(index)`` method (``LSTMDecodingState``, ``StackCache``)
    is reordered by it. Any other dataclass state (``DecodingState``) is reordered field
    by field: tensors are taken to be batch-first and index-selected along dimension 0,
    fields with ``reorder`` and nested dataclasses recurse, and ``None``, numbers and
    strings (counters, flags) are left alone. A field of any other kind raises
    ``TypeError``: its batch layout is unknown, so its state needs a ``reorder`` method.
    """
    reorder = getattr(state, "reorder", None)  # (not isinstance(state, Reorderable): that is slow, every step)
    if callable(reorder):
        reorder(index)
        return
    if not (dataclasses.is_dataclass(state) and not isinstance(state, type)):
        raise TypeError(
            f"cannot reorder a decoding state of type {type(state).__name__}: give it a reorder(index) method"
        )
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        if isinstance(value, Tensor):
            setattr(state, f.name, value.index_select(0, index))
        elif callable(getattr(value, "reorder", None)) or dataclasses.is_dataclass(value):
            reorder_state(value, index)
        elif not (value is None or isinstance(value, (bool, int, float, str))):
            raise TypeError(
                f"cannot reorder field {f.name!r} ({type(value).__name__}) of {type(state).__name__}: "
                "give the state a reorder(index) method"
            )


def repeat_index(batch_size: int, times: int, device: torch.device | str | None = None) -> Tensor:
    """``[0]*times + [1]*times + ...``: the rows of ``repeat_interleave(times, dim=0)``."""
    return torch.arange(batch_size, device=device).repeat_interleave(times)


def expand_state(state: Any, batch_size: int, times: int, device: torch.device | str | None = None) -> None:
    """Repeat each of the ``batch_size`` rows of ``state`` ``times`` times in a row, in place.

    Row ``i`` becomes rows ``i * times .. i * times + times - 1`` (one per beam), like
    ``Tensor.repeat_interleave(times, dim=0)`` does to a batch-first tensor. The encoder
    runs once per sentence, before expansion.
    """
    reorder_state(state, repeat_index(batch_size, times, device))


@contextmanager
def eval_mode(model: nn.Module | Decoder) -> Iterator[None]:
    """Run in eval mode (no dropout) and restore every module's training flag afterwards, even on error.

    Each module gets its own flag back: ``model.train(flag)`` would give every submodule the
    outer one's, and a wrapper (:class:`UncachedDecoder`, a fresh module, in training mode)
    would leave the model it wraps in training mode (dropout on) after decoding.
    """
    flags = [(m, m.training) for m in model.modules()] if isinstance(model, nn.Module) else None
    was_training = model.training
    model.train(False)
    try:
        yield
    finally:
        if flags is None:
            model.train(was_training)
        for module, flag in flags or ():
            module.training = flag


@dataclass
class PrefixState:
    """What :class:`UncachedDecoder` keeps: the model inputs and every target token so far."""

    inputs: Tensor | None  # the source of an encoder-decoder; None for a language model
    prefix: Tensor  # [B, n]: bos + generated tokens (encoder-decoder), or prompt + generated tokens


class UncachedDecoder(nn.Module):
    """A :class:`Decoder` that reruns ``model`` on the whole prefix at every step (no cache).

    Each ``decode_step`` appends the new tokens to the prefix and runs the full forward
    pass (the encoder-decoder also re-encodes the source), so cost grows quadratically
    with the output length. It is the reference cached decoding must reproduce, and the
    baseline the benchmarks time it against.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.config = model.config
        self.encoder_decoder = bool(getattr(model, "is_encoder_decoder", False))

    def prefill(self, inputs: Tensor) -> tuple[PrefixState, Tensor]:
        if self.encoder_decoder:
            state = PrefixState(inputs, inputs.new_full((inputs.shape[0], 1), self.config.bos_id))
        else:
            check_prompt(inputs, self.config.pad_id)  # as the cached language models do
            state = PrefixState(None, inputs)
        return state, self._logits(state)[:, -1]

    def decode_step(self, tokens: Tensor, state: PrefixState) -> Tensor:
        state.prefix = torch.cat((state.prefix, tokens), dim=1)
        return self._logits(state)[:, -tokens.shape[1]:]

    def _logits(self, state: PrefixState) -> Tensor:
        out = self.model(state.inputs, state.prefix) if state.inputs is not None else self.model(state.prefix)
        return out.logits
