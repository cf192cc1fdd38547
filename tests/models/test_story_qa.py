"""The bAbI fact encoder masks padding words itself, whatever row 0 of its embedding holds."""

from __future__ import annotations

import torch

from universal_transformer.models.story_qa import FactEncoder


def _expected(enc: FactEncoder, words: torch.Tensor) -> torch.Tensor:
    """``sqrt(d) * sum_j E[w_j] * M_j`` over the real words, in float64."""
    E, M = enc.embed.weight.double(), enc.position_mask.double()
    d = E.shape[1]
    sentences = words.reshape(-1, words.shape[-1]).tolist()
    out = [sum((E[w] * M[j] for j, w in enumerate(s) if w != 0), torch.zeros(d, dtype=torch.float64)) for s in sentences]
    return torch.stack(out).reshape(*words.shape[:-1], d) * d**0.5


def test_padding_words_do_not_count_even_with_a_nonzero_row_zero():
    enc = FactEncoder(vocab_size=12, d_model=8, words=5)
    with torch.no_grad():
        enc.position_mask.normal_()
    words = torch.tensor([[[4, 7, 0, 0, 0], [9, 0, 0, 0, 0]], [[0, 0, 0, 0, 0], [3, 5, 11, 2, 6]]])  # [B, F, W]
    before = enc(words)
    with torch.no_grad():
        enc.embed.weight[0].normal_()  # e.g. weights trained or loaded without padding_idx
    after = enc(words)
    assert torch.equal(after, before)
    torch.testing.assert_close(after.double(), _expected(enc, words))
    assert torch.equal(after[1, 0], torch.zeros(8))  # an empty fact slot is exactly zero


def test_no_gradient_reaches_the_padding_row():
    enc = FactEncoder(vocab_size=12, d_model=8, words=3)
    with torch.no_grad():
        enc.embed.weight[0].normal_()
    enc(torch.tensor([[5, 0, 0], [0, 0, 0]])).sum().backward()
    assert torch.equal(enc.embed.weight.grad[0], torch.zeros(8))
    assert enc.embed.weight.grad[5].abs().sum() > 0
