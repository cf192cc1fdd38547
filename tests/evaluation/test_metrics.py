"""Character and sequence accuracy against a plain per-position count."""

from __future__ import annotations

import pytest
import torch

from universal_transformer.evaluation.metrics import AccuracyCounts

PAD = 0


def _count(predictions: list[list[int]], labels: list[list[int]]) -> tuple[int, int, int]:
    """(right tokens, labelled tokens, right sequences): a prediction past its end counts as wrong."""
    right = total = sequences = 0
    for pred, lab in zip(predictions, labels):
        ok = True
        for i, want in enumerate(lab):
            if want == PAD:
                continue
            got = pred[i] if i < len(pred) else None
            total += 1
            right += got == want
            ok &= got == want
        sequences += ok
    return right, total, sequences


def test_hand_counted_batch():
    labels = torch.tensor([[5, 6, 2, 0], [7, 2, 0, 0], [4, 4, 4, 2]])
    predictions = torch.tensor([[5, 6, 2, 9], [7, 3, 2, 0], [4, 9, 4, 2]])  # row 0 right (9 is past the label)
    counts = AccuracyCounts()
    counts.update(predictions, labels, PAD)
    assert (counts.correct_tokens, counts.tokens, counts.correct_sequences, counts.sequences) == (3 + 1 + 3, 9, 1, 3)
    assert counts.char_accuracy == pytest.approx(7 / 9) and counts.sequence_accuracy == pytest.approx(1 / 3)
    assert counts.as_dict() == {"char_accuracy": counts.char_accuracy, "sequence_accuracy": counts.sequence_accuracy}


def test_early_stopped_predictions_are_padded_and_wrong_where_labelled():
    labels = torch.tensor([[5, 6, 2], [7, 2, 0]])
    counts = AccuracyCounts()
    counts.update(torch.tensor([[5], [7]]), labels, PAD)  # generation stopped after one token
    assert (counts.correct_tokens, counts.tokens, counts.correct_sequences) == (2, 5, 0)
    longer = AccuracyCounts()
    longer.update(torch.tensor([[5, 6, 2, 8, 8], [7, 2, 0, 8, 8]]), labels, PAD)  # extra tokens are cut
    assert longer.sequence_accuracy == 1.0 and longer.char_accuracy == 1.0


def test_padding_labels_are_ignored_whatever_is_predicted_there():
    labels = torch.tensor([[3, 2, 0, 0]])
    for junk in ([3, 2, 0, 0], [3, 2, 5, 7], [3, 2, 2, 2]):
        counts = AccuracyCounts()
        counts.update(torch.tensor([junk]), labels, PAD)
        assert counts.sequence_accuracy == 1.0 and counts.tokens == 2


def test_random_batches_accumulate_like_the_direct_count():
    gen = torch.Generator().manual_seed(0)
    counts = AccuracyCounts()
    expected = [0, 0, 0, 0]
    for _ in range(20):
        b, length = int(torch.randint(1, 6, (1,), generator=gen)), int(torch.randint(1, 8, (1,), generator=gen))
        labels = torch.randint(1, 4, (b, length), generator=gen)
        ends = torch.randint(1, length + 1, (b,), generator=gen)
        labels[torch.arange(length)[None] >= ends[:, None]] = PAD  # right-padded rows
        # mostly right, sometimes wrong, sometimes shorter or longer than the labels
        predictions = torch.where(torch.rand(b, length, generator=gen) < 0.85, labels, torch.randint(1, 4, (b, length), generator=gen))
        cut = int(torch.randint(0, length + 3, (1,), generator=gen))
        predictions = torch.cat((predictions, torch.randint(1, 4, (b, 2), generator=gen)), dim=1)[:, :cut]
        counts.update(predictions, labels, PAD)
        right, total, sequences = _count(predictions.tolist(), labels.tolist())
        expected = [expected[0] + right, expected[1] + total, expected[2] + sequences, expected[3] + b]
    assert [counts.correct_tokens, counts.tokens, counts.correct_sequences, counts.sequences] == expected
    assert 0 < expected[2] < expected[3]  # the batches had both right and wrong sequences


def test_empty_counts_read_zero():
    assert AccuracyCounts().char_accuracy == 0.0 and AccuracyCounts().sequence_accuracy == 0.0



