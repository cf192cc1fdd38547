"""Multi-head attention on ``scaled_dot_product_attention``, with masks and a key/value cache."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class KVCache:
    """Growable key/value buffers ``[B, heads, capacity, head_dim]`` for incremental decoding.

    Appending writes into preallocated storage (doubling when full), so decoding ``n``
    tokens costs O(n) copies instead of the O(n^2) of repeated ``torch.cat``.
    """

    def __init__(self) -> None:
        self.keys: Tensor | None = None
        self.values: Tensor | None = None
        self.length = 0
        # Query/key/value weights concatenated for one product per decoded token; made at the
        # first step of a decoding (the weights cannot change within it; see self_attention).
        self.fused_qkv: tuple[Tensor, Tensor] | None = None

    def append(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Add ``[B, h, n, dh]`` keys/values; return views of everything cached so far."""
        n = keys.shape[2]
        if self.keys is None:
            capacity = max(16, n)
            shape = (*keys.shape[:2], capacity, keys.shape[3])
            self.keys = keys.new_empty(shape)
            self.values = values.new_empty(shape)
        elif self.length + n > self.keys.shape[2]:
            capacity = max(2 * self.keys.shape[2], self.length + n)
            self.keys = _grow(self.keys, capacity, self.length)
            self.values = _grow(self.values, capacity, self.length)
        assert self.values is not None
        self.keys[:, :, self.length : self.length + n] = keys
        self.values[:, :, self.length : self.length + n] = values
        self.length += n
        return self.keys[:, :, : self.length], self.values[:, :, : self.length]

    def reorder(self, index: Tensor) -> None:
        """Select batch rows (beam search / finished sequences)."""
        if self.keys is not None:
            assert self.values is not None
            self.keys = self.keys.index_select(0, index)
            self.values = self.values.index_select(0, index)


def _grow(buffer: Tensor, capacity: int, length: int) -> Tensor:
    bigger = buffer.new_empty((*buffer.shape[:2], capacity, buffer.shape[3]))
    bigger[:, :, :length] = buffer[:, :, :length]
    return bigger


