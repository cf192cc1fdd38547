"""Agreement ranking and LAMBADA scores with language models whose preferences the test controls."""

from __future__ import annotations

import math

import pytest
import torch

from universal_transformer.data.agreement import AgreementItem
from universal_transformer.data.lambada import LambadaPassage
from universal_transformer.data.text import PAD_ID, Vocabulary
from universal_transformer.evaluation.agreement import agreement_accuracy
from universal_transformer.evaluation.lambada import lambada_scores

from .mock_lm import MockLM, preference_lm

VOCAB = Vocabulary(["the", "keys", "key", "to", "cabinet", "cabinets", "are", "is", "on", "table", "seems", "seem"])


def plural_if_keys_seen(tokens: torch.Tensor) -> torch.Tensor:
    """Prefers 'are' once 'keys' has been read, 'is' before: number from the first plural noun, attractors fool it."""
    seen = (tokens == VOCAB.id("keys")).long().cumsum(1) > 0
    logits = torch.zeros(*tokens.shape, len(VOCAB))
    logits[..., VOCAB.id("are")] = seen.float()
    logits[..., VOCAB.id("is")] = (~seen).float()
    return logits


def item(prefix: str, correct: str, wrong: str, attractors: int, kind: str | None = None) -> AgreementItem:
    return AgreementItem(prefix.split(), correct, wrong, attractors, kind)


def test_agreement_accuracy_by_attractors_skips_unknown_verbs_and_counts_unknown_words():
    items = [
        item("the keys to the cabinet", "are", "is", 1, "original"),      # right
        item("the key to the cabinets", "is", "are", 1, "generated"),     # right
        item("the key to the keys", "is", "are", 1, "generated"),         # wrong: the attractor wins
        item("the key", "is", "are", 0, "generated"),                     # right
        item("the keys on the table", "seem", "seems", 0),                # a tie (0 = 0): wrong
        item("the dogs", "bark", "barks", 0),                             # 'bark' unknown: skipped
        item("the zebra", "is", "are", 0),                                # right, "zebra" read as <unk>
    ]
    model = MockLM(len(VOCAB), plural_if_keys_seen)
    result = agreement_accuracy(model, VOCAB, items, context_length=16, batch_size=4)
    assert result["accuracy"] == pytest.approx(4 / 6) and result["items"] == 6
    assert result["attractors0/accuracy"] == pytest.approx(2 / 3) and result["attractors0/items"] == 3
    assert result["attractors1/accuracy"] == pytest.approx(2 / 3) and result["attractors1/items"] == 3
    assert result["original/accuracy"] == 1.0 and result["generated/accuracy"] == pytest.approx(2 / 3)
    assert result["skipped_oov"] == 1
    assert result["prefix_unk_rate"] == pytest.approx(1 / 24)  # "zebra" of the 24 prefix words scored
    assert list(result)[:4] == ["accuracy", "items", "attractors0/accuracy", "attractors0/items"]


def test_agreement_reads_eos_then_at_most_context_length_tokens():
    model = MockLM(len(VOCAB), plural_if_keys_seen)
    long = item("the keys " + "to the cabinet " * 5, "are", "is", 0)
    assert agreement_accuracy(model, VOCAB, [long], context_length=100)["accuracy"] == 1.0
    # with 6 tokens of context 'keys' is out of sight: the model now prefers 'is'
    assert agreement_accuracy(model, VOCAB, [long], context_length=6)["accuracy"] == 0.0
    assert model.calls[-1] == (1, 6)


LAMBADA_VOCAB = Vocabulary(["the", "dog", "saw", "cat", "and", "mouse", "ran", "a"])


def passage(text: str) -> LambadaPassage:
    words = text.split()
    return LambadaPassage(words[:-1], words[-1])


def test_lambada_accuracy_perplexity_and_reading_comprehension():
    scores = torch.zeros(len(LAMBADA_VOCAB))
    for word, value in (("mouse", 5.0), ("cat", 4.0), ("dog", 3.0)):
        scores[LAMBADA_VOCAB.id(word)] = value
    scores[PAD_ID] = 9.0  # never a prediction, though it takes probability mass
    passages = [
        passage("the dog saw the cat and the cat"),    # LM: mouse (wrong); RC: cat among the context words (right)
        passage("a mouse ran and the mouse"),           # LM right, RC right
        passage("the cat saw a zebra and the zebra"),   # target not in the vocabulary: wrong, not in the perplexity
        passage("the cat ran and the dog"),             # LM wrong; RC impossible (dog not in context), picks cat
    ]
    model = preference_lm(scores)
    result = lambada_scores(model, LAMBADA_VOCAB, passages, context_length=32, batch_size=3)
    log_p = scores.double().log_softmax(-1)
    expected_nll = -(log_p[LAMBADA_VOCAB.id("cat")] + log_p[LAMBADA_VOCAB.id("mouse")] + log_p[LAMBADA_VOCAB.id("dog")]) / 3
    assert result["accuracy"] == pytest.approx(1 / 4)
    assert result["rc_accuracy"] == pytest.approx(2 / 4)
    assert result["perplexity"] == pytest.approx(math.exp(expected_nll.item()), rel=1e-5)
    assert result["oov_targets"] == 1 and result["passages"] == 4
    assert result["target_in_context"] == pytest.approx(3 / 4)
    assert "ponder_time" not in result  # no halting statistics in this model
    assert sorted(model.calls) == [(1, 6), (3, 8)]  # <eos> + context, longest first, in batches of 3
