"""LAMBADA (Paperno et al. 2016): the passages, the OpenAI variant, the training novels.

* The official plain-text files (``lambada_development_plain_text.txt``,
  ``lambada_test_plain_text.txt``, ``lambada_control_test_data_plain_text.txt``): one
  tokenised, lower-cased passage per line; the word to guess is the last one.
* ``lambada_test.jsonl`` (the detokenised, cased test set that LM evaluation tools use):
  one ``{"text": ...}`` per line; the target is the last whitespace-delimited word.
* The training data, ``train-novels/<genre>/<novel>.txt``: tokenised like the passages,
  read in sorted order as one corpus (:func:`novel_files`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .text import TextFormatError, read_lines


@dataclass
class LambadaPassage:
    """``context`` words (the passage without its last word) and the ``target`` word; ``line`` in the file."""

    context: list[str]
    target: str
    line: int = 0


def _passage(words: list[str], path: Path, lineno: int) -> LambadaPassage:
    if len(words) < 2:
        raise TextFormatError(f"{path}:{lineno}: a passage needs context words and a target word, got {len(words)} word(s)")
    return LambadaPassage(words[:-1], words[-1], lineno)


def read_lambada(path: str | Path, *, lowercase: bool = False) -> list[LambadaPassage]:
    """Passages of a LAMBADA file: the official plain text, or JSON lines (``.jsonl`` or ``.json``,
    gzipped or not) with a ``text`` field per line."""
    path = Path(path)
    jsonl = path.name.lower().removesuffix(".gz").endswith((".jsonl", ".json"))  # lambada_test.jsonl(.gz)
    passages = []
    for lineno, text in read_lines(path):
        where = f"{path}:{lineno}"
        if not text.strip():
            continue
        if jsonl:
            try:
                record = json.loads(text)
            except json.JSONDecodeError as err:
                raise TextFormatError(f"{where}: not valid JSON: {err.msg} at column {err.colno}") from None
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                raise TextFormatError(f"{where}: expected an object with a string 'text' field")
            text = record["text"]
        passages.append(_passage((text.lower() if lowercase else text).split(), path, lineno))
    if not passages:
        raise TextFormatError(f"{path}: no passages found")
    return passages


def novel_files(folder: str | Path) -> list[Path]:
    """The novels of a LAMBADA training folder (``train-novels/<genre>/<novel>.txt``), sorted by genre and name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TextFormatError(f"{folder}: no such folder (expected LAMBADA's train-novels/<genre>/<novel>.txt)")
    files = sorted(p for p in folder.glob("*/*.txt") if p.is_file())
    if not files:
        raise TextFormatError(f"{folder}: no novels found (expected LAMBADA's train-novels/<genre>/<novel>.txt)")
    return files


__all__ = ["LambadaPassage", "novel_files", "read_lambada"]
