"""The UT step against the paper's equations (Section 2.1), written out plainly in float64.

The expected values never call the package's layers: they only read its parameters
(cast to float64) and recompute the paper's equations with plain tensor ops.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from universal_transformer import UTConfig
from universal_transformer.modules import KVCache, MultiHeadAttention, RecurrentStack, SepConvTransition
from universal_transformer.modules.embedding import sinusoid

D, HEADS, D_FF = 16, 4, 32
ATOL = 1e-5


def _config(**overrides) -> UTConfig:
    base = dict(
        vocab_size=13, d_model=D, num_heads=HEADS, d_ff=D_FF, num_steps=1,
        dropout=0.0, attention_dropout=0.0, embedding_dropout=0.0,
    )
    base.update(overrides)
    return UTConfig(**base)


# -- the plain float64 reference -------------------------------------------------------


def _p(t: torch.Tensor) -> torch.Tensor:
    """A parameter as a detached float64 tensor."""
    return t.detach().to(torch.float64)


def ref_coordinates(length: int, t: int, d: int) -> torch.Tensor:
    """Eq. 6-7: P^t[i, 2j] = sin(i/10000^(2j/d)) + sin(t/10000^(2j/d)), cos for 2j+1."""
    P = torch.zeros(length, d, dtype=torch.float64)
    for i in range(length):
        for j in range(d // 2):
            denom = 10000.0 ** (2 * j / d)
            P[i, 2 * j] = math.sin(i / denom) + math.sin(t / denom)
            P[i, 2 * j + 1] = math.cos(i / denom) + math.cos(t / denom)
    return P


def ref_layer_norm(x: torch.Tensor, ln) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * _p(ln.weight) + _p(ln.bias)


def ref_attention(xq: torch.Tensor, xkv: torch.Tensor, attn, allowed: torch.Tensor) -> torch.Tensor:
    """Multi-head attention; ``allowed [B, Lq, Lk]`` True where a query may see a key."""
    d = xq.shape[-1]
    k = attn.num_heads
    dh = d // k
    Wq, bq = _p(attn.q_proj.weight), _p(attn.q_proj.bias)
    Wkv, bkv = _p(attn.kv_proj.weight), _p(attn.kv_proj.bias)
    Wk, bk = Wkv[:d], bkv[:d]  # rows 0..d-1: keys
    Wv, bv = Wkv[d:], bkv[d:]  # rows d..2d-1: values
    Wo, bo = _p(attn.out_proj.weight), _p(attn.out_proj.bias)
    Q = xq @ Wq.T + bq
    K = xkv @ Wk.T + bk
    V = xkv @ Wv.T + bv
    heads = []
    for h in range(k):
        cols = slice(h * dh, (h + 1) * dh)
        scores = Q[..., cols] @ K[..., cols].transpose(-1, -2) / math.sqrt(d / k)
        scores = scores.masked_fill(~allowed, float("-inf"))
        heads.append(torch.softmax(scores, dim=-1) @ V[..., cols])
    return torch.cat(heads, dim=-1) @ Wo.T + bo


def ref_fc(x: torch.Tensor, tr) -> torch.Tensor:
    hidden = torch.relu(x @ _p(tr.linear1.weight).T + _p(tr.linear1.bias))
    return hidden @ _p(tr.linear2.weight).T + _p(tr.linear2.bias)


def ref_sepconv(x: torch.Tensor, tr, kernel: int, causal: bool, padding=None) -> torch.Tensor:
    """Depthwise conv over positions (per channel), then Linear -> ReLU -> Linear."""
    if padding is not None:
        x = x * (~padding)[..., None].to(x.dtype)
    B, L, d = x.shape
    W = _p(tr.depthwise.weight)[:, 0, :]  # [d, kernel]
    left = kernel - 1 if causal else kernel // 2
    conv = torch.zeros_like(x)
    for i in range(L):
        for m in range(kernel):
            src = i + m - left
            if 0 <= src < L:
                conv[:, i, :] += W[:, m] * x[:, src, :]
    return ref_fc(conv, tr)


def _allowed(B: int, Lq: int, Lk: int, key_padding=None, causal=False) -> torch.Tensor:
    allowed = torch.ones(B, Lq, Lk, dtype=torch.bool)
    if key_padding is not None:
        allowed &= ~key_padding[:, None, :]
    if causal:
        allowed &= torch.ones(Lq, Lk, dtype=torch.bool).tril()
    return allowed


def ref_encoder_step(H, block, t, padding):
    B, L, d = H.shape
    X = H + ref_coordinates(L, t, d)
    allowed = _allowed(B, L, L, padding)
    A = ref_layer_norm(X + ref_attention(X, X, block.self_attn, allowed), block.norm_self)
    return ref_layer_norm(A + ref_fc(A, block.transition), block.norm_transition)


# -- tests ------------------------------------------------------------------------------


def _encoder_inputs(seed: int):
    torch.manual_seed(seed)
    h = torch.randn(2, 5, D)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    return h, padding


def test_encoder_one_step_matches_equations():
    h, padding = _encoder_inputs(1)
    torch.manual_seed(2)
    stack = RecurrentStack(_config(num_steps=1), causal=False, cross_attention=False).eval()
    block = stack.blocks[0]
    assert block.cross_attn is None and not block.pre_norm
    with torch.no_grad():
        got = stack(h, padding=padding).hidden
    expected = ref_encoder_step(h.double(), block, 1, padding)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), expected, atol=ATOL, rtol=0)


def test_encoder_two_steps_apply_the_same_block_with_p1_then_p2():
    h, padding = _encoder_inputs(3)
    torch.manual_seed(4)
    stack = RecurrentStack(_config(num_steps=2), causal=False, cross_attention=False).eval()
    assert len(stack.blocks) == 1
    block = stack.blocks[0]
    with torch.no_grad():
        got = stack(h, padding=padding).hidden
    H1 = ref_encoder_step(h.double(), block, 1, padding)
    expected = ref_encoder_step(H1, block, 2, padding)
    torch.testing.assert_close(got.double(), expected, atol=ATOL, rtol=0)
    # The timestep signal matters: P^1 twice would be a different function.
    wrong = ref_encoder_step(H1, block, 1, padding)
    assert (wrong - expected).abs().max() > 1e-3


def test_encoder_padded_keys_get_no_attention():
    """Changing the state at padding positions changes no real position's output."""
    h, padding = _encoder_inputs(5)
    torch.manual_seed(6)
    stack = RecurrentStack(_config(num_steps=2), causal=False, cross_attention=False).eval()
    h2 = h.clone()
    h2[1, 3:] = 100 * torch.randn(2, D)
    with torch.no_grad():
        a = stack(h, padding=padding).hidden
        b = stack(h2, padding=padding).hidden
    real = ~padding
    torch.testing.assert_close(a[real], b[real], atol=1e-6, rtol=0)
    # Without the padding mask the same change does leak into real positions.
    with torch.no_grad():
        c = stack(h, padding=None).hidden
        e = stack(h2, padding=None).hidden
    assert (c[1, :3] - e[1, :3]).abs().max() > 1e-3


