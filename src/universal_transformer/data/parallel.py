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
* **Batching**: by length bucket (:class:`~universal_transformer.data.bucketing.BucketBatcher`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .textfile import read_text_lines


class ParallelFormatError(ValueError):
    """A parallel-text file cannot be read or does not match its partner; the message names the file(s)."""


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file (``.gz``: gzipped), without line ends, BOM or trailing ``\\r``.

    Only ``\\n`` (and ``\\r\\n``) end a line: ``str.splitlines`` would also split at a lone
    ``\\r``, form feeds and Unicode separators inside a sentence and misalign the two sides."""
    return read_text_lines(path, ParallelFormatError, lone_cr=False)


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
    if not sources:
        raise ParallelFormatError(f"{source}: no lines: an empty corpus")
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


__all__ = [
    "LengthFilter", "ParallelCorpus", "ParallelFormatError", "find_file", "read_lines",
    "read_parallel",
]
