"""``weight_init: tensor2tensor`` against tensor2tensor's initialiser, recomputed in float64:
Glorot-uniform kernels over (fan_in + fan_out) per projection, zero biases, the halting bias kept."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from universal_transformer import (
    StoryQAConfig, UniversalTransformer, UTClassifierConfig, UTConfig, UTEncoderClassifier, UTLanguageModel, UTStoryQA,
)
from universal_transformer.config import ConfigError
from universal_transformer.modules import MultiHeadAttention

D, D_FF = 64, 256


def story_model(weight_init: str, seed: int = 0) -> UTStoryQA:
    torch.manual_seed(seed)
    config = StoryQAConfig(vocab_size=40, num_classes=12, fact_words=6, d_model=D, d_ff=D_FF, act=True,
                           act_bias_init=1.5, weight_init=weight_init)
    return UTStoryQA(config)


def kernels(model: nn.Module) -> list[tuple[str, torch.Tensor]]:
    """Every kernel tensor2tensor would hold as a variable of its own: (name, weight block)."""
    out = []
    for name, module in model.named_modules():
        if isinstance(module, MultiHeadAttention):
            k, v = module.kv_proj.weight.chunk(2)
            out += [(f"{name}.q", module.q_proj.weight), (f"{name}.k", k), (f"{name}.v", v),
                    (f"{name}.out", module.out_proj.weight)]
        elif isinstance(module, nn.Linear) and not name.endswith(("q_proj", "kv_proj", "out_proj")):
            out.append((name, module.weight))
    return out


def every_model(weight_init: str) -> list[nn.Module]:
    """A model of each class that re-initialises (the story model with ACT, so with a halting unit)."""
    torch.manual_seed(0)
    config = UTConfig(vocab_size=40, d_model=D, d_ff=D_FF, weight_init=weight_init)
    classifier = UTClassifierConfig(vocab_size=40, d_model=D, d_ff=D_FF, num_classes=12, weight_init=weight_init)
    return [story_model(weight_init), UniversalTransformer(config), UTLanguageModel(config),
            UTEncoderClassifier(classifier)]


@pytest.mark.parametrize("index", range(4), ids=["story", "encoder-decoder", "language-model", "classifier"])
def test_kernels_are_glorot_uniform_and_biases_zero(index):
    model = every_model("tensor2tensor")[index]
    found = kernels(model)
    assert len(found) >= 6  # q, k, v, out and the transition's two at least
    for name, weight in found:
        w = weight.detach().double()
        fan_out, fan_in = w.shape
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        # U(-b, b) spans nearly all of [-b, b] (below 0.8 b for 64 draws: odds 0.8^64 < 1e-6) ...
        assert 0.8 * bound < w.abs().max() <= bound, name
        if w.numel() >= 1000:  # ... and has variance b^2 / 3
            assert w.var().item() == pytest.approx(bound**2 / 3, rel=0.1), name
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and module.bias is not None:
            expected = 1.5 if name.endswith("halting.linear") else 0.0
            assert torch.all(module.bias == expected), name


def test_default_keeps_pytorch_init_and_only_linear_layers_change():
    ours, t2t = story_model("torch"), story_model("tensor2tensor")
    q = ours.encoder.blocks[0].self_attn.q_proj
    assert q.weight.abs().max() <= 1 / math.sqrt(D) and q.bias.abs().max() > 0  # PyTorch's U(+-1/sqrt(fan_in))
    assert t2t.encoder.blocks[0].self_attn.q_proj.weight.abs().max() > 1 / math.sqrt(D)
    linear = {f"{n}.weight" for n, m in t2t.named_modules() if isinstance(m, nn.Linear)}
    linear |= {f"{n}.bias" for n, m in t2t.named_modules() if isinstance(m, nn.Linear)}
    ours_state, t2t_state = ours.state_dict(), t2t.state_dict()
    for key, value in t2t_state.items():
        # The re-draw comes after every other draw: embeddings, masks and norms are the same tensors.
        if key not in linear:
            assert torch.equal(value, ours_state[key]), key
        elif not key.endswith("halting.linear.bias"):
            assert not torch.equal(value, ours_state[key]), key


def test_untied_output_layer_is_drawn_like_tensor2tensors_softmax_weights():
    torch.manual_seed(0)
    config = UTConfig(vocab_size=3000, d_model=D, d_ff=D_FF, tie_embeddings=False, weight_init="tensor2tensor")
    for model in (UniversalTransformer(config), UTLanguageModel(config)):
        w = model.output.weight.detach().double()
        assert w.std().item() == pytest.approx(D**-0.5, rel=0.05)


def test_weight_init_round_trips_and_rejects_unknown_names(tmp_path):
    model = story_model("tensor2tensor")
    model.save_pretrained(tmp_path)
    loaded = UTStoryQA.from_pretrained(tmp_path)
    assert loaded.config.weight_init == "tensor2tensor"
    for key, value in model.state_dict().items():
        assert torch.equal(value, loaded.state_dict()[key]), key
    with pytest.raises(ConfigError, match="weight_init"):
        UTConfig(weight_init="xavier")
