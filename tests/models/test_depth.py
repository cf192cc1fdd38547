"""Test-time depth: more recurrent steps (or a higher ACT limit) at inference than in training."""

from __future__ import annotations

import pytest
import torch

from universal_transformer import UniversalTransformer, UTLanguageModel, transformer_config
from universal_transformer.generation import generate, generate_uncached

from ..conftest import small_config


def _tokens(b, n):
    return torch.randint(3, 13, (b, n))


def test_depth_runs_more_fixed_steps_and_continues_the_same_recurrence():
    model = UniversalTransformer(small_config(num_steps=2)).eval()
    src, tgt = _tokens(2, 5), _tokens(2, 4)
    with torch.no_grad():
        base = model(src, tgt)
        model.configure_runtime(depth=2)
        same = model(src, tgt)
        model.configure_runtime(depth=5)
        deeper = model(src, tgt)
    torch.testing.assert_close(same.logits, base.logits, atol=0, rtol=0)
    assert torch.all(deeper.halting["encoder"].n_updates == 5) and torch.all(deeper.halting["decoder"].n_updates == 5)
    # step t+1 applies the shared block to step t's state: run the encoder's steps by hand
    enc = model.encoder
    h = model.src_embed(src)
    positions = torch.arange(5).expand(2, -1)
    with torch.no_grad():
        for t in range(1, 6):
            x = h + enc.signal(positions, t)
            h, _ = enc.blocks[0](x, enc.blocks[0].self_kv(x))
        torch.testing.assert_close(model.encode(src).hidden, h, atol=1e-5, rtol=0)


def test_act_limit_is_raised_and_a_learned_timestep_table_repeats_its_last_row():
    cfg = small_config(num_steps=2, act=True, act_bias_init=-8.0, timestep_embedding="learned")
    model = UniversalTransformer(cfg).eval()
    src, tgt = _tokens(2, 5), _tokens(2, 4)
    with torch.no_grad():
        assert torch.all(model(src, tgt).halting["encoder"].n_updates == 4)  # 2 x num_steps, forced halt
        model.configure_runtime(depth=7)
        assert torch.all(model(src, tgt).halting["encoder"].n_updates == 7)
    table = model.encoder.coordinates.timestep_table.weight
    assert torch.equal(model.encoder.coordinates.timestep(7), table[-1])
    assert torch.equal(model.encoder.coordinates.timestep(2), table[1])


@pytest.mark.parametrize("act", [False, True])
def test_cached_decoding_at_a_new_depth_equals_recomputation(act):
    for model, inputs in ((UniversalTransformer(small_config(act=act, act_bias_init=0.0)).eval(), _tokens(3, 6)),
                          (UTLanguageModel(small_config(act=act, act_bias_init=0.0)).eval(), _tokens(3, 4))):
        model.configure_runtime(depth=6)
        tokens = generate(model, inputs, max_new_tokens=8, stop_at_eos=False)
        expected, _ = generate_uncached(model, inputs, max_new_tokens=8)
        assert tokens.tolist() == expected.tolist()


def test_untied_transformer_depth_cannot_change():
    model = UniversalTransformer(transformer_config(vocab_size=13, d_model=16, num_heads=4, d_ff=32, num_steps=3))
    with pytest.raises(ValueError, match="untied stack has 3 layers"):
        model.configure_runtime(depth=5)
    model.configure_runtime(depth=3)  # its own depth is fine


@pytest.mark.parametrize("act", [False, True])
@pytest.mark.parametrize("depth", [0, 2.5, 3.0, True])
def test_a_depth_that_is_not_a_positive_integer_is_refused_at_once(act, depth):
    # A float had been taken and failed only inside the next forward ("'float' object cannot be
    # interpreted as an integer"), and True ran one step.
    model = UTLanguageModel(small_config(act=act))
    with pytest.raises(ValueError, match=f"depth must be a positive number of steps, got {depth!r}"):
        model.configure_runtime(depth=depth)
    assert model(_tokens(1, 3)).logits.shape == (1, 3, 13)  # unchanged, still runs


@pytest.mark.parametrize("name", ["act_packed", "gradient_checkpointing"])
def test_runtime_flags_must_be_booleans(name):
    model = UTLanguageModel(small_config(act=True))
    with pytest.raises(ValueError, match=f"{name} must be True, False or None \\(unchanged\\), got 'no'"):
        model.configure_runtime(**{name: "no"})
    assert not model.decoder.gradient_checkpointing and model.decoder.act_packed  # left as they were


def test_an_act_depth_below_act_min_steps_is_refused():
    # The config refuses act_min_steps above max_steps; a run-time depth had slipped past it,
    # and every position then halted at a step its floor forbids.
    model = UTLanguageModel(small_config(act=True, act_min_steps=3, num_steps=2))
    with pytest.raises(ValueError, match=r"depth 2 is below ACT's floor \(act_min_steps=3\)"):
        model.configure_runtime(depth=2)
    assert model.decoder.policy.max_steps == 4  # unchanged
    model.configure_runtime(depth=3)
    UTLanguageModel(small_config(num_steps=2)).configure_runtime(depth=1)  # no ACT: no floor
