"""Sampling and stopping behaviour of generate()."""

from __future__ import annotations

import pytest
import torch

from universal_transformer import (
    LSTMConfig, LSTMLanguageModel, LSTMSeq2Seq, UTClassifierConfig, UTEncoderClassifier, UTLanguageModel,
    UniversalTransformer, beam_search, generate,
)
from universal_transformer.generation import choose_next, generate_uncached

from ..conftest import small_config


def test_top_k_only_ever_samples_the_k_best():
    logits = torch.tensor([[0.0, 5.0, 4.0, -1.0, 3.0]]).expand(2000, -1)
    tokens = choose_next(logits, do_sample=True, top_k=2, generator=torch.Generator().manual_seed(0))
    assert set(tokens.tolist()) == {1, 2}


def test_temperature_sharpens_and_flattens():
    logits = torch.tensor([[2.0, 0.0]]).expand(4000, -1)
    gen = torch.Generator().manual_seed(0)
    cold = choose_next(logits, do_sample=True, temperature=0.25, generator=gen).float().mean()
    hot = choose_next(logits, do_sample=True, temperature=4.0, generator=gen).float().mean()
    # P(token 1) = sigmoid(-2/T): 0.0003 when cold, 0.38 when hot
    assert cold < 0.01 and 0.33 < hot < 0.43


def test_top_p_one_keeps_every_token(monkeypatch):
    """The float32 running sum of the sorted probabilities reaches 1 before the tail of a
    peaked distribution (here at once), and ``>= top_p`` had cut the tail at ``top_p=1``."""
    logits = torch.tensor([[0.0] + [-25.0] * 9])
    drawn_from = []
    multinomial = torch.multinomial
    monkeypatch.setattr(torch, "multinomial", lambda probs, *a, **k: drawn_from.append(probs) or multinomial(probs, *a, **k))
    choose_next(logits, do_sample=True, top_p=1.0, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(drawn_from[0], logits.softmax(-1), rtol=0, atol=0)
    assert bool((drawn_from[0] > 0).all())


def test_bad_sampling_arguments():
    for temperature in (0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
            choose_next(torch.zeros(1, 3), do_sample=True, temperature=temperature)
    with pytest.raises(ValueError, match="top_k must be >= 1"):
        choose_next(torch.zeros(1, 3), do_sample=True, top_k=0)


@pytest.mark.parametrize("model", [UTLanguageModel(small_config()), LSTMLanguageModel(LSTMConfig(vocab_size=13, d_model=16))])
def test_a_language_model_refuses_padded_prompts(model):
    """Prompts of different lengths padded to one would be continued from a padding position
    (or after padding read as context): refused, for greedy, sampled and beam decoding."""
    prompts = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
    for decode in (lambda: generate(model, prompts, max_new_tokens=3), lambda: beam_search(model, prompts, beam_size=2, max_new_tokens=3),
                   lambda: generate_uncached(model, prompts, max_new_tokens=3)):
        with pytest.raises(ValueError, match="prompt row 1 holds the padding id 0"):
            decode()
    same_length = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12]])
    together = generate(model, same_length, max_new_tokens=4, stop_at_eos=False)
    for row in range(2):  # one length: batched = alone
        assert torch.equal(together[row], generate(model, same_length[row:row + 1], max_new_tokens=4, stop_at_eos=False)[0])


@pytest.mark.parametrize("model", [UTLanguageModel(small_config()), LSTMLanguageModel(LSTMConfig(vocab_size=13, d_model=16))])
def test_a_language_model_refuses_empty_prompts_with_a_message(model):
    """No position to read the next token at: an IndexError from deep inside before."""
    empty = torch.zeros((2, 0), dtype=torch.long)
    for decode in (lambda: generate(model, empty, max_new_tokens=3), lambda: beam_search(model, empty, beam_size=2, max_new_tokens=3),
                   lambda: generate_uncached(model, empty, max_new_tokens=3)):
        with pytest.raises(ValueError, match="the prompts are empty"):
            decode()


