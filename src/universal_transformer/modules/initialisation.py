"""Weight initialisation schemes, chosen by ``UTConfig.weight_init``.

``torch`` keeps PyTorch's defaults: a linear layer's weight and bias drawn from
U(+-1/sqrt(fan_in)). ``tensor2tensor`` re-draws them as the reference code's models start:
its ``transformer_base`` hparams (which ``universal_transformer_tiny`` builds on) set
``initializer: uniform_unit_scaling`` with ``initializer_gain: 1.0``, which its
``optimize.get_variable_initializer`` turns into ``variance_scaling_initializer(1.0,
mode="fan_avg", distribution="uniform")``: every kernel from U(+-sqrt(6 / (fan_in + fan_out)))
(Glorot's uniform), every bias 0 (its attention projections have no bias at all; ours start at 0
and train). For an attention layer's d x d projections that is a scale
sqrt(3) times PyTorch's default on the queries, keys and values, and for the transition's
d_ff -> d layer about half of it.
"""

from __future__ import annotations

from torch import nn

from .attention import MultiHeadAttention
from .halting import HaltingUnit


def glorot_uniform_(linear: nn.Linear, blocks: int = 1) -> None:
    """Draw ``linear.weight`` Glorot-uniform (``nn.init.xavier_uniform_``), its output rows split into
    ``blocks`` matrices that each count as a layer of their own (a fused projection)."""
    if linear.out_features % blocks:
        raise ValueError(f"{linear.out_features} output features do not split into {blocks} blocks")
    for block in linear.weight.detach().chunk(blocks):
        nn.init.xavier_uniform_(block)


def init_tensor2tensor_(model: nn.Module) -> None:
    """Re-initialise ``model``'s linear layers as tensor2tensor initialises its dense layers.

    Kernels are Glorot-uniform (see the module docstring) and biases 0, except the halting
    unit's bias, which keeps its ``act_bias_init`` (tensor2tensor's ``act_halting_bias_init``
    is the halting layer's bias initialiser). The key and value projections, one fused
    ``kv_proj`` here, are drawn as the two d x d kernels tensor2tensor has. An untied output
    layer is drawn N(0, d^-1/2), as tensor2tensor's output softmax weights. Embedding tables
    (already N(0, d^-1/2), as tensor2tensor's), layer norms, the fact encoders' position masks and
    the depthwise convolutions of the sepconv transitions keep their initialisation.
    """
    blocks = {module.kv_proj: 2 for module in model.modules() if isinstance(module, MultiHeadAttention)}
    keep_bias = {module.linear for module in model.modules() if isinstance(module, HaltingUnit)}
    output = getattr(model, "output", None)
    for module in model.modules():
        if not isinstance(module, nn.Linear):
            continue
        if module is output:
            nn.init.normal_(module.weight, std=module.in_features**-0.5)
        else:
            glorot_uniform_(module, blocks.get(module, 1))
        if module.bias is not None and module not in keep_bias:
            nn.init.zeros_(module.bias)

