"""One recurrent step of the UT encoder or decoder (the paper's eq. 4-5 and Figure 4, Appendix A)."""

from __future__ import annotations

from torch import Tensor, nn

from .attention import KVCache, MultiHeadAttention
from .dropout import Dropout
from .transition import make_transition


class UTBlock(nn.Module):
    """Self-attention [-> cross-attention] -> transition, each with dropout, residual and LayerNorm.

    Post-norm (the paper, default)::

        A = LayerNorm(X + Dropout(SelfAttention(X)))
        C = LayerNorm(A + Dropout(CrossAttention(A, memory)))     # decoder only
        H = LayerNorm(C + Dropout(Transition(C)))

    Pre-norm (option): ``A = X + Dropout(SelfAttention(LayerNorm(X)))`` and so on; the
    stack then ends with a final LayerNorm.

    Queries and keys are separate so that only some positions (those ACT still runs)
    can be updated while all positions serve as keys/values: :meth:`self_kv` projects
    keys/values of the full sequence, :meth:`forward` updates the query rows.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        *,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        norm: str = "post",
        transition: str = "fc",
        kernel_size: int = 3,
        causal: bool = False,
        cross_attention: bool = False,
    ) -> None:
        super().__init__()
        self.pre_norm = norm == "pre"
        self.self_attn = MultiHeadAttention(d_model, num_heads, attention_dropout)
        self.norm_self = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, attention_dropout) if cross_attention else None
        self.norm_cross = nn.LayerNorm(d_model) if cross_attention else None
        self.transition = make_transition(
            transition, d_model, d_ff, kernel_size=kernel_size, dropout=dropout, causal=causal
        )
        self.norm_transition = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)

    @property
    def pointwise(self) -> bool:
        """True when the transition looks at one position at a time (so rows can be packed)."""
        return bool(getattr(self.transition, "pointwise", False))

    def self_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Self-attention keys/values of the step inputs ``X [B, L, d]`` of all positions."""
        return self.self_attn.project_kv(self.norm_self(x) if self.pre_norm else x)

    def memory_kv(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Cross-attention keys/values of the encoder output (constant over steps: project once)."""
        assert self.cross_attn is not None, "this block has no cross-attention"
        return self.cross_attn.project_kv(memory)

    def forward(
        self,
        x: Tensor,
        self_kv: tuple[Tensor, Tensor] | None = None,
        self_mask: Tensor | None = None,
        *,
        kv_cache: KVCache | None = None,
        memory_kv: tuple[Tensor, Tensor] | None = None,
        memory_mask: Tensor | None = None,
        padding: Tensor | None = None,
        conv_state: dict | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Update query rows ``x [B, Lq, d]``; returns ``H`` and attention weights if asked.

        ``self_kv`` are the keys/values of all positions (see :meth:`self_kv`; when only
        some positions are queries, as in ACT); without them every row of ``x`` is a query,
        key and value, the keys/values first appended to ``kv_cache`` if given.
        """
        weights: dict[str, Tensor] = {}
        h = self.norm_self(x) if self.pre_norm else x
        if self_kv is None:
            y, w = self.self_attn.self_attention(h, self_mask, cache=kv_cache, need_weights=need_weights)
        else:
            y, w = self.self_attn(h, self_kv, self_mask, need_weights=need_weights)
        a = self._residual(x, y, self.norm_self)
        if w is not None:
            weights["self"] = w
        if self.cross_attn is not None:
            assert memory_kv is not None and self.norm_cross is not None, "the decoder needs the encoder output"
            h = self.norm_cross(a) if self.pre_norm else a
            y, w = self.cross_attn(h, memory_kv, memory_mask, need_weights=need_weights)
            a = self._residual(a, y, self.norm_cross)
            if w is not None:
                weights["cross"] = w
        h = self.norm_transition(a) if self.pre_norm else a
        return self._residual(a, self.transition(h, padding, conv_state), self.norm_transition), weights

    def _residual(self, x: Tensor, y: Tensor, norm: nn.LayerNorm) -> Tensor:
        """Post-norm ``LayerNorm(x + Dropout(y))``; pre-norm ``x + Dropout(y)`` (``y`` computed
        from ``LayerNorm(x)``)."""
        if self.training:  # dropout is the identity in eval mode: no call when decoding token by token
            y = self.dropout(y)
        return x + y if self.pre_norm else norm(x + y)
