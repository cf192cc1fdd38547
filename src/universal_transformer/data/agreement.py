"""Subject-verb agreement data (Linzen, Dupoux & Goldberg 2016; Gulordava et al. 2018).

Two kinds of files:

* **Ranking sets** for language models (the colorlessgreenRNNs layout): line-aligned
  ``NAME.text`` (the sentence, tokenised) and ``NAME.gold`` (where the verb is, its
  correct and its wrong form), optionally ``NAME.tab``.

  - Linzen et al.'s filtered test set (``linzen_testset/subj_agr_filtered.*``): ``.gold``
    has 4 tab-separated columns: verb index in the sentence (from 0), correct form,
    wrong form, number of attractors.
  - Gulordava et al.'s set (``English/generated.*``): ``.gold`` has 12 columns; the 4th
    is the verb index, the 7th and 8th the correct and the wrong form. The number of
    attractors and whether a sentence is ``original`` or ``generated`` (nonce) are in
    ``.tab``: a header line, then two rows per sentence (the correct form's, then the
    wrong form's) with ``n_attr`` and ``type`` columns.

  The words before the verb index are the prefix the language model reads.

* **Number prediction** (``rnn_agr_simple``: ``numpred.*``): ``VBZ`` or ``VBP``, a tab,
  and the sentence up to (not including) the verb. ``VBZ`` = singular, ``VBP`` = plural.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from .text import TextFormatError, read_lines

NUMBER_LABELS = ("VBZ", "VBP")  # singular, plural: the class ids 0 and 1
MAX_OFF_VERB = 0.05  # the share of a 4-column set's items whose verb in .text may differ from the correct form


@dataclass
class AgreementItem:
    """One sentence of a ranking set: the ``prefix`` before the verb and the two verb forms."""

    prefix: list[str]
    correct: str
    wrong: str
    attractors: int | None = None
    kind: str | None = None  # Gulordava et al.: "original" or "generated"
    line: int = 0


def agreement_paths(path: str | Path) -> tuple[Path, Path, Path | None]:
    """``(NAME.text, NAME.gold, NAME.tab or None)`` for ``NAME`` or any of its files."""
    path = Path(path)
    stem = path.with_suffix("") if path.suffix in (".text", ".gold", ".tab", ".eval") else path
    text, gold, tab = (stem.with_name(stem.name + ext) for ext in (".text", ".gold", ".tab"))
    for needed in (text, gold):
        if not needed.is_file():
            raise TextFormatError(f"{needed}: file not found (an agreement set is NAME.text + NAME.gold)")
    return text, gold, tab if tab.is_file() else None


def _int(value: str, where: str, what: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise TextFormatError(f"{where}: {what} must be an integer, got {value!r}") from None
    if number < 0:
        raise TextFormatError(f"{where}: {what} must be >= 0, got {number}")
    return number


def read_agreement(path: str | Path, *, lowercase: bool = False) -> list[AgreementItem]:
    """The items of a ranking set (Linzen's 4-column or Gulordava's 12-column ``.gold``)."""
    text_path, gold_path, tab_path = agreement_paths(path)
    sentences = [words for _, words in read_lines(text_path)]
    golds = list(read_lines(gold_path))
    if len(sentences) != len(golds):
        raise TextFormatError(f"{gold_path}: {len(golds)} lines, but {text_path} has {len(sentences)}; they must be line-aligned")
    items = []
    off_verb: list[int] = []  # Linzen's lines whose word at the verb index is not the correct form
    for (lineno, gold), sentence in zip(golds, sentences):
        where = f"{gold_path}:{lineno}"
        fields = gold.split("\t")
        if len(fields) == 4:
            index, correct, wrong, attractors = fields[0], fields[1], fields[2], _int(fields[3], where, "the number of attractors")
        elif len(fields) == 12:
            index, correct, wrong, attractors = fields[3], fields[6], fields[7], None
        else:
            raise TextFormatError(
                f"{where}: expected 4 tab-separated columns (index, correct, wrong, attractors) "
                f"or Gulordava et al.'s 12, got {len(fields)}"
            )
        words = (sentence.lower() if lowercase else sentence).split()
        position = _int(index, where, "the verb index")
        if position >= len(words):
            raise TextFormatError(f"{where}: verb index {position} is past the end of {text_path}:{lineno} ({len(words)} words)")
        if not correct.strip() or not wrong.strip():
            raise TextFormatError(f"{where}: empty verb form")
        if len(fields) == 4 and words[position].lower() != correct.strip().lower():
            off_verb.append(lineno)  # (Gulordava's nonce sentences carry another verb there)
        if lowercase:
            correct, wrong = correct.lower(), wrong.lower()
        items.append(AgreementItem(words[:position], correct.strip(), wrong.strip(), attractors, None, lineno))
    if not items:
        raise TextFormatError(f"{gold_path}: no items found")
    # Linzen's .text holds the correct form at the index (all 7,489 items, up to case); files
    # out of step by a line still parse, so only this tells them apart.
    if len(off_verb) > MAX_OFF_VERB * len(items):
        raise TextFormatError(
            f"{gold_path}:{off_verb[0]}: the word at the verb index of {text_path}:{off_verb[0]} is not the correct form, "
            f"and so on {len(off_verb)} of {len(items)} lines: are the .text and .gold files line-aligned?"
        )
    if tab_path is not None:
        _add_tab_columns(items, tab_path, lowercase=lowercase)
    return items


def _add_tab_columns(items: list[AgreementItem], tab_path: Path, *, lowercase: bool) -> None:
    """Attractor counts and original/generated from Gulordava et al.'s ``.tab`` (two rows per item)."""
    # Line by line: a quote left open on one line then spoils that line alone (found by its
    # column count or forms, with its number), instead of swallowing the rows after it.
    rows = [next(csv.reader([line], delimiter="\t"), []) for _, line in read_lines(tab_path)]
    if not rows:
        raise TextFormatError(f"{tab_path}: empty file")
    header = rows[0]
    missing = [c for c in ("form", "n_attr", "type") if c not in header]
    if missing:
        raise TextFormatError(f"{tab_path}:1: the header lacks column(s) {', '.join(missing)}")
    col = {name: header.index(name) for name in ("form", "n_attr", "type")}
    prefix_col = header.index("prefix") if "prefix" in header else None
    if len(rows) - 1 != 2 * len(items):
        raise TextFormatError(f"{tab_path}: {len(rows) - 1} rows, expected 2 per sentence ({2 * len(items)})")
    for i, item in enumerate(items):
        lineno = 2 + 2 * i
        good, bad = rows[1 + 2 * i], rows[2 + 2 * i]
        for row, offset in ((good, 0), (bad, 1)):
            if len(row) != len(header):
                raise TextFormatError(f"{tab_path}:{lineno + offset}: {len(row)} columns, the header has {len(header)}")
        forms = tuple(r[col["form"]].lower() if lowercase else r[col["form"]] for r in (good, bad))
        if forms != (item.correct, item.wrong):
            raise TextFormatError(
                f"{tab_path}:{lineno}: forms {forms} do not match line {item.line} of the .gold file "
                f"({item.correct!r}, {item.wrong!r})"
            )
        if prefix_col is not None:  # the .text line's words before the verb, as the .gold file places it
            prefix = good[prefix_col].lower() if lowercase else good[prefix_col]
            words = prefix.split()  # the authors' prefix has <unk> for words out of their vocabulary
            if len(words) != len(item.prefix) or any(w not in (v, "<unk>") for w, v in zip(words, item.prefix)):
                raise TextFormatError(
                    f"{tab_path}:{lineno}: prefix {prefix!r} is not {' '.join(item.prefix)!r}, the words before "
                    f"the verb on line {item.line} of the .text file: are .text, .gold and .tab line-aligned?"
                )
        item.attractors = _int(good[col["n_attr"]], f"{tab_path}:{lineno}", "n_attr")
        item.kind = good[col["type"]]


