"""Gradient checkpointing across steps changes memory, not results."""

from __future__ import annotations

import pytest
import torch

from universal_transformer import UniversalTransformer

from ..conftest import small_config


@pytest.mark.parametrize("overrides", [dict(), dict(act=True, act_bias_init=0.0), dict(transition="sepconv")])
def test_checkpointed_steps_give_identical_loss_and_gradients(overrides):
    plain = UniversalTransformer(small_config(num_steps=3, **overrides))
    ckpt = UniversalTransformer(small_config(num_steps=3, **overrides))
    ckpt.load_state_dict(plain.state_dict())
    ckpt.set_gradient_checkpointing(True)
    src, tgt = torch.randint(3, 13, (3, 7)), torch.randint(3, 13, (3, 6))
    losses = []
    for model in (plain, ckpt):
        out = model(src, tgt, tgt)
        out.loss.backward()
        losses.append(out.loss.detach())
    torch.testing.assert_close(losses[0], losses[1])
    for (name, a), b in zip(plain.named_parameters(), ckpt.parameters()):
        torch.testing.assert_close(a.grad, b.grad, msg=lambda m, name=name: f"{name}: {m}")
