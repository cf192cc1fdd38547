"""Models actually learn: copy of length-8 digit strings to 100% sequence accuracy (greedy decoding)."""

from __future__ import annotations

import pytest
import torch

from universal_transformer import LSTMConfig, LSTMSeq2Seq, UniversalTransformer, UTConfig
from universal_transformer.data.algorithmic import VOCAB_SIZE, make_batch
from universal_transformer.training.loop import evaluate_generation, fit

MAX_STEPS = 1200


def _learn_copy(model: torch.nn.Module, lr: float = 3e-3) -> tuple[dict[str, float], int]:
    data = torch.Generator().manual_seed(1)
    test = [make_batch("copy", 200, torch.Generator().manual_seed(2), min_length=8, max_length=8)]
    scores: dict[str, float] = {}

    def check(step: int, loss: float) -> bool:
        nonlocal scores
        if step % 50 == 49:
            scores = evaluate_generation(model, test)
            model.train()
            return scores["sequence_accuracy"] == 1.0
        return False

    result = fit(
        model, lambda step: make_batch("copy", 32, data, min_length=8, max_length=8),
        steps=MAX_STEPS, lr=lr, warmup_steps=50, callback=check,
    )
    return scores, result.steps


def _ut(**overrides) -> UniversalTransformer:
    torch.manual_seed(0)
    config = UTConfig(
        vocab_size=VOCAB_SIZE, d_model=32, num_heads=4, d_ff=64, num_steps=2,
        dropout=0.0, embedding_dropout=0.0, **overrides,
    )
    return UniversalTransformer(config)


def test_ut_learns_copy():
    scores, steps = _learn_copy(_ut())
    assert scores["sequence_accuracy"] == 1.0, f"after {steps} steps: {scores}"


def test_ut_act_learns_copy_and_reports_ponder_time(capsys):
    scores, steps = _learn_copy(_ut(act=True, act_bias_init=-1.0))
    with capsys.disabled():
        print(
            f"\nUT+ACT copy: seq acc {scores['sequence_accuracy']:.3f} after {steps} steps; mean ponder time "
            f"encoder {scores['encoder_ponder_time']:.2f}, decoder {scores['decoder_ponder_time']:.2f}"
        )
    assert scores["sequence_accuracy"] == 1.0, f"after {steps} steps: {scores}"
    assert 1.0 <= scores["encoder_ponder_time"] <= 4.0 + 1.0  # max_steps = 2 * num_steps


@pytest.mark.slow
def test_lstm_learns_copy():
    torch.manual_seed(0)
    model = LSTMSeq2Seq(LSTMConfig(vocab_size=VOCAB_SIZE, d_model=64, num_layers=1, dropout=0.0))
    scores, steps = _learn_copy(model, lr=1e-2)
    assert scores["sequence_accuracy"] >= 0.95, f"after {steps} steps: {scores}"
