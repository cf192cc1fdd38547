"""The bf16 CPU dropout: nn.Dropout's distribution, scaling and gradient."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from universal_transformer.modules.dropout import Dropout


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_bf16_dropout_keeps_one_minus_p_scaled_by_its_inverse(p):
    torch.manual_seed(0)
    drop = Dropout(p).train()
    x = torch.full((200_000,), 1.5, dtype=torch.bfloat16, requires_grad=True)
    y = drop(x)
    assert y.dtype == torch.bfloat16
    kept = y != 0
    rate = kept.float().mean().item()
    assert abs(rate - (1 - p)) < 5 * (p * (1 - p) / x.numel()) ** 0.5  # 5 standard deviations
    # every kept value is 1.5 / (1 - p), rounded once to bf16, as nn.Dropout gives
    expected = torch.tensor(1.5 / (1 - p), dtype=torch.bfloat16)
    assert torch.all(y[kept] == expected)
    y.float().sum().backward()
    assert torch.equal(x.grad != 0, kept) and torch.all(x.grad[kept] == torch.tensor(1 / (1 - p), dtype=torch.bfloat16))


def test_bf16_dropout_mean_is_unbiased_under_autocast_inputs():
    torch.manual_seed(1)
    x = torch.randn(400, 512, dtype=torch.bfloat16)
    y = Dropout(0.1).train()(x)
    torch.testing.assert_close(y.float().mean(), x.float().mean(), atol=0.01, rtol=0)
    torch.testing.assert_close((y.float() ** 2).mean(), (x.float() ** 2).mean() / 0.9, atol=0.02, rtol=0)


def test_identity_in_eval_and_float32_is_torch_dropout():
    x = torch.randn(64, 32)
    assert torch.equal(Dropout(0.3).eval()(x), x)
    torch.manual_seed(2)
    ours = Dropout(0.3).train()(x)
    torch.manual_seed(2)
    torch_dropout = nn.Dropout(0.3).train()(x)
    assert torch.equal(ours, torch_dropout)
