"""The bAbI reader: the real files, and broken ones that must name file and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from universal_transformer.data.babi import (
    BabiExample, BabiFormatError, most_recent_candidate, read_babi, seen_answers, story_key, task_file, tokenize, usual_answers,
)

BABI = Path(__file__).resolve().parents[3] / "shared" / "data" / "babi"
needs_data = pytest.mark.skipif(not BABI.is_dir(), reason="needs ../shared/data/babi")

# A tiny bAbI experiment for command-line tests (a few steps on task 2 of the 1k set).
TINY_BABI = {
    "model_class": "UTStoryQA",
    "model": {"d_model": 16, "num_heads": 2, "d_ff": 32, "num_steps": 2, "act": True},
    "task": {"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": 2, "memory_size": 20},
    "train": {"steps": 4, "eval_every": 2, "max_batch_size": 8, "threads": 1},
}

STORY = """1 Mary moved to the bathroom.
2 John went to the hallway.
3 Where is Mary? \tbathroom\t1
4 Daniel went back to the hallway.
5 Where is Daniel? \thallway\t4
1 Sandra got the apple there.
2 What is Sandra carrying?\tapple,milk\t1
"""


def test_parses_stories_questions_answers_and_supporting_facts(tmp_path):
    path = tmp_path / "qa1_single-supporting-fact_train.txt"
    path.write_text(STORY)
    examples = read_babi(path, task=1)
    assert len(examples) == 3
    first, second, third = examples
    assert first.facts == [["mary", "moved", "to", "the", "bathroom"], ["john", "went", "to", "the", "hallway"]]
    assert first.question == ["where", "is", "mary"] and first.answer == "bathroom" and first.supporting == [0]
    assert len(second.facts) == 3 and second.supporting == [2]  # question lines are not facts
    assert third.facts == [["sandra", "got", "the", "apple", "there"]]  # a new story starts at id 1
    assert third.answer == "apple,milk"  # list answers stay one class
    assert [ex.story for ex in examples] == [0, 0, 1]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("1 Mary moved.\nx John went.\n", 2, "expected 'ID text'"),
        ("1 Mary moved.\n3 John went.\n", 2, "line id 3 follows 1"),
        ("1 Mary moved.\n2 Where is Mary?\tbathroom\n", 2, "needs 'question<TAB>answer<TAB>supporting ids', got 2"),
        ("1 Mary moved.\n2 Where is Mary?\t\t1\n", 2, "empty answer"),
        ("1 Mary moved.\n2 Where is Mary?\tbathroom\t7\n", 2, "supporting fact id '7' is not a fact line"),
        ("1 Mary moved.\n2 Where is Mary?\tbathroom\t2\n", 2, "supporting fact id '2' is not a fact line"),
        ("1 Mary moved.\n2 Where is Mary?\tbathroom\t\n", 2, "no supporting fact ids after the answer"),
        ("1 Mary moved.\n2 Where is Mary?  bathroom  1\n", 2, "a question without its tab-separated answer"),
    ],
)
def test_broken_files_name_file_line_and_problem(tmp_path, text, line, message):
    path = tmp_path / "broken.txt"
    path.write_text(text)
    with pytest.raises(BabiFormatError, match=rf"broken.txt:{line}: .*{message}"):
        read_babi(path)


def _parsed(examples):
    return [(ex.facts, ex.question, ex.answer, ex.supporting, ex.story) for ex in examples]


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: text.encode("utf-8-sig"),  # byte-order mark
        lambda text: text.replace("\n", "\r\n").encode(),  # Windows line ends
        lambda text: text.replace("\n", "\r").encode(),  # old Mac line ends
        lambda text: b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode(),  # both
    ],
    ids=["bom", "crlf", "cr", "bom+crlf"],
)
def test_byte_order_mark_and_line_ends_read_like_plain_text(tmp_path, encode):
    plain, other = tmp_path / "plain.txt", tmp_path / "other.txt"
    plain.write_bytes(STORY.encode())
    other.write_bytes(encode(STORY))
    assert _parsed(read_babi(other)) == _parsed(read_babi(plain))


def test_crlf_files_report_the_right_line(tmp_path):
    path = tmp_path / "broken.txt"
    path.write_bytes(b"\xef\xbb\xbf1 Mary moved.\r\n\r\n2 Where is Mary?\tbathroom\t9\r\n")
    with pytest.raises(BabiFormatError, match=r"broken.txt:3: supporting fact id '9'"):
        read_babi(path)


@pytest.mark.parametrize(
    "data, line, byte, column",
    [
        (b"1 Mary moved to the caf\xe9.\n2 Where is Mary?\tcafe\t1\n", 1, "e9", 24),  # Latin-1, not UTF-8
        ("1 Mary moved.\r\n2 Mary went.\r\n".encode() + b"3 Where is Mary?\t\xff\t2\r\n", 3, "ff", 18),
    ],
)
def test_undecodable_bytes_name_file_line_and_byte(tmp_path, data, line, byte, column):
    path = tmp_path / "latin1.txt"
    path.write_bytes(data)
    with pytest.raises(BabiFormatError, match=rf"latin1.txt:{line}: not valid UTF-8 text \(byte 0x{byte} at column {column}:"):
        read_babi(path)


@pytest.mark.parametrize("text", ["\u00b2 Mary moved.\n", "1 Mary moved.\n2 Where is Mary?\tbathroom\t\u00b9\n"])
def test_non_ascii_digits_are_a_format_error(tmp_path, text):
    path = tmp_path / "digits.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BabiFormatError, match="digits.txt:"):
        read_babi(path)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(BabiFormatError, match="file not found"):
        read_babi(tmp_path / "nope.txt")
    (tmp_path / "empty.txt").write_text("1 Mary moved.\n")
    with pytest.raises(BabiFormatError, match="no questions found"):
        read_babi(tmp_path / "empty.txt")
    with pytest.raises(BabiFormatError, match="no file for task 4 train"):
        task_file(tmp_path, 4, "train")


def test_most_recent_candidate_is_the_last_candidate_word_of_the_newest_fact_naming_one(tmp_path):
    path = tmp_path / "qa1_single-supporting-fact_train.txt"
    path.write_text(STORY)
    first, second, third = read_babi(path, task=1)
    places = {"bathroom", "hallway", "kitchen"}
    assert most_recent_candidate(first, places) == "hallway"  # John's move, not Mary's: the latest
    assert most_recent_candidate(second, places) == "hallway"
    assert most_recent_candidate(first, {"bathroom"}) == "bathroom"
    assert most_recent_candidate(third, places) is None  # no fact names a place
    assert most_recent_candidate(second, {"mary", "hallway"}) == "hallway"  # the last word of the newest fact first


def test_tokenize():
    assert tokenize("Where is the football? ") == ["where", "is", "the", "football"]


@needs_data
@pytest.mark.parametrize("task", range(1, 21))
def test_every_real_task_loads(task):
    train = read_babi(task_file(BABI / "en", task, "train"), task)
    test = read_babi(task_file(BABI / "en", task, "test"), task)
    assert len(train) == 1000 and len(test) == 1000
    assert all(ex.supporting and max(ex.supporting) < len(ex.facts) for ex in train)
    if task in (8, 19):
        assert any("," in ex.answer for ex in train)


def _bigger_than(words: list[str]) -> tuple[str, str]:
    """(bigger, smaller) of a task-18 fact or question (``the X is bigger than the Y``,
    ``the X fits inside the Y``, ``is the X bigger than the Y``, ``does the X fit in the Y``)."""
    text = " ".join(words)
    for pattern, order in ((r"the (.+?) is bigger than the (.+)", 1), (r"is the (.+?) bigger than the (.+)", 1),
                           (r"the (.+?) fits inside the (.+)", -1), (r"does the (.+?) fit in the (.+)", -1)):
        if m := re.fullmatch(pattern, text):
            return m.groups()[::order]
    raise AssertionError(f"not a size statement: {text!r}")


@needs_data
@pytest.mark.parametrize("data_set", ["en", "en-10k"])
def test_size_reasoning_answers_follow_from_the_facts(data_set):
    """Task 18's every answer is what the story's size facts imply (a transitive chain one way
    and none the other), so a model that errs on its training stories (docs/results.md,
    babi-fit) underfits: the labels are not noisy. "box" and "box of chocolates" are two objects.
    The chocolate and the box of chocolates are never bigger than anything but each other, so a
    question naming one is settled without the story (docs/results.md, babi-question)."""
    for split in ("train", "test"):
        for ex in read_babi(task_file(BABI / data_set, 18, split), 18):
            smaller: dict[str, set[str]] = {}
            for fact in ex.facts:
                big, small = _bigger_than(fact)
                smaller.setdefault(big, set()).add(small)
                assert big not in ("chocolate", "box of chocolates") or (big, small) == ("box of chocolates", "chocolate")

            def chain(a: str, b: str) -> bool:
                seen, todo = set(), [a]
                while todo:
                    for x in smaller.get(todo.pop(), ()):
                        if x == b:
                            return True
                        if x not in seen:
                            seen.add(x)
                            todo.append(x)
                return False

            a, b = _bigger_than(ex.question)
            assert chain(a, b) != chain(b, a), (split, ex.question)  # decidable, never contradictory
            assert ex.answer == ("yes" if chain(a, b) else "no"), (split, ex.facts, ex.question, ex.answer)


def test_usual_answers_is_the_most_frequent_answer_per_task_and_question():
    def ask(question, answer, task=18):
        return BabiExample([], question.split(), answer, [], task)

    examples = [ask("is a bigger", "no"), ask("is a bigger", "yes"), ask("is a bigger", "no"),
                ask("is b bigger", "yes"), ask("is b bigger", "no"),  # a tie: the first in sorted order
                ask("is a bigger", "yes", task=17)]  # each task on its own
    assert usual_answers(examples) == {(18, ("is", "a", "bigger")): "no", (18, ("is", "b", "bigger")): "no",
                                       (17, ("is", "a", "bigger")): "yes"}


def test_seen_answers_match_a_question_only_on_the_same_story():
    def ask(facts, question, answer, task=17):
        return BabiExample([f.split() for f in facts], question.split(), answer, [], task)

    story = ["the square is left of the circle", "the circle is above the triangle"]
    training = [ask(story, "is the square left of the triangle", "yes")]
    seen = seen_answers(training)
    assert seen == {story_key(training[0]): "yes"}
    assert story_key(ask(list(story), "is the square left of the triangle", "no")) in seen  # same story, same text
    for other in (ask(story[::-1], "is the square left of the triangle", "yes"),  # facts in another order
                  ask(story[:1], "is the square left of the triangle", "yes"),  # a fact fewer
                  ask(story, "is the triangle left of the square", "yes"),  # another question
                  ask(["the square is left of the circle the circle", "is above the triangle"],
                      "is the square left of the triangle", "yes"),  # the same words, cut elsewhere
                  ask(story, "is the square left of the triangle", "yes", task=18)):  # another task
        assert story_key(other) not in seen
