"""Padding invariance, causality, and cached decoding == full recomputation, over many configs."""

from __future__ import annotations

import pytest
import torch

from universal_transformer import UniversalTransformer, UTEncoderClassifier, UTLanguageModel, UTStoryQA, transformer_config
from universal_transformer.models.lstm import LSTMLanguageModel
from universal_transformer.generation import generate, generate_uncached

from ..conftest import small_config

VARIANTS = {
    "ut": {},
    "ut-pre-norm": dict(norm="pre"),
    "ut-sepconv": dict(transition="sepconv"),
    "ut-learned-embeddings": dict(position_embedding="learned", timestep_embedding="learned", max_position=64),
    "act-packed": dict(act=True, act_bias_init=0.0, num_steps=3),
    "act-dense": dict(act=True, act_bias_init=0.0, num_steps=3),  # run with act_packed off (see _build)
    "act-transform": dict(act=True, act_bias_init=0.0, num_steps=3, act_halted_state="transform"),
    "act-accumulated": dict(act=True, act_bias_init=0.0, num_steps=3, act_type="accumulated"),
    "act-sepconv": dict(act=True, act_bias_init=0.0, num_steps=3, transition="sepconv"),
    "act-pre-norm": dict(act=True, act_bias_init=0.0, num_steps=3, norm="pre"),
}


def _config(name: str):
    if name == "transformer":
        return transformer_config(
            vocab_size=13, d_model=16, num_heads=4, d_ff=32, num_steps=2,
            dropout=0.0, attention_dropout=0.0, embedding_dropout=0.0,
        )
    return small_config(**VARIANTS[name])


ALL = [*VARIANTS, "transformer"]


def _build(model_class, name: str):
    model = model_class(_config(name))
    if name == "act-dense":
        model.configure_runtime(act_packed=False)
    return model


def _tokens(b: int, n: int, vocab: int = 13) -> torch.Tensor:
    return torch.randint(3, vocab, (b, n))


@pytest.mark.parametrize("name", ALL)
def test_source_padding_changes_nothing(name):
    model = _build(UniversalTransformer, name).eval()
    src, tgt = _tokens(2, 6), _tokens(2, 5)
    padded = torch.cat((src, torch.zeros(2, 4, dtype=torch.long)), dim=1)
    with torch.no_grad():
        a, b = model(src, tgt), model(padded, tgt)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a.halting["encoder"].n_updates, b.halting["encoder"].n_updates[:, :6])
    assert b.halting["encoder"].n_updates[:, 6:].eq(0).all()  # padding never runs


@pytest.mark.parametrize("name", ALL)
def test_target_padding_changes_no_real_position(name):
    model = _build(UniversalTransformer, name).eval()
    src, tgt = _tokens(2, 6), _tokens(2, 5)
    padded = torch.cat((tgt, torch.zeros(2, 3, dtype=torch.long)), dim=1)
    with torch.no_grad():
        a, b = model(src, tgt).logits, model(src, padded).logits[:, :5]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ALL)
def test_future_target_token_changes_no_earlier_logit(name):
    model = _build(UniversalTransformer, name).eval()
    src, tgt = _tokens(2, 6), _tokens(2, 7)
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] - 3 + 1) % 10 + 3
    with torch.no_grad():
        a, b = model(src, tgt).logits, model(src, changed).logits
    torch.testing.assert_close(a[:, :4], b[:, :4], atol=1e-6, rtol=1e-6)
    assert not torch.allclose(a[:, 4:], b[:, 4:])  # and the change is seen from there on


@pytest.mark.parametrize("name", ALL)
def test_lm_future_token_changes_no_earlier_logit(name):
    model = _build(UTLanguageModel, name).eval()
    tokens = _tokens(2, 9)
    changed = tokens.clone()
    changed[:, 5] = (changed[:, 5] - 3 + 1) % 10 + 3
    with torch.no_grad():
        a, b = model(tokens).logits, model(changed).logits
    torch.testing.assert_close(a[:, :5], b[:, :5], atol=1e-6, rtol=1e-6)
    assert not torch.allclose(a[:, 5:], b[:, 5:])


