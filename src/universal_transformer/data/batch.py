"""Batches: what the data sets produce and the trainer consumes.

:class:`Batch` is the interface the trainer works with (model inputs, labels, row
selection for data parallelism and gradient accumulation, counts for the objective's
normalisation). Every batch type of the package is defined here, next to it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, fields, replace
from typing import Any, Sequence

import torch
from torch import Tensor


def add_offsets(old: Tensor | None, new: Tensor | None) -> Tensor | None:
    """Position offsets that add up: ``[B]`` (every position of an example), ``[B, 2]``
    (source, target) or ``[B, 2, S]`` (and each recurrent step); the coarser one is broadcast
    over the finer one's trailing dimensions."""
    if old is None:
        return new
    if new is None:
        return old
    while old.dim() < new.dim():
        old = old.unsqueeze(-1)
    while new.dim() < old.dim():
        new = new.unsqueeze(-1)
    return old + new


class Batch(ABC):
    """A batch the trainer can split across devices and accumulation steps.

    Subclasses are dataclasses of tensors whose first dimension is the batch;
    ``position_offset [B]`` (optional) shifts the position ids of each example (random
    offsets, drawn by the trainer; see :meth:`with_position_offset`).
    """

    labels: Tensor
    ignore_index: int = -100
    position_offset: Tensor | None = None

    @abstractmethod
    def inputs(self) -> dict[str, Tensor]:
        """The model's forward inputs other than the position offset."""

    @abstractmethod
    def positions(self) -> dict[str, int]:
        """Real (non-padding) positions per stack, for the ponder cost normaliser."""

    def model_inputs(self) -> dict[str, Tensor]:
        """Keyword arguments of the model's forward."""
        inputs = self.inputs()
        if self.position_offset is not None:
            inputs["position_offset"] = self.position_offset
        return inputs

    def with_position_offset(self, offset: Tensor | None) -> "Batch":
        """The batch with its positions shifted by ``offset`` more (offsets add up): ``[B]``,
        ``[B, 2]`` for separate source and target offsets of an encoder-decoder, or
        ``[B, 2, S]`` for separate ones at each recurrent step too."""
        return replace(self, position_offset=add_offsets(self.position_offset, offset))  # type: ignore[type-var]

    def select(self, rows: slice) -> "Batch":
        """A sub-batch of rows (for data parallelism and gradient accumulation)."""
        return self._map(lambda t: t[rows])

    def to(self, device: torch.device | str) -> "Batch":
        """The batch on ``device``; host-to-GPU copies go through pinned memory, without blocking."""
        if torch.device(device).type == "cuda":
            return self._map(lambda t: t.pin_memory().to(device, non_blocking=True))
        return self._map(lambda t: t.to(device))

    def _map(self, fn) -> "Batch":
        changes: dict[str, Any] = {
            f.name: fn(value) for f in fields(self) if isinstance(value := getattr(self, f.name), Tensor)  # type: ignore[arg-type]
        }
        return replace(self, **changes)  # type: ignore[type-var]

    @property
    def size(self) -> int:
        return self.labels.shape[0]

    @property
    def num_targets(self) -> int:
        return int((self.labels != self.ignore_index).sum())


@dataclass
class Seq2SeqBatch(Batch):
    """Padded ``src [B, Ls]``, decoder input ``tgt_in [B, Lt]`` (bos + target) and ``labels`` (target + eos);
    ``ignore_index`` is the padding id."""

    src: Tensor
    tgt_in: Tensor
    labels: Tensor
    ignore_index: int = 0
    position_offset: Tensor | None = None

    @classmethod
    def from_pairs(
        cls, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], *, pad_id: int, bos_id: int, eos_id: int
    ) -> "Seq2SeqBatch":
        """Pad (source, target) token lists: ``src`` as given, ``tgt_in`` = bos + target,
        ``labels`` = target + eos."""
        if not pairs:
            raise ValueError("cannot make a batch of no examples")
        b = len(pairs)
        ls = max(len(s) for s, _ in pairs)
        lt = max(len(t) for _, t in pairs) + 1
        src = torch.full((b, ls), pad_id, dtype=torch.long)
        tgt_in = torch.full((b, lt), pad_id, dtype=torch.long)
        labels = torch.full((b, lt), pad_id, dtype=torch.long)
        for i, (s, t) in enumerate(pairs):
            src[i, : len(s)] = torch.tensor(list(s), dtype=torch.long)
            tgt_in[i, : len(t) + 1] = torch.tensor([bos_id, *t], dtype=torch.long)
            labels[i, : len(t) + 1] = torch.tensor([*t, eos_id], dtype=torch.long)
        return cls(src, tgt_in, labels, ignore_index=pad_id)

    def inputs(self) -> dict[str, Tensor]:
        return {"src": self.src, "tgt_in": self.tgt_in}

    def positions(self) -> dict[str, int]:
        pad = self.ignore_index
        return {"encoder": int((self.src != pad).sum()), "decoder": int((self.tgt_in != pad).sum())}


@dataclass
class StoryBatch(Batch):
    """bAbI stories: ``facts [B, F, W]`` (word ids, empty fact slots all zeros, at the front),
    ``question [B, W]``, answer class ``labels [B]``."""

    facts: Tensor
    question: Tensor
    labels: Tensor
    ignore_index: int = -100
    position_offset: Tensor | None = None

    def inputs(self) -> dict[str, Tensor]:
        return {"facts": self.facts, "question": self.question}

    def positions(self) -> dict[str, int]:
        return {"encoder": int(self.facts.ne(0).any(-1).sum()) + self.facts.shape[0]}


@dataclass
class LMBatch(Batch):
    """Language modelling: ``tokens [B, L]`` and the next tokens ``labels [B, L]``;
    ``ignore_index`` (the padding id) marks positions without a target."""

    tokens: Tensor
    labels: Tensor
    ignore_index: int = 0
    position_offset: Tensor | None = None

    def inputs(self) -> dict[str, Tensor]:
        return {"tokens": self.tokens}

    def positions(self) -> dict[str, int]:
        return {"decoder": int((self.tokens != self.ignore_index).sum())}


@dataclass
class SequenceClassificationBatch(Batch):
    """One class per sequence: padded ``tokens [B, L]`` (padding id ``pad_id``) and ``labels [B]``."""

    tokens: Tensor
    labels: Tensor
    pad_id: int = 0
    ignore_index: int = -100
    position_offset: Tensor | None = None

    def inputs(self) -> dict[str, Tensor]:
        return {"tokens": self.tokens}

    def positions(self) -> dict[str, int]:
        return {"encoder": int((self.tokens != self.pad_id).sum())}


__all__ = ["Batch", "LMBatch", "Seq2SeqBatch", "SequenceClassificationBatch", "StoryBatch"]
