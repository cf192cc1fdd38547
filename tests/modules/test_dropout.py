"""The CPU dropout (masks from 16-bit lanes of 64-bit draws): nn.Dropout's distribution,
scaling and gradient, independent elements, and exact reproduction from a seed."""

from __future__ import annotations

import pytest
import torch

from universal_transformer.modules.dropout import Dropout, keep_mask


def _within(rate: float, prob: float, n: int, sds: float = 5.0) -> bool:
    return abs(rate - prob) < sds * (prob * (1 - prob) / n) ** 0.5


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_keeps_one_minus_p_scaled_by_its_inverse(p, dtype):
    torch.manual_seed(0)
    drop = Dropout(p).train()
    x = torch.full((200_001,), 1.5, dtype=dtype, requires_grad=True)  # not a multiple of 4 lanes
    y = drop(x)
    assert y.dtype == dtype and y.shape == x.shape
    kept = y != 0
    assert _within(kept.double().mean().item(), 1 - p, x.numel())
    # every kept value is 1.5 / (1 - p'), p' = p rounded to 2^-16: in float32 as nn.Dropout
    # computes it (times the scale rounded to float32), in bf16 rounded once
    q = round(p * 65536) / 65536
    scale = torch.tensor(1 / (1 - q), dtype=dtype)
    expected = 1.5 * scale if dtype == torch.float32 else torch.tensor(1.5 / (1 - q), dtype=dtype)
    assert torch.all(y[kept] == expected)
    y.float().sum().backward()
    assert torch.equal(x.grad != 0, kept) and torch.all(x.grad[kept] == scale)


def test_neighbouring_elements_are_independent():
    """Four elements share one 64-bit draw: pairs at every offset within and across draws
    are kept together with probability (1 - p)^2, not more or less."""
    torch.manual_seed(3)
    p = 0.3
    keep, kept_prob = keep_mask((400_000,), p)
    assert kept_prob == pytest.approx(1 - p, abs=1e-5)
    assert _within(keep.double().mean().item(), 1 - p, keep.numel())
    for offset in (1, 2, 3, 4, 5):
        both = (keep[:-offset] & keep[offset:]).double().mean().item()
        assert _within(both, (1 - p) ** 2, keep.numel() - offset), offset
    by_lane = keep.view(-1, 4).double().mean(0)  # no lane of the draw is biased
    assert all(_within(rate, 1 - p, keep.numel() // 4) for rate in by_lane.tolist())


def test_mean_and_second_moment_are_those_of_dropout():
    torch.manual_seed(1)
    x = torch.randn(400, 512)
    y = Dropout(0.1).train()(x)
    torch.testing.assert_close(y.mean(), x.mean(), atol=0.01, rtol=0)
    torch.testing.assert_close((y ** 2).mean(), (x ** 2).mean() / 0.9, atol=0.02, rtol=0)


def test_seeded_masks_repeat_and_successive_masks_differ():
    x = torch.ones(8, 300)
    torch.manual_seed(5)
    a, b = Dropout(0.2).train()(x), Dropout(0.2).train()(x)
    torch.manual_seed(5)
    assert torch.equal(Dropout(0.2).train()(x), a)
    assert not torch.equal(a, b)


def test_identity_in_eval_inplace_and_extremes():
    x = torch.randn(64, 32)
    assert torch.equal(Dropout(0.3).eval()(x), x)
    assert torch.equal(Dropout(1.0).train()(x), torch.zeros_like(x))
    assert torch.equal(Dropout(1e-7).train()(x), x)  # rounds to 0 at 2^-16: nothing dropped
    torch.manual_seed(4)
    expected = Dropout(0.3).train()(x)
    torch.manual_seed(4)
    y = x.clone()
    assert Dropout(0.3, inplace=True).train()(y) is y and torch.equal(y, expected)