class MultiHeadAttention(nn.Module):
    """Scaled dot-product multi-head attention (scale ``1/sqrt(d/k)``, the paper's eq. 1-3).

    Queries and keys/values have separate projections (``q_proj``, ``kv_proj``) so that
    callers can project keys/values once and reuse them: cross-attention over the
    encoder output at every recurrent step, a decoding cache, or the full sequence of
    keys against only the still-running queries of ACT.

    Masks are boolean, ``True`` = may attend, broadcastable to ``[B, heads, Lq, Lk]``.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.kv_proj = nn.Linear(d_model, 2 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values ``[B, h, L, dh]`` of inputs ``[B, L, d]``."""
        return self.split_kv(self.kv_proj(x))

    def split_kv(self, kv: Tensor) -> tuple[Tensor, Tensor]:
        """``kv_proj`` output ``[B, L, 2d]`` -> keys and values ``[B, h, L, dh]``."""
        b, n, _ = kv.shape
        k, v = kv.view(b, n, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        return k, v

    def forward(
        self,
        query: Tensor,
        kv: tuple[Tensor, Tensor],
        mask: Tensor | None = None,
        *,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query [B, Lq, d]`` over projected ``kv`` (see :meth:`project_kv`).

        Returns the output ``[B, Lq, d]`` and, if ``need_weights``, the attention
        probabilities ``[B, h, Lq, Lk]`` (computed explicitly; slower).
        """
        return self._attend(self._heads(self.q_proj(query)), kv, mask, need_weights)

    def self_attention(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        cache: "KVCache | None" = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Self-attention of ``x [B, L, d]``: queries, keys and values all from ``x``; the new
        keys/values are first appended to ``cache`` (incremental decoding) if given.

        When decoding (a cache, no gradients) the projections are one matrix product with
        the concatenated weights, kept in the cache: one product instead of two per step
        matters when decoding one token at a time, where the products are small.
        """
        d = x.shape[-1]
        if cache is not None and not torch.is_grad_enabled():
            if cache.fused_qkv is None:
                cache.fused_qkv = (torch.cat((self.q_proj.weight, self.kv_proj.weight)),
                                   torch.cat((self.q_proj.bias, self.kv_proj.bias)))
            q, kv = F.linear(x, *cache.fused_qkv).split((d, 2 * d), dim=-1)
        else:
            q, kv = self.q_proj(x), self.kv_proj(x)
        k, v = self.split_kv(kv)
        if cache is not None:
            k, v = cache.append(k, v)
        return self._attend(self._heads(q), (k, v), mask, need_weights)

    def _heads(self, x: Tensor) -> Tensor:
        """``[B, L, d]`` -> ``[B, h, L, dh]``."""
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def _attend(
        self, q: Tensor, kv: tuple[Tensor, Tensor], mask: Tensor | None, need_weights: bool
    ) -> tuple[Tensor, Tensor | None]:
        b, _, n, _ = q.shape
        k, v = kv
        dropout = self.dropout if self.training else 0.0
        weights = None
        if need_weights or _fused_kernel_is_slow(q):
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            # bf16 scores (autocast) need no float32 copy: the CPU softmax kernel accumulates in
            # float32 and rounds only its output, as the fused kernel does.
            probs = scores.softmax(-1)
            if mask is not None:  # a row with no key to see gives 0, as the fused kernel does (not NaN)
                probs = probs.masked_fill(~mask, 0.0)
            weights = probs if need_weights else None
            out = F.dropout(probs, dropout, self.training) @ v
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        out = out.transpose(1, 2).reshape(b, n, self.num_heads * self.head_dim)
        return self.out_proj(out), weights


def _fused_kernel_is_slow(q: Tensor) -> bool:
    """On the CPU in bf16 or fp16 (autocast included), PyTorch's fused attention kernel was
    1.6-6x slower, forward and backward, than the three plain operations (matmul, softmax,
    matmul) at the sequence lengths of these experiments (docs/performance.md), so those
    are used there; in float32 and on CUDA the fused kernel stays."""
    return q.dtype in (torch.bfloat16, torch.float16) and q.device.type == "cpu"  # dtype first: cheap, every call


def attention_mask(
    key_padding: Tensor | None,
    *,
    causal: bool = False,
    query_index: Tensor | None = None,
    key_index: Tensor | None = None,
    query_valid: Tensor | None = None,
    window: int | None = None,
    query_position: Tensor | None = None,
    key_position: Tensor | None = None,
) -> Tensor | None:
    """Boolean attention mask ``[B, 1, Lq, Lk]`` (True = attend), or ``None`` if nothing is masked.

    ``key_padding [B, Lk]`` is True at padding keys. With ``causal``, a query at
    sequence index ``query_index [B, Lq]`` sees keys with ``key_index [Lk] <= `` it.
    With ``window``, a query at position id ``query_position [B, Lq]`` sees only keys whose
    ``key_position [B, Lk]`` is at most ``window`` away (local attention).
    Rows of invalid queries (``query_valid`` False: slots of a packed batch that hold
    no position) attend everywhere so that no row is fully masked (which would give
    NaN); their outputs are discarded by the caller.
    """
    mask = None
    if key_padding is not None and bool(key_padding.any()):
        mask = (~key_padding)[:, None, None, :]
    if causal:
        assert query_index is not None and key_index is not None
        future_ok = key_index[None, None, None, :] <= query_index[:, None, :, None]
        mask = future_ok if mask is None else mask & future_ok
    if window is not None:
        assert query_position is not None and key_position is not None
        near = (query_position[:, None, :, None] - key_position[:, None, None, :]).abs() <= window
        mask = near if mask is None else mask & near
    if mask is not None and query_valid is not None:
        mask = mask | ~query_valid[:, None, :, None]
    return mask