@pytest.mark.parametrize("name", ALL)
def test_cached_decoding_equals_full_recomputation_seq2seq(name):
    model = _build(UniversalTransformer, name).eval()
    src = _tokens(3, 7)
    src[2, 5:] = 0  # one padded source row
    tgt = torch.cat((torch.full((3, 1), 1), _tokens(3, 8)), dim=1)
    with torch.no_grad():
        full = model(src, tgt).logits
        state = model.start_decoding(src)
        # feed one token, then a chunk of three, then one at a time: all must match
        pieces = [tgt[:, :1], tgt[:, 1:4], *tgt[:, 4:].split(1, dim=1)]
        cached = torch.cat([model.decode_step(p, state) for p in pieces], dim=1)
    torch.testing.assert_close(cached, full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["ut", "act-packed", "act-dense", "transformer"])
@pytest.mark.parametrize("shape", ["example", "stack", "step"])
def test_cached_decoding_with_position_offsets_equals_full_recomputation(name, shape):
    """Offsets given to ``prefill`` stay in the cache: every new token continues the target's
    shifted positions (per step, each step its own), as the teacher-forced pass has them; beam
    search's row reordering carries them along."""
    model = _build(UniversalTransformer, name).eval()
    src = _tokens(3, 7)
    tgt = torch.cat((torch.full((3, 1), 1), _tokens(3, 6)), dim=1)
    steps = model.recurrent_steps
    offsets = {"example": torch.tensor([0, 5, 300]), "stack": torch.tensor([[3, 90], [0, 7], [41, 2]]),
               "step": torch.randint(0, 400, (3, 2, steps))}[shape]
    with torch.no_grad():
        full = model(src, tgt, position_offset=offsets).logits
        state, first = model.prefill(src, tgt[:, :1], position_offset=offsets)
        cached = torch.cat([first[:, None], *(model.decode_step(t, state) for t in tgt[:, 1:].split(1, dim=1))], dim=1)
        torch.testing.assert_close(cached, full, atol=1e-5, rtol=1e-5)
        assert not torch.allclose(full, model(src, tgt).logits)  # the offsets do move the positions
        state, _ = model.prefill(src, tgt[:, :3], position_offset=offsets)
        state.reorder(torch.tensor([2, 2, 0]))
        moved = model.decode_step(tgt[[2, 2, 0], 3:4], state)[:, 0]
    torch.testing.assert_close(moved, full[[2, 2, 0], 3], atol=1e-5, rtol=1e-5)


def test_packed_act_equals_dense_act_with_positions_per_step():
    """Halted positions keep serving as keys and values; with offsets drawn per step their
    step input changes in position as well as in timestep, which the packed loop must see."""
    packed, dense = _build(UniversalTransformer, "act-packed").eval(), _build(UniversalTransformer, "act-dense").eval()
    dense.load_state_dict(packed.state_dict())
    src, tgt = _tokens(3, 9), _tokens(3, 8)
    offsets = torch.randint(0, 400, (3, 2, packed.recurrent_steps))
    with torch.no_grad():
        a, b = packed(src, tgt, position_offset=offsets), dense(src, tgt, position_offset=offsets)
    assert b.halting["encoder"].n_updates.min() < b.halting["encoder"].n_updates.max()  # some halt earlier
    torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ALL)
def test_cached_decoding_equals_full_recomputation_lm(name):
    model = _build(UTLanguageModel, name).eval()
    tokens = _tokens(2, 10)
    with torch.no_grad():
        full = model(tokens).logits
        state = model.start_decoding()
        cached = torch.cat([model.decode_step(p, state) for p in (tokens[:, :4], *tokens[:, 4:].split(1, 1))], 1)
    torch.testing.assert_close(cached, full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["ut", "act-packed", "transformer"])
