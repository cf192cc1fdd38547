"""Agreement data: the ranking sets (Linzen et al.'s, Gulordava et al.'s) and the number-prediction files."""

from __future__ import annotations

from collections import Counter

import pytest

from universal_transformer.data.agreement import read_agreement, read_number_prediction
from universal_transformer.data.text import TextFormatError

from .test_text import DATA

AGREEMENT = DATA / "agreement"
needs_data = pytest.mark.skipif(not AGREEMENT.is_dir(), reason="needs ../shared/data/agreement")


@needs_data
def test_linzen_filtered_test_set():
    items = read_agreement(AGREEMENT / "colorlessgreen" / "linzen_testset" / "subj_agr_filtered")
    assert len(items) == 7489
    assert Counter(i.attractors for i in items) == {0: 1972, 1: 1957, 2: 1943, 3: 1287, 4: 330}
    first = items[0]
    assert " ".join(first.prefix) == "as a consequence of being mostly privately owned , the town"
    assert (first.correct, first.wrong, first.attractors, first.kind) == ("is", "are", 0, None)
    # the same set read through any of its files
    assert len(read_agreement(AGREEMENT / "colorlessgreen" / "linzen_testset" / "subj_agr_filtered.gold")) == 7489


@needs_data
def test_gulordava_generated_set_takes_attractors_and_kind_from_the_tab_file():
    items = read_agreement(AGREEMENT / "colorlessgreen" / "English" / "generated.text")
    assert len(items) == 410
    assert Counter(i.kind for i in items) == {"generated": 369, "original": 41}
    assert Counter(i.attractors for i in items) == {0: 330, 1: 70, 2: 10}
    first = items[0]
    assert " ".join(first.prefix) == "An agreeable insight executed in fifty"
    assert (first.correct, first.wrong) == ("represents", "represent")


@needs_data
def test_rnn_agr_simple_files():
    folder = AGREEMENT / "rnn_agr_simple"
    val = read_number_prediction(folder / "numpred.val")
    assert len(val) == 15_772 and Counter(e.label for e in val) == {"VBZ": 10_763, "VBP": 5_009}
    assert val[0].label_id in (0, 1) and val[0].prefix
    sizes = [len(read_number_prediction(folder / f"numpred.test.{k}")) for k in range(1, 6)]
    assert sizes == [52_599, 9_380, 2_051, 561, 159]


def _write_set(tmp_path, text: str, gold: str, tab: str | None = None):
    (tmp_path / "s.text").write_text(text)
    (tmp_path / "s.gold").write_text(gold)
    if tab is not None:
        (tmp_path / "s.tab").write_text(tab)
    return tmp_path / "s"


@pytest.mark.parametrize(
    "text, gold, where, message",
    [
        ("the keys are here\n", "2\tare\tis\n", "s.gold:1", "expected 4 tab-separated columns"),
        ("the keys are here\nthe key is\n", "2\tare\tis\t0\n9\tis\tare\t0\n", "s.gold:2", "verb index 9 is past the end"),
        ("the keys are here\n", "2\tare\tis\tmany\n", "s.gold:1", "the number of attractors must be an integer"),
        ("the keys are here\n", "-1\tare\tis\t0\n", "s.gold:1", "the verb index must be >= 0"),
        ("a b c\na b c\n", "1\tb\tc\t0\n", "s.gold", "1 lines, but .*s.text has 2"),
    ],
)
def test_broken_ranking_sets_name_file_and_line(tmp_path, text, gold, where, message):
    with pytest.raises(TextFormatError, match=rf"{where}: {message}"):
        read_agreement(_write_set(tmp_path, text, gold))


def test_tab_file_must_match_the_gold_forms(tmp_path):
    gold = "\t".join(["P", "0", "0", "2", "VERB", "x", "are", "is", "be", "1", "NOUN", "the keys"]) + "\n"
    header = "pattern\tform\tclass\tn_attr\ttype\n"
    good = header + "P\tare\tcorrect\t1\toriginal\nP\tis\twrong\t1\toriginal\n"
    item, = read_agreement(_write_set(tmp_path, "the keys are\n", gold, good))
    assert (item.prefix, item.correct, item.wrong, item.attractors, item.kind) == (["the", "keys"], "are", "is", 1, "original")
    swapped = header + "P\tis\tcorrect\t1\toriginal\nP\tare\twrong\t1\toriginal\n"
    with pytest.raises(TextFormatError, match=r"s.tab:2: forms \('is', 'are'\) do not match line 1"):
        read_agreement(_write_set(tmp_path, "the keys are\n", gold, swapped))
    with pytest.raises(TextFormatError, match="s.tab: 1 rows, expected 2 per sentence"):
        read_agreement(_write_set(tmp_path, "the keys are\n", gold, header + "P\tare\tcorrect\t1\toriginal\n"))
    open_quote = header + 'P\t"are\tcorrect\t1\toriginal\nP\tis\twrong\t1\toriginal\n'  # spoils its own line only
    with pytest.raises(TextFormatError, match=r"s.tab:2: 2 columns, the header has 5"):
        read_agreement(_write_set(tmp_path, "the keys are\n", gold, open_quote))


