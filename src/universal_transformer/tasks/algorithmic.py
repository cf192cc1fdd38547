"""Copy, Reverse and Addition (the paper's Section 3.4): train on lengths up to 40, test on 400."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..config import ConfigError
from ..data.algorithmic import (
    BOS, EOS, OPERAND_LENGTHS, PAD, PLUS, TASKS, VOCAB_SIZE, collate, make_example, text_to_tokens, tokens_to_text,
)
from ..data.batch import Seq2SeqBatch
from ..evaluation.metrics import decode_accuracy, teacher_forced_accuracy
from .base import Task, TaskOptions, check_length_penalty


@dataclass
class AlgorithmicOptions(TaskOptions):
    """``task`` (copy/reverse/addition); training lengths ``train_min_length``..``train_max_length``;
    evaluation at ``validation_lengths`` and ``test_lengths`` with ``eval_examples`` per
    length in batches of ``eval_batch_size``; training batches hold lengths within one
    bucket of ``bucket_width``; ``train_examples`` (see below) picks a fixed training set or
    an endless stream."""

    name = "algorithmic"
    test_only = frozenset({"test_lengths", "test_lengths_up_to"})

    task: str = "copy"
    train_min_length: int = 1
    train_max_length: int = 40
    validation_lengths: list[int] = field(default_factory=lambda: [40])
    test_lengths: list[int] = field(default_factory=lambda: [40, 400])
    eval_examples: int = 500
    eval_batch_size: int = 100
    bucket_width: int = 8
    # Addition's digits least significant first (the Neural GPU's order: a carry travels
    # in the direction of reading); most significant first when false.
    little_endian: bool = False
    # Test sets whose lengths are drawn uniformly from 1..N (metrics ``uptoN/...``), the shape
    # of tensor2tensor's evaluation set for these problems (10,000 examples of lengths 1..400),
    # beside the sets of exactly one length (``test_lengths``).
    test_lengths_up_to: list[int] = field(default_factory=list)
    # None: every slot of every training batch is a fresh example (an endless stream). N: a
    # fixed training set of N examples drawn once from the seed, lengths uniform over the
    # training range (tensor2tensor's algorithmic problems generate 100,000 this way;
    # duplicates among the shortest lengths are kept, as there); batches sample from it.
    train_examples: int | None = None
    # End every source with the end-of-sequence token, as tensor2tensor's algorithmic problems
    # do (their generator appends EOS to every feature, inputs included): the decoder can then
    # find the end of the input by what is there, not by where positions run out. False keeps
    # the sources of the runs recorded before this option.
    source_eos: bool = False
    # Addition only: the source positions count from 0 again after the `+` (the model's
    # position_restart_id), so that both operands' i-th digits share position i. The paper's
    # models have one count over the whole source and must find "the digit L + 1 further on"
    # themselves; this takes that alignment away to measure what is left (carries, length). Models
    # without positions (the LSTM, position_embedding none) have nothing to restart: refused.
    operand_positions: bool = False
    # Addition only: how the operands' lengths are drawn (data/algorithmic.py, make_example).
    # "halves": two numbers of length // 2 digits each, so every test set of length L adds two
    # L/2-digit numbers. "tensor2tensor": as the paper's problem (AlgorithmicAdditionDecimal40)
    # draws them, a length is a maximum: the first operand 1..L/2 digits, the second up to the
    # rest; the fixed training set draws every example with L = train_max_length, as there, and
    # a test set of length 400 is then tensor2tensor's evaluation set (its dev_length 400).
    operand_lengths: str = "halves"
    beam_size: int = 1
    length_penalty: float = 0.6

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.train_examples is not None and int(self.train_examples) < 1:
            raise ConfigError(f"task.train_examples must be a positive number of examples or null, got {self.train_examples}")
        if self.task not in TASKS:
            raise ConfigError(f"task.task must be one of {', '.join(TASKS)}, got {self.task!r}")
        if not 1 <= self.train_min_length <= self.train_max_length:
            raise ConfigError(
                f"need 1 <= train_min_length ({self.train_min_length}) <= train_max_length ({self.train_max_length})"
            )
        self.validation_lengths = [int(n) for n in self.validation_lengths]
        self.test_lengths = [int(n) for n in self.test_lengths]
        self.test_lengths_up_to = [int(n) for n in self.test_lengths_up_to]
        check_length_penalty(self.length_penalty)
        if self.operand_lengths not in OPERAND_LENGTHS:
            raise ConfigError(f"task.operand_lengths must be one of {', '.join(OPERAND_LENGTHS)}, got {self.operand_lengths!r}")
        if self.operand_lengths != "halves" and self.task != "addition":
            raise ConfigError(f"task.operand_lengths draws Addition's operands; task {self.task!r} has none")
        if self.operand_positions and self.task != "addition":
            raise ConfigError(f"task.operand_positions restarts positions at Addition's '+'; task {self.task!r} has one operand")
        for name in ("eval_examples", "eval_batch_size", "bucket_width", "beam_size"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"task.{name} must be a positive integer, got {getattr(self, name)!r}")
        if any(n < 1 for n in self.validation_lengths + self.test_lengths + self.test_lengths_up_to):
            raise ConfigError("task: evaluation lengths must be positive")


class AlgorithmicTask(Task):
    """Every training batch holds examples of lengths within one bucket, as many as fit
    ``batch_tokens`` (source + target tokens), drawn from ``(seed, step)``."""

    name = "algorithmic"
    options_class = AlgorithmicOptions
    model_classes = ("UniversalTransformer", "LSTMSeq2Seq")
    derived_model_fields = ("vocab_size", "pad_id", "bos_id", "eos_id", "position_restart_id")
    options: AlgorithmicOptions

    def __init__(self, options: AlgorithmicOptions | dict[str, Any], *, seed: int) -> None:
        super().__init__(options, seed=seed)
        opts = self.options
        self.task = opts.task
        self.min_length, self.max_length = opts.train_min_length, opts.train_max_length
        self.lengths = {"validation": opts.validation_lengths, "test": opts.test_lengths}
        self.eval_examples, self.eval_batch_size, self.bucket_width = opts.eval_examples, opts.eval_batch_size, opts.bucket_width
        self._pool: tuple[list[tuple[list[int], list[int]]], list[int]] | None = None  # pairs, their lengths (sorted)

    def model_overrides(self) -> dict[str, Any]:
        overrides = {"vocab_size": VOCAB_SIZE, "pad_id": PAD, "bos_id": BOS, "eos_id": EOS}
        if self.options.operand_positions:
            overrides["position_restart_id"] = PLUS
        return overrides

    def train_batch(self, step: int, *, batch_tokens: int, max_batch_size: int) -> Seq2SeqBatch:
        gen = torch.Generator().manual_seed((self.seed * 2_147_483_647 + step) % 2**63)
        top = int(torch.randint(self.min_length, self.max_length + 1, (1,), generator=gen))
        bottom = max(self.min_length, top - self.bucket_width + 1)
        per_example = 2 * top + 2  # source + target + eos (+ carry/separator slack)
        size = max(1, min(max_batch_size, batch_tokens // per_example))
        if self.options.train_examples is not None:
            return collate(self._sample_pool(bottom, top, size, gen))
        lengths = torch.randint(bottom, top + 1, (size,), generator=gen).tolist()
        return collate([self._example(n, gen) for n in lengths])

    def training_set(self) -> list[tuple[list[int], list[int]]]:
        """The fixed training examples (``train_examples``), sorted by length; drawn once from the seed."""
        if self.options.train_examples is None:
            raise ConfigError("task.train_examples is null: training examples are an endless stream, not a set")
        if self._pool is None:
            gen = torch.Generator().manual_seed(7_777_777 + 104_729 * self.seed)
            count = int(self.options.train_examples)
            if self.options.operand_lengths == "tensor2tensor":
                # tensor2tensor draws every training example with its maximum length; the pool
                # is sorted by the lengths the sources came out with, for the length buckets.
                drawn = [self._example(self.max_length, gen) for _ in range(count)]
                pairs = sorted(drawn, key=self._source_length)
                ordered = [self._source_length(pair) for pair in pairs]
            else:
                ordered = sorted(torch.randint(self.min_length, self.max_length + 1, (count,), generator=gen).tolist())
                pairs = [self._example(n, gen) for n in ordered]
            self._pool = (pairs, ordered)
        return self._pool[0]

    def _example(self, length: int, gen: torch.Generator) -> tuple[list[int], list[int]]:
        """One (source, target) pair of ``length`` (:func:`make_example`), the source ended by EOS
        with ``source_eos``."""
        source, target = make_example(self.task, length, gen, little_endian=self.options.little_endian,
                                      operand_lengths=self.options.operand_lengths)
        return (source + [EOS] if self.options.source_eos else source), target

    def _source_length(self, pair: tuple[list[int], list[int]]) -> int:
        """The source's length without its end marker (what ``length`` counts)."""
        return len(pair[0]) - int(self.options.source_eos)

    def _sample_pool(self, bottom: int, top: int, size: int, gen: torch.Generator) -> list[tuple[list[int], list[int]]]:
        """``size`` examples of the training set with lengths in ``bottom..top`` (uniformly over
        those examples; over the whole set if none has such a length)."""
        pairs = self.training_set()
        assert self._pool is not None
        lengths = self._pool[1]  # sorted: the bucket is one slice
        first, end = bisect.bisect_left(lengths, bottom), bisect.bisect_right(lengths, top)
        if first == end:
            first, end = 0, len(pairs)
        picks = torch.randint(first, end, (size,), generator=gen).tolist()
        return [pairs[i] for i in picks]

    def eval_batches(self, split: str, length: int) -> list[Seq2SeqBatch]:
        """Fixed evaluation sets: ``eval_examples`` examples of exactly ``length``, seeded by split and length."""
        offset = {"validation": 1, "test": 2}[split]
        gen = torch.Generator().manual_seed(1_000_003 * offset + length + 7919 * self.seed)
        pairs = [self._example(length, gen) for _ in range(self.eval_examples)]
        return [collate(pairs[i : i + self.eval_batch_size]) for i in range(0, len(pairs), self.eval_batch_size)]

    def eval_batches_up_to(self, length: int) -> list[Seq2SeqBatch]:
        """The test set of ``eval_examples`` examples of lengths drawn uniformly from
        1..``length``, seeded by the length, sorted by length so that a batch pads little."""
        gen = torch.Generator().manual_seed(3_000_017 + length + 7919 * self.seed)
        lengths = sorted(torch.randint(1, length + 1, (self.eval_examples,), generator=gen).tolist())
        pairs = [self._example(n, gen) for n in lengths]
        return [collate(pairs[i : i + self.eval_batch_size]) for i in range(0, len(pairs), self.eval_batch_size)]

    def _score_sets(self, model: nn.Module, batches: list[Seq2SeqBatch], name: str, *, beam: int = 1) -> dict[str, Any]:
        """Greedy (``NAME/...``) and teacher-forced (``teacher_forced/NAME/...``) accuracies of one
        set; the encoder ponder time (``NAME/encoder_ponder_time``) from the teacher-forced pass;
        with ``beam`` > 1 also beam search's (``beamK/NAME/...``), which a single wrong greedy
        digit cannot derail when a second-best keeps the model on track."""
        greedy = decode_accuracy(model, batches, PAD, ponder=False)
        forced = teacher_forced_accuracy(model, batches, PAD, eos_id=EOS, ponder=True)
        if "encoder_ponder_time" in forced:
            greedy["encoder_ponder_time"] = forced.pop("encoder_ponder_time")
        result = {f"{name}/{key}": value for key, value in greedy.items()}
        result.update({f"teacher_forced/{name}/{key}": value for key, value in forced.items()})
        if beam > 1:
            searched = decode_accuracy(model, batches, PAD, beam_size=beam, length_penalty=self.options.length_penalty,
                                       ponder=False)
            result.update({f"beam{beam}/{name}/{key}": value for key, value in searched.items()})
        return result

    @torch.no_grad()
    def evaluate(self, model: nn.Module, split: str) -> dict[str, Any]:
        """Greedy decoding (no teacher forcing): char and sequence accuracy per length
        (``lenN/...``); and the same accuracies of the argmax given the true target prefix
        (``teacher_forced/lenN/...``), what tensor2tensor's evaluation reports by default and
        so the likely reading of the paper's Table 4 (docs/design.md). On the test split, also
        both on the sets of lengths 1..N of ``test_lengths_up_to`` (``uptoN/...``), and by beam
        search with ``beam_size`` > 1 (``beamK/...``; validation stays greedy: it picks the model).

        ``score`` is the mean greedy sequence accuracy over the split's lengths, char
        accuracy breaking ties; ``tie_break`` is minus the mean teacher-forced loss, which
        the trainer uses to choose among equal scores: validation at length 40 saturates
        (1.00/1.00) long before the model stops improving at longer lengths (docs/design.md).
        """
        if split not in self.lengths:
            raise ConfigError(f"unknown split {split!r}; the algorithmic task has validation and test")
        result: dict[str, Any] = {}
        seq, char, loss = [], [], []
        beam = self.options.beam_size if split == "test" else 1
        for length in self.lengths[split]:
            metrics = self._score_sets(model, self.eval_batches(split, length), f"len{length}", beam=beam)
            result.update(metrics)
            seq.append(metrics[f"len{length}/sequence_accuracy"])
            char.append(metrics[f"len{length}/char_accuracy"])
            loss.append(metrics[f"teacher_forced/len{length}/loss"])
        if split == "test":
            for length in self.options.test_lengths_up_to:
                result.update(self._score_sets(model, self.eval_batches_up_to(length), f"upto{length}", beam=beam))
        result["score"] = sum(seq) / len(seq) + 1e-3 * sum(char) / len(char)
        result["tie_break"] = -sum(loss) / len(loss)
        return result

    @classmethod
    def report(cls, roots: dict[str, Path], *, length: int | None = None, ponder: bool = False, runs: bool = False) -> str:
        """Per root (runs named TASK-MODEL): models x tasks, char / seq accuracy at ``length`` (400)."""
        from ..evaluation.algorithmic_report import algorithmic_table

        return "\n\n".join(
            (f"{name}:\n\n" if len(roots) > 1 else "") + algorithmic_table(root, length or 400) for name, root in roots.items()
        )

    def plot(self, model: nn.Module, split: str, index: int, prefix: Path) -> list[Path]:
        """The decoder's attention over the input per recurrent step for example ``index`` of
        the split's longest evaluation length (``--set 'task.test_lengths=[400]'`` picks one)."""
        from ..visualisation.algorithmic import plot_cross_attention

        if not hasattr(model, "decoder") or not hasattr(model.decoder, "blocks"):
            raise ConfigError(f"ut plot draws the attention of a Transformer-family model, not of a {type(model).__name__}")
        length = max(self.lengths[split]) if split in self.lengths else None
        if length is None:
            raise ConfigError(f"unknown split {split!r}; the algorithmic task has validation and test")
        batches = self.eval_batches(split, length)
        row, within = divmod(index, self.eval_batch_size)
        if not 0 <= index < self.eval_examples:
            raise ConfigError(f"--index {index}: the {split} set has {self.eval_examples} examples per length")
        batch = batches[row].select(slice(within, within + 1))
        return [plot_cross_attention(model, batch, f"{prefix}-len{length}-attention.png")]

    def encode_text(self, text: str) -> Tensor:
        return torch.tensor([text_to_tokens(text.strip()) + ([EOS] if self.options.source_eos else [])])

    def decode_tokens(self, tokens: list[int]) -> str:
        return tokens_to_text(tokens)
