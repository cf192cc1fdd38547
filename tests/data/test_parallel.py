"""Parallel text: reading (gzip, BOM, CRLF), alignment errors, length filtering."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from universal_transformer.data.parallel import (
    LengthFilter, ParallelFormatError, find_file, read_lines, read_parallel,
)

MULTI30K = Path(__file__).resolve().parents[3] / "shared" / "data" / "mt" / "multi30k"
needs_data = pytest.mark.skipif(not MULTI30K.is_dir(), reason="needs ../shared/data/mt/multi30k")


def test_reads_bom_crlf_and_a_last_line_without_newline(tmp_path):
    path = tmp_path / "a.en"
    path.write_bytes("\ufeffA dog runs.\r\nZwei Männer.\r\n\r\nlast".encode("utf-8"))
    assert read_lines(path) == ["A dog runs.", "Zwei Männer.", "", "last"]
    path.write_bytes(b"one\ntwo\n")
    assert read_lines(path) == ["one", "two"]  # the final newline ends a line, it does not start one
    path.write_bytes(b"")
    assert read_lines(path) == []


def test_splits_on_newlines_only(tmp_path):
    # str.splitlines would break these sentences in two and misalign the pair.
    path = tmp_path / "a.txt"
    path.write_text("page\x0cbreak\nline\u2028separator\n", encoding="utf-8")
    assert read_lines(path) == ["page\x0cbreak", "line\u2028separator"]
    path.write_bytes(b"one\rsentence\ntwo\n")  # a stray CR inside a sentence keeps the sides aligned
    assert read_lines(path) == ["one\rsentence", "two"]


def test_a_bad_byte_after_lone_carriage_returns_is_placed_by_their_lines():
    from universal_transformer.data.textfile import decode_text_lines

    with pytest.raises(ValueError, match=r"f:3: not valid UTF-8 text \(byte 0xff at column 4"):
        decode_text_lines(b"one\rtwo\rthr\xffee\r", "f")
    with pytest.raises(ValueError, match=r"f:1: not valid UTF-8 text \(byte 0xff at column 12"):
        decode_text_lines(b"one\rtwo\rthr\xffee\r", "f", lone_cr=False)


def test_gzip_data_under_a_plain_name_is_named_as_such(tmp_path):
    (tmp_path / "t.en").write_bytes(gzip.compress(b"A dog.\n"))
    with pytest.raises(ParallelFormatError, match=r"t.en: gzip-compressed data; name the file \*.gz"):
        read_lines(tmp_path / "t.en")


def test_a_folder_is_not_a_file(tmp_path):
    (tmp_path / "d.en").mkdir()
    with pytest.raises(ParallelFormatError, match=r"d.en: a folder, not a file"):
        read_lines(tmp_path / "d.en")


def test_an_empty_corpus_is_refused_by_name(tmp_path):
    (tmp_path / "e.en").write_bytes(b"")
    (tmp_path / "e.de").write_bytes(b"")
    with pytest.raises(ParallelFormatError, match=r"e.en: no lines: an empty corpus"):
        read_parallel(tmp_path / "e.en", tmp_path / "e.de")


def test_reads_gzip_like_plain_text(tmp_path):
    text = "\ufeffEin Hund.\r\nZwei Katzen.\n"
    plain, packed = tmp_path / "t.de", tmp_path / "t.de.gz"
    plain.write_text(text, encoding="utf-8", newline="")
    with gzip.open(packed, "wt", encoding="utf-8", newline="") as handle:
        handle.write(text)
    assert read_lines(packed) == read_lines(plain) == ["Ein Hund.", "Zwei Katzen."]


def test_bad_files_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.en"
    bad.write_bytes(b"\xef\xbb\xbfok\nstill ok\nbroken \xff here\n")  # BOM, then a stray byte on line 3
    with pytest.raises(ParallelFormatError, match=r"bad.en:3: not valid UTF-8"):
        read_lines(bad)
    with pytest.raises(ParallelFormatError, match="missing.en: file not found"):
        read_lines(tmp_path / "missing.en")
    fake = tmp_path / "fake.en.gz"
    fake.write_bytes(b"not gzip at all")
    with pytest.raises(ParallelFormatError, match="fake.en.gz: cannot read"):
        read_lines(fake)


def test_misaligned_files_name_both_files_and_their_line_counts(tmp_path):
    src, tgt = tmp_path / "train.en", tmp_path / "train.de"
    src.write_text("a\nb\nc\n")
    tgt.write_text("x\ny\n")
    with pytest.raises(ParallelFormatError) as err:
        read_parallel(src, tgt)
    assert f"{src} has 3 lines, {tgt} has 2" in str(err.value)
    tgt.write_text("x\ny\nz\n")
    corpus = read_parallel(src, tgt)
    assert corpus.sources == ["a", "b", "c"] and corpus.targets == ["x", "y", "z"] and len(corpus.head(2)) == 2


def test_find_file_takes_plain_or_gz(tmp_path):
    (tmp_path / "val.de.gz").write_bytes(gzip.compress(b"x\n"))
    assert find_file(tmp_path, "val", "de") == tmp_path / "val.de.gz"
    (tmp_path / "val.de").write_text("x\n")
    assert find_file(tmp_path, "val", "de") == tmp_path / "val.de"
    with pytest.raises(ParallelFormatError, match=r"val.en: not found \(nor val.en.gz\)"):
        find_file(tmp_path, "val", "en")


def test_length_filter():
    keep = LengthFilter(max_tokens=5, max_ratio=2.0)
    assert keep.keeps(5, 3) and keep.keeps(2, 4) and keep.keeps(1, 1)
    assert not keep.keeps(0, 3) and not keep.keeps(3, 0)  # an empty side
    assert not keep.keeps(6, 5)  # too long
    assert not keep.keeps(2, 5)  # ratio 2.5
    sources, targets = [[1] * 3, [1] * 6, [], [1] * 2], [[1] * 3, [1] * 5, [1], [1] * 5]
    assert keep.select(sources, targets) == [0]
    with pytest.raises(ValueError, match="max_ratio must be >= 1"):
        LengthFilter(max_ratio=0.5)
    with pytest.raises(ValueError, match="max_tokens must be a positive integer"):
        LengthFilter(max_tokens=0)


@needs_data
def test_multi30k_train_and_test_files_are_aligned():
    train = read_parallel(find_file(MULTI30K, "train", "en"), find_file(MULTI30K, "train", "de"))
    assert len(train) == 29_000
    assert train.sources[0].startswith("Two young, White males") and train.targets[0].startswith("Zwei junge weiße Männer")
    test = read_parallel(find_file(MULTI30K, "test_2016_flickr", "en"), find_file(MULTI30K, "test_2016_flickr", "de"))
    assert len(test) == 1000
