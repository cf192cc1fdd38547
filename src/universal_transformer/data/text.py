"""Tokenised text corpora for language modelling: reading, a word vocabulary, the token stream.

A corpus is one sentence or passage per line, words separated by whitespace (Mikolov's
Penn Treebank, the LAMBADA passages and novels, the agreement test sets). Files are
UTF-8 (a byte-order mark is skipped, CRLF line ends accepted); a line that is not
valid UTF-8 is a :class:`TextFormatError` naming file and line.

Token ids: ``0`` padding, ``1`` ``<unk>``, ``2`` ``<eos>``, then the words. ``<eos>``
ends every line of the stream, so it is also what precedes the first word of a
sentence: language models score a sentence as ``<eos> w1 w2 ...``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path


import numpy as np

from .textfile import read_text_lines

PAD, UNK, EOS = "<pad>", "<unk>", "<eos>"
PAD_ID, UNK_ID, EOS_ID = 0, 1, 2
SPECIALS = (PAD, UNK, EOS)


class TextFormatError(ValueError):
    """A malformed text or data file; the message names the file and line."""


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line of a UTF-8 file (``.gz`` too), without the line end.

    A leading byte-order mark is dropped and ``\\r\\n`` ends are accepted; bytes that
    are not UTF-8 raise :class:`TextFormatError` with the file, line and column.
    """
    return enumerate(read_text_lines(path, TextFormatError), start=1)


def read_tokenised(path: str | Path, *, lowercase: bool = False) -> Iterator[list[str]]:
    """The words of each non-empty line of a tokenised corpus file (empty lines carry no words and are skipped)."""
    for _, text in read_lines(path):
        words = (text.lower() if lowercase else text).split()
        if words:
            yield words


class Vocabulary:
    """Words and their ids: the three reserved entries (padding, ``<unk>``, ``<eos>``) first.

    :meth:`build` derives it from a training corpus deterministically (words by
    descending count, ties in code-point order), so the same file and options always
    give the same ids. A literal ``<unk>`` or ``<eos>`` in a text means the reserved
    entry; a literal ``<pad>`` reads as ``<unk>`` (padding is never a word).
    """

    pad_id, unk_id, eos_id = PAD_ID, UNK_ID, EOS_ID

    def __init__(self, words: Iterable[str]) -> None:
        """``words``: the entries after the reserved three, in id order (ids 3, 4, ...)."""
        self.words: list[str] = list(SPECIALS)
        self.index: dict[str, int] = {EOS: EOS_ID, UNK: UNK_ID}
        for word in words:
            if word in SPECIALS:
                raise ValueError(f"{word!r} is a reserved entry of the vocabulary")
            if word in self.index:
                raise ValueError(f"{word!r} is twice in the vocabulary")
            self.index[word] = len(self.words)
            self.words.append(word)

    @classmethod
    def build(cls, lines: Iterable[list[str]], *, min_count: int = 1, max_size: int | None = None) -> "Vocabulary":
        """The words of ``lines`` seen at least ``min_count`` times, the most frequent first,
        at most ``max_size`` entries in all (the reserved three included)."""
        counts: Counter[str] = Counter()
        for words in lines:
            counts.update(words)
        for special in SPECIALS:
            counts.pop(special, None)
        ranked = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
        if max_size is not None:
            ranked = ranked[: max(0, max_size - len(SPECIALS))]
        return cls(ranked)

    @classmethod
    def from_file(cls, path: str | Path, *, max_size: int | None = None) -> "Vocabulary":
        """Read a vocabulary file: one entry per line, the word first (a tab- or space-separated
        count or other columns after it are ignored, as in LAMBADA's ``lambada-vocab-2.txt``).
        Reserved entries in the file keep their reserved ids; at most ``max_size`` entries in all."""
        lines = [(lineno, text.split()) for lineno, text in read_lines(path)]
        if lines and all(len(f) > 1 and f[0].isdigit() and not f[1].isdigit() for _, f in lines):
            # `uniq -c` order: the counts would become the vocabulary and every word <unk>.
            raise TextFormatError(
                f"{path}:{lines[0][0]}: every line is a number, then a word: a vocabulary file "
                "has the word first (`word count`), not `count word`"
            )
        words: list[str] = []
        seen: dict[str, int] = {}
        for lineno, fields in lines:
            if not fields:
                raise TextFormatError(f"{path}:{lineno}: empty line in a vocabulary file")
            word = fields[0]
            if word in seen:
                raise TextFormatError(f"{path}:{lineno}: {word!r} is already on line {seen[word]}")
            seen[word] = lineno
            if word not in SPECIALS:
                words.append(word)
        if max_size is not None:
            words = words[: max(0, max_size - len(SPECIALS))]
        return cls(words)

    def save(self, path: str | Path) -> Path:
        """Write one entry per line in id order (:meth:`from_file` reads it back identically)."""
        path = Path(path)
        path.write_text("".join(f"{w}\n" for w in self.words), encoding="utf-8")
        return path

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def id(self, word: str) -> int:
        return self.index.get(word, UNK_ID)

    def encode(self, words: Iterable[str]) -> list[int]:
        """Ids of ``words``, ``<unk>`` for words not in the vocabulary."""
        return [self.index.get(w, UNK_ID) for w in words]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.words[i] for i in ids]


def encode_stream(lines: Iterable[list[str]], vocab: Vocabulary) -> np.ndarray:
    """The corpus as one stream of ids: ``<eos>``, then every line followed by ``<eos>``
    (int32; Mikolov's convention of an end-of-sentence token after each line, with one
    in front so that the first sentence starts like every other)."""
    chunks = [np.array([EOS_ID], dtype=np.int32)]
    for words in lines:
        ids = vocab.encode(words)
        ids.append(EOS_ID)
        chunks.append(np.asarray(ids, dtype=np.int32))
    return np.concatenate(chunks)


__all__ = [
    "EOS", "EOS_ID", "PAD", "PAD_ID", "SPECIALS", "TextFormatError", "UNK", "UNK_ID", "Vocabulary",
    "encode_stream", "read_lines", "read_tokenised",
]
