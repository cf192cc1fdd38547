"""Tokenised corpora: robust reading, the vocabulary and the token stream; the real Penn Treebank."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from universal_transformer.data.text import (
    EOS_ID, PAD_ID, UNK_ID, TextFormatError, Vocabulary, encode_stream, read_lines, read_tokenised,
)

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
PTB = DATA / "lm" / "ptb"
needs_ptb = pytest.mark.skipif(not PTB.is_dir(), reason="needs ../shared/data/lm/ptb")


def test_reader_skips_a_bom_accepts_crlf_and_drops_empty_lines(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"\xef\xbb\xbfthe cat sat\r\n\r\n  a dog \r\nend")
    assert list(read_tokenised(path)) == [["the", "cat", "sat"], ["a", "dog"], ["end"]]
    assert [n for n, _ in read_lines(path)] == [1, 2, 3, 4]
    assert list(read_tokenised(path, lowercase=True))[0] == ["the", "cat", "sat"]


def test_undecodable_bytes_name_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine line\nsecond\nbroken \xff byte\n")
    with pytest.raises(TextFormatError, match=r"bad.txt:3: not valid UTF-8 text \(byte 0x[0-9a-f]{2} at column 8: invalid start byte"):
        list(read_tokenised(path))
    with pytest.raises(TextFormatError, match="nope.txt: file not found"):
        list(read_lines(tmp_path / "nope.txt"))


def test_vocabulary_orders_by_count_then_word_and_reserves_three_ids():
    lines = [["b", "a", "c", "b"], ["c", "b", "<unk>", "<eos>", "<pad>"], ["d"]]
    vocab = Vocabulary.build(lines)
    assert vocab.words == ["<pad>", "<unk>", "<eos>", "b", "c", "a", "d"]  # b:3, c:2, then a, d (1 each) by code point
    assert (vocab.pad_id, vocab.unk_id, vocab.eos_id) == (PAD_ID, UNK_ID, EOS_ID) == (0, 1, 2)
    # literal <unk>/<eos> are the reserved entries; <pad> is never a word; unknown words are <unk>
    assert vocab.encode(["b", "<unk>", "<eos>", "<pad>", "zebra"]) == [3, 1, 2, 1, 1]
    assert vocab.decode([3, 4, 2]) == ["b", "c", "<eos>"]
    assert Vocabulary.build(lines, min_count=2).words[3:] == ["b", "c"]
    assert Vocabulary.build(lines, max_size=5).words == ["<pad>", "<unk>", "<eos>", "b", "c"]


def test_vocabulary_file_round_trip_and_lambada_style_columns(tmp_path):
    vocab = Vocabulary.build([["x", "y", "y", "z"]])
    again = Vocabulary.from_file(vocab.save(tmp_path / "vocab.txt"))
    assert again.words == vocab.words == ["<pad>", "<unk>", "<eos>", "y", "x", "z"]
    (tmp_path / "counts.txt").write_text("apple\t10\n<unk>\t3\nbanana 7\ncherry\n")
    assert Vocabulary.from_file(tmp_path / "counts.txt").words[3:] == ["apple", "banana", "cherry"]
    assert Vocabulary.from_file(tmp_path / "counts.txt", max_size=4).words[3:] == ["apple"]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("a\nb\na\n", 3, "'a' is already on line 1"),
        ("a\n\nb\n", 2, "empty line in a vocabulary file"),
        # `uniq -c | sort -rn` output: named as such, not as the duplicate count '1' on line 3
        ("12 the\n7 of\n1 cat\n1 dog\n", 1, "every line is a number, then a word"),
    ],
)
def test_broken_vocabulary_files_name_file_and_line(tmp_path, text, line, message):
    (tmp_path / "v.txt").write_text(text)
    with pytest.raises(TextFormatError, match=rf"v.txt:{line}: {message}"):
        Vocabulary.from_file(tmp_path / "v.txt")


def test_vocabulary_of_numbers_or_with_a_numeric_word_is_read(tmp_path):
    """Only a file whose every line is `number word` reads as `count word`; numbers as words stay."""
    (tmp_path / "numbers.txt").write_text("7 120\n3 45\n")  # digits with their counts
    (tmp_path / "mixed.txt").write_text("the 12\n1984 3\n3 three\n")
    assert Vocabulary.from_file(tmp_path / "numbers.txt").words[3:] == ["7", "3"]
    assert Vocabulary.from_file(tmp_path / "mixed.txt").words[3:] == ["the", "1984", "3"]


def test_stream_puts_eos_in_front_and_after_every_line():
    vocab = Vocabulary.build([["a", "b"], ["b"]])
    stream = encode_stream([["a", "b"], ["b", "q"]], vocab)
    assert stream.dtype == np.int32
    assert vocab.decode(stream.tolist()) == ["<eos>", "a", "b", "<eos>", "b", "<unk>", "<eos>"]


@needs_ptb
def test_penn_treebank_has_the_standard_sizes():
    vocab = Vocabulary.build(read_tokenised(PTB / "ptb.train.txt"))
    assert len(vocab) == 10_001  # Mikolov's 10k words (with <unk> and <eos>) + padding
    train = encode_stream(read_tokenised(PTB / "ptb.train.txt"), vocab)
    valid = encode_stream(read_tokenised(PTB / "ptb.valid.txt"), vocab)
    test = encode_stream(read_tokenised(PTB / "ptb.test.txt"), vocab)
    # targets (every token after the leading <eos>): the usual 929k / 73k / 82k
    assert (len(train) - 1, len(valid) - 1, len(test) - 1) == (929_589, 73_760, 82_430)
    # a closed vocabulary: the only unknown words of validation and test are PTB's own <unk>
    for split, stream in (("valid", valid), ("test", test)):
        literal = sum(words.count("<unk>") for words in read_tokenised(PTB / f"ptb.{split}.txt"))
        assert (stream == UNK_ID).sum() == literal > 0
    assert (train == PAD_ID).sum() == 0
