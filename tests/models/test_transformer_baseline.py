"""The untied, single-pass configuration is exactly torch.nn.Transformer (Vaswani et al. 2017)."""

from __future__ import annotations

import torch
from torch import nn

from universal_transformer import UniversalTransformer, transformer_config
from universal_transformer.modules.block import UTBlock


def _copy_block(ours: UTBlock, layer: nn.Module) -> None:
    """Copy an nn.TransformerEncoderLayer / DecoderLayer's weights into our block."""
    d = ours.self_attn.q_proj.in_features
    pairs = [(ours.self_attn, layer.self_attn)]
    if ours.cross_attn is not None:
        pairs.append((ours.cross_attn, layer.multihead_attn))
    for mine, theirs in pairs:
        mine.q_proj.weight.copy_(theirs.in_proj_weight[:d])
        mine.q_proj.bias.copy_(theirs.in_proj_bias[:d])
        mine.kv_proj.weight.copy_(theirs.in_proj_weight[d:])
        mine.kv_proj.bias.copy_(theirs.in_proj_bias[d:])
        mine.out_proj.load_state_dict(theirs.out_proj.state_dict())
    ours.transition.linear1.load_state_dict(layer.linear1.state_dict())
    ours.transition.linear2.load_state_dict(layer.linear2.state_dict())
    ours.norm_self.load_state_dict(layer.norm1.state_dict())
    if ours.cross_attn is not None:
        ours.norm_cross.load_state_dict(layer.norm2.state_dict())
        ours.norm_transition.load_state_dict(layer.norm3.state_dict())
    else:
        ours.norm_transition.load_state_dict(layer.norm2.state_dict())


def _compare(norm_first: bool) -> None:
    layers = 3
    cfg = transformer_config(
        vocab_size=17, d_model=32, num_heads=4, d_ff=64, num_steps=layers, norm="pre" if norm_first else "post",
        dropout=0.0, embedding_dropout=0.0,
    )
    ours = UniversalTransformer(cfg).eval()
    ref = nn.Transformer(
        d_model=32, nhead=4, num_encoder_layers=layers, num_decoder_layers=layers, dim_feedforward=64,
        dropout=0.0, batch_first=True, norm_first=norm_first,
    ).eval()
    if not norm_first:  # nn.Transformer adds a final LayerNorm; post-norm (the paper) has none
        ref.encoder.norm = None
        ref.decoder.norm = None
    with torch.no_grad():
        for i in range(layers):
            _copy_block(ours.encoder.blocks[i], ref.encoder.layers[i])
            _copy_block(ours.decoder.blocks[i], ref.decoder.layers[i])
        if norm_first:
            ours.encoder.final_norm.load_state_dict(ref.encoder.norm.state_dict())
            ours.decoder.final_norm.load_state_dict(ref.decoder.norm.state_dict())

    src = torch.randint(3, 17, (4, 9))
    src[1, 6:] = cfg.pad_id  # padded source
    tgt = torch.randint(3, 17, (4, 7))
    with torch.no_grad():
        logits = ours(src, tgt).logits
        # The same inputs as ours builds them: scaled embedding + position signal, added once.
        src_h = ours.src_embed(src) + ours.encoder.signal(torch.arange(9).expand(4, 9), 1)
        tgt_h = ours.src_embed(tgt) + ours.decoder.signal(torch.arange(7).expand(4, 7), 1)
        out = ref(
            src_h, tgt_h,
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(7),
            src_key_padding_mask=src == cfg.pad_id,
            memory_key_padding_mask=src == cfg.pad_id,
        )
        expected = ours.src_embed.logits(out)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)


def test_post_norm_matches_torch_transformer():
    _compare(norm_first=False)


def test_pre_norm_matches_torch_transformer():
    _compare(norm_first=True)


def test_untied_layers_are_distinct_and_position_added_once():
    cfg = transformer_config(vocab_size=11, d_model=16, num_heads=2, d_ff=32, num_steps=3)
    model = UniversalTransformer(cfg)
    assert len(model.encoder.blocks) == 3 and len(model.decoder.blocks) == 3
    positions = torch.arange(5).expand(1, 5)
    assert model.encoder.signal(positions, 1) is not None
    assert model.encoder.signal(positions, 2) is None  # no timestep, no repeated position
