"""The transitions: the registry against the config, and ``sepconv_t2t`` (tensor2tensor's sepconv-ReLU-sepconv layout, causal and incremental)."""

from __future__ import annotations

import typing

import pytest
import torch

from universal_transformer import UTConfig
from universal_transformer.config import _field_types
from universal_transformer.models import UniversalTransformer
from universal_transformer.modules import SepConvT2TTransition, make_transition
from universal_transformer.modules.transition import TRANSITIONS

from ..conftest import small_config

D, D_FF = 8, 12


def _p(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(torch.float64)


def _ref_depthwise(x: torch.Tensor, weight: torch.Tensor, causal: bool) -> torch.Tensor:
    """Per-channel convolution over positions ``x [B, L, C]`` with zeros outside the sequence."""
    kernel = weight.shape[-1]
    w = _p(weight)[:, 0, :]  # [C, kernel]
    left = kernel - 1 if causal else kernel // 2
    out = torch.zeros_like(x)
    for i in range(x.shape[1]):
        for m in range(kernel):
            src = i + m - left
            if 0 <= src < x.shape[1]:
                out[:, i, :] += w[:, m] * x[:, src, :]
    return out


def ref_sepconv_t2t(x: torch.Tensor, tr: SepConvT2TTransition, causal: bool, padding=None) -> torch.Tensor:
    """sepconv(3) -> ReLU -> sepconv(5), padding zeroed before each convolution, in float64."""
    keep = torch.ones(x.shape[:2], dtype=torch.float64) if padding is None else (~padding).to(torch.float64)
    h = _ref_depthwise(x * keep[..., None], tr.depthwise1.weight, causal)
    h = torch.relu(h @ _p(tr.pointwise1.weight).T + _p(tr.pointwise1.bias))
    h = _ref_depthwise(h * keep[..., None], tr.depthwise2.weight, causal)
    return h @ _p(tr.pointwise2.weight).T + _p(tr.pointwise2.bias)


def _transition(causal: bool, seed: int = 0) -> SepConvT2TTransition:
    torch.manual_seed(seed)
    tr = make_transition("sepconv_t2t", D, D_FF, kernel_size=7, dropout=0.0, causal=causal).eval()
    assert isinstance(tr, SepConvT2TTransition)
    assert (tr.depthwise1.kernel_size, tr.depthwise2.kernel_size) == ((3,), (5,))  # conv_kernel_size is not used
    assert (tr.depthwise1.in_channels, tr.depthwise2.in_channels) == (D, D_FF)  # the second runs on the hidden layer
    return tr


@pytest.mark.parametrize("causal", [False, True])
def test_matches_plain_float64_computation(causal):
    tr = _transition(causal).double()
    x = torch.randn(2, 9, D, dtype=torch.float64)
    padding = torch.tensor([[False] * 9, [False] * 6 + [True] * 3])
    with torch.no_grad():
        torch.testing.assert_close(tr(x), ref_sepconv_t2t(x, tr, causal), atol=1e-12, rtol=0)
        torch.testing.assert_close(tr(x, padding), ref_sepconv_t2t(x, tr, causal, padding), atol=1e-12, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_receptive_field(causal):
    """Each output sees 1 + 2 positions either side (non-causal) or 2 + 4 to the left (causal), no more."""
    tr = _transition(causal, seed=1)
    x = torch.randn(1, 15, D)
    at = 7
    seen = set()
    for other in range(15):
        x2 = x.clone()
        x2[0, other] += 1.0
        with torch.no_grad():
            change = (tr(x2)[0, at] - tr(x)[0, at]).abs().max()
        if change > 0:
            seen.add(other - at)
    assert seen == (set(range(-6, 1)) if causal else set(range(-3, 4)))


def test_causal_no_position_sees_a_later_one():
    tr = _transition(True, seed=2)
    x = torch.randn(2, 10, D)
    for later in range(1, 10):
        x2 = x.clone()
        x2[:, later:] = torch.randn(2, 10 - later, D)
        with torch.no_grad():
            assert torch.equal(tr(x)[:, :later], tr(x2)[:, :later])


@pytest.mark.parametrize("chunks", [[1] * 8, [3, 1, 4], [8]])
def test_incremental_equals_full(chunks):
    tr = _transition(True, seed=3)
    x = torch.randn(2, 8, D)
    state: dict = {}
    pieces, start = [], 0
    with torch.no_grad():
        full = tr(x)
        for n in chunks:
            pieces.append(tr(x[:, start : start + n], state=state))
            start += n
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-6, rtol=0)


def test_padding_never_reaches_real_positions():
    tr = _transition(False, seed=4)
    x = torch.randn(1, 8, D)
    padding = torch.tensor([[False] * 5 + [True] * 3])
    junk = x.clone()
    junk[0, 5:] = 100 * torch.randn(3, D)
    with torch.no_grad():
        assert torch.equal(tr(x, padding)[0, :5], tr(junk, padding)[0, :5])


@pytest.mark.parametrize("act", [False, True])
def test_model_decodes_incrementally_as_teacher_forced(act):
    """The whole encoder-decoder with ``transition="sepconv_t2t"``: cached decoding == one full pass."""
    config = small_config(transition="sepconv_t2t", num_steps=2, act=act, act_bias_init=0.0)
    model = UniversalTransformer(config).eval()
    src = torch.randint(3, 13, (2, 7))
    tgt_in = torch.cat((torch.full((2, 1), model.config.bos_id), torch.randint(3, 13, (2, 5))), dim=1)
    with torch.no_grad():
        full = model(src, tgt_in).logits
        state, first = model.prefill(src)
        steps = [first] + [model.decode_step(tgt_in[:, i : i + 1], state)[:, -1] for i in range(1, tgt_in.shape[1])]
    torch.testing.assert_close(torch.stack(steps, dim=1), full, atol=1e-5, rtol=0)


def test_unknown_transition_names_the_choices():
    with pytest.raises(ValueError, match="unknown transition 'conv'; use one of 'fc', 'sepconv', 'sepconv_t2t'"):
        make_transition("conv", D, D_FF, kernel_size=3, dropout=0.0, causal=False)


def test_every_transition_the_config_names_is_built_and_no_other():
    """The names live in two places (the config's Literal, which validates, and the builders):
    adding a transition to one and not the other fails here, not at a user's run."""
    named = set(typing.get_args(_field_types(UTConfig)["transition"]))
    assert named == set(TRANSITIONS)
    for kind in named:
        module = make_transition(kind, 8, 16, kernel_size=3, dropout=0.0, causal=False)
        assert module(torch.randn(2, 5, 8)).shape == (2, 5, 8) and isinstance(module.pointwise, bool)
