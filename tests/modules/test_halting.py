"""Dynamic halting (ACT) against the paper's Appendix B (Listing 2), and the invariants of the halting loop."""

from __future__ import annotations

from contextlib import contextmanager
from unittest import mock

import pytest
import torch

from universal_transformer import UTConfig
from universal_transformer.config import ConfigError
from universal_transformer.modules import ACTState, RecurrentStack, act_step
from universal_transformer.modules.halting import dynamic_halting
from universal_transformer.modules import packed_act
from universal_transformer.modules.packed_act import packed_dynamic_halting

THRESHOLD = 1.0 - 0.01


def spec_act(ps, padding=None, threshold=THRESHOLD, force_last=False):
    """The per-step update of the paper's Listing 2, transcribed in float64 with its own accumulators.

    ``ps`` is the list of halting probabilities ``[B, L]`` of steps 1..T. Padding
    positions start with halt_prob 1 so that they never count as running. With
    ``force_last``, at step T every running position halts and takes remainder
    ``1 - halt_prob``. Returns one record per step.
    """
    shape = ps[0].shape
    halt_prob = torch.zeros(shape, dtype=torch.float64)
    if padding is not None:
        halt_prob = halt_prob.masked_fill(padding, 1.0)
    remainders = torch.zeros(shape, dtype=torch.float64)
    n_updates = torch.zeros(shape, dtype=torch.float64)
    records = []
    for t, p in enumerate(ps, start=1):
        p = p.to(torch.float64)
        running = (halt_prob < 1).double()
        was_running = running.bool()
        reach = halt_prob + p * running
        new_halted = (reach > threshold).double() * running
        running = (reach <= threshold).double() * running
        if force_last and t == len(ps):
            new_halted = new_halted + running
            running = running * 0
        halt_prob = halt_prob + p * running
        remainders = remainders + new_halted * (1 - halt_prob)
        halt_prob = halt_prob + new_halted * remainders
        n_updates = n_updates + running + new_halted
        w = p * running + new_halted * remainders
        records.append(dict(
            halt_prob=halt_prob.clone(), remainders=remainders.clone(), n_updates=n_updates.clone(),
            w=w, reach=reach, was_running=was_running,
        ))
    return records


def _config(**overrides) -> UTConfig:
    base = dict(
        vocab_size=13, d_model=16, num_heads=4, d_ff=32, num_steps=2,
        dropout=0.0, attention_dropout=0.0, embedding_dropout=0.0, act=True,
    )
    base.update(overrides)
    return UTConfig(**base)


def _stack(seed: int, causal: bool = False, cross: bool = False, packed: bool = True, **overrides) -> RecurrentStack:
    torch.manual_seed(seed)
    stack = RecurrentStack(_config(**overrides), causal=causal, cross_attention=cross).eval()
    stack.act_packed = packed
    return stack


def _loop(stack: RecurrentStack, h, padding, transform, *, packed: bool):
    """The ACT loop with the stack's halting unit and policy, and ``transform(t, x)`` as the
    step (all positions), run dense or packed (rows gathered from it)."""
    positions = torch.arange(h.shape[1]).expand(h.shape[0], -1)
    common = dict(
        policy=stack.policy,
        step_input=lambda state, t: state + stack.signal(positions, t),
        halting=lambda x: stack.halting(x, padding),
    )
    if not packed:
        return dynamic_halting(h, padding, **common, transform=transform)

    def rows_of(t, x, rows, valid, kv):
        out = transform(t, x)
        return out if rows is None else out.gather(1, rows[..., None].expand(-1, -1, out.shape[-1]))

    return packed_dynamic_halting(h, padding, **common, transform_rows=rows_of)


def _inputs(seed: int, B: int = 3, L: int = 6, d: int = 16, pad_every_row: bool = False):
    """Rows 1-2 padded, the others not (so packed ACT's first steps run whole); with
    ``pad_every_row`` every row ends in padding, so that every step of packed ACT packs."""
    torch.manual_seed(seed)
    h = torch.randn(B, L, d)
    padding = torch.zeros(B, L, dtype=torch.bool)
    padding[1, L - 2:] = True
    padding[2, L - 1:] = True
    if pad_every_row:
        padding[:, L - 1:] = True
    return h, padding


