"""Perplexity of a stream and next-token log-probabilities, against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from universal_transformer import UTLanguageModel
from universal_transformer.evaluation.lm import next_token_log_probs, score_stream, stream_windows

from ..conftest import small_config
from .mock_lm import bigram_lm


@pytest.mark.parametrize("length, context, stride", [(20, 5, 2), (20, 5, 5), (7, 10, 3), (1, 4, 1), (33, 8, 3)])
def test_windows_score_every_position_once_with_enough_context(length, context, stride):
    windows = stream_windows(length, context, stride)
    scored = [i for _, end, first in windows for i in range(first, end)]
    assert scored == list(range(length))
    for k, (start, end, first) in enumerate(windows):
        assert 0 < end - start <= context and start <= first <= end
        if k:  # after the first window every scored target has context - stride tokens before it in its window
            assert first - start >= context - stride
    with pytest.raises(ValueError, match="stride"):
        stream_windows(10, 4, 5)


def test_perplexity_is_exp_of_the_mean_nll_of_every_target():
    torch.manual_seed(1)
    table = torch.randn(9, 9)
    stream = torch.randint(1, 9, (40,))
    score = score_stream(bigram_lm(table), stream, context_length=6, stride=4, batch_size=3)
    logp = np.log(np.exp(table.double().numpy()) / np.exp(table.double().numpy()).sum(1, keepdims=True))
    nll = [-logp[a, b] for a, b in zip(stream[:-1].tolist(), stream[1:].tolist())]
    assert score.tokens == 39
    assert score.mean_nll == pytest.approx(np.mean(nll), rel=1e-6)
    assert score.perplexity == pytest.approx(math.exp(np.mean(nll)), rel=1e-6)
    assert score.ponder.count == 0  # no halting statistics in this model


def test_stream_score_of_a_ut_equals_its_own_loss_per_window():
    torch.manual_seed(0)
    model = UTLanguageModel(small_config(act=True, act_bias_init=0.0)).eval()
    stream = torch.randint(1, 13, (30,))
    score = score_stream(model, stream, context_length=8, stride=8, batch_size=2)
    nll, times = 0.0, []
    with torch.no_grad():
        for start in range(0, 29, 8):
            tokens, labels = stream[start : min(start + 8, 29)], stream[start + 1 : min(start + 9, 30)]
            out = model(tokens[None], labels[None])
            nll += float(out.task_loss) * labels.numel()
            times.append(out.halting["decoder"].ponder_time.flatten())
    times = torch.cat(times).double()
    assert score.tokens == 29 and score.nll == pytest.approx(nll, rel=1e-5)
    assert times.std() > 0.01  # ACT varies per position, so the statistics below are not trivial
    assert score.ponder.mean == pytest.approx(times.mean().item(), rel=1e-5)
    assert score.ponder.std == pytest.approx(times.std().item(), rel=1e-4)


def test_prefix_log_probs_do_not_depend_on_batching_or_padding():
    torch.manual_seed(0)
    model = UTLanguageModel(small_config(act=True, act_bias_init=0.0)).eval()
    prefixes = [[2, 5, 7], [2], [2, 3, 4, 5, 6, 7, 8], [2, 9, 9, 9]]
    got = {}
    for index, log_probs in next_token_log_probs(model, prefixes, batch_size=3):
        got.update({j: log_probs[row] for row, j in enumerate(index)})
    assert sorted(got) == [0, 1, 2, 3]
    with torch.no_grad():
        for j, prefix in enumerate(prefixes):
            alone = model(torch.tensor([prefix])).logits[0, -1].log_softmax(-1)
            torch.testing.assert_close(got[j], alone, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="at least one token"):
        list(next_token_log_probs(model, [[]], batch_size=1))
