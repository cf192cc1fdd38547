"""The algorithmic tasks of the paper's Section 3.4 (Copy, Reverse, Addition), generated from a seed.

Tokens: ``0`` padding, ``1`` begin-of-sequence, ``2`` end-of-sequence, ``3..12`` the digits
0-9, ``13`` the ``+`` separating Addition's operands. Sources here carry no special tokens
(the task's ``source_eos`` option ends them with end-of-sequence, as tensor2tensor does);
targets end with end-of-sequence.
"""

from __future__ import annotations

import torch

from .batch import Seq2SeqBatch
from .characters import BOS, EOS, FIRST_CHAR, PAD, CharacterVocabulary

DIGIT0 = FIRST_CHAR
PLUS = DIGIT0 + 10
VOCAB_SIZE = PLUS + 1
TASKS = ("copy", "reverse", "addition")


def digits_to_tokens(digits: list[int]) -> list[int]:
    return [DIGIT0 + d for d in digits]


VOCABULARY = CharacterVocabulary("0123456789+", "only digits and '+' are allowed")


def tokens_to_text(tokens: list[int]) -> str:
    """Readable form of a token list (stops at end-of-sequence, skips padding)."""
    return VOCABULARY.decode(tokens)


def text_to_tokens(text: str) -> list[int]:
    """Parse ``"123"`` or ``"12+34"`` into source tokens; rejects any other character
    (ASCII digits only: ``str.isdigit`` would also take other scripts' digits and ``²``)."""
    return VOCABULARY.encode(text)


def make_example(
    task: str, length: int, generator: torch.Generator, *, little_endian: bool = False
) -> tuple[list[int], list[int]]:
    """One (source, target) pair of token lists; ``length`` counts source digits.

    Addition: two numbers of ``length // 2`` digits each (leading zeros allowed, as in
    Kaiser & Sutskever 2016), separated by ``+``; the target is the sum, written with
    the same number of digits plus one for the carry. Digits go most significant first,
    or least significant first with ``little_endian`` (the Neural GPU's order, in which
    a carry travels in the direction of reading). Copy and Reverse ignore it.
    """
    if task == "copy" or task == "reverse":
        digits = torch.randint(0, 10, (length,), generator=generator).tolist()
        target = digits if task == "copy" else digits[::-1]
        return digits_to_tokens(digits), digits_to_tokens(target)
    if task == "addition":
        half = max(1, length // 2)
        a = torch.randint(0, 10, (half,), generator=generator).tolist()
        b = torch.randint(0, 10, (half,), generator=generator).tolist()
        total = int("".join(map(str, a))) + int("".join(map(str, b)))
        target = [int(c) for c in str(total).zfill(half + 1)]
        if little_endian:  # the same numbers, written the other way round
            a, b, target = a[::-1], b[::-1], target[::-1]
        return digits_to_tokens(a) + [PLUS] + digits_to_tokens(b), digits_to_tokens(target)
    raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")


def collate(pairs: list[tuple[list[int], list[int]]]) -> Seq2SeqBatch:
    """Pad a list of (source, target) token lists into a batch."""
    return Seq2SeqBatch.from_pairs(pairs, pad_id=PAD, bos_id=BOS, eos_id=EOS)