def test_text_and_gold_out_of_step_are_refused(tmp_path):
    """Equal line counts, every index in range: only the verb at the index shows the shift."""
    sentences = [f"the {n} near the cars {v} red" for n, v in (("key", "is"), ("keys", "are"))] * 20
    golds = [f"5\t{v}\t{w}\t1" for v, w in (("is", "are"), ("are", "is"))] * 20
    assert len(read_agreement(_write_set(tmp_path, "\n".join(sentences) + "\n", "\n".join(golds) + "\n"))) == 40
    # one stray sentence of 40 is data, not a shift
    stray = sentences[:7] + ["the key near the cars was red"] + sentences[8:]
    assert len(read_agreement(_write_set(tmp_path, "\n".join(stray) + "\n", "\n".join(golds) + "\n"))) == 40
    shifted = ["a header line of the same length"] + sentences[:-1]
    with pytest.raises(TextFormatError, match=r"s.gold:1: the word at the verb index of .*s.text:1 is not the correct form, "
                       r"and so on 40 of 40 lines: are the .text and .gold files line-aligned\?"):
        read_agreement(_write_set(tmp_path, "\n".join(shifted) + "\n", "\n".join(golds) + "\n"))


def test_tab_prefix_must_be_the_text_before_the_verb(tmp_path):
    gold = "\t".join(["P", "0", "0", "2", "VERB", "x", "are", "is", "be", "1", "NOUN", "the keys"]) + "\n"
    header = "pattern\tform\tclass\tn_attr\ttype\tprefix\n"
    rows = "P\tare\tcorrect\t1\toriginal\t{0}\nP\tis\twrong\t1\toriginal\t{0}\n"
    # the authors' prefixes have <unk> for words outside their vocabulary
    item, = read_agreement(_write_set(tmp_path, "the keys are\n", gold, header + rows.format("<unk> keys")))
    assert item.prefix == ["the", "keys"]
    with pytest.raises(TextFormatError, match=r"s.tab:2: prefix 'the locks' is not 'the keys', the words before the verb on line 1"):
        read_agreement(_write_set(tmp_path, "the keys are\n", gold, header + rows.format("the locks")))


def test_missing_ranking_files(tmp_path):
    (tmp_path / "s.text").write_text("a\n")
    with pytest.raises(TextFormatError, match=r"s.gold: file not found \(an agreement set is NAME.text \+ NAME.gold\)"):
        read_agreement(tmp_path / "s")


@pytest.mark.parametrize(
    "content, line, message",
    [
        (b"VBZ\tthe dog\nVBP the dogs\n", 2, "expected .*, found no tab"),
        (b"VBZ\tthe dog\nNN\tthe dogs\n", 2, "label must be VBZ or VBP, got 'NN'"),
        (b"VBZ\t \n", 1, "empty prefix"),
        (b"VBZ\tthe dog\nVBP\t3\tthe dogs\n", 2, "expected .*, found 3 columns"),
        (b"VBZ\tthe dog\r\nVBP\tthe \xe9 dogs\n", 2, "not valid UTF-8"),
    ],
)
def test_broken_number_prediction_files_name_file_and_line(tmp_path, content, line, message):
    (tmp_path / "numpred.train").write_bytes(content)
    with pytest.raises(TextFormatError, match=rf"numpred.train:{line}: {message}"):
        read_number_prediction(tmp_path / "numpred.train")


def test_number_prediction_reader_accepts_bom_and_crlf(tmp_path):
    (tmp_path / "n").write_bytes(b"\xef\xbb\xbfVBP\tThe dogs\r\nVBZ\tthe dog\r\n")
    examples = read_number_prediction(tmp_path / "n", lowercase=True)
    assert [(e.label, e.prefix, e.label_id, e.line) for e in examples] == [
        ("VBP", ["the", "dogs"], 1, 1), ("VBZ", ["the", "dog"], 0, 2)
    ]
