"""The encoder-only classifier: token and embedding inputs, pooling, padding."""

from __future__ import annotations

from universal_transformer.config import UTClassifierConfig

import pytest
import torch

from universal_transformer import ConfigError, UTEncoderClassifier, UTLanguageModel, UniversalTransformer

from ..conftest import small_config


@pytest.mark.parametrize("pooling", ["mean", "first", "last"])
def test_padding_does_not_change_the_class_scores(pooling):
    model = UTEncoderClassifier(small_config(UTClassifierConfig, num_classes=4, pooling=pooling, act=True, act_bias_init=0.0)).eval()
    tokens = torch.randint(3, 13, (2, 6))
    padded = torch.cat((tokens, torch.zeros(2, 3, dtype=torch.long)), 1)
    with torch.no_grad():
        torch.testing.assert_close(model(tokens).logits, model(padded).logits, atol=1e-5, rtol=1e-5)


def test_inputs_embeds_path_equals_token_path():
    model = UTEncoderClassifier(small_config(UTClassifierConfig, num_classes=3)).eval()
    tokens = torch.randint(3, 13, (2, 5))
    with torch.no_grad():
        a = model(tokens).logits
        b = model(inputs_embeds=model.embed(tokens)).logits
    torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match="exactly one of tokens or inputs_embeds"):
        model()


def test_padding_with_tokens_is_refused_not_ignored():
    """``padding`` is read with ``inputs_embeds``; given with tokens it had been replaced by theirs."""
    model = UTEncoderClassifier(small_config(UTClassifierConfig, num_classes=3)).eval()
    tokens = torch.randint(3, 13, (2, 5))
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[1, 3:] = True
    with pytest.raises(ValueError, match="padding goes with inputs_embeds"):
        model(tokens, padding=padding)
    with torch.no_grad():  # the way to say it: padding ids in the tokens, or the padding of embeddings
        a = model(tokens.masked_fill(padding, 0)).logits
        b = model(inputs_embeds=model.embed(tokens), padding=padding).logits
    torch.testing.assert_close(a, b)


def test_classifier_loss_and_learning_signal():
    model = UTEncoderClassifier(small_config(UTClassifierConfig, num_classes=3))
    tokens = torch.randint(3, 13, (8, 5))
    labels = (tokens[:, 0] % 3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = None
    for _ in range(60):
        out = model(tokens, labels)
        first = first if first is not None else float(out.loss.detach())
        opt.zero_grad()
        out.loss.backward()
        opt.step()
    assert float(out.loss.detach()) < 0.2 * first


def test_classifier_needs_num_classes_and_global_act_is_refused_for_causal_models():
    with pytest.raises(ConfigError, match="needs num_classes"):
        UTEncoderClassifier(small_config(UTClassifierConfig))
    with pytest.raises(ConfigError, match="takes a UTClassifierConfig"):
        UTEncoderClassifier(small_config())
    with pytest.raises(ConfigError, match="global.*future"):
        UTLanguageModel(small_config(act=True, act_type="global"))
    with pytest.raises(ConfigError, match="global.*future"):
        UniversalTransformer(small_config(act=True, act_type="global"))
    UTEncoderClassifier(small_config(UTClassifierConfig, num_classes=2, act=True, act_type="global"))  # fine without causality


def test_attention_weights_per_step_are_returned():
    model = UniversalTransformer(small_config(num_steps=3)).eval()
    out = model(torch.randint(3, 13, (2, 5)), torch.randint(3, 13, (2, 4)), need_weights=True)
    enc, dec = out.attentions["encoder"], out.attentions["decoder"]
    assert len(enc) == 3 and enc[0]["self"].shape == (2, 4, 5, 5)
    assert dec[0]["cross"].shape == (2, 4, 4, 5)
    assert torch.allclose(dec[1]["self"].sum(-1), torch.ones(2, 4, 4))
    assert dec[1]["self"].triu(1).abs().max() == 0  # causal
