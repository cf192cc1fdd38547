"""The Learning to Execute generator: programs checked by Python itself, disjoint and stable
splits, determinism, the mix distribution, and the character vocabulary."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import universal_transformer
from universal_transformer.data.lte import (
    CHARACTERS, EOS, OPERATIONS, PAD, PROGRAM_OPERATIONS, SPLITS, TASK_DEFAULTS, LTEGenerator, split_of,
    text_to_tokens, tokens_to_text,
)


def generator(task: str, **changes) -> LTEGenerator:
    settings = {**TASK_DEFAULTS[task], **changes}
    return LTEGenerator(
        task, settings["max_length"], settings.get("max_nesting", 1),
        tuple(settings.get("operations", ())), tuple(settings.get("operand_operations", ())),
        settings.get("length_draw", "example"),
    )


def run_program(source: str) -> list[str]:
    """What the program prints when Python runs it with no builtins but ``range``."""
    printed: list[str] = []
    namespace = {"__builtins__": {"range": range}, "print": lambda *args: printed.append(" ".join(map(str, args)))}
    exec(source.replace("#", "\n"), namespace)
    return printed


@pytest.mark.parametrize(
    "task, changes, count",
    [("program", {}, 3000), ("program", {"max_length": 3, "max_nesting": 6}, 1000), ("control", {}, 1000), ("addition", {}, 500),
     ("program", {"length_draw": "operand"}, 1000)],
)
def test_python_prints_every_target(task, changes, count):
    gen = generator(task, **changes)
    rng = random.Random(7)
    for _ in range(count):
        example = gen.sample(rng)
        assert run_program(example.source) == [example.target], example
        assert tokens_to_text(text_to_tokens(example.source)) == example.source
        assert tokens_to_text(text_to_tokens(example.target)) == example.target


def test_programs_cover_every_operation_and_negative_targets():
    gen = generator("program")
    rng = random.Random(3)
    examples = [gen.sample(rng) for _ in range(2000)]
    text = "\n".join(e.source for e in examples)
    for marker in ("+", "-", "*", " if ", ">", "<", "for x in range(", "+=", "-="):
        assert marker in text, marker
    assert any(re.search(r"(^|#)[a-j]=", e.source) and "for" not in e.source for e in examples)  # vars without a loop
    assert any(e.target.startswith("-") for e in examples)


def test_the_operations_recorded_are_those_in_the_text():
    gen = generator("program")
    rng = random.Random(4)
    examples = [gen.sample(rng) for _ in range(2000)]
    for e in examples:
        count = Counter(e.operations)
        assert len(e.operations) == e.nesting and set(count) <= set(PROGRAM_OPERATIONS), e
        lines = e.source.split("#")[:-1]  # without print(...)
        assert len(lines) == count["vars"] + 2 * count["small_loop"], e  # an assignment; and a loop
        assert sum(line.startswith("for x in range(") for line in lines) == count["small_loop"], e
        assert e.loop_counts == tuple(int(k) for k in re.findall(r"range\((\d+)\)", e.source)), e
        assert all(1 <= k <= 4 * e.length for k in e.loop_counts), e  # the original's 1..4 x length
        assert e.source.count("*") == count["smallmul"] and e.source.count(" if ") == count["ifstat"], e
    assert {e.operations[-1] for e in examples} == set(PROGRAM_OPERATIONS)
    assert generator("copy").sample(rng).operations == () == generator("copy").sample(rng).loop_counts


@pytest.mark.parametrize("length_draw", ["example", "operand"])
def test_the_operand_digits_recorded_are_the_numbers_in_the_text(length_draw):
    """Every number in a program's text is an operand drawn, a loop count or a factor of
    ``smallmul``: without factors (control), the operands' digits are the text's numbers but
    the loop counts; with them (program), they account for the count."""
    rng = random.Random(5)
    for e in (generator("control", length_draw=length_draw).sample(rng) for _ in range(1000)):
        numbers = re.findall(r"\d+", re.sub(r"range\(\d+\)", "", e.source))
        assert sorted(e.operand_digits) == sorted(map(len, numbers)), e
        assert all(1 <= d <= e.length for d in e.operand_digits), e
    for e in (generator("program", length_draw=length_draw).sample(rng) for _ in range(1000)):
        numbers = re.findall(r"\d+", e.source)
        assert len(numbers) == len(e.operand_digits) + len(e.loop_counts) + e.operations.count("smallmul"), e
    # "up to length digits": some numbers are shorter than the length drawn for them
    shorter = [generator("addition").sample(rng) for _ in range(2000)]
    assert 0.02 < sum(len(set(e.operand_digits)) > 1 for e in shorter) / len(shorter) < 0.3


@pytest.mark.parametrize("task", ["copy", "double", "reverse"])
def test_memorisation_targets(task):
    gen = generator(task)
    rng = random.Random(5)
    for _ in range(500):
        e = gen.sample(rng)
        assert e.source.isdigit() and len(e.source) == e.length and e.nesting == 0
        expected = {"copy": e.source, "double": e.source * 2, "reverse": "".join(reversed(e.source))}[task]
        assert e.target == expected


def test_control_and_addition_programs_have_their_operations():
    rng = random.Random(11)
    control = generator("control")
    for _ in range(500):
        source = control.sample(rng).source
        last = source.rsplit("#", 1)[-1]
        # the printed expression is a loop's variable or an if-expression; no multiplication
        assert re.fullmatch(r"print\(([a-j]|\(.* if .* else .*\))\)", last), source
        assert "*" not in source
    addition = generator("addition")
    for _ in range(200):
        assert re.fullmatch(r"print\(\(\d+\+\d+\)\)", addition.sample(rng).source)


def test_splits_are_disjoint_by_construction():
    gen = generator("program", max_length=2, max_nesting=1)
    rng = random.Random(0)
    sources = {split: {gen.sample_split(rng, split).source for _ in range(400)} for split in SPLITS}
    for split, found in sources.items():
        assert all(split_of(s) == split for s in found)
    assert not sources["train"] & sources["validation"]
    assert not sources["train"] & sources["test"]
    assert not sources["validation"] & sources["test"]
    # roughly a third of all examples fall in each split
    counts = Counter(split_of(gen.sample(rng).source) for _ in range(3000))
    assert all(800 < counts[s] < 1200 for s in SPLITS), counts


def test_split_is_stable_across_processes():
    """Python's own hash is salted per process; the split must not depend on it."""
    gen = generator("program")
    rng = random.Random(2)
    sources = [gen.sample(rng).source for _ in range(50)]
    code = "import sys; from universal_transformer.data.lte import split_of; print(' '.join(split_of(s) for s in sys.argv[1:]))"
    package_root = str(Path(universal_transformer.__file__).resolve().parents[1])  # this checkout's package
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": package_root}  # this process's seed is random
    out = subprocess.run([sys.executable, "-c", code, *sources], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == [split_of(s) for s in sources]


def test_generation_is_deterministic_per_seed():
    gen = generator("program")

    def draw(seed: int) -> list:
        rng = random.Random(seed)
        return [gen.sample_split(rng, "train") for _ in range(100)]

    assert draw(4) == draw(4)
    assert draw(4) != draw(5)


def test_lengths_and_nesting_follow_the_mix():
    gen = generator("program")  # L = 5, N = 2
    rng = random.Random(9)
    examples = [gen.sample(rng) for _ in range(6000)]
    lengths = Counter(e.length for e in examples)
    nestings = Counter(e.nesting for e in examples)
    assert sorted(lengths) == [1, 2, 3, 4, 5] and sorted(nestings) == [1, 2]
    assert all(abs(lengths[n] - 1200) < 180 for n in lengths), lengths  # about 6 standard deviations
    assert all(abs(nestings[n] - 3000) < 300 for n in nestings), nestings
    for e in examples:
        assert max(len(number) for number in re.findall(r"\d+", e.source)) <= e.length, e
    # each length is reached: some example has a number of exactly its length
    assert {e.length for e in examples if max(len(n) for n in re.findall(r"\d+", e.source)) == e.length} == {1, 2, 3, 4, 5}
    memorised = [generator("copy").sample(rng).length for _ in range(5500)]
    assert set(memorised) == set(range(1, 56))
    assert abs(sum(memorised) / len(memorised) - 28) < 1.5


def test_text_and_tokens():
    text = "a=12#for x in range(3):a-=(4 if 5>6 else 7)#print(a)"
    tokens = text_to_tokens(text)
    assert min(tokens) > EOS and len(set(tokens)) == len(set(text))
    assert tokens_to_text([*tokens, EOS, 9, 9]) == text
    assert tokens_to_text([PAD, *tokens, PAD]) == text
    assert len(set(CHARACTERS)) == len(CHARACTERS)
    with pytest.raises(ValueError, match=r"character '\?' at position 1 of 'a\?b'"):
        text_to_tokens("a?b")
    with pytest.raises(ValueError, match=r"'\\n'"):
        text_to_tokens("a=1\nprint(a)")


def test_a_length_per_operand_as_the_original_code_draws_them():
    """With ``length_draw="operand"`` the two numbers of ``(a+b)`` draw their lengths apart
    (each uniform over 1..5, so they differ in most programs), where one length per example
    gives both the same digits in most; loop counts follow their own length, and the
    example's length is the longest drawn."""
    rng = random.Random(11)

    def digits(gen, n=3000):
        examples = [gen.sample(rng) for _ in range(n)]
        pairs = [tuple(len(x) for x in re.fullmatch(r"print\(\((\d+)\+(\d+)\)\)", e.source).groups()) for e in examples]
        assert all(max(p) <= e.length for p, e in zip(pairs, examples))
        return pairs

    per_example, per_operand = digits(generator("addition")), digits(generator("addition", length_draw="operand"))
    assert sum(a != b for a, b in per_example) / len(per_example) < 0.3
    assert sum(a != b for a, b in per_operand) / len(per_operand) > 0.6
    shares = Counter(n for pair in per_operand for n in pair)
    assert all(0.12 < shares[n] / (2 * len(per_operand)) < 0.28 for n in range(1, 6)), shares
    loops = [generator("control", length_draw="operand", operations=("small_loop",)).sample(rng) for _ in range(500)]
    assert all(1 <= k <= 4 * e.length <= 20 for e in loops for k in e.loop_counts)
    assert {k for e in loops for k in e.loop_counts} == set(range(1, 21))
    with pytest.raises(ValueError, match="length_draw must be one of example, operand"):
        generator("program", length_draw="program")


def test_generator_rejects_bad_settings():
    with pytest.raises(ValueError, match="unknown task 'sort'"):
        LTEGenerator("sort", 5)
    with pytest.raises(ValueError, match="unknown operation 'divide'"):
        LTEGenerator("program", 5, 2, ("divide",), ("pair",))
    with pytest.raises(ValueError, match="max_nesting .11. must be at most 10"):
        LTEGenerator("program", 5, 11, tuple(OPERATIONS), tuple(OPERATIONS))
    with pytest.raises(ValueError, match="operand_operations"):
        LTEGenerator("program", 5, 2, ("pair",), ())
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        generator("copy").sample_split(random.Random(0), "dev")