def test_greedy_generate_matches_uncached_loop(name):
    for model, inputs in ((_build(UniversalTransformer, name).eval(), _tokens(3, 6)), (_build(UTLanguageModel, name).eval(), _tokens(3, 4))):
        tokens = generate(model, inputs, max_new_tokens=12, stop_at_eos=False)
        expected, _ = generate_uncached(model, inputs, max_new_tokens=12)
        eos = model.config.eos_id
        for row, ref in zip(tokens, expected):  # identical up to and including the first eos
            stop = int((ref == eos).nonzero()[0]) + 1 if bool((ref == eos).any()) else len(ref)
            assert row[:stop].tolist() == ref[:stop].tolist()


def _spy_positions(model, monkeypatch) -> dict:
    """Stack name -> the position ids its last forward pass was given."""
    seen = {}
    for name in ("encoder", "decoder"):
        stack = getattr(model, name)
        original = stack.forward

        def spy(h, *, _name=name, _original=original, **kwargs):
            seen[_name] = kwargs["positions"]
            return _original(h, **kwargs)

        monkeypatch.setattr(stack, "forward", spy)
    return seen


def test_position_offsets_shift_source_and_target_together(monkeypatch):
    model = UniversalTransformer(small_config()).train()
    seen = _spy_positions(model, monkeypatch)
    offsets = torch.tensor([0, 7, 50, 3])
    model(_tokens(4, 6), _tokens(4, 6), position_offset=offsets)
    assert torch.equal(seen["encoder"], seen["decoder"])  # same shift per example
    assert torch.equal(seen["encoder"], offsets[:, None] + torch.arange(6))


def test_position_offsets_per_stack_shift_source_and_target_apart(monkeypatch):
    model = UniversalTransformer(small_config()).eval()
    seen = _spy_positions(model, monkeypatch)
    src, tgt = _tokens(4, 6), _tokens(4, 5)
    pairs = torch.tensor([[0, 9], [7, 7], [50, 1], [3, 30]])
    apart = model(src, tgt, position_offset=pairs).logits
    assert torch.equal(seen["encoder"], pairs[:, :1] + torch.arange(6))
    assert torch.equal(seen["decoder"], pairs[:, 1:] + torch.arange(5))
    # equal columns are the shared offset; unequal ones are not
    shared = model(src, tgt, position_offset=pairs[:, 0]).logits
    torch.testing.assert_close(apart[1], shared[1])
    assert not torch.allclose(apart[0], shared[0])


def test_position_offsets_per_step_give_each_step_its_own_positions():
    """``[B, 2, S]`` offsets: step t of a stack adds the position signal of ``offset[:, stack, t-1] + 0..L-1``
    (float64, against the encoder unrolled by hand)."""
    model = UniversalTransformer(small_config(num_steps=3)).double().eval()
    src, tgt = _tokens(2, 6), _tokens(2, 5)
    offsets = torch.tensor([[[0, 40, 7, 99], [5, 5, 5, 5]], [[3, 1, 250, 0], [0, 60, 2, 9]]])  # [B, 2, S=4]
    enc = model.encode(src, position_offset=offsets[:, 0])
    stack = model.encoder
    h = model.src_embed(src)
    with torch.no_grad():
        for step in range(1, 4):
            x = h + stack.coordinates.position(offsets[:, 0, step - 1, None] + torch.arange(6)) + stack.coordinates.timestep(step)
            h, _ = stack.block(step)(x)
    torch.testing.assert_close(enc.hidden, h)
    # per-step offsets equal at every step are per-stack offsets; a 4th step's offset goes unused
    same = offsets[:, :, :1].expand(-1, -1, 4).clone()
    torch.testing.assert_close(model(src, tgt, position_offset=same).logits, model(src, tgt, position_offset=same[:, :, 0]).logits)
    unused = same.clone()
    unused[:, :, 3] += 17
    torch.testing.assert_close(model(src, tgt, position_offset=unused).logits, model(src, tgt, position_offset=same).logits)
    moved = same.clone()
    moved[:, 1, 2] += 17  # the decoder's third step
    assert not torch.allclose(model(src, tgt, position_offset=moved).logits, model(src, tgt, position_offset=same).logits)
    with pytest.raises(ValueError, match="may run 3 steps"):
        model(src, tgt, position_offset=same[:, :, :2])
    assert model.recurrent_steps == 3