def test_a_negative_max_new_tokens_is_refused():
    """It gave an empty output without a word (beam search: a message about min_length)."""
    model = UniversalTransformer(small_config())
    src = torch.randint(3, 13, (2, 5))
    for decode in (generate, generate_uncached, beam_search):
        with pytest.raises(ValueError, match="max_new_tokens must be >= 0, got -1"):
            decode(model, src, max_new_tokens=-1)
    assert generate(model, src, max_new_tokens=0).shape == (2, 0)


def test_sampling_options_without_sampling_are_refused():
    model = UTLanguageModel(small_config())
    for options in (dict(temperature=0.5), dict(top_k=3), dict(top_p=0.9)):
        with pytest.raises(ValueError, match="pass do_sample=True"):
            generate(model, torch.tensor([[3, 4]]), max_new_tokens=2, **options)


def test_a_model_that_is_not_a_decoder_is_refused_by_name():
    classifier = UTEncoderClassifier(small_config(UTClassifierConfig, num_classes=3))
    with pytest.raises(TypeError, match="a UTEncoderClassifier is not a decoder"):
        generate(classifier, torch.tensor([[3, 4]]), max_new_tokens=2)


def test_sampling_is_reproducible_with_a_generator():
    model = UniversalTransformer(small_config())
    src = torch.randint(3, 13, (2, 5))
    a = generate(model, src, max_new_tokens=8, do_sample=True, generator=torch.Generator().manual_seed(3), stop_at_eos=False)
    b = generate(model, src, max_new_tokens=8, do_sample=True, generator=torch.Generator().manual_seed(3), stop_at_eos=False)
    assert torch.equal(a, b)


def test_rows_after_eos_are_padded_and_generation_stops():
    model = UniversalTransformer(small_config())
    with torch.no_grad():  # make eos the only likely token after the first step
        model.src_embed.weight[model.config.eos_id] *= 0
    src = torch.randint(3, 13, (3, 5))
    tokens = generate(model, src, max_new_tokens=50, eos_id=int(generate(model, src, max_new_tokens=1)[0, 0]))
    assert tokens.shape[1] < 50


def test_lstm_cached_decoding_matches_recomputation():
    model = LSTMSeq2Seq(LSTMConfig(vocab_size=13, d_model=16, num_layers=2, dropout=0.0)).eval()
    src = torch.randint(3, 13, (3, 6))
    src[1, 4:] = 0
    tokens, _ = generate_uncached(model, src, max_new_tokens=7)
    cached = generate(model, src, max_new_tokens=7, stop_at_eos=False)
    eos = model.config.eos_id
    for row, ref in zip(cached, tokens):
        stop = int((ref == eos).nonzero()[0]) + 1 if bool((ref == eos).any()) else len(ref)
        assert row[:stop].tolist() == ref[:stop].tolist()


def test_lstm_decodes_a_source_of_padding_alone_without_nan():
    """Such a row has nothing to attend to; it must not turn the logits into NaN, and the other
    rows of its batch decode as they do alone."""
    torch.manual_seed(0)
    model = LSTMSeq2Seq(LSTMConfig(vocab_size=13, d_model=16, num_layers=2, dropout=0.0)).eval()
    src = torch.randint(3, 13, (2, 6))
    src[1] = model.config.pad_id
    tokens, logits = generate_uncached(model, src, max_new_tokens=4)
    assert not bool(logits.isnan().any())  # (padding itself is -inf: never generated)
    alone, alone_logits = generate_uncached(model, src[:1], max_new_tokens=4)
    assert torch.equal(tokens[:1], alone)
    torch.testing.assert_close(logits[:1], alone_logits)


