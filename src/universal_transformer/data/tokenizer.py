"""Sub-word tokenizer: a sentencepiece model (Kudo & Richardson 2018), BPE by default, or unigram.

* **One vocabulary for both languages**, trained on the source and target training text
  together, as the Transformer's En-De setup shares its BPE vocabulary (Vaswani et al.
  2017), so that a model can tie source embedding, target embedding and output layer.
* **Special ids** are the models': padding 0, bos 1, eos 2, and unknown 3
  (:data:`SPECIAL_IDS`); a model file trained with other ids is refused on loading.
* **Text in, text out**: ``encode`` applies sentencepiece's normalisation (NFKC,
  whitespace runs collapsed); ``decode`` returns detokenised text (no separate
  detokeniser: sentencepiece keeps the spaces in its pieces), so
  ``decode(encode(s)) == " ".join(s.split())`` for NFKC-normal text.
* **Identity of a model**: :func:`file_sha256`; the translation task records it with a
  run and refuses a different file later.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import Iterable, Sequence

import sentencepiece as spm

SPECIAL_IDS = {"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3}
MODEL_TYPES = ("bpe", "unigram")


class TokenizerError(ValueError):
    """A tokenizer model cannot be trained or loaded; the message names the file and the problem."""


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class SubwordTokenizer:
    """A trained sentencepiece model with the special ids of :data:`SPECIAL_IDS`."""

    pad_id, bos_id, eos_id, unk_id = (SPECIAL_IDS[k] for k in ("pad_id", "bos_id", "eos_id", "unk_id"))

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise TokenizerError(f"{self.path}: tokenizer model not found")
        try:
            self.processor = spm.SentencePieceProcessor(model_file=str(self.path))
        except (OSError, RuntimeError) as err:
            raise TokenizerError(f"{self.path}: not a sentencepiece model: {err}") from None
        for name, wanted in SPECIAL_IDS.items():
            found = getattr(self.processor, name)()
            if found != wanted:
                raise TokenizerError(
                    f"{self.path}: {name} is {found}, but the models use {wanted} "
                    f"({', '.join(f'{k}={v}' for k, v in SPECIAL_IDS.items())}); train it with 'ut tokenizer train'"
                )
        self.sha256 = file_sha256(self.path)

    @property
    def vocab_size(self) -> int:
        return self.processor.get_piece_size()

    def encode(self, text: str) -> list[int]:
        """Sub-word ids of ``text`` (no bos or eos)."""
        return self.processor.encode(text)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self.processor.encode(list(texts))

    def decode(self, ids: Sequence[int]) -> str:
        """Detokenised text of ``ids``, up to the first eos; padding and bos are skipped."""
        ids = list(ids)
        if self.eos_id in ids:
            ids = ids[: ids.index(self.eos_id)]
        return self.processor.decode([i for i in ids if i not in (self.pad_id, self.bos_id)])

    def pieces(self, text: str) -> list[str]:
        """The sub-word pieces of ``text`` (for looking at a segmentation)."""
        return self.processor.encode(text, out_type=str)


def train_tokenizer(
    texts: Iterable[str],
    out: str | Path,
    *,
    vocab_size: int,
    model_type: str = "bpe",
    character_coverage: float = 1.0,
    threads: int = 1,
) -> SubwordTokenizer:
    """Train a sentencepiece model on ``texts`` (both languages) and write it to ``out``.

    ``character_coverage=1.0`` keeps every character of the training text (right for
    languages with small alphabets, such as English and German). The file is written
    to a temporary name and renamed, so ``out`` is either the old model or the new one.
    """
    if model_type not in MODEL_TYPES:
        raise TokenizerError(f"model type must be one of {', '.join(MODEL_TYPES)}, got {model_type!r}")
    if not isinstance(vocab_size, int) or vocab_size <= len(SPECIAL_IDS):
        raise TokenizerError(f"vocab size must be an integer above {len(SPECIAL_IDS)} (the special ids), got {vocab_size!r}")
    sentences = [t for t in texts if t.strip()]
    if not sentences:
        raise TokenizerError(f"{out}: no non-empty training sentences")
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=model, vocab_size=vocab_size, model_type=model_type,
            character_coverage=character_coverage, num_threads=threads, minloglevel=2, **SPECIAL_IDS,
        )
    except RuntimeError as err:  # e.g. a vocabulary larger than the text allows
        raise TokenizerError(f"{out}: sentencepiece training failed: {err}") from None
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    tmp.write_bytes(model.getvalue())
    tmp.replace(out)
    return SubwordTokenizer(out)


__all__ = ["MODEL_TYPES", "SPECIAL_IDS", "SubwordTokenizer", "TokenizerError", "file_sha256", "train_tokenizer"]
