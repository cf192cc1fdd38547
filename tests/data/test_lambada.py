"""LAMBADA: the official passages, the OpenAI jsonl variant, the training-novels layout."""

from __future__ import annotations

import gzip
import json

import pytest

from universal_transformer.data.lambada import novel_files, read_lambada
from universal_transformer.data.text import TextFormatError

from .test_text import DATA

LAMBADA = DATA / "lambada"
needs_data = pytest.mark.skipif(not LAMBADA.is_dir(), reason="needs ../shared/data/lambada")


@needs_data
@pytest.mark.parametrize(
    "name, count",
    [("lambada_development_plain_text.txt", 4869), ("lambada_test_plain_text.txt", 5153),
     ("lambada_control_test_data_plain_text.txt", 5000)],
)
def test_official_files(name, count):
    passages = read_lambada(LAMBADA / "original" / name)
    assert len(passages) == count
    assert all(len(p.context) >= 10 and p.target and " " not in p.target for p in passages)


@needs_data
def test_openai_variant_has_the_official_targets():
    official = read_lambada(LAMBADA / "original" / "lambada_test_plain_text.txt")
    openai = read_lambada(LAMBADA / "openai" / "lambada_test.jsonl", lowercase=True)
    assert len(openai) == len(official) == 5153
    assert openai[0].target == official[0].target == "signs"
    # the last whitespace-delimited word: punctuation glued to it (quotes, ellipses) stays, as evaluation tools keep it
    same = sum(a.target == b.target for a, b in zip(openai, official))
    assert 0.99 < same / len(official) < 1.0


def test_training_novels_layout(tmp_path):
    for genre, novel in (("Romance", "b.txt"), ("Adventure", "z.txt"), ("Adventure", "a.txt")):
        (tmp_path / genre).mkdir(exist_ok=True)
        (tmp_path / genre / novel).write_text("one sentence .\n")
    (tmp_path / "Romance" / "notes.md").write_text("not a novel")
    assert [p.relative_to(tmp_path).as_posix() for p in novel_files(tmp_path)] == [
        "Adventure/a.txt", "Adventure/z.txt", "Romance/b.txt",
    ]
    (tmp_path / "empty").mkdir()
    with pytest.raises(TextFormatError, match="empty: no novels found"):
        novel_files(tmp_path / "empty")
    with pytest.raises(TextFormatError, match="missing: no such folder"):
        novel_files(tmp_path / "missing")


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("d.txt", "a b c\nlonely\n", r"d.txt:2: a passage needs context words and a target word, got 1"),
        ("d.jsonl", '{"text": "a b c"}\n{"text": "a b\n', r"d.jsonl:2: not valid JSON"),
        ("d.jsonl", '{"text": "a b c"}\n["a b"]\n', r"d.jsonl:2: expected an object with a string 'text' field"),
    ],
)
def test_broken_files_name_file_and_line(tmp_path, name, content, message):
    (tmp_path / name).write_text(content)
    with pytest.raises(TextFormatError, match=message):
        read_lambada(tmp_path / name)


def test_jsonl_passages_and_crlf(tmp_path):
    (tmp_path / "t.jsonl").write_text(json.dumps({"text": "He said:\n\n\"Hi, Anna\""}) + "\r\n")
    passage, = read_lambada(tmp_path / "t.jsonl")
    assert passage.context == ["He", "said:", '"Hi,'] and passage.target == 'Anna"'
    with gzip.open(tmp_path / "t.jsonl.gz", "wt") as handle:  # gzipped JSON lines are JSON lines too
        handle.write(json.dumps({"text": "He said: Anna"}) + "\n")
    passage, = read_lambada(tmp_path / "t.jsonl.gz")
    assert passage.target == "Anna"
