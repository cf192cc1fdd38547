"""Reader for the bAbI QA text format (Weston et al. 2015), any task, any copy on disk.

Format: numbered lines; the number restarts at 1 with each new story. A fact is
``ID sentence.``; a question is ``ID question?<TAB>answer<TAB>supporting fact IDs``.
Answers of tasks 8 and 19 are comma-separated lists; they are kept as one answer
string (one class). The paper (section 3.1) does not say how it scored them.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Hashable, Iterable

from .textfile import read_text_lines


_TASK_FILE = re.compile(r"^qa(\d+)_[a-z-]+_(train|test)\.txt$")
_WORD = re.compile(r"[a-z0-9]+")


class BabiFormatError(ValueError):
    """A malformed bAbI file; the message names the file and line."""


@dataclass
class BabiExample:
    """One question with the facts of its story that precede it (oldest first). The questions of
    a story share its fact lists (read-only)."""

    facts: list[list[str]]
    question: list[str]
    answer: str
    supporting: list[int]  # indices into ``facts``
    task: int
    story: int = 0  # which story of its file (from 0); the questions of a story share facts


def most_recent_candidate(example: BabiExample, candidates: Collection[str]) -> str | None:
    """The recency baseline's answer: of the words that answer some question of the task
    (``candidates``), the one its story mentions last (the newest fact's last such word), or
    None when no fact mentions one (yes/no and list answers). A model that answers this way
    has learnt "the latest thing said" instead of the reasoning the task asks for; on task 16,
    the latest colour is right in half of the test questions."""
    for fact in reversed(example.facts):
        for word in reversed(fact):
            if word in candidates:
                return word
    return None


def usual_answers(examples: Iterable[BabiExample]) -> dict[tuple[int, tuple[str, ...]], str]:
    """The question-only baseline: per task and question text, the answer ``examples`` give it
    most often (ties: the first in sorted order), the story unread. A model that answers this way
    has learnt what a question usually gets, e.g. on task 18 that the chocolate is smaller than
    every container, instead of reading the story: it errs where the usual answer is wrong."""
    return _most_frequent_answers(((ex.task, tuple(ex.question)), ex.answer) for ex in examples)


def story_key(example: BabiExample) -> tuple[int, bytes]:
    """The task and a digest of the question's whole story (its facts, oldest first) and text:
    equal for two questions exactly when they are the same question on the same story (bar a
    128-bit collision), in little memory (the 10k joint training split has 172,000 questions)."""
    text = "\n".join(" ".join(fact) for fact in example.facts) + "\n?" + " ".join(example.question)
    return example.task, hashlib.blake2b(text.encode(), digest_size=16).digest()


def seen_answers(examples: Iterable[BabiExample]) -> dict[tuple[int, bytes], str]:
    """The lookup baseline: per question that ``examples`` hold verbatim, story and all
    (:func:`story_key`), the answer they give it. bAbI's generator draws small stories from a
    small world, so some test questions repeat training ones word for word (task 17 of the 10k
    set: about one in seven): a model can answer those from memory; the others measure the reasoning."""
    return _most_frequent_answers((story_key(ex), ex.answer) for ex in examples)


def _most_frequent_answers(pairs: Iterable[tuple[Hashable, str]]) -> dict[Any, str]:
    """Per key, the answer given most often (ties: the first in sorted order)."""
    counts: dict[Hashable, Counter[str]] = {}
    for key, answer in pairs:
        counts.setdefault(key, Counter())[answer] += 1
    return {key: min(c, key=lambda a: (-c[a], a)) for key, c in counts.items()}


def tokenize(sentence: str) -> list[str]:
    """Lower-cased words; sentence punctuation is dropped (``bathroom.`` -> ``bathroom``)."""
    return _WORD.findall(sentence.lower())


_ASKS = re.compile(r"\w\s*\?")  # a word and a question mark: "Where is Mary?"


def read_babi(path: str | Path, task: int = 0) -> list[BabiExample]:
    """Parse one bAbI file into examples; raises :class:`BabiFormatError` on malformed input."""
    path = Path(path)
    if not path.is_file():
        raise BabiFormatError(f"{path}: file not found")
    examples: list[BabiExample] = []
    facts: list[list[str]] = []
    fact_index: dict[int, int] = {}  # line id -> index in facts
    previous_id = 0
    story = -1
    for lineno, line in enumerate(_text_lines(path), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        number, _, text = line.partition(" ")
        if not _is_number(number) or not text.strip():
            raise BabiFormatError(f"{where}: expected 'ID text', got {line[:60]!r}")
        line_id = int(number)
        if line_id == 1:
            facts, fact_index = [], {}
            story += 1
        elif line_id != previous_id + 1:
            raise BabiFormatError(f"{where}: line id {line_id} follows {previous_id} (ids count up from 1 in a story)")
        previous_id = line_id
        if "\t" not in text:
            if _ASKS.search(text):  # no fact of the 20 tasks asks anything: a question whose tabs were lost
                raise BabiFormatError(f"{where}: a question without its tab-separated answer and supporting fact "
                                      f"ids ('question<TAB>answer<TAB>ids'), got {line[:60]!r}")
            fact_index[line_id] = len(facts)
            facts.append(tokenize(text))
            continue
        parts = text.split("\t")
        if len(parts) != 3:
            raise BabiFormatError(
                f"{where}: a question line needs 'question<TAB>answer<TAB>supporting ids', got {len(parts)} tab-separated fields"
            )
        question, answer, support = (p.strip() for p in parts)
        if not answer:
            raise BabiFormatError(f"{where}: empty answer")
        if not support:  # every question of the 20 tasks names the facts that answer it
            raise BabiFormatError(f"{where}: no supporting fact ids after the answer")
        supporting = []
        for token in support.split():
            if not _is_number(token) or int(token) not in fact_index:
                raise BabiFormatError(f"{where}: supporting fact id {token!r} is not a fact line of this story")
            supporting.append(fact_index[int(token)])
        # The story so far; its fact lists are shared with the story's other questions, not copied.
        examples.append(BabiExample(list(facts), tokenize(question), answer.lower(), supporting, task, story))
    if not examples:
        raise BabiFormatError(f"{path}: no questions found")
    return examples


def _text_lines(path: Path) -> list[str]:
    """The file's lines (BOM, CRLF and CR line ends accepted; bad bytes: a BabiFormatError naming the line)."""
    return read_text_lines(path, BabiFormatError)


def _is_number(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also accepts '²' and other scripts' digits, which ``int`` refuses."""
    return text.isascii() and text.isdigit()


def task_file(directory: str | Path, task: int, split: str) -> Path:
    """The file of ``task`` (1-20) and ``split`` (train/test) in a bAbI folder such as ``en`` or ``en-10k``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise BabiFormatError(f"{directory}: no such bAbI folder")
    for path in sorted(directory.iterdir()):
        m = _TASK_FILE.match(path.name)
        if m and int(m.group(1)) == task and m.group(2) == split:
            return path
    raise BabiFormatError(f"{directory}: no file for task {task} {split} (expected qa{task}_<name>_{split}.txt)")