def test_forward_is_a_pure_function_of_inputs_and_weights():
    """No randomness inside the model but dropout: two training-mode passes agree."""
    model = UniversalTransformer(small_config()).train()
    src, tgt, offsets = _tokens(3, 6), _tokens(3, 5), torch.tensor([4, 0, 9])
    a = model(src, tgt, position_offset=offsets).logits
    b = model(src, tgt, position_offset=offsets).logits
    assert torch.equal(a, b)
    assert not torch.allclose(a, model(src, tgt).logits)  # and the offsets do shift the positions


def _restarted(src: torch.Tensor, restart_id: int) -> torch.Tensor:
    """Source positions counted again from 0 after each ``restart_id`` (a plain loop)."""
    rows = []
    for row in src.tolist():
        count, positions = 0, []
        for token in row:
            positions.append(count)
            count = 0 if token == restart_id else count + 1
        rows.append(positions)
    return torch.tensor(rows)


def test_position_restart_counts_source_positions_from_zero_after_the_token(monkeypatch):
    """``position_restart_id``: the source's positions restart after each such token (offsets
    still shift them); the target's are untouched; cached decoding sees the same encoder."""
    model = UniversalTransformer(small_config(position_restart_id=12)).eval()
    seen = _spy_positions(model, monkeypatch)
    src = torch.tensor([[3, 4, 5, 12, 6, 7, 8], [3, 12, 12, 4, 5, 0, 0], [3, 4, 5, 6, 7, 8, 9]])
    tgt = _tokens(3, 5)
    offsets = torch.tensor([0, 9, 300])
    model(src, tgt)
    assert torch.equal(seen["encoder"], _restarted(src, 12))
    assert seen["decoder"] is None
    full = model(src, tgt, position_offset=offsets).logits
    assert torch.equal(seen["encoder"], offsets[:, None] + _restarted(src, 12))
    assert torch.equal(seen["decoder"], offsets[:, None] + torch.arange(5))
    per_step = torch.tensor([[[0, 40], [5, 5]], [[3, 1], [0, 60]], [[7, 7], [2, 9]]])
    model(src, tgt, position_offset=per_step)
    assert torch.equal(seen["encoder"], per_step[:, 0, :, None] + _restarted(src, 12)[:, None])
    monkeypatch.undo()
    state, first = model.prefill(src, tgt[:, :1], position_offset=offsets)
    torch.testing.assert_close(first, full[:, 0])
    # without the token the count never restarts: the model is the plain one
    plain = UniversalTransformer(small_config())
    plain.load_state_dict(model.state_dict())
    row = src[2:]
    torch.testing.assert_close(model(row, tgt[2:]).logits, plain.eval()(row, tgt[2:]).logits)
    assert not torch.allclose(model(src[:1], tgt[:1]).logits, plain(src[:1], tgt[:1]).logits)


def test_position_restart_is_refused_where_it_cannot_apply():
    from universal_transformer.config import ConfigError

    with pytest.raises(ConfigError, match="position_restart_id must be a source token id below vocab_size"):
        small_config(position_restart_id=13)
    with pytest.raises(ConfigError, match="position_embedding is 'none'"):
        small_config(position_restart_id=12, position_embedding="none")
    with pytest.raises(ConfigError, match="UTLanguageModel has no source"):
        UTLanguageModel(small_config(position_restart_id=12))