def test_decoder_one_step_matches_equations():
    torch.manual_seed(7)
    B, L, M = 2, 5, 4
    h = torch.randn(B, L, D)
    memory = torch.randn(B, M, D)
    padding = torch.tensor([[False] * 5, [False, False, False, False, True]])
    memory_padding = torch.tensor([[False] * 4, [False, False, True, True]])
    torch.manual_seed(8)
    stack = RecurrentStack(_config(num_steps=1), causal=True, cross_attention=True).eval()
    block = stack.blocks[0]
    with torch.no_grad():
        got = stack(h, padding=padding, memory=memory, memory_padding=memory_padding).hidden

    H = h.double()
    X = H + ref_coordinates(L, 1, D)
    self_allowed = _allowed(B, L, L, padding, causal=True)
    A = ref_layer_norm(X + ref_attention(X, X, block.self_attn, self_allowed), block.norm_self)
    cross_allowed = _allowed(B, L, M, memory_padding)
    C = ref_layer_norm(A + ref_attention(A, memory.double(), block.cross_attn, cross_allowed), block.norm_cross)
    expected = ref_layer_norm(C + ref_fc(C, block.transition), block.norm_transition)
    torch.testing.assert_close(got.double(), expected, atol=ATOL, rtol=0)


def test_decoder_is_causal():
    torch.manual_seed(9)
    h, memory = torch.randn(1, 6, D), torch.randn(1, 3, D)
    stack = RecurrentStack(_config(num_steps=2), causal=True, cross_attention=True).eval()
    h2 = h.clone()
    h2[0, 4:] += torch.randn(2, D)
    with torch.no_grad():
        a = stack(h, memory=memory).hidden
        b = stack(h2, memory=memory).hidden
    torch.testing.assert_close(a[0, :4], b[0, :4], atol=1e-6, rtol=0)
    assert (a[0, 4:] - b[0, 4:]).abs().max() > 1e-3


