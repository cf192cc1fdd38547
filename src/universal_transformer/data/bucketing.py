"""Batches of examples of similar length, so that padding costs little.

* :class:`BucketBatcher`, for a fixed training set: examples are grouped by length into
  buckets, and a batch holds examples of one bucket, as many as fit a token budget; the
  batches of an epoch are a pure function of ``(seed, epoch)``, so training resumes exactly
  from a step number. tensor2tensor batches every problem this way; here translation and
  bAbI (``task.bucket_width``) use it.
* :class:`SortedPools`, for a stream of fresh examples (Learning to Execute,
  ``task.sort_pool``): the stream's batches of a window of steps, regrouped by length.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Generic, Sequence, TypeVar

import torch
from torch import Tensor


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

    ``groups`` (one key per example, e.g. its bAbI task) splits every bucket further, so that a
    batch holds examples of one group and one length bucket; None: lengths alone.
    """

    def __init__(self, lengths: Sequence[int], *, width: int, sides: int = 2,
                 groups: Sequence[int] | None = None) -> None:
        if not lengths:
            raise ValueError("no examples to batch")
        if width < 1 or sides < 1:
            raise ValueError(f"bucket width and sides must be positive, got {width} and {sides}")
        if groups is not None and len(groups) != len(lengths):
            raise ValueError(f"{len(groups)} groups for {len(lengths)} examples")
        self.width, self.sides = width, sides
        # Keys (group, length bucket), one group without groups; sorted, so the epoch's shuffle is fixed.
        buckets: dict[tuple[int, int], list[int]] = {}
        for i, n in enumerate(lengths):
            buckets.setdefault((0 if groups is None else groups[i], (max(n, 1) - 1) // width), []).append(i)
        self.buckets = {k: torch.tensor(v) for k, v in sorted(buckets.items())}
        self._cache: tuple[tuple[int, int, int, int], list[Tensor]] | None = None

    def per_batch(self, bucket: int, batch_tokens: int, max_batch_size: int) -> int:
        """Examples of length bucket ``bucket`` per batch (at least one, even if it alone exceeds the budget)."""
        return max(1, min(max_batch_size, batch_tokens // (self.sides * (bucket + 1) * self.width)))

    def num_batches(self, batch_tokens: int, max_batch_size: int) -> int:
        """Batches per epoch."""
        return sum(
            math.ceil(len(members) / self.per_batch(k, batch_tokens, max_batch_size)) for (_, k), members in self.buckets.items()
        )

    def epoch(self, seed: int, epoch: int, batch_tokens: int, max_batch_size: int) -> list[Tensor]:
        """Every batch (a tensor of example indices) of ``epoch``, in training order."""
        key = (seed, epoch, batch_tokens, max_batch_size)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        gen = torch.Generator().manual_seed((seed * 1_000_003 + epoch) % 2**63)
        batches: list[Tensor] = []
        for (_, k), members in self.buckets.items():
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


T = TypeVar("T")


class SortedPools(Generic[T]):
    """A stream's batches regrouped by length, ``pool`` steps at a time.

    ``stream(step)`` is the stream's batch of ``step`` (a list of examples, a pure function of
    the step). Step ``s`` belongs to the window of steps ``w * pool .. (w + 1) * pool - 1``,
    ``w = s // pool``: the examples of the stream's batches of that window are sorted by
    ``length(example)`` (stable) and split into ``pool`` runs of near-equal count, shortest
    first, which the window's steps take in an order shuffled from ``(seed, w)``. A window
    trains on exactly the stream's examples, only regrouped, so the distribution of examples
    is the stream's and every step holds the window's mean number of examples; the batch of
    the longest examples (the window's mean count, each as long as the window's longest) can
    then exceed the stream's token budget. ``pool`` 1 is the stream itself.
    """

    def __init__(self, pool: int, stream: Callable[[int], list[T]], length: Callable[[T], Any]) -> None:
        if pool < 1:
            raise ValueError(f"pool must be a positive number of steps, got {pool}")
        self.pool, self.stream, self.length = pool, stream, length
        self._cache: tuple[tuple[int, int], list[list[T]]] | None = None

    def window(self, seed: int, window: int) -> list[list[T]]:
        """The batches of ``window``'s steps, in step order."""
        key = (seed, window)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        examples = [ex for s in range(window * self.pool, (window + 1) * self.pool) for ex in self.stream(s)]
        examples.sort(key=self.length)
        size, extra = divmod(len(examples), self.pool)
        runs, start = [], 0
        for i in range(self.pool):
            end = start + size + (i < extra)
            runs.append(examples[start:end])
            start = end
        gen = torch.Generator().manual_seed((seed * 1_000_003 + window) % 2**63)
        plan = [runs[i] for i in torch.randperm(self.pool, generator=gen).tolist()]
        self._cache = (key, plan)
        return plan

    def batch(self, seed: int, step: int) -> list[T]:
        """The examples of training step ``step``."""
        if self.pool == 1:
            return self.stream(step)
        window, index = divmod(step, self.pool)
        return self.window(seed, window)[index]


__all__ = ["BucketBatcher", "SortedPools"]
