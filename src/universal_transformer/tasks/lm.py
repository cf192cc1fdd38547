"""Language modelling on any tokenised corpus (Penn Treebank, LAMBADA's novels, ...), with
subject-verb agreement and LAMBADA as evaluations (the paper's Sections 3.2 and 3.3).

* **Data.** ``train`` / ``validation`` / ``test`` are files of one sentence or passage
  per line, whitespace-tokenised, relative to ``data_dir``; ``train`` may also be a
  folder in LAMBADA's layout (``<genre>/<novel>.txt``). Each split is one stream: every
  line followed by ``<eos>`` (and one ``<eos>`` in front).
* **Vocabulary.** Derived from the training split alone, deterministically (words by
  count, ties in code-point order; ``vocab_min_count``, ``vocab_max_size`` in all,
  ``<pad>``/``<unk>``/``<eos>`` included), or read from ``vocab_file``. Every command
  that builds the task from a run's ``config.yaml`` (training, ``ut eval``) gets the same
  ids; evaluation refuses a model whose vocabulary size differs.
* **Training batches.** Windows of ``context_length + 1`` tokens of the training stream
  at offsets drawn from ``(seed, step)``; a window is read as ``context_length`` inputs
  and their next tokens. No state is carried between windows (for the LSTM too), so a
  batch is a pure function of ``(seed, step)``.
* **Evaluation.** ``validation``: perplexity of the validation stream (the first
  ``validation_max_tokens`` tokens, if set), windows of ``context_length`` advancing by
  ``eval_stride`` with each token scored once; ``score = -log(perplexity)``.
  ``test``: the same on the test stream, plus every set in ``agreement`` (ranking
  accuracy by number of attractors) and ``lambada`` (last-word accuracy and perplexity,
  reading comprehension). ``benchmarks``: only those sets (``ut eval RUN --split
  benchmarks --set 'task.agreement=[...]'``). With ``eval_format: lambada`` the
  validation and test files are LAMBADA passage files and are scored as such
  (``score = -log`` of the target-word perplexity). UT models also report the ponder time
  per token (mean and std over the scored positions).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..config import ConfigError
from ..data.agreement import AgreementItem, agreement_paths, read_agreement
from ..data.batch import LMBatch
from ..data.lambada import LambadaPassage, novel_files, read_lambada
from ..data.text import EOS_ID, PAD_ID, TextFormatError, Vocabulary, encode_stream, read_tokenised
from ..evaluation.agreement import agreement_accuracy
from ..evaluation.lambada import lambada_scores
from ..evaluation.lm import score_stream
from .base import Task, TaskOptions, check_positive

EVAL_FORMATS = ("stream", "lambada")


@dataclass
class LMOptions(TaskOptions):
    """Corpus files (``data_dir``, ``train``, ``validation``, ``test``; ``lowercase`` applies to
    all text the task reads), vocabulary (``vocab_file`` or ``vocab_min_count`` /
    ``vocab_max_size``), ``context_length`` (tokens a model reads), evaluation
    (``eval_stride``, default half the context; ``eval_batch_size``;
    ``validation_max_tokens``; ``eval_format``) and the extra test sets ``agreement``
    (colorlessgreenRNNs-style ``NAME`` of ``NAME.text`` + ``NAME.gold``) and ``lambada``
    (plain-text or ``.jsonl`` LAMBADA files)."""

    name = "lm"

    data_dir: str = "../shared/data/lm/ptb"
    train: str = "ptb.train.txt"
    validation: str = "ptb.valid.txt"
    test: str = "ptb.test.txt"
    lowercase: bool = False
    vocab_file: str | None = None
    vocab_min_count: int = 1
    vocab_max_size: int | None = None
    context_length: int = 64
    eval_stride: int | None = None
    eval_batch_size: int = 32
    validation_max_tokens: int | None = None
    eval_format: str = "stream"
    agreement: list[str] = field(default_factory=list)
    lambada: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "context_length", "eval_batch_size", "vocab_min_count",
                       *(n for n in ("eval_stride", "vocab_max_size", "validation_max_tokens") if getattr(self, n) is not None))
        if self.eval_stride is not None and self.eval_stride > self.context_length:
            raise ConfigError(f"task.eval_stride ({self.eval_stride}) must be at most task.context_length ({self.context_length})")
        if self.vocab_max_size is not None and self.vocab_max_size < 4:
            raise ConfigError(f"task.vocab_max_size ({self.vocab_max_size}) must leave room for a word besides <pad>, <unk>, <eos>")
        if self.vocab_file is not None and self.vocab_min_count != 1:
            raise ConfigError("task.vocab_min_count applies to a vocabulary built from the data, not to task.vocab_file")
        if self.eval_format not in EVAL_FORMATS:
            raise ConfigError(f"task.eval_format must be one of {', '.join(EVAL_FORMATS)}, got {self.eval_format!r}")
        for name in ("agreement", "lambada"):
            value = getattr(self, name)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"task.{name} must be a list of paths, got {value!r}")

    @property
    def stride(self) -> int:
        return self.eval_stride or max(1, self.context_length // 2)


class LMTask(Task):
    """Next-word prediction on a corpus stream; perplexity, agreement and LAMBADA scores (see the module docstring)."""

    name = "lm"
    options_class = LMOptions
    model_classes = ("UTLanguageModel", "LSTMLanguageModel")
    derived_model_fields = ("vocab_size", "pad_id", "bos_id", "eos_id")
    options: LMOptions

    def __init__(self, options: LMOptions | dict[str, Any], *, seed: int) -> None:
        super().__init__(options, seed=seed)
        opts = self.options
        self.data_dir = Path(opts.data_dir)
        self.context_length = opts.context_length
        try:
            self.vocab = self._vocabulary()
            for path in opts.agreement:
                agreement_paths(path)
            for path in opts.lambada:
                if not Path(path).is_file():
                    raise TextFormatError(f"{path}: LAMBADA file not found (task.lambada)")
        except TextFormatError as err:
            raise ConfigError(str(err)) from None
        self._cache: dict[tuple[str, str], Any] = {}

    # -- data ------------------------------------------------------------------------

    def _corpus_files(self, relative: str) -> list[Path]:
        path = self.data_dir / relative
        return novel_files(path) if path.is_dir() else [path]

    def _lines(self, relative: str) -> Iterator[list[str]]:
        for path in self._corpus_files(relative):
            yield from read_tokenised(path, lowercase=self.options.lowercase)

    def _vocabulary(self) -> Vocabulary:
        opts = self.options
        if opts.vocab_file is not None:
            return Vocabulary.from_file(opts.vocab_file, max_size=opts.vocab_max_size)
        return Vocabulary.build(self._lines(opts.train), min_count=opts.vocab_min_count, max_size=opts.vocab_max_size)

    def stream(self, split: str) -> Tensor:
        """The ``train``, ``validation`` or ``test`` split as one stream of ids (int32, read on first use)."""
        key = ("stream", split)
        if key not in self._cache:
            relative = {"train": self.options.train, "validation": self.options.validation, "test": self.options.test}[split]
            try:
                self._cache[key] = torch.from_numpy(encode_stream(self._lines(relative), self.vocab))
            except TextFormatError as err:
                raise ConfigError(str(err)) from None
            if split == "train" and self._cache[key].numel() < self.context_length + 1:
                raise ConfigError(
                    f"{self.data_dir / relative}: {self._cache[key].numel()} tokens, fewer than "
                    f"task.context_length + 1 ({self.context_length + 1})"
                )
            if split != "train" and self._cache[key].numel() < 2:  # nothing to predict: a perplexity of 1
                raise ConfigError(f"{self.data_dir / relative}: no words to score (task.{split})")
        return self._cache[key]

    def check_evaluation_data(self) -> None:
        opts = self.options
        for split in ("validation", "test"):
            if opts.eval_format == "lambada":
                self._read("lambada", str(self.data_dir / getattr(opts, split)))
            else:
                self.stream(split)
        for path in opts.agreement:
            self._read("agreement", path)
        for path in opts.lambada:
            self._read("lambada", path)

    @property
    def train_stream(self) -> Tensor:
        """The training stream; read when the first batch is asked for, not for evaluation."""
        return self.stream("train")

    def _read(self, kind: str, path: str) -> list[AgreementItem] | list[LambadaPassage]:
        key = (kind, path)
        if key not in self._cache:
            read = read_agreement if kind == "agreement" else read_lambada
            try:
                self._cache[key] = read(path, lowercase=self.options.lowercase)
            except TextFormatError as err:
                raise ConfigError(str(err)) from None
        return self._cache[key]

    def model_overrides(self) -> dict[str, Any]:
        # <eos> also starts a text: it is what precedes every sentence in the stream.
        return {"vocab_size": len(self.vocab), "pad_id": PAD_ID, "bos_id": EOS_ID, "eos_id": EOS_ID}

    def train_batch(self, step: int, *, batch_tokens: int, max_batch_size: int) -> LMBatch:
        """``batch_tokens // context_length`` windows (at most ``max_batch_size``) at offsets from ``(seed, step)``."""
        length = self.context_length
        rows = max(1, min(max_batch_size, batch_tokens // length))
        gen = torch.Generator().manual_seed((self.seed * 2_147_483_647 + step) % 2**63)
        starts = torch.randint(0, self.train_stream.numel() - length, (rows,), generator=gen)
        windows = self.train_stream[starts[:, None] + torch.arange(length + 1)].long()
        return LMBatch(windows[:, :-1].contiguous(), windows[:, 1:].contiguous(), ignore_index=PAD_ID)

    # -- evaluation ------------------------------------------------------------------

    @torch.no_grad()
    def evaluate(self, model: nn.Module, split: str) -> dict[str, Any]:
        """``validation``, ``test`` or ``benchmarks`` (only the agreement and LAMBADA sets, without a
        ``score``: nothing is selected by them); see the module docstring."""
        if split not in ("validation", "test", "benchmarks"):
            raise ConfigError(f"unknown split {split!r}; the lm task has validation, test and benchmarks")
        size = getattr(model.config, "vocab_size", None)
        if size != len(self.vocab):
            raise ConfigError(
                f"the model's vocabulary has {size} entries, the task's {len(self.vocab)}: the model was trained "
                "with another training file or other vocabulary options"
            )
        model.eval()
        opts = self.options
        result: dict[str, Any] = {}
        if split != "benchmarks":
            if opts.eval_format == "lambada":
                path = str(self.data_dir / (opts.validation if split == "validation" else opts.test))
                scores = self._lambada(model, path)
                result.update(scores)
                result["score"] = -math.log(scores["perplexity"])
            else:
                stream = self.stream(split)
                if split == "validation" and opts.validation_max_tokens is not None:
                    stream = stream[: opts.validation_max_tokens + 1]
                score = score_stream(
                    model, stream, context_length=self.context_length, stride=opts.stride, batch_size=opts.eval_batch_size
                )
                result.update(perplexity=score.perplexity, nll=score.mean_nll, tokens=score.tokens, **score.ponder.metrics())
                result["score"] = -score.mean_nll
        if split != "validation":
            for path in opts.agreement:
                scores = agreement_accuracy(
                    model, self.vocab, self._read("agreement", path),
                    context_length=self.context_length, batch_size=opts.eval_batch_size,
                )
                result.update({f"agreement/{_set_name(path)}/{k}": v for k, v in scores.items()})
            for path in opts.lambada:
                result.update({f"lambada/{_set_name(path)}/{k}": v for k, v in self._lambada(model, path).items()})
        return result

    def _lambada(self, model: nn.Module, path: str) -> dict[str, float | int]:
        return lambada_scores(
            model, self.vocab, self._read("lambada", path), context_length=self.context_length,
            batch_size=self.options.eval_batch_size,
        )

    # -- text I/O (ut generate) ------------------------------------------------------

    def encode_text(self, text: str) -> Tensor:
        words = (text.lower() if self.options.lowercase else text).split()
        return torch.tensor([[EOS_ID, *self.vocab.encode(words)]])

    def decode_tokens(self, tokens: list[int]) -> str:
        words = []
        for t in tokens:
            if t == EOS_ID:
                break
            if t != PAD_ID:
                words.append(self.vocab.words[t])
        return " ".join(words)


def _set_name(path: str) -> str:
    """A benchmark's name in the metrics: its file name without the extension."""
    return Path(path).name.split(".")[0]


__all__ = ["EVAL_FORMATS", "LMOptions", "LMTask"]