@contextmanager
def _count_packed_act_steps():
    """Count packed ACT's steps by kind: ``{"packed": n, "whole": n}`` (whole: some row ran
    every position, so the dense loop's step ran). A packed/dense test whose packed steps are
    all whole ones would not test packing."""
    with mock.patch.object(packed_act, "act_step", wraps=packed_act.act_step) as packed, \
            mock.patch.object(packed_act, "full_width_step", wraps=packed_act.full_width_step) as whole:
        counts: dict[str, int] = {}
        yield counts
        counts.update(packed=packed.call_count, whole=whole.call_count)


def _capture_halting(stack):
    """Record the halting unit's inputs and probabilities at every step."""
    seen = []
    stack.halting.register_forward_hook(lambda mod, args, out: seen.append((args[0].detach(), out.detach())))
    return seen


# -- the per-step update ---------------------------------------------------------------


@pytest.mark.parametrize("force", [False, True])
def test_act_step_equals_spec_transcription(force):
    torch.manual_seed(0)
    B, L, T = 4, 7, 6
    ps = [torch.rand(B, L, dtype=torch.float64) * 0.6 for _ in range(T)]
    ps[0][0, :3] = 0.995  # some halt at the first step
    for p in ps:
        p[1, :2] = 0.05  # some never reach the threshold
    padding = torch.zeros(B, L, dtype=torch.bool)
    padding[3, 5:] = True
    expected = spec_act(ps, padding, force_last=force)

    state = ACTState.start(padding, torch.Size((B, L)), ps[0])
    for t, (p, exp) in enumerate(zip(ps, expected), start=1):
        w, state = act_step(p, state, THRESHOLD, force_halt=force and t == T)
        for name in ("halt_prob", "remainders", "n_updates"):
            torch.testing.assert_close(getattr(state, name), exp[name], atol=1e-12, rtol=0, msg=f"{name} at step {t}")
        torch.testing.assert_close(w, exp["w"], atol=1e-12, rtol=0, msg=f"w at step {t}")
        assert torch.equal(state.halted, ~(exp["halt_prob"] < 1))

    final = expected[-1]
    n = final["n_updates"][~padding]
    assert n.min() == 1 and n.max() == T and len(set(n.tolist())) >= 4  # a spread of halting steps
    total_w = sum(r["w"] for r in expected)
    halted = ~(final["halt_prob"] < 1) & ~padding
    torch.testing.assert_close(total_w[halted], torch.ones(int(halted.sum()), dtype=torch.float64), atol=1e-6, rtol=0)
    assert torch.all(total_w[padding] == 0) and torch.all(final["n_updates"][padding] == 0)
    if force:
        assert bool(halted.sum() == (~padding).sum())
    else:
        assert bool((~halted & ~padding).any())  # without forcing some are still running
        assert torch.all(total_w[~halted & ~padding] < THRESHOLD)


# -- invariants on the real model ------------------------------------------------------


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("causal", [False, True])
def test_model_halting_invariants(packed, causal):
    stack = _stack(1, causal=causal, packed=packed, act_bias_init=0.0)
    h, padding = _inputs(2)
    with torch.no_grad():
        stats = stack(h, padding=padding).halting
    max_steps = stack.config.max_steps
    n, r = stats.n_updates, stats.remainders
    assert torch.all(n <= max_steps)
    assert torch.all(n == n.round())
    assert torch.all(n[padding] == 0) and torch.all(r[padding] == 0)
    ponder = stats.ponder_time[~padding]
    assert torch.all(ponder >= 1) and torch.all(ponder <= max_steps + 1)
    assert torch.all(r[~padding] > 0) and torch.all(r[~padding] <= 1)
    assert len(set(n[~padding].tolist())) > 1


