"""Copy, Reverse and Addition examples against plain Python, the text form, and batch layout."""

from __future__ import annotations

import pytest
import torch

from universal_transformer.data.algorithmic import (
    BOS, DIGIT0, EOS, PAD, PLUS, collate, make_example, text_to_tokens, tokens_to_text,
)


def _digits(tokens: list[int]) -> list[int]:
    assert all(DIGIT0 <= t < DIGIT0 + 10 for t in tokens), tokens
    return [t - DIGIT0 for t in tokens]


def _number(digits: list[int]) -> int:
    """Most significant digit first, by arithmetic rather than string parsing."""
    value = 0
    for d in digits:
        value = 10 * value + d
    return value


@pytest.mark.parametrize("task", ["copy", "reverse"])
@pytest.mark.parametrize("length", [1, 7, 40])
def test_copy_and_reverse_targets(task, length):
    gen = torch.Generator().manual_seed(length)
    src, tgt = make_example(task, length, gen)
    assert len(src) == length
    expected = src if task == "copy" else src[::-1]
    assert _digits(tgt) == _digits(expected)


def _split_addition(src: list[int]) -> tuple[list[int], list[int]]:
    assert src.count(PLUS) == 1
    i = src.index(PLUS)
    return _digits(src[:i]), _digits(src[i + 1 :])


