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
# How Addition draws its operands' lengths: "halves", two numbers of length // 2 digits each;
# "tensor2tensor", as its AlgorithmicAdditionDecimal40 problem (the paper's) draws them.
OPERAND_LENGTHS = ("halves", "tensor2tensor")


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
    task: str, length: int, generator: torch.Generator, *, little_endian: bool = False,
    operand_lengths: str = "halves",
) -> tuple[list[int], list[int]]:
    """One (source, target) pair of token lists; ``length`` counts source digits.

    Addition: two numbers separated by ``+``. With ``operand_lengths="halves"`` both have
    ``length // 2`` digits (leading zeros allowed, as in Kaiser & Sutskever 2016) and the
    target is the sum written with the same number of digits plus one for the carry. With
    ``"tensor2tensor"``, as tensor2tensor's AlgorithmicAdditionDecimal40 generates them,
    ``length`` is a maximum: the first operand has l1 digits, uniform in 1..length // 2, the
    second l2, uniform in 1..length - l1 - 1 (so the source is at most ``length`` long; lengths
    below 3 are taken as 3, the least that holds ``a+b``), neither has a leading zero, nor has
    the sum. Digits go most significant first, or least significant first with
    ``little_endian`` (the Neural GPU's and tensor2tensor's order, in which a carry travels in
    the direction of reading). Copy and Reverse ignore both.
    """
    if task == "copy" or task == "reverse":
        digits = torch.randint(0, 10, (length,), generator=generator).tolist()
        target = digits if task == "copy" else digits[::-1]
        return digits_to_tokens(digits), digits_to_tokens(target)
    if task == "addition":
        if operand_lengths == "tensor2tensor":
            top = max(3, length)
            first = int(torch.randint(1, top // 2 + 1, (1,), generator=generator))
            second = int(torch.randint(1, top - first, (1,), generator=generator))
            a, b = _number_digits(first, generator), _number_digits(second, generator)
            width = 0  # the sum as it is, without leading zeros
        elif operand_lengths == "halves":
            half = max(1, length // 2)
            a = torch.randint(0, 10, (half,), generator=generator).tolist()
            b = torch.randint(0, 10, (half,), generator=generator).tolist()
            width = half + 1
        else:
            raise ValueError(f"unknown operand_lengths {operand_lengths!r}; choose from {', '.join(OPERAND_LENGTHS)}")
        total = int("".join(map(str, a))) + int("".join(map(str, b)))
        target = [int(c) for c in str(total).zfill(width)]
        if little_endian:  # the same numbers, written the other way round
            a, b, target = a[::-1], b[::-1], target[::-1]
        return digits_to_tokens(a) + [PLUS] + digits_to_tokens(b), digits_to_tokens(target)
    raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")


def _number_digits(count: int, generator: torch.Generator) -> list[int]:
    """A random ``count``-digit number, most significant digit first and not 0 (unless it is
    the only digit), as tensor2tensor's ``random_number_lower_endian`` draws one."""
    if count == 1:
        return torch.randint(0, 10, (1,), generator=generator).tolist()
    return [int(torch.randint(1, 10, (1,), generator=generator))] + torch.randint(0, 10, (count - 1,), generator=generator).tolist()


def collate(pairs: list[tuple[list[int], list[int]]]) -> Seq2SeqBatch:
    """Pad a list of (source, target) token lists into a batch."""
    return Seq2SeqBatch.from_pairs(pairs, pad_id=PAD, bos_id=BOS, eos_id=EOS)