class _Fixed(torch.nn.Module):
    """Teacher-forced logits that put the argmax on given tokens."""

    def __init__(self, predicted: torch.Tensor, vocab: int = 8) -> None:
        super().__init__()
        self.predicted, self.vocab = predicted, vocab
        self.config = type("Config", (), {"act": False})()
        self.dummy = torch.nn.Parameter(torch.zeros(()))

    def forward(self, src, tgt_in):
        return type("Output", (), {"logits": torch.nn.functional.one_hot(self.predicted, self.vocab).float(),
                                   "halting": {}})()


def test_teacher_forced_ends_and_tenths_against_a_hand_count():
    from universal_transformer.data.batch import Seq2SeqBatch
    from universal_transformer.evaluation.metrics import teacher_forced_accuracy

    pad, eos = 0, 2
    labels = torch.tensor([[5, 6, 7, 5, 6, 7, 5, 6, 7, eos],   # all right
                           [5, 6, 7, 5, 6, 7, 5, 6, 7, eos],   # digits right, runs on past the end
                           [5, 6, 7, 5, 6, 7, 5, 6, 7, eos],   # ends early at label 3, then right
                           [5, 6, 7, 5, eos, pad, pad, pad, pad, pad]])  # first digit wrong
    predicted = labels.clone()
    predicted[1, 9] = 5
    predicted[2, 3] = eos
    predicted[3, 0] = 6
    predicted[3, 5:] = 4  # padding: whatever is predicted there does not count
    batch = Seq2SeqBatch(src=torch.ones(4, 3, dtype=torch.long), tgt_in=torch.ones(4, 10, dtype=torch.long),
                         labels=labels, ignore_index=pad)
    result = teacher_forced_accuracy(_Fixed(predicted), [batch], pad, eos_id=eos)
    assert result["end_accuracy"] == 3 / 4
    assert result["sequence_accuracy_before_end"] == 2 / 4  # rows 0 and 1
    assert result["sequence_accuracy"] == 1 / 4
    assert result["early_eos_rate"] == 1 / (9 + 9 + 9 + 4)
    # tenths: rows of ten labels put label i in tenth i; the five labels of row 3 in tenths 0, 2, 4, 6, 8
    wrong = [1, 0, 0, 1, 0, 0, 0, 0, 0, 1]  # row 3's label 0, row 2's label 3, row 1's end
    total = [4, 3, 4, 3, 4, 3, 4, 3, 4, 3]
    assert result["error_rate_by_tenth"] == pytest.approx([w / t for w, t in zip(wrong, total)])


class _Pondering(torch.nn.Module):
    """An ACT model whose every real source position ponders ``times[batch size]`` steps and
    every real target position twice as long."""

    def __init__(self, times: dict[int, float]) -> None:
        super().__init__()
        self.times = times
        self.config = type("Config", (), {"act": True})()
        self.dummy = torch.nn.Parameter(torch.zeros(()))

    def forward(self, src, tgt_in):
        from universal_transformer.modules.recurrence import HaltingStats

        def stats(tokens, time):
            return HaltingStats(torch.full(tokens.shape, time), torch.zeros(tokens.shape), padding=tokens == 0)

        time = self.times[src.shape[0]]
        return type("Output", (), {"logits": torch.nn.functional.one_hot(tgt_in, 8).float(),
                                   "halting": {"encoder": stats(src, time), "decoder": stats(tgt_in, 2 * time)}})()


def test_ponder_time_is_the_mean_over_positions_not_over_batches():
    """A set of one batch of 1 source position pondering 5 steps and one of 3 positions
    pondering 1: the mean over its positions is 2 (the mean of the batches' means was 3)."""
    from universal_transformer.data.batch import Seq2SeqBatch
    from universal_transformer.evaluation.metrics import teacher_forced_accuracy

    def batch(src, tgt):
        src, tgt = torch.tensor(src), torch.tensor(tgt)
        return Seq2SeqBatch(src=src, tgt_in=tgt, labels=tgt, ignore_index=0)

    batches = [batch([[3, 0, 0]], [[4, 0]]), batch([[3, 4, 5], [0, 0, 0]], [[4, 5], [6, 0]])]
    result = teacher_forced_accuracy(_Pondering({1: 5.0, 2: 1.0}), batches, 0, ponder=True)
    assert result["encoder_ponder_time"] == pytest.approx((5 + 3 * 1) / 4)
    assert result["decoder_ponder_time"] == pytest.approx((10 + 3 * 2) / 4)