@pytest.mark.parametrize("little_endian", [False, True])
def test_addition_targets_are_the_integer_sum(little_endian):
    """Over many seeds and lengths: sum right, width half+1, with carries and leading zeros seen."""
    carry_out = leading_zero_operand = leading_zero_sum = inner_carry = 0
    for seed in range(300):
        length = 1 + seed % 20
        half = max(1, length // 2)
        src, tgt = make_example("addition", length, torch.Generator().manual_seed(seed), little_endian=little_endian)
        a, b = _split_addition(src)
        total = _digits(tgt)
        assert len(a) == len(b) == half and len(total) == half + 1
        if little_endian:  # least significant digit first: read backwards
            a, b, total = a[::-1], b[::-1], total[::-1]
        assert _number(total) == _number(a) + _number(b), (seed, a, b, total)
        carry_out += total[0] == 1
        leading_zero_sum += total[0] == 0
        leading_zero_operand += a[0] == 0 or b[0] == 0
        inner_carry += any(x + y >= 10 for x, y in zip(a[1:], b[1:]))
    # the cases that break a wrong implementation all occur
    assert min(carry_out, leading_zero_sum, leading_zero_operand, inner_carry) > 10


@pytest.mark.parametrize("little_endian", [False, True])
def test_tensor2tensor_operand_lengths(little_endian):
    """``operand_lengths="tensor2tensor"``: l1 uniform in 1..L/2, l2 in 1..L-l1-1 (L at least 3),
    no leading zeros in the operands or the sum, the sum right; over many seeds both ranges are
    covered."""
    seen: dict[int, set[tuple[int, int]]] = {}
    for seed in range(3000):
        length = (1, 2, 3, 10, 40)[seed % 5]
        src, tgt = make_example("addition", length, torch.Generator().manual_seed(seed), little_endian=little_endian,
                                operand_lengths="tensor2tensor")
        a, b = _split_addition(src)
        total = _digits(tgt)
        top = max(3, length)
        assert 1 <= len(a) <= top // 2 and 1 <= len(b) <= top - len(a) - 1 and len(src) <= top
        if little_endian:
            a, b, total = a[::-1], b[::-1], total[::-1]
        for number in (a, b, total):
            assert len(number) == 1 or number[0] != 0, (seed, a, b, total)
        assert _number(total) == _number(a) + _number(b)
        seen.setdefault(top, set()).add((len(a), len(b)))
    for top, pairs in seen.items():
        firsts, seconds = {x for x, _ in pairs}, {y for _, y in pairs}
        assert firsts == set(range(1, top // 2 + 1)), top
        # the second operand up to top - 2 digits (when the first has one), longer than any first
        assert seconds == set(range(1, top - 1)) if top <= 10 else min(seconds) == 1 and max(seconds) > 30, top
    with pytest.raises(ValueError, match="unknown operand_lengths 'thirds'; choose from halves, tensor2tensor"):
        make_example("addition", 9, torch.Generator(), operand_lengths="thirds")


def test_little_endian_writes_the_same_numbers_backwards():
    for seed in range(20):
        big = make_example("addition", 12, torch.Generator().manual_seed(seed))
        little = make_example("addition", 12, torch.Generator().manual_seed(seed), little_endian=True)
        (a, b), (la, lb) = _split_addition(big[0]), _split_addition(little[0])
        assert (la, lb, little[1]) == (a[::-1], b[::-1], big[1][::-1])


def test_little_endian_leaves_copy_and_reverse_alone():
    for task in ("copy", "reverse"):
        assert make_example(task, 9, torch.Generator().manual_seed(3), little_endian=True) == make_example(
            task, 9, torch.Generator().manual_seed(3)
        )


def test_unknown_task():
    with pytest.raises(ValueError, match="unknown task 'sort'; choose from copy, reverse, addition"):
        make_example("sort", 4, torch.Generator())


def test_text_round_trip():
    for text in ["0", "0123456789", "12+034", "+"]:
        assert tokens_to_text(text_to_tokens(text)) == text
    assert text_to_tokens("9+0") == [DIGIT0 + 9, PLUS, DIGIT0]


def test_tokens_to_text_stops_at_eos_and_skips_padding():
    assert tokens_to_text([BOS, DIGIT0 + 4, PAD, DIGIT0 + 2, EOS, DIGIT0 + 7]) == "42"


@pytest.mark.parametrize(
    "text, bad, position", [("12a4", "a", 2), ("1 2", " ", 1), ("-5", "-", 0), ("1١", "١", 1), ("²", "²", 0)],
)
def test_text_with_bad_characters_is_refused(text, bad, position):
    with pytest.raises(ValueError, match=rf"character {bad!r} at position {position} of .*only digits and '\+'"):
        text_to_tokens(text)


def test_collate_layout():
    pairs = [([3, 4, 5], [6]), ([7], [8, 9, 10, 11])]
    batch = collate(pairs)
    ls, lt = 3, 4 + 1  # longest source; longest target plus bos/eos
    assert batch.src.tolist() == [[3, 4, 5], [7, PAD, PAD]]
    assert batch.tgt_in.tolist() == [[BOS, 6, PAD, PAD, PAD], [BOS, 8, 9, 10, 11]]
    assert batch.labels.tolist() == [[6, EOS, PAD, PAD, PAD], [8, 9, 10, 11, EOS]]
    assert batch.src.shape == (2, ls) and batch.labels.shape == (2, lt)
    assert batch.positions() == {"encoder": 4, "decoder": 2 + 5}
    assert batch.num_targets == 2 + 5  # every target and eos, no padding
    assert batch.ignore_index == PAD


def test_collate_teacher_forcing_shift():
    """The decoder input is the label sequence shifted right by one, after bos."""
    gen = torch.Generator().manual_seed(0)
    batch = collate([make_example("reverse", n, gen) for n in (5, 1, 9, 3)])
    real = batch.labels != PAD
    assert torch.equal(batch.tgt_in[:, 0], torch.full((4,), BOS))
    assert torch.equal(batch.tgt_in[:, 1:][real[:, 1:]], batch.labels[:, :-1][real[:, 1:]])
    assert torch.equal((batch.tgt_in != PAD), real)
    last = batch.labels.gather(1, real.sum(1, keepdim=True) - 1).squeeze(1)
    assert torch.equal(last, torch.full((4,), EOS)) and int(batch.labels.eq(EOS).sum()) == 4  # one eos, at the end