@pytest.mark.parametrize("packed", [True, False])
def test_model_halting_weights_sum_to_one(packed):
    """With ``accumulated`` and a step that returns ones, the output is sum_t w_t."""
    stack = _stack(3, act_type="accumulated", act_bias_init=0.0, act_max_steps=5)
    h, padding = _inputs(4)
    with torch.no_grad():
        hidden, act = _loop(stack, h, padding, lambda t, x: torch.ones_like(x), packed=packed)
    total = hidden[..., 0]
    torch.testing.assert_close(total[~padding], torch.ones(int((~padding).sum())), atol=1e-6, rtol=0)
    assert torch.all(hidden[padding] == 0)
    assert len(set(act.n_updates[~padding].tolist())) > 1


def test_no_forced_halt_with_tiny_p_runs_max_steps():
    stack = _stack(5, act_halt_at_max_steps=False, act_bias_init=-6.0, act_max_steps=4)
    h, padding = _inputs(6)
    with torch.no_grad():
        stats = stack(h, padding=padding).halting
    assert torch.all(stats.n_updates[~padding] == 4)
    assert torch.all(stats.remainders == 0)  # nobody halted, so nobody took a remainder
    assert torch.all(stats.n_updates[padding] == 0)
    # with forcing on, the same weights halt everyone at the last step with remainder ~ 1
    forced = _stack(5, act_halt_at_max_steps=True, act_bias_init=-6.0, act_max_steps=4)
    with torch.no_grad():
        fstats = forced(h, padding=padding).halting
    assert torch.all(fstats.n_updates[~padding] == 4)
    assert torch.all(fstats.remainders[~padding] > 0.8) and torch.all(fstats.remainders[~padding] < 1)


# -- the loop's wiring, with the step replaced by known tensors ------------------------


def _run_known_steps(stack, seed: int, max_steps: int, *, packed: bool, pad_every_row: bool = False):
    """The loop on ``_inputs(seed)`` with step t returning ``R[t-1]`` (drawn with ``seed + 1``).
    Returns padding, R, the output, the accumulators and the halting probabilities the unit gave."""
    h, padding = _inputs(seed, pad_every_row=pad_every_row)
    torch.manual_seed(seed + 1)
    R = [torch.randn_like(h) for _ in range(max_steps)]
    seen = _capture_halting(stack)
    with torch.no_grad():
        hidden, act = _loop(stack, h, padding, lambda t, x: R[t - 1], packed=packed)
    return padding, R, hidden, act, [p for _, p in seen]


