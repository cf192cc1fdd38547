"""Scoring with a language model: perplexity of a token stream, next-token log-probabilities
of prefixes, and the ponder time per token.

Works with every model whose ``forward(tokens)`` returns a
:class:`~universal_transformer.models.base.ModelOutput` with next-token ``logits [B, L, V]``
(and, for UT models, ``halting["decoder"]``): :class:`UTLanguageModel` and
:class:`LSTMLanguageModel`. Rows are right-padded with ``pad_id``; a causal model's
output at a real position does not depend on the padding after it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..models.base import ModelOutput
from ..objective import loss_dtype


@dataclass
class PonderStats:
    """Running mean and standard deviation of ponder times (``n_updates + remainder``) per position."""

    total: float = 0.0
    squares: float = 0.0
    count: int = 0

    def add(self, values: Tensor) -> None:
        values = values.detach().double()
        self.total += float(values.sum())
        self.squares += float((values * values).sum())
        self.count += values.numel()

    @property
    def mean(self) -> float:
        return self.total / max(self.count, 1)

    @property
    def std(self) -> float:
        """The sample standard deviation (``n - 1`` in the denominator)."""
        if self.count < 2:
            return 0.0
        variance = (self.squares - self.count * self.mean**2) / (self.count - 1)
        return math.sqrt(max(variance, 0.0))

    def metrics(self, prefix: str = "") -> dict[str, float]:
        """``ponder_time`` and ``ponder_std``, or nothing for a model without halting statistics."""
        return {f"{prefix}ponder_time": self.mean, f"{prefix}ponder_std": self.std} if self.count else {}


def decoder_ponder(output: ModelOutput, real: Tensor) -> Tensor | None:
    """Ponder times of the positions ``real [B, L]`` (bool) of a UT language model's output; None for other models."""
    stats = output.halting.get("decoder")
    return None if stats is None else stats.ponder_time[real]


@dataclass
class StreamScore:
    """Summed negative log-likelihood (nats) of ``tokens`` predicted tokens, and the ponder time per position."""

    nll: float
    tokens: int
    ponder: PonderStats

    @property
    def mean_nll(self) -> float:
        return self.nll / max(self.tokens, 1)

    @property
    def perplexity(self) -> float:
        return math.exp(self.mean_nll)


def stream_windows(length: int, context_length: int, stride: int) -> list[tuple[int, int, int]]:
    """``(start, end, first)`` windows over ``length`` input positions: the model reads
    ``start:end`` (at most ``context_length``) and the targets of ``first:end`` are scored.

    Windows advance by ``stride`` and every position is scored exactly once, by the first
    window that reaches it; so each scored target but those of the first window sees at
    least ``context_length - stride`` earlier tokens.
    """
    if not 1 <= stride <= context_length:
        raise ValueError(f"need 1 <= stride ({stride}) <= context_length ({context_length})")
    windows, done = [], 0
    for start in range(0, length, stride):
        end = min(start + context_length, length)
        windows.append((start, end, done))
        done = end
        if end == length:
            break
    return windows


@torch.no_grad()
def score_stream(
    model: nn.Module, stream: Tensor, *, context_length: int, stride: int, batch_size: int, pad_id: int = 0
) -> StreamScore:
    """Negative log-likelihood of ``stream[1:]`` given what precedes each token, in windows of
    ``context_length`` tokens advancing by ``stride`` (see :func:`stream_windows`)."""
    model.eval()
    device = next(model.parameters()).device
    inputs, targets = stream[:-1].long(), stream[1:].long()
    windows = stream_windows(inputs.numel(), context_length, stride)
    nll, count, ponder = 0.0, 0, PonderStats()
    for i in range(0, len(windows), batch_size):
        group = windows[i : i + batch_size]
        width = max(end - start for start, end, _ in group)
        tokens = torch.full((len(group), width), pad_id, dtype=torch.long)
        labels = torch.full((len(group), width), pad_id, dtype=torch.long)
        for row, (start, end, first) in enumerate(group):
            tokens[row, : end - start] = inputs[start:end]
            labels[row, first - start : end - start] = targets[first:end]
        tokens, labels = tokens.to(device), labels.to(device)
        out = model(tokens)
        scored = labels != pad_id
        logits = out.logits.to(loss_dtype(out.logits))
        nll += float(F.cross_entropy(logits[scored], labels[scored], reduction="sum"))
        count += int(scored.sum())
        times = decoder_ponder(out, scored)
        if times is not None:
            ponder.add(times)
    return StreamScore(nll, count, ponder)


@torch.no_grad()
def next_token_log_probs(
    model: nn.Module,
    prefixes: Sequence[Sequence[int]],
    *,
    batch_size: int,
    pad_id: int = 0,
    ponder: PonderStats | None = None,
) -> Iterator[tuple[list[int], Tensor]]:
    """Log-probabilities of the token that follows each prefix, batch by batch: yields the
    indices of the prefixes in a batch and their ``[n, V]`` log-probabilities (float32 or
    float64). Prefixes are batched by length (longest first) to keep padding small;
    ``ponder`` collects the ponder time of every real position."""
    model.eval()
    device = next(model.parameters()).device
    if any(len(p) == 0 for p in prefixes):
        raise ValueError("every prefix needs at least one token (e.g. the sentence boundary)")
    order = sorted(range(len(prefixes)), key=lambda i: -len(prefixes[i]))
    for i in range(0, len(order), batch_size):
        index = order[i : i + batch_size]
        lengths = torch.tensor([len(prefixes[j]) for j in index])
        tokens = torch.full((len(index), int(lengths.max())), pad_id, dtype=torch.long)
        for row, j in enumerate(index):
            tokens[row, : len(prefixes[j])] = torch.as_tensor(prefixes[j], dtype=torch.long)
        tokens = tokens.to(device)
        out = model(tokens)
        last = out.logits[torch.arange(len(index), device=device), lengths.to(device) - 1]
        if ponder is not None:
            real = torch.arange(tokens.shape[1], device=device)[None, :] < lengths.to(device)[:, None]
            times = decoder_ponder(out, real)
            if times is not None:
                ponder.add(times)
        yield index, last.to(loss_dtype(last)).log_softmax(-1)


__all__ = ["PonderStats", "StreamScore", "decoder_ponder", "next_token_log_probs", "score_stream", "stream_windows"]