def test_decoding_sees_weights_changed_since_the_last_decoding():
    """The fused query/key/value weights of a decoding are made anew for each one, so a change
    of the weights between decodings (even through ``.data``, which no version counter sees)
    is used by the next."""
    torch.manual_seed(0)
    model = UniversalTransformer(small_config(dropout=0.0)).double().eval()
    src, tgt = torch.randint(3, 13, (2, 5)), torch.randint(3, 13, (2, 4))

    def cached_logits():
        with torch.inference_mode():
            state, _ = model.prefill(src)
            return torch.stack([model.decode_step(tgt[:, i : i + 1], state)[:, -1] for i in range(tgt.shape[1])], 1)

    before = cached_logits()
    for block in model.decoder.blocks:
        block.self_attn.q_proj.weight.data.mul_(-3.0)
        block.self_attn.kv_proj.weight.data.mul_(2.0)
    after = cached_logits()
    bos = torch.full((2, 1), model.config.bos_id)
    with torch.no_grad():  # teacher-forced full pass with the changed weights
        reference = model(src, torch.cat((bos, tgt), 1)).logits[:, 1:]
    torch.testing.assert_close(after, reference)
    assert not torch.allclose(before, after)


def test_tables_grown_while_generating_still_train():
    """Generation runs under inference mode; the sinusoid tables it grows (longer outputs,
    more steps at test time) must stay ordinary tensors that a later training step can use."""
    from universal_transformer import UTConfig, UTLanguageModel

    torch.manual_seed(0)
    model = UTLanguageModel(UTConfig(vocab_size=20, d_model=16, num_heads=2, d_ff=32, num_steps=2, max_position=8,
                                     act=True, dropout=0.0))
    coordinates = model.decoder.coordinates
    model.configure_runtime(depth=8)  # beyond the step table
    generate(model, torch.randint(3, 20, (2, 4)), max_new_tokens=12, stop_at_eos=False)  # beyond the position table
    assert coordinates._sin_positions.shape[0] > 8 and coordinates._sin_steps.shape[0] > 8
    assert not coordinates._sin_positions.is_inference() and not coordinates._sin_steps.is_inference()
    model.configure_runtime(depth=4)
    tokens = torch.randint(3, 20, (2, 14))
    model.train()(tokens[:, :-1], tokens[:, 1:]).loss.backward()  # FrozenKeyValues saves the step signal


def test_decoding_gives_every_module_its_training_flag_back():
    """A model in eval mode stays so after decoding through UncachedDecoder (a fresh wrapper,
    itself in training mode, had switched it to training mode: dropout on), and a model whose
    submodules are in different modes (an encoder frozen in eval mode) keeps them."""
    from universal_transformer.generation import UncachedDecoder

    model = UniversalTransformer(small_config(dropout=0.1))
    src = torch.randint(3, 13, (2, 5))
    model.eval()
    generate_uncached(model, src, max_new_tokens=3)
    beam_search(UncachedDecoder(model), src, beam_size=2, max_new_tokens=3)
    generate(UncachedDecoder(model), src, max_new_tokens=3)
    assert not any(m.training for m in model.modules())
    model.train()
    model.encoder.eval()
    flags = [m.training for m in model.modules()]
    generate(model, src, max_new_tokens=3)
    beam_search(model, src, beam_size=2, max_new_tokens=3)
    generate_uncached(model, src, max_new_tokens=3)
    assert [m.training for m in model.modules()] == flags


def test_beam_search_refuses_an_eos_id_outside_the_vocabulary():
    """No hypothesis could end with such an eos: the search returned none (``.best`` failed with an
    IndexError), and -1 read the last token's log-prob. (generate takes one: it never stops.)"""
    model = UniversalTransformer(small_config())  # 13 tokens
    src = torch.randint(3, 13, (2, 5))
    for eos in (13, -1):
        with pytest.raises(ValueError, match=rf"eos_id \({eos}\) is not a token of the model's vocabulary of 13"):
            beam_search(model, src, beam_size=2, max_new_tokens=3, eos_id=eos)
        assert generate(model, src, max_new_tokens=3, eos_id=eos, stop_at_eos=False).shape == (2, 3)