@pytest.mark.parametrize("model_class", [UTLanguageModel, UTEncoderClassifier, UTStoryQA])
def test_decoder_num_steps_is_refused_by_a_model_without_a_decoder(model_class):
    """A language model, classifier or story model ran num_steps and ignored decoder_num_steps."""
    from universal_transformer.config import ConfigError

    fields = {UTLanguageModel: {}, UTEncoderClassifier: dict(num_classes=3), UTStoryQA: dict(num_classes=3, fact_words=3)}[model_class]
    config = small_config(model_class.config_class, decoder_num_steps=5, **fields)
    with pytest.raises(ConfigError, match="decoder_num_steps sets the depth of an encoder-decoder's decoder"):
        model_class(config)
    assert UniversalTransformer(small_config(decoder_num_steps=5)).decoder.num_steps == 5


@pytest.mark.parametrize("model_class", [UTLanguageModel, UTEncoderClassifier, UTStoryQA, LSTMLanguageModel])
def test_target_vocab_size_is_refused_by_a_model_without_a_decoder(model_class):
    """A one-stack model read vocab_size alone and ignored target_vocab_size."""
    from universal_transformer.config import ConfigError, LSTMConfig

    if model_class is LSTMLanguageModel:
        config = LSTMConfig(vocab_size=13, d_model=8, target_vocab_size=9)
    else:
        fields = {UTLanguageModel: {}, UTEncoderClassifier: dict(num_classes=3),
                  UTStoryQA: dict(num_classes=3, fact_words=3)}[model_class]
        config = small_config(model_class.config_class, target_vocab_size=9, **fields)
    with pytest.raises(ConfigError, match=r"target_vocab_size \(9\) is the vocabulary of an encoder-decoder's decoder"):
        model_class(config)
    assert UniversalTransformer(small_config(target_vocab_size=9)).tgt_embed.weight.shape[0] == 9


@pytest.mark.parametrize("scope", ["all", "source"])
@pytest.mark.parametrize("name", ["ut", "ut-pre-norm", "act-packed", "act-dense", "act-pre-norm", "transformer"])
def test_attention_window_sees_only_keys_within_it_and_decodes_as_it_trains(name, scope):
    """``attention_window``: every attention weight on a key more than the window away (in position
    ids, offsets and restarts included) is zero, in every stack, step and head (scope ``source``:
    but the decoder's self-attention); a window wider than the inputs is no window; cached decoding
    and packed ACT equal the full, dense computation."""
    window = 2
    config = _config(name).replace(attention_window=window, attention_window_scope=scope, position_restart_id=12)
    model = UniversalTransformer(config).eval()
    if name == "act-dense":
        model.configure_runtime(act_packed=False)
    src, tgt = _tokens(3, 9, vocab=12), _tokens(3, 7)
    src[0, 4] = 12
    src[1, 7:] = 0
    offsets = torch.tensor([0, 5, 40])
    with torch.no_grad():
        out = model(src, tgt, position_offset=offsets, need_weights=True)
    source = offsets[:, None] + _restarted(src, 12)
    target = offsets[:, None] + torch.arange(7)
    far = {"encoder": {"self": (source[:, :, None] - source[:, None, :]).abs() > window},
           "decoder": {"self": (target[:, :, None] - target[:, None, :]).abs() > window,
                       "cross": (target[:, :, None] - source[:, None, :]).abs() > window}}
    for stack, steps in out.attentions.items():
        for weights in steps:
            for kind, w in weights.items():
                assert w.shape[-2:] == far[stack][kind].shape[-2:]
                beyond = float(w.masked_select(far[stack][kind][:, None]).abs().max())
                if scope == "source" and (stack, kind) == ("decoder", "self"):
                    assert beyond > 0.0  # the decoder's outputs: every earlier one, however far
                else:
                    assert beyond == 0.0
                assert float(w.masked_select(~far[stack][kind][:, None]).max()) > 0.0
    full = model(src, tgt, position_offset=offsets).logits
    state, first = model.prefill(src, tgt[:, :1], position_offset=offsets)
    torch.testing.assert_close(first, full[:, 0])
    for i in range(1, 7):
        torch.testing.assert_close(model.decode_step(tgt[:, i : i + 1], state)[:, -1], full[:, i], atol=1e-5, rtol=1e-4)
    if name == "act-packed":
        dense = UniversalTransformer(config).eval()
        dense.load_state_dict(model.state_dict())
        dense.configure_runtime(act_packed=False)
        torch.testing.assert_close(dense(src, tgt, position_offset=offsets).logits, full)
    wide = UniversalTransformer(config.replace(attention_window=100)).eval()
    unwindowed = UniversalTransformer(config.replace(attention_window=None)).eval()
    for other in (wide, unwindowed):
        other.load_state_dict(model.state_dict())
        if name == "act-dense":
            other.configure_runtime(act_packed=False)
    torch.testing.assert_close(wide(src, tgt, position_offset=offsets).logits, unwindowed(src, tgt, position_offset=offsets).logits)
    assert not torch.allclose(full, unwindowed(src, tgt, position_offset=offsets).logits)