def _paper_combination(records, R, accumulated: bool = False):
    """Listing 2's output in float64 from :func:`spec_act`'s weights: the running interpolation
    (``basic``), or the weighted sum (``accumulated``)."""
    expected = torch.zeros_like(R[0], dtype=torch.float64)
    for rec, Rt in zip(records, R):
        w = rec["w"][..., None]
        expected = expected + w * Rt.double() if accumulated else w * Rt.double() + (1 - w) * expected
    return expected


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("act_type", ["basic", "accumulated"])
def test_act_output_is_the_paper_combination_of_states(act_type, packed):
    max_steps = 5
    stack = _stack(7, act_type=act_type, act_bias_init=-0.5, act_max_steps=max_steps)
    padding, R, hidden, act, ps = _run_known_steps(stack, 8, max_steps, packed=packed)
    records = spec_act(ps, padding, force_last=len(ps) == max_steps)
    expected = _paper_combination(records, R, accumulated=act_type == "accumulated")
    torch.testing.assert_close(hidden.double(), expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(act.n_updates.double(), records[-1]["n_updates"], atol=0, rtol=0)
    torch.testing.assert_close(act.remainders.double(), records[-1]["remainders"], atol=1e-6, rtol=0)
    assert len(set(act.n_updates[~padding].tolist())) > 1


@pytest.mark.parametrize("halted_state", ["copy", "transform"])
def test_halted_state_semantics(halted_state):
    """copy: a halted position's state is frozen; transform: it keeps being updated."""
    max_steps = 5
    stack = _stack(10, act_halted_state=halted_state, act_bias_init=-0.5, act_max_steps=max_steps)
    h, padding = _inputs(11)
    torch.manual_seed(12)
    R = [torch.randn_like(h) for _ in range(max_steps)]
    seen = _capture_halting(stack)
    positions = torch.arange(h.shape[1]).expand(h.shape[0], -1)
    with torch.no_grad():
        _, act = _loop(stack, h, padding, lambda t, x: R[t - 1], packed=False)
    n = act.n_updates
    checked = 0
    for t, (x, _) in enumerate(seen, start=1):
        if t == 1:
            continue
        state = x - stack.signal(positions, t)  # the state H^{t-1} each position brings to step t
        for b, i in zip(*torch.nonzero(~padding, as_tuple=True)):
            s = int(n[b, i])
            if s < t - 1:  # halted at step s, before step t-1
                want = R[s - 1] if halted_state == "copy" else R[t - 2]
                torch.testing.assert_close(state[b, i], want[b, i], atol=1e-5, rtol=0)
                checked += 1
    assert checked > 0


def test_packed_loop_refuses_transform_semantics():
    stack = _stack(13, act_halted_state="transform")
    h, padding = _inputs(14)
    with pytest.raises(ValueError, match="copy semantics"):
        _loop(stack, h, padding, lambda t, x: x, packed=True)


# -- gradients ---------------------------------------------------------------------------


@pytest.mark.parametrize("packed", [True, False])
def test_gradcheck_through_act_stack(packed):
    torch.manual_seed(20)
    config = UTConfig(
        vocab_size=13, d_model=8, num_heads=2, d_ff=16, num_steps=2, act_max_steps=3, act=True,
        dropout=0.0, attention_dropout=0.0, embedding_dropout=0.0, act_bias_init=0.3,
    )
    stack = RecurrentStack(config, causal=False, cross_attention=False).double().eval()
    stack.act_packed = packed
    h = torch.randn(2, 4, 8, dtype=torch.float64)
    padding = torch.tensor([[False] * 4, [False, False, False, True]])

    # The halting decisions must be far from the threshold (gradcheck perturbs by 1e-6).
    seen = _capture_halting(stack)
    with torch.no_grad():
        stats = stack(h, padding=padding).halting
    ps = [p for _, p in seen]
    records = spec_act(ps, padding, force_last=len(ps) == 3)
    for rec in records[:-1] if len(ps) == 3 else records:
        running = rec["was_running"]
        assert (rec["reach"][running] - THRESHOLD).abs().min() > 1e-3
    assert len(set(stats.n_updates[~padding].tolist())) > 1
    seen.clear()

    def f(x):
        out = stack(x, padding=padding)
        return out.hidden, out.halting.remainders

    assert torch.autograd.gradcheck(f, (h.clone().requires_grad_(),), eps=1e-6, atol=1e-5, rtol=1e-3, fast_mode=True)


def test_halting_at_the_first_read_step_has_no_gradient():
    """Why a position that halts at step 1 stays there (docs/design.md, Halting): once p_1 passes
    the threshold, N = 1 and R = 1 whatever p_1 is, so neither the output nor the ponder cost
    N + R has a gradient through p_1. One step later (N = 2, R = 1 - p_1) the ponder cost pulls
    p_1 up with slope -1, towards that state, and the output has a gradient."""
    torch.manual_seed(21)
    p1 = torch.tensor([[0.995, 0.6]], dtype=torch.float64, requires_grad=True)
    p2 = torch.tensor([[0.7, 0.7]], dtype=torch.float64)
    states = [torch.randn(1, 2, 3, dtype=torch.float64) for _ in range(2)]
    act = ACTState.start(None, p1.shape, p1)
    out = torch.zeros_like(states[0])
    for p, s in zip((p1, p2), states):
        w, act = act_step(p, act, THRESHOLD)
        out = w[..., None] * s + (1 - w[..., None]) * out  # Listing 2's interpolation
    ponder = act.n_updates + act.remainders
    torch.testing.assert_close(ponder.detach(), torch.tensor([[2.0, 2.4]], dtype=torch.float64))
    (d_ponder,) = torch.autograd.grad(ponder.sum(), p1, retain_graph=True)
    (d_out,) = torch.autograd.grad((out * torch.randn_like(out)).sum(), p1)
    assert d_ponder[0, 0] == 0 and d_out[0, 0] == 0  # halted at step 1: no signal at all
    assert d_ponder[0, 1] == -1 and d_out[0, 1] != 0


# -- act types ----------------------------------------------------------------------------


def test_copy_and_transform_differ_but_both_halt():
    # The two differ only once a position halted at step s is still a key at step t > s + 1.
    copy = _stack(40, act_halted_state="copy", act_bias_init=-1.5, act_max_steps=8)
    transform = RecurrentStack(copy.config.replace(act_halted_state="transform"), causal=False, cross_attention=False).eval()
    transform.load_state_dict(copy.state_dict())
    h, padding = _inputs(41)
    with torch.no_grad():
        a, b = copy(h, padding=padding), transform(h, padding=padding)
    n_real = a.halting.n_updates[~padding]
    assert n_real.max() - n_real.min() >= 2
    assert (a.hidden - b.hidden)[~padding].abs().max() > 1e-3
    for out in (a, b):
        n = out.halting.n_updates
        assert torch.all(n[~padding] >= 1) and torch.all(n <= 8)
        assert torch.all(out.halting.remainders[~padding] > 0)
        assert torch.all(n[padding] == 0)


@pytest.mark.parametrize("packed", [True, False])
def test_global_act_gives_one_halting_step_per_sequence(packed):
    stack = _stack(50, act_type="global", packed=packed, act_bias_init=-0.5, act_max_steps=6)
    h, padding = _inputs(51, B=4, pad_every_row=True)  # every row padded: packed steps from the first
    h[3] *= 3.0  # a different sequence, to vary the halting step between sequences
    with torch.no_grad(), _count_packed_act_steps() as steps:
        stats = stack(h, padding=padding).halting
    assert (steps["packed"] > 0) == packed and steps["whole"] == 0
    for b in range(h.shape[0]):
        real = stats.n_updates[b][~padding[b]]
        assert torch.all(real == real[0]) and real[0] >= 1
        assert torch.all(stats.remainders[b][~padding[b]] == stats.remainders[b][~padding[b]][0])
    assert torch.all(stats.n_updates[padding] == 0)


def test_random_act_runs_and_halts():
    stack = _stack(60, act_type="random", act_max_steps=6)
    h, padding = _inputs(61)
    torch.manual_seed(62)
    with torch.no_grad():
        out = stack(h, padding=padding)
    n, r = out.halting.n_updates, out.halting.remainders
    assert torch.isfinite(out.hidden).all()
    assert torch.all(n[~padding] >= 1) and torch.all(n <= 6)
    assert torch.all(r[~padding] > 0) and torch.all(r[~padding] <= 1)
    assert torch.all(n[padding] == 0) and torch.all(r[padding] == 0)


# -- act_halting_norm: the halting unit reads LayerNorm(step input) ---------------------


@pytest.mark.parametrize("act_type", ["basic", "global"])
def test_halting_norm_is_sigmoid_of_linear_of_layernorm_in_float64(act_type):
    stack = _stack(11, act_type=act_type, act_halting_norm=True, norm="pre")
    unit = stack.halting
    with torch.no_grad():  # make the norm's affine parameters matter
        unit.norm.weight.uniform_(0.5, 1.5)
        unit.norm.bias.uniform_(-0.3, 0.3)
    x, padding = _inputs(12)
    x = 7.0 * x + 3.0
    with torch.no_grad():
        p = unit(x, padding)
    xd = x.double()
    z = (xd - xd.mean(-1, keepdim=True)) / torch.sqrt(xd.var(-1, unbiased=False, keepdim=True) + unit.norm.eps)
    z = z * unit.norm.weight.double() + unit.norm.bias.double()
    if act_type == "global":  # the mean normalised input over each sequence's real positions
        real = (~padding).double()[..., None]
        z = ((z * real).sum(1) / real.sum(1))[:, None, :]
    expected = torch.sigmoid(z @ unit.linear.weight.double().T + unit.linear.bias.double()).squeeze(-1)
    torch.testing.assert_close(p.double(), expected.expand(p.shape), atol=1e-6, rtol=0)


def test_halting_norm_makes_p_independent_of_the_residual_streams_scale():
    """In a pre-norm stack the step input grows with depth; with the norm, p does not follow."""
    x, padding = _inputs(13)
    plain = _stack(14, norm="pre").halting
    normed = _stack(14, norm="pre", act_halting_norm=True).halting
    assert normed.norm is not None and plain.norm is None
    with torch.no_grad():
        torch.testing.assert_close(normed(10 * x, padding), normed(x, padding), atol=1e-5, rtol=0)
        assert (plain(10 * x, padding) - plain(x, padding)).abs().max() > 0.1


def test_halting_norm_round_trips_through_save_and_load(tmp_path):
    from universal_transformer.models.base import from_pretrained
    from universal_transformer.models.transformer import UniversalTransformer

    torch.manual_seed(15)
    model = UniversalTransformer(_config(norm="pre", act_halting_norm=True)).eval()
    assert any(name.endswith("halting.norm.weight") for name, _ in model.named_parameters())
    model.save_pretrained(tmp_path)
    loaded = from_pretrained(tmp_path).eval()
    assert loaded.config.act_halting_norm
    src, tgt = torch.randint(3, 13, (2, 5)), torch.randint(3, 13, (2, 4))
    with torch.no_grad():
        torch.testing.assert_close(loaded(src, tgt).logits, model(src, tgt).logits)


# -- a floor under the depth: act_min_steps ---------------------------------------------


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("min_steps", [2, 3])
def test_min_steps_reads_no_halting_before_its_step(min_steps, packed):
    """Before step ``act_min_steps`` p is 0 (the unit is not read); from it on, Listing 2 as usual."""
    max_steps = 5
    # bias +4: p > 0.5, so that without the floor every position would halt at step 1 or 2
    stack = _stack(11, act_bias_init=4.0, act_max_steps=max_steps, act_min_steps=min_steps)
    with _count_packed_act_steps() as steps:  # every row padded: the floor's steps pack too
        padding, R, hidden, act, read = _run_known_steps(stack, 12, max_steps, packed=packed, pad_every_row=True)
    assert steps["packed"] >= (min_steps if packed else 0) and steps["whole"] == 0
    assert len(read) >= 1 and all(float(p.min()) > 0.5 for p in read)
    ps = [torch.zeros_like(read[0])] * (min_steps - 1) + read
    records = spec_act(ps, padding, force_last=len(ps) == max_steps)
    torch.testing.assert_close(hidden.double(), _paper_combination(records, R), atol=1e-5, rtol=0)
    torch.testing.assert_close(act.n_updates.double(), records[-1]["n_updates"], atol=0, rtol=0)
    n = act.n_updates[~padding]
    assert torch.all(n >= min_steps) and torch.all(n <= min_steps + 1)
    assert torch.all(act.n_updates[padding] == 0)


def test_min_steps_one_is_plain_act_and_the_floor_is_checked():
    h, padding = _inputs(14)
    with torch.no_grad():
        plain = _stack(15, act_bias_init=0.0)(h, padding=padding)
        floor1 = _stack(15, act_bias_init=0.0, act_min_steps=1)(h, padding=padding)
        floor3 = _stack(15, act_bias_init=0.0, act_min_steps=3)(h, padding=padding)
    torch.testing.assert_close(floor1.hidden, plain.hidden, atol=0, rtol=0)
    assert torch.all(floor3.halting.n_updates[~padding] >= 3)
    assert float(plain.halting.n_updates[~padding].min()) < 3
    with pytest.raises(ConfigError, match="act_min_steps"):
        _config(act_max_steps=4, act_min_steps=5)
    with pytest.raises(ConfigError, match="act_min_steps"):
        _config(act_min_steps=0)


@pytest.mark.parametrize("packed", [True, False])
def test_a_floor_per_position_reads_no_halting_before_its_step(packed):
    """``act_floor [B, L]``: p is 0 at a position before its own floor, Listing 2 from it on
    (checked against the float64 transcription with those zeros), in the dense and the packed loop."""
    max_steps = 5
    h, padding = _inputs(18)
    floor = torch.randint(1, max_steps + 1, padding.shape, generator=torch.Generator().manual_seed(19))
    stack = _stack(20, act_bias_init=4.0, act_max_steps=max_steps, packed=packed)  # p > 0.5: halting by step 2
    seen = _capture_halting(stack)
    with torch.no_grad():
        out = stack(h, padding=padding, act_floor=floor)
    read = [p.double() for _, p in seen]
    assert all(float(p.min()) > 0.5 for p in read)
    ps = [p.masked_fill(floor > t, 0.0) for t, p in enumerate(read, start=1)]
    records = spec_act(ps, padding, force_last=len(ps) == max_steps)
    n = out.halting.n_updates
    torch.testing.assert_close(n.double(), records[-1]["n_updates"], atol=0, rtol=0)
    assert torch.all(n[~padding] >= floor[~padding]) and torch.all(n[~padding] <= (floor[~padding] + 1).clamp(max=max_steps))
    assert len({int(v) for v in n[~padding]}) > 2  # the floors, not one depth, set where positions halt
    other = _stack(20, act_bias_init=4.0, act_max_steps=max_steps, packed=not packed)
    with torch.no_grad():
        torch.testing.assert_close(other(h, padding=padding, act_floor=floor).hidden, out.hidden)


def test_a_uniform_floor_is_act_min_steps_and_bad_floors_are_refused():
    h, padding = _inputs(21)
    with torch.no_grad():
        global_floor = _stack(22, act_bias_init=0.0, act_min_steps=3)(h, padding=padding)
        per_position = _stack(22, act_bias_init=0.0)(h, padding=padding, act_floor=torch.full(padding.shape, 3))
    torch.testing.assert_close(per_position.hidden, global_floor.hidden, atol=0, rtol=0)
    with pytest.raises(ValueError, match="act_floor must have shape"):
        _stack(22)(h, padding=padding, act_floor=torch.full((3, 2), 3))
    with pytest.raises(ValueError, match="act=False"):
        _stack(22, act=False)(h, padding=padding, act_floor=torch.full(padding.shape, 3))


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_act_halting_at_its_floor_is_the_fixed_depth_stack(norm, packed):
    """A halting unit saturated at the floor (every p > threshold there, so N = min_steps and
    R = 1 at every position) gives the output of the model without ACT at that depth, with the
    same weights: ACT then adds nothing above its floor (the bAbI mix of tasks 1-3 with a floor
    of 8 trained into exactly this; docs/results.md)."""
    floor = 3
    h, padding = _inputs(16)
    act = _stack(17, act_bias_init=8.0, act_max_steps=6, act_min_steps=floor, norm=norm, packed=packed)
    with torch.no_grad():
        act.halting.linear.weight.zero_()  # p = sigmoid(8) > 1 - 0.01 at every position
    fixed = _stack(17, act=False, num_steps=floor, norm=norm)
    missing, unexpected = fixed.load_state_dict(act.state_dict(), strict=False)
    assert not missing and unexpected and all(k.startswith("halting.") for k in unexpected)
    with torch.no_grad():
        out = act(h, padding=padding)
        reference = fixed(h, padding=padding)
    real = ~padding
    assert torch.all(out.halting.n_updates[real] == floor)
    torch.testing.assert_close(out.halting.remainders[real], torch.ones_like(out.halting.remainders[real]))
    torch.testing.assert_close(out.hidden[real], reference.hidden[real], atol=1e-5, rtol=0)
    # and it stays so: at the first step p is read, neither the output nor N + R depends on it
    out = act(h, padding=padding)
    (out.hidden.sum() + out.halting.ponder_cost).backward()
    assert all(float(p.grad.abs().max()) == 0.0 for p in act.halting.parameters())
