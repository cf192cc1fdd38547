"""Machine translation (the paper's Section 3.6): sub-word tokens, batches by token count, beam search, BLEU.

Any pair of aligned text files ``DATA_DIR/PREFIX.LANG[.gz]`` works; the configs use
Multi30k En-De (``../shared/data/mt/multi30k``), small enough for a CPU, in place of
the paper's WMT14 En-De. See docs/design.md, "Machine translation".
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pad_sequence

from ..config import ConfigError
from ..data.batch import Seq2SeqBatch
from ..data.bucketing import BucketBatcher
from ..data.parallel import LengthFilter, ParallelCorpus, ParallelFormatError, find_file, read_parallel
from ..data.tokenizer import SubwordTokenizer, TokenizerError, file_sha256
from ..evaluation.bleu import corpus_bleu
from ..generation import beam_search
from .base import Task, TaskOptions, check_positive

SPLITS = ("train", "validation", "test")


@dataclass
class TranslationOptions(TaskOptions):
    """Data: ``DATA_DIR/PREFIX.LANG`` (or ``.gz``) for ``train_prefix``,
    ``validation_prefix`` and ``test_prefix``, from ``source_lang`` into ``target_lang``.

    Tokens: ``tokenizer``, a sentencepiece model from ``ut tokenizer train`` (one
    vocabulary for both languages; relative paths, like ``data_dir``, are from the
    working directory); ``tokenizer_sha256`` is filled in from the file when
    the config is read, so a run's ``config.yaml`` names the exact model, and a different
    file under that name is refused later.

    Training data: pairs with more than ``max_tokens`` sub-word tokens on a side, or a
    length ratio above ``max_ratio``, are dropped; ``train_pairs`` keeps only the first
    N pairs of the file (quick runs). Batches hold one length bucket of
    ``bucket_width`` tokens each.

    Evaluation: beam search with ``beam_size`` beams, GNMT length penalty
    ``length_penalty``, at most ``max_length_a * source length + max_length_b`` tokens,
    ``eval_batch_size`` sentences at a time, BLEU on the detokenised output. Validation
    during training can be made cheaper: ``validation_beam_size`` (1 = greedy) and
    ``validation_sentences`` (the first N sentences; None = all).
    """

    name = "translation"

    data_dir: str = "../shared/data/mt/multi30k"
    source_lang: str = "en"
    target_lang: str = "de"
    train_prefix: str = "train"
    validation_prefix: str = "val"
    test_prefix: str = "test_2016_flickr"
    tokenizer: str = ""
    tokenizer_sha256: str | None = None
    max_tokens: int = 100
    max_ratio: float = 9.0
    train_pairs: int | None = None
    bucket_width: int = 4
    beam_size: int = 4
    length_penalty: float = 0.6
    max_length_a: float = 1.0
    max_length_b: int = 50
    eval_batch_size: int = 64
    validation_beam_size: int = 4
    validation_sentences: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("source_lang", "target_lang", "train_prefix", "validation_prefix", "test_prefix"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ConfigError(f"task.{name} must be a non-empty string, got {getattr(self, name)!r}")
        if not isinstance(self.tokenizer, str) or not self.tokenizer:
            raise ConfigError("task.tokenizer must name a sentencepiece model (make one with 'ut tokenizer train')")
        positive = ["max_tokens", "bucket_width", "beam_size", "max_length_b", "eval_batch_size", "validation_beam_size"]
        positive += [n for n in ("train_pairs", "validation_sentences") if getattr(self, n) is not None]
        check_positive(self, *positive)
        if not float(self.max_ratio) >= 1.0:
            raise ConfigError(f"task.max_ratio must be >= 1, got {self.max_ratio!r}")
        if float(self.length_penalty) < 0 or float(self.max_length_a) < 0:
            raise ConfigError("task.length_penalty and task.max_length_a must be >= 0")
        if self.tokenizer_sha256 is None and Path(self.tokenizer).is_file():
            self.tokenizer_sha256 = file_sha256(self.tokenizer)
        if self.tokenizer_sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", str(self.tokenizer_sha256)):
            raise ConfigError(f"task.tokenizer_sha256 must be 64 lower-case hex digits, got {self.tokenizer_sha256!r}")


class TranslationTask(Task):
    """Sources are sub-word ids + eos; targets sub-word ids (the batch adds bos and eos).

    Training data are read, tokenised and filtered on the first training batch, not
    when the task is built, so that translating and evaluating need only the tokenizer.
    """

    name = "translation"
    options_class = TranslationOptions
    model_classes = ("UniversalTransformer",)
    derived_model_fields = ("vocab_size", "target_vocab_size", "pad_id", "bos_id", "eos_id")
    options: TranslationOptions

    def __init__(self, options: TranslationOptions | dict[str, Any], *, seed: int) -> None:
        super().__init__(options, seed=seed)
        self.tokenizer = self._load_tokenizer()
        self.notes: list[str] = []
        self._train: tuple[list[tuple[list[int], list[int]]], BucketBatcher] | None = None
        self._eval: dict[str, ParallelCorpus] = {}

    # -- data ------------------------------------------------------------------------

    def _load_tokenizer(self) -> SubwordTokenizer:
        opts = self.options
        try:
            tokenizer = SubwordTokenizer(opts.tokenizer)
        except TokenizerError as err:
            hint = ""
            if not Path(opts.tokenizer).is_file():
                files = " ".join(f"{opts.data_dir}/{opts.train_prefix}.{lang}.gz" for lang in (opts.source_lang, opts.target_lang))
                hint = f"; make it with: ut tokenizer train --input {files} --vocab-size 8000 --out {opts.tokenizer}"
            raise ConfigError(f"task.tokenizer: {err}{hint}") from None
        if opts.tokenizer_sha256 is not None and tokenizer.sha256 != opts.tokenizer_sha256:
            raise ConfigError(
                f"task.tokenizer: {opts.tokenizer} has sha256 {tokenizer.sha256}, but the config (the run) names "
                f"{opts.tokenizer_sha256} (task.tokenizer_sha256): another tokenizer would misread the model's ids"
            )
        return tokenizer

    def corpus(self, split: str) -> ParallelCorpus:
        """The raw text pairs of ``split`` (train, validation or test)."""
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; the translation task has {', '.join(SPLITS)}")
        opts = self.options
        prefix = getattr(opts, f"{split}_prefix")
        try:
            return read_parallel(*(find_file(opts.data_dir, prefix, lang) for lang in (opts.source_lang, opts.target_lang)))
        except ParallelFormatError as err:
            raise ConfigError(f"task {split} data: {err}") from None

    def encode(self, text: str) -> list[int]:
        """Source ids of one sentence: sub-words + eos."""
        return [*self.tokenizer.encode(text), self.tokenizer.eos_id]

    def _training_data(self) -> tuple[list[tuple[list[int], list[int]]], BucketBatcher]:
        if self._train is None:
            opts = self.options
            corpus = self.corpus("train").head(opts.train_pairs)
            sources, targets = self.tokenizer.encode_batch(corpus.sources), self.tokenizer.encode_batch(corpus.targets)
            keep = LengthFilter(opts.max_tokens, float(opts.max_ratio)).select(sources, targets)
            if not keep:
                raise ConfigError(f"task: no training pair of {corpus.source_path} / {corpus.target_path} passes "
                                  f"the length filter (max_tokens={opts.max_tokens}, max_ratio={opts.max_ratio})")
            self.notes.append(f"{len(keep)} of {len(corpus)} training pairs kept by the length filter")
            pairs = [(sources[i] + [self.tokenizer.eos_id], targets[i]) for i in keep]
            # The longest padded side: source with eos, or target with bos (decoder input) / eos (labels).
            batcher = BucketBatcher([max(len(s), len(t) + 1) for s, t in pairs], width=opts.bucket_width)
            self._train = (pairs, batcher)
        return self._train

    def model_overrides(self) -> dict[str, Any]:
        tok = self.tokenizer
        return {"vocab_size": tok.vocab_size, "target_vocab_size": None, "pad_id": tok.pad_id, "bos_id": tok.bos_id,
                "eos_id": tok.eos_id}

    def train_batch(self, step: int, *, batch_tokens: int, max_batch_size: int) -> Seq2SeqBatch:
        pairs, batcher = self._training_data()
        index = batcher.batch(self.seed, step, batch_tokens, max_batch_size)
        tok = self.tokenizer
        return Seq2SeqBatch.from_pairs([pairs[i] for i in index.tolist()], pad_id=tok.pad_id, bos_id=tok.bos_id,
                                       eos_id=tok.eos_id)

    # -- translating and scoring -------------------------------------------------------

    @torch.no_grad()
    def translate(
        self,
        model: nn.Module,
        texts: list[str],
        *,
        beam_size: int | None = None,
        length_penalty: float | None = None,
        max_length_a: float | None = None,
        max_length_b: int | None = None,
        batch_size: int | None = None,
    ) -> list[str]:
        """Detokenised translations of ``texts``, in order, by beam search on the key/value
        cache (``beam_size=1`` is greedy decoding); arguments left out come from the options.

        Sentences are decoded longest first, ``batch_size`` at a time, so that a batch
        holds sentences of similar length (little padding); each sentence's search is
        independent of the others in its batch.
        """
        opts = self.options
        rows = [torch.tensor(self.encode(text)) for text in texts]
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
        size = opts.eval_batch_size if batch_size is None else batch_size
        if size < 1:
            raise ValueError(f"batch_size must be >= 1, got {size}")
        device = next(model.parameters()).device
        out = [""] * len(rows)
        for start in range(0, len(order), size):
            chunk = order[start : start + size]
            inputs = pad_sequence([rows[i] for i in chunk], batch_first=True, padding_value=self.tokenizer.pad_id)
            result = beam_search(
                model, inputs.to(device), beam_size=opts.beam_size if beam_size is None else beam_size,
                length_penalty=opts.length_penalty if length_penalty is None else length_penalty,
                max_length_a=opts.max_length_a if max_length_a is None else max_length_a,
                max_length_b=opts.max_length_b if max_length_b is None else max_length_b,
            )
            for i, hyp in zip(chunk, result.best):
                out[i] = self.tokenizer.decode(hyp.tokens)
        return out

    def _eval_corpus(self, split: str) -> ParallelCorpus:
        if split not in self._eval:
            self._eval[split] = self.corpus(split)
        return self._eval[split]

    def check_evaluation_data(self) -> None:
        for split in ("validation", "test"):
            self._eval_corpus(split)

    def evaluate(self, model: nn.Module, split: str) -> dict[str, Any]:
        """BLEU of the detokenised translations of ``split`` (validation or test) against its
        raw references, with sacrebleu's signature; ``score`` = BLEU.

        Test: every sentence, ``beam_size`` beams. Validation: ``validation_beam_size``
        beams on the first ``validation_sentences`` sentences (all if None). Also the
        decoding wall time and sentences per second.
        """
        if split not in ("validation", "test"):
            raise ConfigError(f"unknown split {split!r}; the translation task evaluates validation and test")
        opts = self.options
        corpus = self._eval_corpus(split)
        beam = opts.beam_size
        if split == "validation":
            corpus, beam = corpus.head(opts.validation_sentences), opts.validation_beam_size
        start = time.perf_counter()
        hypotheses = self.translate(model, corpus.sources, beam_size=beam)
        seconds = time.perf_counter() - start
        metrics = corpus_bleu(hypotheses, corpus.targets)
        result = {"score": metrics["bleu"], **metrics, "sentences": len(corpus), "beam_size": beam}
        if beam > 1:  # one beam is greedy decoding: no length penalty
            result["length_penalty"] = opts.length_penalty
        result["decode_seconds"] = round(seconds, 2)  # wall time on the record's machine
        result["sentences_per_second"] = round(len(corpus) / max(seconds, 1e-9), 2)
        return result

    # -- text I/O for `ut generate`, tables for `ut report` -----------------------------

    def encode_text(self, text: str) -> Tensor:
        return torch.tensor([self.encode(text)])

    def decode_tokens(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens)

    @classmethod
    def report(cls, roots: dict[str, Path], *, length: int | None = None, ponder: bool = False, runs: bool = False) -> str:
        """One row per finished run under each root: steps, validation and test BLEU."""
        from ..evaluation.translation_report import translation_table

        return translation_table(roots)


__all__ = ["TranslationOptions", "TranslationTask"]