@dataclass
class NumberExample:
    """``label`` (``VBZ`` singular or ``VBP`` plural) of the verb that follows ``prefix``."""

    label: str
    prefix: list[str]
    line: int = 0

    @property
    def label_id(self) -> int:
        return NUMBER_LABELS.index(self.label)


def read_number_prediction(path: str | Path, *, lowercase: bool = False) -> list[NumberExample]:
    """A ``numpred.*`` file: ``VBZ|VBP<TAB>sentence prefix`` per line."""
    examples = []
    for lineno, line in read_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        label, tab, prefix = line.partition("\t")
        if not tab:
            raise TextFormatError(f"{where}: expected 'VBZ|VBP<TAB>prefix', found no tab")
        if label not in NUMBER_LABELS:
            raise TextFormatError(f"{where}: label must be VBZ or VBP, got {label!r}")
        if "\t" in prefix:  # a third column would be read as words of the prefix
            raise TextFormatError(f"{where}: expected 'VBZ|VBP<TAB>prefix', found {prefix.count(chr(9)) + 2} columns")
        words = (prefix.lower() if lowercase else prefix).split()
        if not words:
            raise TextFormatError(f"{where}: empty prefix")
        examples.append(NumberExample(label, words, lineno))
    if not examples:
        raise TextFormatError(f"{path}: no examples found")
    return examples


__all__ = [
    "NUMBER_LABELS", "AgreementItem", "NumberExample", "agreement_paths", "read_agreement", "read_number_prediction",
]
