"""Sequence metrics: character (token) accuracy and whole-sequence accuracy, and the greedy
or beam-search evaluation of a sequence-to-sequence model that the algorithmic and LTE tasks share."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterable, Sequence

import torch
from torch import Tensor, nn

from ..data.batch import Seq2SeqBatch
from ..generation import beam_search, generate
from ..modules.recurrence import HaltingStats
from .lm import PonderStats


@dataclass
class AccuracyCounts:
    """Running counts; ``char_accuracy`` and ``sequence_accuracy`` read them."""

    correct_tokens: int = 0
    tokens: int = 0
    correct_sequences: int = 0
    sequences: int = 0

    def update(self, predictions: Tensor, labels: Tensor, pad_id: int) -> None:
        """Add a batch: ``predictions`` and ``labels`` ``[B, L]``, ``pad_id`` marks no-label slots.

        A sequence counts as correct when every labelled position is predicted right.
        """
        hit, real = _hits(predictions, labels, pad_id)
        self.add(hit, real)

    def add(self, hit: Tensor, real: Tensor) -> None:
        """Add rows of :func:`_hits` (``[B, L]`` correct, labelled)."""
        self.add_counts(int(hit.sum()), int(real.sum()), int((hit | ~real).all(dim=1).sum()), real.shape[0])

    def add_counts(self, correct_tokens: int, tokens: int, correct_sequences: int, sequences: int) -> None:
        self.correct_tokens += correct_tokens
        self.tokens += tokens
        self.correct_sequences += correct_sequences
        self.sequences += sequences

    @property
    def char_accuracy(self) -> float:
        return self.correct_tokens / max(self.tokens, 1)

    @property
    def sequence_accuracy(self) -> float:
        return self.correct_sequences / max(self.sequences, 1)

    def as_dict(self) -> dict[str, float]:
        return {"char_accuracy": self.char_accuracy, "sequence_accuracy": self.sequence_accuracy}


def _hits(predictions: Tensor, labels: Tensor, pad_id: int) -> tuple[Tensor, Tensor]:
    """``[B, L]`` bool: predicted right at a labelled position, and labelled."""
    if predictions.shape[1] < labels.shape[1]:  # generation stopped early: pad predictions
        fill = predictions.new_full((predictions.shape[0], labels.shape[1] - predictions.shape[1]), pad_id)
        predictions = torch.cat((predictions, fill), dim=1)
    predictions = predictions[:, : labels.shape[1]]
    real = labels != pad_id
    return (predictions == labels) & real, real


@torch.no_grad()
def decode_accuracy(
    model: nn.Module, batches: Iterable[Seq2SeqBatch], pad_id: int, *, beam_size: int = 1, length_penalty: float = 0.6,
    ponder: bool = True, groups: Iterable[Sequence[Sequence[str]]] | None = None,
) -> dict[str, float]:
    """Decoding from the sources alone (no teacher forcing), greedy (``beam_size`` 1) or by
    beam search (its best hypothesis, GNMT ``length_penalty``): ``char_accuracy``,
    ``sequence_accuracy`` over all batches, and the mean ``encoder_ponder_time`` where
    the model has one (unless ``ponder`` is False: it takes a pass of its own).

    ``groups``, one entry per batch and per row the names of the groups the example belongs
    to (e.g. ``["length3", "nesting2"]``), adds ``GROUP/char_accuracy``,
    ``GROUP/sequence_accuracy`` and ``GROUP/examples`` (how many there are: a small group's
    accuracy is a rough one) for every group, from the same decoding.

    Decoding stops at the batch's longest target plus one token: enough to see every
    target's end-of-sequence, and a bound no example's own target sets.
    """
    model.eval()
    device = next(model.parameters()).device
    counts = AccuracyCounts()
    by_group: dict[str, AccuracyCounts] = {}
    encoder_ponder = PonderStats()
    for batch, names in zip(batches, groups if groups is not None else itertools.repeat(None)):
        batch = batch.to(device)
        limit = batch.labels.shape[1] + 1
        if beam_size == 1:
            tokens = generate(model, batch.src, max_new_tokens=limit)
        else:
            searched = beam_search(model, batch.src, beam_size=beam_size, max_new_tokens=limit,
                                   length_penalty=length_penalty)
            tokens = searched.best_tokens(pad_id, model.config.eos_id).to(device)
        hit, real = _hits(tokens, batch.labels, pad_id)
        counts.add(hit, real)
        if names:  # per row once (three reductions a batch), then summed into each group of the row
            rows = zip(hit.sum(1).tolist(), real.sum(1).tolist(), (hit | ~real).all(1).tolist())
            for row_groups, (correct, total, whole) in zip(names, rows):
                for name in row_groups:
                    by_group.setdefault(name, AccuracyCounts()).add_counts(correct, total, int(whole), 1)
        if ponder and (times := encoder_ponder_times(model, batch)) is not None:
            encoder_ponder.add(times)
    result = counts.as_dict()
    for name in sorted(by_group):
        result.update({f"{name}/{k}": v for k, v in by_group[name].as_dict().items()})
        result[f"{name}/examples"] = by_group[name].sequences
    if encoder_ponder.count:
        result["encoder_ponder_time"] = encoder_ponder.mean
    return result


@torch.no_grad()
def teacher_forced_accuracy(
    model: nn.Module, batches: Iterable[Seq2SeqBatch], pad_id: int, *, eos_id: int | None = None,
    ponder: bool = False,
) -> dict[str, float]:
    """``char_accuracy`` and ``sequence_accuracy`` of the argmax at every target position given
    the true target prefix (one forward pass a batch; no decoding). This is what
    tensor2tensor's evaluation reports unless it is run with ``--eval_run_autoregressive``:
    its ``accuracy`` and ``accuracy_per_sequence`` are computed on the teacher-forced logits.
    A model can score well here and still fail to decode: one wrong token (an early
    end-of-sequence, say) derails a greedy decoding but costs one position here. With
    ``eos_id``, ``early_eos_rate`` is the share of the positions before a target's end at
    which the argmax is that end (the mistake that stops a greedy decoding short),
    ``end_accuracy`` the share of targets whose end is predicted where it is (the mistake
    that runs a decoding on past it), and ``sequence_accuracy_before_end`` the share whose
    every label before the end is right: together they say which of the two ends a
    sequence's chances. With
    ``ponder``, also the mean ``encoder_ponder_time``, read from the same pass (an ACT model
    would otherwise take a second one, :func:`encoder_ponder_times`), and for an ACT decoder
    its mean ``decoder_ponder_time`` given the true prefix. ``loss`` is the mean
    cross-entropy (nats) per labelled target position: it keeps ranking models once both
    accuracies are saturated. ``error_rate_by_tenth`` says where along the targets the wrong
    tokens are: position ``i`` of a target of ``m`` labels (its end of sequence included)
    falls in tenth ``floor(10 i / m)``, and each entry is the share of wrong argmaxes among
    the positions of that tenth (left out unless every tenth has positions)."""
    model.eval()
    device = next(model.parameters()).device
    counts = AccuracyCounts()
    early_eos = before_end = ends = ends_right = rows = rows_right_before_end = 0
    nll = 0.0
    encoder_ponder, decoder_ponder = PonderStats(), PonderStats()  # over positions, not batches
    tenth_wrong, tenth_total = torch.zeros(10, dtype=torch.long), torch.zeros(10, dtype=torch.long)
    for batch in batches:
        batch = batch.to(device)
        output = model(**batch.inputs())
        predicted = output.logits.argmax(-1)
        counts.update(predicted, batch.labels, pad_id)
        labelled = batch.labels != pad_id
        tenth = (10 * torch.arange(labelled.shape[1], device=device) // labelled.sum(1, keepdim=True).clamp(min=1))
        tenth = tenth.clamp(max=9)[labelled].cpu()
        tenth_total += torch.bincount(tenth, minlength=10)
        tenth_wrong += torch.bincount(tenth[(predicted != batch.labels)[labelled].cpu()], minlength=10)
        nll += float(nn.functional.cross_entropy(
            output.logits.float().flatten(0, 1), batch.labels.flatten(), ignore_index=pad_id, reduction="sum"))
        if ponder and (times := encoder_ponder_times(model, batch, output)) is not None:
            encoder_ponder.add(times)
        if ponder and getattr(model.config, "act", False) and "decoder" in output.halting:
            decoder_ponder.add(_real_ponder_times(output.halting["decoder"]))
        if eos_id is not None:
            inside = (batch.labels != pad_id) & (batch.labels != eos_id)
            early_eos += int((inside & (predicted == eos_id)).sum())
            before_end += int(inside.sum())
            end = batch.labels == eos_id
            ends += int(end.sum())
            ends_right += int((end & (predicted == eos_id)).sum())
            rows += len(batch.labels)
            rows_right_before_end += int(((predicted == batch.labels) | ~inside).all(1).sum())
    result = counts.as_dict()
    result["loss"] = nll / max(counts.tokens, 1)
    if bool((tenth_total > 0).all()):
        result["error_rate_by_tenth"] = (tenth_wrong / tenth_total).tolist()
    if eos_id is not None:
        result["early_eos_rate"] = early_eos / max(before_end, 1)
        result["end_accuracy"] = ends_right / max(ends, 1)
        result["sequence_accuracy_before_end"] = rows_right_before_end / max(rows, 1)
    if encoder_ponder.count:
        result["encoder_ponder_time"] = encoder_ponder.mean
    if decoder_ponder.count:
        result["decoder_ponder_time"] = decoder_ponder.mean
    return result


def encoder_ponder_times(model: nn.Module, batch: Seq2SeqBatch, output=None) -> Tensor | None:
    """Encoder ponder times of a batch's real positions: from a teacher-forced pass for ACT
    models (``output``, that pass's result where the caller has it); a fixed-step model's
    ``num_steps`` once (no pass needed); None for the LSTM. A set's mean weighs every position
    alike, not every batch (LTE's batches, sorted by length, hold a few positions or hundreds)."""
    if getattr(model.config, "act", False):
        output = output if output is not None else model(**batch.inputs())
        return _real_ponder_times(output.halting["encoder"])
    encoder = getattr(model, "encoder", None)
    return torch.tensor([float(encoder.num_steps)]) if hasattr(encoder, "num_steps") else None


def encoder_ponder_time(model: nn.Module, batch: Seq2SeqBatch, output=None) -> float | None:
    """Mean encoder ponder time of a batch (see :func:`encoder_ponder_times`)."""
    times = encoder_ponder_times(model, batch, output)
    return None if times is None else float(times.double().mean())


def _real_ponder_times(stats: HaltingStats) -> Tensor:
    return stats.ponder_time if stats.padding is None else stats.ponder_time[~stats.padding]
