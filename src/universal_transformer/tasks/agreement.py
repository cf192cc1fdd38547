"""Supervised number prediction (Linzen, Dupoux & Goldberg 2016): read the sentence up to the
verb and classify the verb's number, singular (``VBZ``) or plural (``VBP``), with a UT
encoder classifier.

The data are Linzen et al.'s ``numpred.*`` files (``rnn_agr_simple``): ``numpred.train``
(not in ``../shared/data``: bring your own), ``numpred.val`` and ``numpred.test.K`` with
the test dependencies of ``K`` attractors. The paper's protocol for agreement (Section
3.2) is the language-model one instead: see the ``lm`` task's ``agreement`` option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..config import ConfigError
from ..data.agreement import NUMBER_LABELS, NumberExample, read_number_prediction
from ..data.batch import SequenceClassificationBatch
from ..data.text import EOS_ID, PAD_ID, TextFormatError, Vocabulary
from ..evaluation.lm import PonderStats
from .base import Task, TaskOptions, check_positive

_ATTRACTORS = re.compile(r"\.(\d+)$")


@dataclass
class NumberPredictionOptions(TaskOptions):
    """``data_dir`` and the file names in it: ``train``, ``validation``, ``test`` (names or glob
    patterns; a file ending in ``.K`` holds dependencies with ``K`` attractors). The vocabulary
    comes from the training prefixes (``vocab_min_count``, ``vocab_max_size``); prefixes keep
    their last ``max_length`` words (those nearest the verb)."""

    name = "number_prediction"

    data_dir: str = "../shared/data/agreement/rnn_agr_simple"
    train: str = "numpred.train"
    validation: str = "numpred.val"
    test: list[str] | str = field(default_factory=lambda: ["numpred.test.*"])  # one name: a list of one
    lowercase: bool = False
    vocab_min_count: int = 1
    vocab_max_size: int | None = None
    max_length: int = 100
    eval_batch_size: int = 256

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "vocab_min_count", "max_length", "eval_batch_size")
        if self.vocab_max_size is not None and self.vocab_max_size < 4:
            raise ConfigError(f"task.vocab_max_size must be an integer >= 4, got {self.vocab_max_size!r}")
        if isinstance(self.test, str):
            self.test = [self.test]
        if not self.test:
            raise ConfigError(f"task.test must be a list of file names or patterns, got {self.test!r}")


@dataclass
class _Encoded:
    tokens: Tensor  # [N, max_length], right-padded
    labels: Tensor  # [N]

    def batch(self, index: Tensor) -> SequenceClassificationBatch:
        tokens = self.tokens[index]
        width = max(1, int((tokens != PAD_ID).sum(1).max()))
        return SequenceClassificationBatch(tokens[:, :width].contiguous(), self.labels[index], pad_id=PAD_ID)


class NumberPredictionTask(Task):
    name = "number_prediction"
    options_class = NumberPredictionOptions
    model_classes = ("UTEncoderClassifier",)
    derived_model_fields = ("vocab_size", "num_classes", "pad_id", "bos_id", "eos_id")
    options: NumberPredictionOptions

    def __init__(self, options: NumberPredictionOptions | dict[str, Any], *, seed: int) -> None:
        super().__init__(options, seed=seed)
        opts = self.options
        self.data_dir = Path(opts.data_dir)
        try:
            train = self._read(self.data_dir / opts.train)
            self.vocab = Vocabulary.build(
                (ex.prefix for ex in train), min_count=opts.vocab_min_count, max_size=opts.vocab_max_size
            )
            self.train = self._encode(train)
            self.test_files = self._test_files()
        except TextFormatError as err:
            raise ConfigError(str(err)) from None
        self._splits: dict[str, _Encoded] = {}
        self._permutation: tuple[int, Tensor] | None = None

    def _read(self, path: Path) -> list[NumberExample]:
        return read_number_prediction(path, lowercase=self.options.lowercase)

    def _test_files(self) -> dict[str, Path]:
        """Test files by metric name: ``attractorsK`` for ``*.K``, else the file name."""
        files: dict[str, Path] = {}
        for pattern in self.options.test:
            matches = sorted(self.data_dir.glob(pattern))
            if not matches:
                raise TextFormatError(f"{self.data_dir / pattern}: no test file matches (task.test)")
            numbered = [path for path in matches if _ATTRACTORS.search(path.name)]
            if numbered and len(numbered) < len(matches):  # NAME.K files and a stray one (a backup, a copy)
                stray = next(path for path in matches if path not in numbered)
                raise TextFormatError(f"{stray}: matched by task.test pattern {pattern!r} beside NAME.K test files "
                                      "(K attractors), but not named so; remove it, or narrow the pattern")
            for path in matches:
                m = _ATTRACTORS.search(path.name)
                files[f"attractors{m.group(1)}" if m else path.name] = path
        return dict(sorted(files.items(), key=lambda kv: (not kv[0].startswith("attractors"), len(kv[0]), kv[0])))

    def _encode(self, examples: list[NumberExample]) -> _Encoded:
        length = self.options.max_length
        tokens = torch.full((len(examples), length), PAD_ID, dtype=torch.long)
        for i, ex in enumerate(examples):
            ids = self.vocab.encode(ex.prefix[-length:])
            tokens[i, : len(ids)] = torch.tensor(ids)
        return _Encoded(tokens, torch.tensor([ex.label_id for ex in examples]))

    def split(self, name: str) -> _Encoded:
        """``validation`` or a test file's name (``attractors1``, ...), encoded (cached)."""
        if name not in self._splits:
            path = self.data_dir / self.options.validation if name == "validation" else self.test_files[name]
            try:
                examples = self._read(path)
            except TextFormatError as err:
                raise ConfigError(str(err)) from None
            if not examples:
                raise ConfigError(f"{path}: no examples to score")
            self._splits[name] = self._encode(examples)
        return self._splits[name]

    def check_evaluation_data(self) -> None:
        for name in ["validation", *self.test_files]:
            self.split(name)

    def model_overrides(self) -> dict[str, Any]:
        return {"vocab_size": len(self.vocab), "num_classes": len(NUMBER_LABELS), "pad_id": PAD_ID,
                "bos_id": EOS_ID, "eos_id": EOS_ID}

    def train_batch(self, step: int, *, batch_tokens: int, max_batch_size: int) -> SequenceClassificationBatch:
        """``max_batch_size`` examples, walking through a permutation of the training set drawn per epoch from the seed."""
        n = len(self.train.labels)
        index = []
        for g in range(step * max_batch_size, (step + 1) * max_batch_size):
            epoch, position = divmod(g, n)
            if self._permutation is None or self._permutation[0] != epoch:
                gen = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
                self._permutation = (epoch, torch.randperm(n, generator=gen))
            index.append(int(self._permutation[1][position]))
        return self.train.batch(torch.tensor(index))

    @torch.no_grad()
    def evaluate(self, model: nn.Module, split: str) -> dict[str, Any]:
        """Accuracy on ``validation``; on ``test``, per test file (by number of attractors) and over
        all of them; ponder time per position for UT models. ``score`` is the accuracy."""
        if split not in ("validation", "test"):
            raise ConfigError(f"unknown split {split!r}; number prediction has validation and test")
        model.eval()
        device = next(model.parameters()).device
        names = ["validation"] if split == "validation" else list(self.test_files)
        result: dict[str, Any] = {}
        hits = total = 0
        ponder = PonderStats()
        for name in names:
            data = self.split(name)
            correct = 0
            for i in range(0, len(data.labels), self.options.eval_batch_size):
                batch = data.batch(torch.arange(i, min(i + self.options.eval_batch_size, len(data.labels)))).to(device)
                out = model(**batch.model_inputs())
                correct += int((out.logits.argmax(-1) == batch.labels).sum())
                stats = out.halting.get("encoder")
                if stats is not None:
                    ponder.add(stats.ponder_time[batch.tokens != PAD_ID])
            if split == "test":
                result[f"{name}/accuracy"] = correct / len(data.labels)
                result[f"{name}/items"] = len(data.labels)
            hits, total = hits + correct, total + len(data.labels)
        result["accuracy"] = hits / total
        result.update(ponder.metrics())
        result["score"] = result["accuracy"]
        return result


__all__ = ["NumberPredictionOptions", "NumberPredictionTask"]