def test_attention_window_in_a_language_model_equals_the_cached_decoding():
    model = UTLanguageModel(small_config(attention_window=1)).eval()
    tokens = _tokens(2, 8)
    full = model(tokens).logits
    state, first = model.prefill(tokens[:, :3])
    torch.testing.assert_close(first, full[:, 2])
    for i in range(3, 8):
        torch.testing.assert_close(model.decode_step(tokens[:, i : i + 1], state)[:, -1], full[:, i], atol=1e-5, rtol=1e-4)
    plain = UTLanguageModel(small_config()).eval()
    plain.load_state_dict(model.state_dict())
    torch.testing.assert_close(plain(tokens[:, :2]).logits, full[:, :2])  # within the window: the same
    assert not torch.allclose(plain(tokens).logits[:, 2:], full[:, 2:])


def test_attention_window_refusals():
    from universal_transformer.config import ConfigError

    with pytest.raises(ConfigError, match="attention_window must be a number of positions >= 0"):
        small_config(attention_window=-1)
    model = UniversalTransformer(small_config(attention_window=2))
    with pytest.raises(ValueError, match="attention_window needs one set of positions per stack"):
        model(_tokens(2, 5), _tokens(2, 4), position_offset=torch.zeros(2, 2, 2, dtype=torch.long))


def test_a_source_scoped_window_in_a_language_model_is_refused():
    """Scope ``source`` spares a decoder's attention over its own outputs, all a language model has:
    its window would confine nothing, in the config or at test time (``ut eval --attention-window``)."""
    from universal_transformer.config import ConfigError

    with pytest.raises(ConfigError, match="attention_window_scope 'source'.*UTLanguageModel has none"):
        UTLanguageModel(small_config(attention_window=2, attention_window_scope="source"))
    model = UTLanguageModel(small_config())
    model.configure_runtime(attention_window_scope="source")  # no window: nothing to confine, nothing asked
    with pytest.raises(ConfigError, match="attention_window \\(1\\) would confine nothing"):
        model.configure_runtime(attention_window=1)
    model.configure_runtime(attention_window=1, attention_window_scope="all")
    assert model.decoder.self_attention_window == 1


def test_attention_window_at_test_time_is_the_configured_one():
    """``configure_runtime(attention_window=..., attention_window_scope=...)`` gives a model trained
    without a window the function of the same weights built with it; None takes it away again."""
    model = UniversalTransformer(small_config(act=True, act_bias_init=0.0, num_steps=3)).eval()
    built = UniversalTransformer(small_config(act=True, act_bias_init=0.0, num_steps=3, attention_window=1,
                                              attention_window_scope="source")).eval()
    built.load_state_dict(model.state_dict())
    src, tgt = _tokens(2, 8), _tokens(2, 6)
    plain = model(src, tgt).logits
    model.configure_runtime(attention_window=1, attention_window_scope="source")
    torch.testing.assert_close(model(src, tgt).logits, built(src, tgt).logits)
    assert not torch.allclose(model(src, tgt).logits, plain)
    model.configure_runtime(attention_window=None)
    torch.testing.assert_close(model(src, tgt).logits, plain)
    with pytest.raises(ValueError, match="attention_window_scope must be 'all' or 'source'"):
        model.configure_runtime(attention_window_scope="target")
