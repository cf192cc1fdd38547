"""Learning to Execute (the paper's Section 3.5, Tables 5-6): program evaluation (program,
control, addition) and memorisation (copy, double, reverse), mix strategy, no curriculum."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import Tensor, nn

from ..config import ConfigError
from ..data.batch import Seq2SeqBatch
from ..data.bucketing import SortedPools
from ..data.lte import (
    BOS, EOS, MEMORISATION_TASKS, PAD, TASK_DEFAULTS, TASKS, VOCAB_SIZE, Example, LTEGenerator, example_tokens,
    text_to_tokens, tokens_to_text,
)
from ..evaluation.metrics import decode_accuracy, teacher_forced_accuracy
from .base import Task, TaskOptions, check_length_penalty

EVAL_SPLITS = ("validation", "test")
# Loop counts of ``small_loop`` (1..4 x length), grouped: a loop ``v+=b`` run k times adds
# k*b, so its count is the multiplier the model must apply.
LOOP_COUNT_GROUPS = ((1, 1), (2, 4), (5, 10), (11, 20))


def loop_count_group(counts: Sequence[int]) -> str | None:
    """``loopsA-B`` (``loops1`` for a single pass) for the largest of a program's loop counts
    (:attr:`..data.lte.Example.loop_counts`), None for a program without a loop."""
    if not counts:
        return None
    k = max(counts)
    for lo, hi in LOOP_COUNT_GROUPS:
        if lo <= k <= hi:
            return f"loops{lo}" if lo == hi else f"loops{lo}-{hi}"
    return f"loops{LOOP_COUNT_GROUPS[-1][1] + 1}+"  # only for lengths over 5


def digit_gap_group(digits: Sequence[int]) -> str | None:
    """``digit_gap0``, ``digit_gap1`` or ``digit_gap2+``: the largest difference in digits
    between two numbers drawn as operands of a program (:attr:`..data.lte.Example.operand_digits`),
    None for a program of fewer than two. Whether a model combines numbers that are not
    aligned digit for digit (123 and 45678)."""
    if len(digits) < 2:
        return None
    gap = max(digits) - min(digits)
    return f"digit_gap{gap}" if gap < 2 else "digit_gap2+"


@dataclass
class LTEOptions(TaskOptions):
    """``task`` (program/control/addition/copy/double/reverse); every example draws its
    length from ``1..max_length`` and its nesting from ``1..max_nesting`` (the mix strategy);
    a program's last operation is drawn from ``operations``, earlier ones from
    ``operand_operations`` (names in :data:`..data.lte.OPERATIONS`); with ``length_draw:
    operand`` every operand and loop count of a program draws a length of its own, as the
    original code does, instead of one per example. Left out (``null``),
    these take the task's defaults (:data:`..data.lte.TASK_DEFAULTS`: the paper's length 5
    and nesting 2, or length 55 for memorisation, which has no nesting or operations).
    Validation and test hold ``validation_examples`` and ``test_examples`` examples of
    their splits, drawn with ``eval_seed`` (not the training seed, so that runs of
    different seeds are compared on the same examples), decoded in batches of ``eval_batch_size``,
    greedily; with ``beam_size`` > 1 the test split is also decoded by beam search (GNMT
    ``length_penalty``), reported beside the greedy numbers as ``beamK/...``.
    ``sort_pool`` > 1 regroups the training batches by length over windows of that many
    steps (:class:`..data.bucketing.SortedPools`: the same examples, less padding; 1: the
    batches as drawn)."""

    name = "lte"
    test_only = frozenset({"beam_size", "length_penalty"})

    task: str = "program"
    max_length: int | None = None
    max_nesting: int | None = None
    operations: list[str] | None = None
    operand_operations: list[str] | None = None
    length_draw: str = "example"
    validation_examples: int = 500
    test_examples: int = 1000
    eval_batch_size: int = 100
    eval_seed: int = 0
    beam_size: int = 1
    length_penalty: float = 0.6
    sort_pool: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.task not in TASKS:
            raise ConfigError(f"task.task must be one of {', '.join(TASKS)}, got {self.task!r}")
        defaults = TASK_DEFAULTS[self.task]
        if self.task in MEMORISATION_TASKS:
            given = [k for k in ("max_nesting", "operations", "operand_operations") if getattr(self, k) is not None]
            given += ["length_draw"] * (self.length_draw != "example")
            if given:
                raise ConfigError(f"task.{', task.'.join(given)}: the memorisation task {self.task!r} has no programs")
        else:
            self.max_nesting = _positive("max_nesting", defaults["max_nesting"] if self.max_nesting is None else self.max_nesting)
            for key in ("operations", "operand_operations"):
                value = defaults[key] if getattr(self, key) is None else getattr(self, key)
                if isinstance(value, str) or not isinstance(value, (list, tuple)):
                    raise ConfigError(f"task.{key} must be a list of operation names, got {value!r}")
                setattr(self, key, list(value))
        self.max_length = _positive("max_length", defaults["max_length"] if self.max_length is None else self.max_length)
        for key in ("validation_examples", "test_examples", "eval_batch_size", "beam_size", "sort_pool"):
            _positive(key, getattr(self, key))
        check_length_penalty(self.length_penalty)
        if not isinstance(self.eval_seed, int) or isinstance(self.eval_seed, bool):
            raise ConfigError(f"task.eval_seed must be an integer, got {self.eval_seed!r}")
        try:
            self.generator()
        except ValueError as err:
            raise ConfigError(f"task: {err}") from None

    def generator(self) -> LTEGenerator:
        """The example generator these options describe."""
        return LTEGenerator(
            self.task, self.max_length, self.max_nesting or 1, tuple(self.operations or ()), tuple(self.operand_operations or ()),
            self.length_draw,
        )


def _positive(key: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"task.{key} must be a positive integer, got {value!r}")
    return value


class LTETask(Task):
    """Training batches hold training-split examples (others are drawn and discarded),
    as many as fit ``batch_tokens`` padded (source + target + eos), from ``(seed, step)``;
    with ``sort_pool`` > 1, regrouped by length over windows of steps."""

    name = "lte"
    options_class = LTEOptions
    model_classes = ("UniversalTransformer", "LSTMSeq2Seq")
    derived_model_fields = ("vocab_size", "pad_id", "bos_id", "eos_id")
    options: LTEOptions

    def __init__(self, options: LTEOptions | dict[str, Any], *, seed: int) -> None:
        super().__init__(options, seed=seed)
        self.generator = self.options.generator()
        self._eval_sets: dict[str, list[Example]] = {}
        self._pools: tuple[tuple[int, int], SortedPools] | None = None  # per (batch_tokens, max_batch_size)

    def model_overrides(self) -> dict[str, Any]:
        return {"vocab_size": VOCAB_SIZE, "pad_id": PAD, "bos_id": BOS, "eos_id": EOS}

    def train_batch(self, step: int, *, batch_tokens: int, max_batch_size: int) -> Seq2SeqBatch:
        budget = (batch_tokens, max_batch_size)
        if self._pools is None or self._pools[0] != budget:
            stream = functools.partial(self._stream_batch, batch_tokens=batch_tokens, max_batch_size=max_batch_size)
            self._pools = (budget, SortedPools(self.options.sort_pool, stream, lambda p: (len(p[0]), len(p[1]))))
        pairs = self._pools[1].batch(self.seed, step)
        return Seq2SeqBatch.from_pairs(pairs, pad_id=PAD, bos_id=BOS, eos_id=EOS)

    def _stream_batch(self, step: int, *, batch_tokens: int, max_batch_size: int) -> list[tuple[list[int], list[int]]]:
        """The (source, target) token pairs of ``step`` as drawn: as many as fit the budget."""
        rng = random.Random(self.seed * 2**32 + step)
        pairs: list[tuple[list[int], list[int]]] = []
        longest_src = longest_tgt = 0
        while len(pairs) < max_batch_size:
            src, tgt = example_tokens(self.generator.sample_split(rng, "train"))
            ls, lt = max(longest_src, len(src)), max(longest_tgt, len(tgt) + 1)
            if pairs and (len(pairs) + 1) * (ls + lt) > batch_tokens:
                break
            pairs.append((src, tgt))
            longest_src, longest_tgt = ls, lt
        return pairs

    def examples(self, split: str) -> list[Example]:
        """The fixed examples of ``split`` (validation or test), drawn from that split with ``eval_seed``.

        Small lengths have few distinct programs, so a set may hold repeats, as the mix
        distribution does.
        """
        if split not in EVAL_SPLITS:
            raise ConfigError(f"unknown split {split!r}; the lte task evaluates on {' and '.join(EVAL_SPLITS)}")
        if split not in self._eval_sets:
            rng = random.Random(f"lte/{split}/{self.options.eval_seed}")
            count = self.options.validation_examples if split == "validation" else self.options.test_examples
            self._eval_sets[split] = [self.generator.sample_split(rng, split) for _ in range(count)]
        return self._eval_sets[split]

    def _eval_chunks(self, split: str) -> list[list[tuple[Example, tuple[list[int], list[int]]]]]:
        """``split``'s examples with their tokens, sorted by token length (less padding), in
        chunks of ``eval_batch_size``: the rows of :meth:`eval_batches` and :meth:`eval_groups`."""
        tokenized = sorted(((ex, example_tokens(ex)) for ex in self.examples(split)),
                           key=lambda item: (len(item[1][0]), len(item[1][1])))
        size = self.options.eval_batch_size
        return [tokenized[i : i + size] for i in range(0, len(tokenized), size)]

    def eval_batches(self, split: str) -> list[Seq2SeqBatch]:
        """``split``'s examples sorted by length, in batches of ``eval_batch_size``."""
        return [Seq2SeqBatch.from_pairs([tokens for _, tokens in chunk], pad_id=PAD, bos_id=BOS, eos_id=EOS)
                for chunk in self._eval_chunks(split)]

    def eval_groups(self, split: str) -> list[list[list[str]]] | None:
        """Per batch of :meth:`eval_batches` and row, the groups of its example: ``lengthL``
        (the digits the mix drew), with nesting above 1 ``nestingN``, and where the task draws
        from more than one operation ``with_OP`` for each operation the program contains
        (a program of ``vars`` over ``smallmul`` is in both groups), for a program with a
        loop its loop count (:func:`loop_count_group`), and for a program of two or more
        numbers the gap between their lengths (:func:`digit_gap_group`), also per last
        operation where the task draws it from several (``small_loop.digit_gap0``: what
        aligned numbers are worth differs between a loop and an if-expression); None for the
        memorisation tasks (where every model here is at or near 1.0)."""
        if self.options.task in MEMORISATION_TASKS:
            return None
        nested = (self.options.max_nesting or 1) > 1
        mixed = len({*self.generator.operations, *(self.generator.operand_operations if nested else ())}) > 1
        lasts = len(set(self.generator.operations)) > 1

        def groups(ex: Example) -> list[str]:
            names = [f"length{ex.length}"] + ([f"nesting{ex.nesting}"] if nested else [])
            if mixed:
                names += [f"with_{op}" for op in sorted(set(ex.operations))]
            if loops := loop_count_group(ex.loop_counts):
                names.append(loops)
            if gap := digit_gap_group(ex.operand_digits):
                names += [gap, f"{ex.operations[-1]}.{gap}"] if lasts else [gap]
            return names

        return [[groups(ex) for ex, _ in chunk] for chunk in self._eval_chunks(split)]

    @torch.no_grad()
    def evaluate(self, model: nn.Module, split: str) -> dict[str, Any]:
        """Greedy decoding from the programs alone: char and sequence accuracy (the paper's
        Tables 5-6); ``score`` is the sequence accuracy, char accuracy breaking ties. On the
        test split with ``beam_size`` > 1, also ``beamK/char_accuracy`` and
        ``beamK/sequence_accuracy`` by beam search (validation stays greedy: it picks the model).
        The test split of the program tasks also gets the greedy accuracies per length,
        nesting and operation drawn (``length3/sequence_accuracy``,
        ``with_smallmul/sequence_accuracy``, ...: :meth:`eval_groups`), which show where
        program evaluation fails. The test split is also scored teacher-forced
        (``teacher_forced/...``: the argmax at every target position given the true prefix), what
        tensor2tensor's evaluation reports by default and so a likely reading of the paper's
        character accuracy; its sequence accuracy is the greedy one (every argmax right given
        the true prefix is exactly a right greedy decoding)."""
        batches = self.eval_batches(split)
        groups = self.eval_groups(split) if split == "test" else None
        test = split == "test"
        # On test, an ACT model's ponder time comes from the teacher-forced pass, not a third one.
        result: dict[str, Any] = decode_accuracy(model, batches, PAD, groups=groups, ponder=not test)
        result["score"] = result["sequence_accuracy"] + 1e-3 * result["char_accuracy"]
        if test:
            forced = teacher_forced_accuracy(model, batches, PAD, eos_id=EOS, ponder=True)
            if "encoder_ponder_time" in forced:
                result["encoder_ponder_time"] = forced.pop("encoder_ponder_time")
            result.update({f"teacher_forced/{key}": value for key, value in forced.items()})
        beam = self.options.beam_size
        if split == "test" and beam > 1:
            searched = decode_accuracy(model, batches, PAD, beam_size=beam, length_penalty=self.options.length_penalty,
                                       ponder=False)  # the greedy pass measured it
            result.update({f"beam{beam}/{k}": v for k, v in searched.items()})
        return result

    @classmethod
    def report(cls, roots: dict[str, Path], *, length: int | None = None, ponder: bool = False, runs: bool = False) -> str:
        """Per root (runs named TASK-MODEL): models x tasks, test char / seq accuracy."""
        from ..evaluation.lte_report import lte_table

        return "\n\n".join((f"{name}:\n\n" if len(roots) > 1 else "") + lte_table(root) for name, root in roots.items())

    def encode_text(self, text: str) -> Tensor:
        """A program as typed (lines separated by newlines or ``#``) or a digit string."""
        source = "#".join(line.strip() for line in text.strip().splitlines() if line.strip())
        if not source:
            raise ValueError("the input is empty")
        return torch.tensor([text_to_tokens(source)])

    def decode_tokens(self, tokens: list[int]) -> str:
        return tokens_to_text(tokens)
