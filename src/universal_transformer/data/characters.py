"""Character vocabularies of the generated tasks: padding 0, bos 1, eos 2, then one token per character."""

from __future__ import annotations

from collections.abc import Sequence

PAD, BOS, EOS = 0, 1, 2
FIRST_CHAR = 3


class CharacterVocabulary:
    """Token ``FIRST_CHAR + i`` is ``characters[i]``; ``describe`` says in an error what is allowed."""

    def __init__(self, characters: str, describe: str) -> None:
        if len(set(characters)) != len(characters):
            raise ValueError(f"repeated characters in {characters!r}")
        self.characters = characters
        self.describe = describe
        self._ids = {ch: FIRST_CHAR + i for i, ch in enumerate(characters)}

    @property
    def size(self) -> int:
        return FIRST_CHAR + len(self.characters)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; a character outside the vocabulary is a ValueError naming it and its position."""
        tokens = []
        for i, ch in enumerate(text):
            if ch not in self._ids:
                raise ValueError(f"character {ch!r} at position {i} of {text!r}: {self.describe}")
            tokens.append(self._ids[ch])
        return tokens

    def decode(self, tokens: Sequence[int]) -> str:
        """Readable text of ``tokens``: stops at eos, skips padding and bos, ``?`` for an unknown id."""
        out = []
        for t in tokens:
            if t == EOS:
                break
            if t in (PAD, BOS):
                continue
            out.append(self.characters[t - FIRST_CHAR] if FIRST_CHAR <= t < self.size else "?")
        return "".join(out)


__all__ = ["BOS", "EOS", "FIRST_CHAR", "PAD", "CharacterVocabulary"]
