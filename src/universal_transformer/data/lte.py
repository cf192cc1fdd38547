"""Learning to Execute (Zaremba & Sutskever 2015; the paper's Section 3.5), generated from a seed.

Program evaluation: a short Python program, its lines joined by ``#`` and ending in
``print(EXPR)``; the target is the printed integer (``-`` for negative numbers)::

    b=8937#for x in range(16):b-=(46+2)#print(b)        ->  8169

A program is ``nesting`` operations composed through a stack: each operation takes its
operands from the stack (the result of the operation before it) or draws random integers
of up to ``length`` digits, and pushes its expression and value. The operations are those
of the original generator (``pair``, ``smallmul``, ``equality``, ``vars``, ``small_loop``,
``ifstat``) plus ``addition`` (a pair that always adds), which makes the addition task.

Memorisation: the source is a string of digits, the target the same digits (``copy``),
twice (``double``) or reversed (``reverse``).

Every example draws its length uniformly from ``1..max_length`` and its nesting from
``1..max_nesting`` (the "mix" strategy, which the paper uses, without curriculum).
Train, validation and test are disjoint by construction: a source's stable hash
modulo 3 picks its split, as the original generator does (0 train, 1 validation, 2 test).

Tokens: ``0`` padding, ``1`` begin-of-sequence, ``2`` end-of-sequence, then one token
per character of :data:`CHARACTERS`. Sources carry no special tokens; targets end with
end-of-sequence.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

from .characters import BOS, EOS, PAD, CharacterVocabulary  # noqa: F401 (the special ids, for the task)

# Fresh variables come from these letters (each operation that assigns takes an unused
# one), as in the original generator; ``x`` is the loop variable and never an operand.
VARIABLES = "abcdefghij"
KEYWORDS = ("print", "for", "x", "in", "range", "if", "else")
# Every character a program or a target can hold: digits, the letters of the variables
# and keywords, operators and punctuation, the space of ``c if a>b else d`` and ``#``
# between lines. Programs are one line (``#``-joined), so there is no newline.
CHARACTERS = (
    "0123456789"
    + "".join(sorted(set(VARIABLES) | set("".join(KEYWORDS))))
    + " #()*+-:<=>"
)
VOCABULARY = CharacterVocabulary(CHARACTERS, f"not in the Learning to Execute vocabulary {CHARACTERS!r}")
VOCAB_SIZE = VOCABULARY.size

PROGRAM_TASKS = ("program", "control", "addition")
# How the mix draws a program's lengths: one per example (``example``, as Zaremba & Sutskever's
# paper describes it), or one for every operand and loop count or factor (``operand``, as their
# code does: it calls its mix function anew for each).
LENGTH_DRAWS = ("example", "operand")
MEMORISATION_TASKS = ("copy", "double", "reverse")
TASKS = PROGRAM_TASKS + MEMORISATION_TASKS
SPLITS = ("train", "validation", "test")


# -- programs ---------------------------------------------------------------------------


class ProgramBuilder:
    """The state of one program being generated: the random source, the example's length
    (with ``per_operand``, the largest length: every operand and every loop count or factor
    draws its own from ``1..length``), the operand stack, the unused variables, the loop
    counts drawn so far, the digits of each number drawn as an operand and the longest length
    drawn."""

    def __init__(self, rng: random.Random, length: int, *, per_operand: bool = False) -> None:
        self.rng = rng
        self.length = length
        self.per_operand = per_operand
        self.stack: list[tuple[str, int]] = []
        self.free_variables = rng.sample(VARIABLES, len(VARIABLES))
        self.loop_counts: list[int] = []
        self.operand_digits: list[int] = []
        self.longest = 0

    def draw_length(self) -> int:
        """The length of one operand or loop count: the example's, or one of its own."""
        length = self.rng.randint(1, self.length) if self.per_operand else self.length
        self.longest = max(self.longest, length)
        return length

    def operand(self) -> tuple[str, int]:
        """The previous operation's (expression, value), else a random integer of up to ``length`` digits."""
        if self.stack:
            return self.stack.pop()
        value = self.rng.randint(1, 10 ** self.draw_length() - 1)
        # "up to length digits": 1 in 10 of the numbers drawn for a length is shorter, so
        # even one length per example mixes lengths (kept for the evaluation's breakdown)
        self.operand_digits.append(len(str(value)))
        return str(value), value

    def operands(self, count: int) -> list[tuple[str, int]]:
        """``count`` operands; the previous result (if any) lands in a random one of the slots."""
        drawn = [self.operand() for _ in range(count)]
        self.rng.shuffle(drawn)
        return drawn

    def small_number(self) -> int:
        """A loop count or small factor, ``1..4 * length``."""
        return self.rng.randint(1, 4 * self.draw_length())

    def variable(self) -> str:
        if not self.free_variables:
            raise ValueError(f"a program can assign at most {len(VARIABLES)} variables; lower the nesting")
        return self.free_variables.pop()

    def sign(self) -> str:
        return self.rng.choice("+-")


