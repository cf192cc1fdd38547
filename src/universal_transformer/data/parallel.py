"""Parallel text: two aligned plain-text files, line ``i`` of one the translation of line ``i`` of the other.

* **Files** are UTF-8, optionally gzipped (a ``.gz`` name); a byte-order mark and CRLF
  line ends are accepted. Lines are split on ``\\n`` only (``str.splitlines`` would also
  split on form feeds and Unicode separators inside a sentence and misalign the files).
* **Alignment**: files of different line counts are an error naming both files and
  both counts.
* **Length filtering** (:class:`LengthFilter`, for training data only; evaluation sets
  are kept whole): a pair is dropped when a side is empty, has more than ``max_tokens``
  tokens, or is more than ``max_ratio`` times as long as the other side (Moses'
  ``clean-corpus-n.perl``, there on words; here on sub-word tokens).
* **Batching** (:class:`BucketBatcher`): examples are grouped by length into buckets, and
  a batch holds examples of one bucket, as many as fit a token budget; the batches of
  an epoch are a pure function of ``(seed, epoch)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from typing import Sequence

import torch
from torch import Tensor

from .textfile import read_text_lines


class ParallelFormatError(ValueError):
    """A parallel-text file cannot be read or does not match its partner; the message names the file(s)."""


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file (``.gz``: gzipped), without line ends, BOM or trailing ``\\r``.

    Only ``\\n`` (and ``\\r\\n``) end a line: ``str.splitlines`` would also split at form
    feeds and Unicode separators inside a sentence and misalign the two sides."""
    return read_text_lines(path, ParallelFormatError)


@dataclass
class ParallelCorpus:
    """Aligned ``sources`` and ``targets`` (raw text lines) and the files they came from."""

    sources: list[str]
    targets: list[str]
    source_path: Path
    target_path: Path

    def __len__(self) -> int:
        return len(self.sources)

    def head(self, n: int | None) -> "ParallelCorpus":
        """The first ``n`` pairs (all if ``n`` is None)."""
        return ParallelCorpus(self.sources[:n], self.targets[:n], self.source_path, self.target_path)


def read_parallel(source: str | Path, target: str | Path) -> ParallelCorpus:
    """Read two aligned files; :class:`ParallelFormatError` if they differ in line count."""
    sources, targets = read_lines(source), read_lines(target)
    if len(sources) != len(targets):
        raise ParallelFormatError(
            f"misaligned parallel files: {source} has {len(sources)} lines, {target} has {len(targets)}; "
            "line i of one must translate line i of the other"
        )
    return ParallelCorpus(sources, targets, Path(source), Path(target))


def find_file(directory: str | Path, prefix: str, language: str) -> Path:
    """``DIRECTORY/PREFIX.LANGUAGE``, or the same with ``.gz``."""
    plain = Path(directory) / f"{prefix}.{language}"
    for path in (plain, plain.with_name(plain.name + ".gz")):
        if path.is_file():
            return path
    raise ParallelFormatError(f"{plain}: not found (nor {plain.name}.gz)")


@dataclass
class LengthFilter:
    """Which pairs to train on: both sides non-empty, at most ``max_tokens`` tokens each,
    and the longer side at most ``max_ratio`` times the shorter."""

    max_tokens: int = 100
    max_ratio: float = 9.0

    def __post_init__(self) -> None:
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {self.max_tokens!r}")
        if not self.max_ratio >= 1.0:
            raise ValueError(f"max_ratio must be >= 1, got {self.max_ratio!r}")

    def keeps(self, source_length: int, target_length: int) -> bool:
        short, long = sorted((source_length, target_length))
        return short > 0 and long <= self.max_tokens and long <= self.max_ratio * short

    def select(self, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]) -> list[int]:
        """Indices of the pairs kept."""
        return [i for i, (s, t) in enumerate(zip(sources, targets)) if self.keeps(len(s), len(t))]


class BucketBatcher:
    """Batches of example indices by length bucket, as many examples per batch as fit a token budget.

    ``lengths[i]`` is example ``i``'s longest padded side; bucket ``k`` holds lengths
    ``k * width + 1 .. (k + 1) * width``, and an example of it is charged ``sides``
    times the bucket's upper bound (every side padded to at most that). A bucket of
    ``n`` examples that fit ``per_batch`` at a time gives ``ceil(n / per_batch)``
    batches of near-equal size. Each epoch shuffles the members of every bucket and the
    order of all batches, from ``(seed, epoch)``; the number of batches per epoch does
    not depend on the shuffle, so step ``s`` is batch ``s % n`` of epoch ``s // n``: a
    pure function of ``(seed, step)`` that visits every example once per epoch.
    """

    def __init__(self, lengths: Sequence[int], *, width: int, sides: int = 2) -> None:
        if not lengths:
            raise ValueError("no examples to batch")
        if width < 1 or sides < 1:
            raise ValueError(f"bucket width and sides must be positive, got {width} and {sides}")
        self.width, self.sides = width, sides
        buckets: dict[int, list[int]] = {}
        for i, n in enumerate(lengths):
            buckets.setdefault((max(n, 1) - 1) // width, []).append(i)
        self.buckets = {k: torch.tensor(v) for k, v in sorted(buckets.items())}
        self._cache: tuple[tuple[int, int, int, int], list[Tensor]] | None = None

    def per_batch(self, bucket: int, batch_tokens: int, max_batch_size: int) -> int:
        """Examples of ``bucket`` per batch (at least one, even if it alone exceeds the budget)."""
        return max(1, min(max_batch_size, batch_tokens // (self.sides * (bucket + 1) * self.width)))

    def num_batches(self, batch_tokens: int, max_batch_size: int) -> int:
        """Batches per epoch."""
        return sum(
            math.ceil(len(members) / self.per_batch(k, batch_tokens, max_batch_size)) for k, members in self.buckets.items()
        )

    def epoch(self, seed: int, epoch: int, batch_tokens: int, max_batch_size: int) -> list[Tensor]:
        """Every batch (a tensor of example indices) of ``epoch``, in training order."""
        key = (seed, epoch, batch_tokens, max_batch_size)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        gen = torch.Generator().manual_seed((seed * 1_000_003 + epoch) % 2**63)
        batches: list[Tensor] = []
        for k, members in self.buckets.items():
            shuffled = members[torch.randperm(len(members), generator=gen)]
            chunks = math.ceil(len(members) / self.per_batch(k, batch_tokens, max_batch_size))
            batches += list(torch.tensor_split(shuffled, chunks))
        order = torch.randperm(len(batches), generator=gen).tolist()
        plan = [batches[i] for i in order]
        self._cache = (key, plan)
        return plan

    def batch(self, seed: int, step: int, batch_tokens: int, max_batch_size: int) -> Tensor:
        """The example indices of training step ``step``."""
        epoch, index = divmod(step, self.num_batches(batch_tokens, max_batch_size))
        return self.epoch(seed, epoch, batch_tokens, max_batch_size)[index]


__all__ = [
    "BucketBatcher", "LengthFilter", "ParallelCorpus", "ParallelFormatError", "find_file", "read_lines",
    "read_parallel",
]