def test_pre_norm_one_step_then_final_norm():
    h, padding = _encoder_inputs(10)
    torch.manual_seed(11)
    stack = RecurrentStack(_config(num_steps=1, norm="pre"), causal=False, cross_attention=False).eval()
    block = stack.blocks[0]
    assert block.pre_norm and stack.final_norm is not None
    with torch.no_grad():
        got = stack(h, padding=padding).hidden

    B, L, _ = h.shape
    X = h.double() + ref_coordinates(L, 1, D)
    N = ref_layer_norm(X, block.norm_self)
    A = X + ref_attention(N, N, block.self_attn, _allowed(B, L, L, padding))
    Hn = A + ref_fc(ref_layer_norm(A, block.norm_transition), block.transition)
    expected = ref_layer_norm(Hn, stack.final_norm)
    torch.testing.assert_close(got.double(), expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_sepconv_matches_plain_computation(causal):
    torch.manual_seed(12)
    tr = SepConvTransition(D, D_FF, kernel_size=3, causal=causal).eval()
    x = torch.randn(2, 6, D)
    padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    with torch.no_grad():
        got = tr(x, padding)
        got_nopad = tr(x)
    expected = ref_sepconv(x.double(), tr, 3, causal, padding)
    torch.testing.assert_close(got.double(), expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(got_nopad.double(), ref_sepconv(x.double(), tr, 3, causal), atol=ATOL, rtol=0)
    # The two paddings of the convolution really differ (centered vs left).
    other = ref_sepconv(x.double(), tr, 3, not causal)
    assert (other - got_nopad.double()).abs().max() > 1e-3


def test_sepconv_causal_does_not_see_the_future():
    torch.manual_seed(13)
    tr = SepConvTransition(D, D_FF, kernel_size=3, causal=True).eval()
    x = torch.randn(1, 7, D)
    for later in range(1, 7):
        x2 = x.clone()
        x2[0, later] += torch.randn(D)
        with torch.no_grad():
            a, b = tr(x), tr(x2)
        torch.testing.assert_close(a[0, :later], b[0, :later], atol=0, rtol=0)
        assert (a[0, later] - b[0, later]).abs().max() > 1e-4


def test_sinusoid_matches_numpy_formula():
    d = 12
    index = torch.tensor([[0, 1, 2, 7], [50, 123, 999, 5000]])
    got = sinusoid(index, d)
    assert got.shape == (2, 4, d) and got.dtype == torch.get_default_dtype()
    i = index.numpy().astype(np.float64)[..., None]
    j = np.arange(d // 2, dtype=np.float64)
    angle = i / np.power(10000.0, 2 * j / d)
    expected = np.empty((2, 4, d))
    expected[..., 0::2] = np.sin(angle)
    expected[..., 1::2] = np.cos(angle)
    np.testing.assert_allclose(got.double().numpy(), expected, atol=1e-6, rtol=0)
    # a scalar timestep gives one vector
    np.testing.assert_allclose(sinusoid(torch.tensor(3.0), d).double().numpy(), np.stack(
        [np.sin(3.0 / np.power(10000.0, 2 * j / d)), np.cos(3.0 / np.power(10000.0, 2 * j / d))], -1
    ).reshape(-1), atol=1e-6, rtol=0)


def test_attention_weights_rows_sum_to_one_and_match_sdpa():
    torch.manual_seed(14)
    attn = MultiHeadAttention(D, HEADS).eval()
    q, x = torch.randn(2, 3, D), torch.randn(2, 5, D)
    key_padding = torch.tensor([[False] * 5, [False, False, True, False, True]])
    mask = (~key_padding)[:, None, None, :]
    kv = attn.project_kv(x)
    with torch.no_grad():
        out_w, weights = attn(q, kv, mask, need_weights=True)
        out_sdpa, none = attn(q, kv, mask, need_weights=False)
    assert none is None
    assert weights.shape == (2, HEADS, 3, 5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, HEADS, 3), atol=1e-6, rtol=0)
    assert torch.all(weights[1, :, :, 2] == 0) and torch.all(weights[1, :, :, 4] == 0)
    assert torch.all(weights[1, :, :, [0, 1, 3]] > 0)
    torch.testing.assert_close(out_w, out_sdpa, atol=1e-6, rtol=0)
    expected = ref_attention(q.double(), x.double(), attn, _allowed(2, 3, 5, key_padding))
    torch.testing.assert_close(out_w.double(), expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("autocast", [False, True])
def test_bf16_attention_on_the_cpu_follows_the_equations(autocast):
    """In bf16 on the CPU attention is three plain operations (the fused kernel is slower
    there), the softmax accumulating in float32: equal to the float64 equations within bf16's precision,
    with the mask obeyed and gradients reaching every input."""
    torch.manual_seed(16)
    attn = MultiHeadAttention(D, HEADS).train()  # dropout 0: train mode, so gradients flow as in training
    q, x = torch.randn(2, 3, D), torch.randn(2, 5, D)
    key_padding = torch.tensor([[False] * 5, [False, False, True, False, True]])
    mask = (~key_padding)[:, None, None, :]
    expected = ref_attention(q.double(), x.double(), attn, _allowed(2, 3, 5, key_padding))
    if autocast:
        q.requires_grad_(True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, _ = attn(q, attn.project_kv(x), mask)
    else:
        attn = attn.to(torch.bfloat16)
        q = q.to(torch.bfloat16).requires_grad_(True)
        out, _ = attn(q, attn.project_kv(x.to(torch.bfloat16)), mask)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), expected, atol=0.05, rtol=0.02)
    out.float().square().sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all() and q.grad.abs().sum() > 0
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in attn.parameters())


def test_bf16_attention_row_without_keys_is_zero_like_the_fused_kernel():
    torch.manual_seed(17)
    attn = MultiHeadAttention(D, HEADS).eval()
    q, x = torch.randn(2, 3, D), torch.randn(2, 5, D)
    mask = torch.ones(2, 1, 3, 5, dtype=torch.bool)
    mask[1, :, 2] = False  # query 2 of row 1 may see no key
    with torch.no_grad():
        fused, _ = attn(q, attn.project_kv(x), mask)  # float32: scaled_dot_product_attention
        with torch.autocast("cpu", dtype=torch.bfloat16):
            plain, weights = attn(q, attn.project_kv(x), mask, need_weights=True)
    assert torch.isfinite(plain).all() and torch.all(weights[1, :, 2] == 0)
    torch.testing.assert_close(plain.float(), fused, atol=0.05, rtol=0.02)


def test_kv_cache_growth_equals_concatenation():
    torch.manual_seed(15)
    cache = KVCache()
    keys, values = [], []
    sizes = [1, 3, 2, 1, 5, 4, 1, 1, 7, 2, 9, 1, 3, 6]  # total 46 > initial capacity 16
    for n in sizes:
        k, v = torch.randn(2, HEADS, n, 4), torch.randn(2, HEADS, n, 4)
        keys.append(k)
        values.append(v)
        got_k, got_v = cache.append(k, v)
        assert torch.equal(got_k, torch.cat(keys, dim=2))
        assert torch.equal(got_v, torch.cat(values, dim=2))
    assert cache.length == sum(sizes)
    assert cache.keys.shape[2] >= sum(sizes) > 16


@pytest.mark.parametrize(
    "index",
    [
        [0, 1, 2, 3, 4, 5],  # identity
        [0, 1, 2, 3, 5, 4],  # a swap
        [0, 0, 2, 3, 4, 4],  # two beams copy their neighbour
        [3, 3, 3, 0, 0, 0],
        [5, 4, 3, 2, 1, 0],
        [2, 0],  # fewer rows (finished sentences leave)
        [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5],  # more rows (expansion to beams)
    ],
)
def test_kv_cache_reorder_equals_row_selection(index):
    """Reordering keeps exactly rows ``index`` of what was cached, and appending afterwards
    goes on from there (into buffers with spare room)."""
    torch.manual_seed(16)
    cache, index = KVCache(), torch.tensor(index)
    for n in (3, 5, 11):  # 19 slots: past the first capacity, so the buffers have spare room
        k, v = torch.randn(6, HEADS, n, 4), torch.randn(6, HEADS, n, 4)
        all_k, all_v = cache.append(k, v)
    want_k, want_v = all_k.index_select(0, index).clone(), all_v.index_select(0, index).clone()
    cache.reorder(index)
    new_k, new_v = torch.randn(len(index), HEADS, 2, 4), torch.randn(len(index), HEADS, 2, 4)
    got_k, got_v = cache.append(new_k, new_v)
    assert torch.equal(got_k, torch.cat((want_k, new_k), dim=2))
    assert torch.equal(got_v, torch.cat((want_v, new_v), dim=2))