# An operation returns (code lines, expression, value); compound expressions are
# parenthesised so that any expression can be an operand of the next operation.
Operation = Callable[[ProgramBuilder], tuple[list[str], str, int]]


def _apply(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a - b


def _pair(p: ProgramBuilder) -> tuple[list[str], str, int]:
    (a, va), (b, vb) = p.operands(2)
    op = p.sign()
    return [], f"({a}{op}{b})", _apply(va, op, vb)


def _addition(p: ProgramBuilder) -> tuple[list[str], str, int]:
    (a, va), (b, vb) = p.operands(2)
    return [], f"({a}+{b})", va + vb


def _smallmul(p: ProgramBuilder) -> tuple[list[str], str, int]:
    a, va = p.operand()
    k = p.small_number()
    expr = f"({a}*{k})" if p.rng.random() < 0.5 else f"({k}*{a})"
    return [], expr, va * k


def _equality(p: ProgramBuilder) -> tuple[list[str], str, int]:
    a, va = p.operand()
    return [], a, va


def _vars(p: ProgramBuilder) -> tuple[list[str], str, int]:
    v = p.variable()
    (a, va), (b, vb) = p.operands(2)
    op = p.sign()
    return [f"{v}={a}"], f"({v}{op}{b})", _apply(va, op, vb)


def _small_loop(p: ProgramBuilder) -> tuple[list[str], str, int]:
    v = p.variable()
    (a, va), (b, vb) = p.operands(2)
    k = p.small_number()
    p.loop_counts.append(k)  # the multiplier the loop applies to b, kept for the evaluation's breakdown
    op = p.sign()
    return [f"{v}={a}", f"for x in range({k}):{v}{op}={b}"], v, _apply(va, op, k * vb)


def _ifstat(p: ProgramBuilder) -> tuple[list[str], str, int]:
    (a, va), (b, vb), (c, vc), (d, vd) = p.operands(4)
    cmp = p.rng.choice("<>")
    holds = va > vb if cmp == ">" else va < vb
    return [], f"({c} if {a}{cmp}{b} else {d})", vc if holds else vd


OPERATIONS: dict[str, Operation] = {
    "pair": _pair,
    "smallmul": _smallmul,
    "equality": _equality,
    "vars": _vars,
    "small_loop": _small_loop,
    "ifstat": _ifstat,
    "addition": _addition,
}
# The original generator's six operations (``addition`` is ours, for the addition task).
PROGRAM_OPERATIONS = ("pair", "smallmul", "equality", "vars", "small_loop", "ifstat")

# Each task's defaults: the paper's lengths (55 for memorisation; length 5, nesting 2 for
# program evaluation) and the operations (last, earlier). The paper names a control task
# without defining it, and the original generator has no such setting; ours: every
# program ends in control flow (an if-expression or a for loop) whose operands are numbers
# or the results of plain arithmetic (a sum, a difference or a bare number), so that the
# task isolates control flow from ``smallmul`` and variable assignment (a loop of count k
# adding b still computes k*b: the loop-count breakdown of the test split measures it). Addition is one
# sum of two numbers.
TASK_DEFAULTS: dict[str, dict[str, object]] = {
    "program": {
        "max_length": 5, "max_nesting": 2, "operations": PROGRAM_OPERATIONS, "operand_operations": PROGRAM_OPERATIONS,
    },
    "control": {
        "max_length": 5, "max_nesting": 2, "operations": ("ifstat", "small_loop"), "operand_operations": ("pair", "equality"),
    },
    "addition": {"max_length": 5, "max_nesting": 1, "operations": ("addition",), "operand_operations": ("addition",)},
    **{task: {"max_length": 55} for task in MEMORISATION_TASKS},
}


class Program(NamedTuple):
    """A generated program: its text, the value it prints, the operations drawn (first to
    last), the counts of its loops (in program order; empty without ``small_loop``), the
    digits of each number drawn as an operand (in the order drawn) and the longest length
    drawn for an operand or a loop count."""

    text: str
    value: int
    operations: tuple[str, ...]
    loop_counts: tuple[int, ...]
    operand_digits: tuple[int, ...]
    longest: int


def make_program(
    rng: random.Random, length: int, nesting: int, operations: Sequence[str], operand_operations: Sequence[str],
    *, per_operand: bool = False,
) -> Program:
    """``nesting`` operations, each feeding the next; the last is drawn from ``operations``,
    the ones before it from ``operand_operations``; operands of ``length`` digits at most
    (``per_operand``: each of a length of its own, ``1..length``)."""
    builder = ProgramBuilder(rng, length, per_operand=per_operand)
    lines: list[str] = []
    drawn: list[str] = []
    for level in range(nesting):
        names = operations if level == nesting - 1 else operand_operations
        drawn.append(rng.choice(names))
        code, expr, value = OPERATIONS[drawn[-1]](builder)
        lines += code
        builder.stack.append((expr, value))
    expr, value = builder.stack.pop()
    return Program("#".join([*lines, f"print({expr})"]), value, tuple(drawn), tuple(builder.loop_counts),
                   tuple(builder.operand_digits), builder.longest)


# -- examples and splits ----------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One example as text; ``length``, ``nesting``, ``operations`` (first to last),
    ``loop_counts`` (the ``range(k)`` of each loop) and ``operand_digits`` (the digits of each
    number drawn as an operand, not counting loop counts and factors) are what the mix drew
    (``nesting`` 0 and none of the others for memorisation)."""

    source: str
    target: str
    length: int
    nesting: int
    operations: tuple[str, ...] = ()
    loop_counts: tuple[int, ...] = ()
    operand_digits: tuple[int, ...] = ()


def split_of(source: str) -> str:
    """The split a source belongs to: its SHA-256 (stable across processes, unlike
    Python's salted ``hash``) modulo 3, as the original generator hashes its examples."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return SPLITS[int.from_bytes(digest[:8], "big") % 3]


@dataclass(frozen=True)
class LTEGenerator:
    """Examples of one task under the mix strategy: length uniform in ``1..max_length``,
    nesting uniform in ``1..max_nesting`` (programs only). Program tasks draw the last
    operation from ``operations`` and earlier ones from ``operand_operations``, and with
    ``length_draw="operand"`` a length for every operand and loop count or factor instead
    of one per example (:data:`LENGTH_DRAWS`)."""

    task: str
    max_length: int
    max_nesting: int = 1
    operations: tuple[str, ...] = ()
    operand_operations: tuple[str, ...] = ()
    length_draw: str = "example"

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; choose from {', '.join(TASKS)}")
        if self.max_length < 1 or self.max_nesting < 1:
            raise ValueError(f"max_length ({self.max_length}) and max_nesting ({self.max_nesting}) must be >= 1")
        if self.length_draw not in LENGTH_DRAWS:
            raise ValueError(f"length_draw must be one of {', '.join(LENGTH_DRAWS)}, got {self.length_draw!r}")
        if self.task in PROGRAM_TASKS:
            for name in (*self.operations, *self.operand_operations):
                if name not in OPERATIONS:
                    raise ValueError(f"unknown operation {name!r}; choose from {', '.join(OPERATIONS)}")
            if not self.operations or (self.max_nesting > 1 and not self.operand_operations):
                raise ValueError("a program task needs operations (and operand_operations when max_nesting > 1)")
            if self.max_nesting > len(VARIABLES):  # each operation assigns at most one fresh variable
                raise ValueError(f"max_nesting ({self.max_nesting}) must be at most {len(VARIABLES)}")

    def sample(self, rng: random.Random) -> Example:
        """One example of any split; a program's ``length`` is the longest drawn (with one
        length per example, that length: the first operation always draws its operands)."""
        per_operand = self.length_draw == "operand" and self.task in PROGRAM_TASKS
        length = self.max_length if per_operand else rng.randint(1, self.max_length)
        if self.task in MEMORISATION_TASKS:
            digits = "".join(rng.choice("0123456789") for _ in range(length))
            target = {"copy": digits, "double": digits + digits, "reverse": digits[::-1]}[self.task]
            return Example(digits, target, length, 0)
        nesting = rng.randint(1, self.max_nesting)
        program = make_program(rng, length, nesting, self.operations, self.operand_operations, per_operand=per_operand)
        return Example(program.text, str(program.value), program.longest, nesting, program.operations,
                       program.loop_counts, program.operand_digits)

    def sample_split(self, rng: random.Random, split: str, *, max_tries: int = 10_000) -> Example:
        """One example of ``split``: examples of other splits are drawn and discarded."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
        for _ in range(max_tries):
            example = self.sample(rng)
            if split_of(example.source) == split:
                return example
        raise RuntimeError(f"no {split} example in {max_tries} draws of task {self.task!r}")


# -- text and tokens --------------------------------------------------------------------


def text_to_tokens(text: str) -> list[int]:
    """Token ids of ``text``; rejects characters outside :data:`CHARACTERS`, naming them."""
    return VOCABULARY.encode(text)


def tokens_to_text(tokens: Sequence[int]) -> str:
    """Readable form of a token list (stops at end-of-sequence, skips padding and bos; ``?`` for unknown ids)."""
    return VOCABULARY.decode(tokens)


def example_tokens(example: Example) -> tuple[list[int], list[int]]:
    """(source, target) token lists of an example."""
    return text_to_tokens(example.source), text_to_tokens(example.target)
