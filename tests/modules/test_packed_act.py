"""Packed ACT (halted positions skipped) equals the dense loop: outputs, statistics, gradients."""

from __future__ import annotations

import pytest
import torch

from universal_transformer.modules import RecurrentStack

from .test_halting import _capture_halting, _count_packed_act_steps, _inputs, _loop, _stack


@pytest.mark.parametrize("pad_every_row", [False, True], ids=["some-row-whole", "every-row-padded"])
@pytest.mark.parametrize("act_type", ["basic", "accumulated", "global"])
def test_packed_loop_equals_dense_loop_on_known_steps(act_type, pad_every_row):
    """The two loops, given the same step (known tensors per step), agree exactly."""
    stack = _stack(70, act_type=act_type, act_bias_init=-0.5, act_max_steps=6)
    h, padding = _inputs(71, pad_every_row=pad_every_row)
    torch.manual_seed(72)
    R = [torch.randn_like(h) for _ in range(6)]
    with torch.no_grad():
        dense = _loop(stack, h, padding, lambda t, x: R[t - 1], packed=False)
        with _count_packed_act_steps() as steps:
            packed = _loop(stack, h, padding, lambda t, x: R[t - 1], packed=True)
    assert steps["packed"] > 0 and (steps["whole"] == 0) == pad_every_row
    torch.testing.assert_close(packed[0], dense[0], atol=1e-6, rtol=0)
    for name in ("n_updates", "remainders", "halted"):
        torch.testing.assert_close(getattr(packed[1], name), getattr(dense[1], name), atol=1e-6, rtol=0)


def test_packed_loop_skips_halted_positions():
    """The packed step is given only running positions: its query width is the most running
    positions of any row, and shrinks as positions halt. While some row still runs whole it is
    given every position instead (``rows`` None: the dense loop's step; packing saves nothing)."""
    stack = _stack(73, act_bias_init=-0.5, act_max_steps=6)
    h, padding = _inputs(74)
    calls = []  # (rows is None, width, running positions given)
    seen = _capture_halting(stack)

    def rows_step(t, x, rows, valid, kv):
        if rows is None:
            assert valid is None
            calls.append((True, x.shape[1], None))
            return x
        calls.append((False, rows.shape[1], int(valid.sum())))
        return x.gather(1, rows[..., None].expand(-1, -1, x.shape[-1]))

    from universal_transformer.modules.packed_act import packed_dynamic_halting

    positions = torch.arange(h.shape[1]).expand(h.shape[0], -1)
    with torch.no_grad():
        _, act = packed_dynamic_halting(
            h, padding, policy=stack.policy, step_input=lambda s, t: s + stack.signal(positions, t),
            halting=lambda x: stack.halting(x, padding), transform_rows=rows_step,
        )
    assert len(seen) == len(calls)
    L = h.shape[1]
    # A position runs steps 1..n_updates: the positions running at step t, per row.
    per_row = [(act.n_updates >= t).sum(1) for t in range(1, len(calls) + 1)]
    whole = [bool(n.max() == L) for n in per_row]
    assert [c[0] for c in calls] == whole
    assert whole[0] and not all(whole), "the test needs a whole step and a packed one"
    packed = [(c, n) for c, n in zip(calls, per_row) if not c[0]]
    for (_, width, given), n in packed:
        assert width == int(n.max()) < L and given == int(n.sum())
    widths = [width for (_, width, _), _ in packed]
    assert widths == sorted(widths, reverse=True) and widths[-1] < widths[0]


@pytest.mark.parametrize("pad_every_row", [False, True], ids=["some-row-whole", "every-row-padded"])
@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("arrangement", ["encoder", "decoder"])
def test_packed_equals_dense(arrangement, norm, pad_every_row):
    """With a row unpadded the first steps run whole (the dense step), then pack; with every
    row padded every step packs, so frozen keys/values start from the first."""
    causal = cross = arrangement == "decoder"
    # pre-norm: its own norm for the halting unit, whose steps then spread here
    norms = dict(norm="pre", act_halting_norm=True) if norm == "pre" else {}
    packed = _stack(30, causal=causal, cross=cross, act_bias_init=-0.5, act_max_steps=6, **norms)
    dense = RecurrentStack(packed.config, causal=causal, cross_attention=cross).eval()
    dense.load_state_dict(packed.state_dict())
    dense.act_packed = False
    assert packed.uses_packed_act() and not dense.uses_packed_act()
    assert not packed.uses_packed_act(need_weights=True)  # attention weights come from the dense loop

    h, padding = _inputs(31, pad_every_row=pad_every_row)
    torch.manual_seed(32)
    kwargs = dict(padding=padding)
    if cross:
        kwargs.update(memory=torch.randn(3, 4, 16), memory_padding=torch.tensor([[False] * 4, [False, False, True, True], [False] * 4]))
    target = torch.randn_like(h)

    results, counts = [], []
    for stack in (packed, dense):
        with _count_packed_act_steps() as steps:
            out = stack(h, **kwargs)
        counts.append(steps)
        loss = (out.hidden * target).sum() + out.halting.ponder_cost
        grads = torch.autograd.grad(loss, list(stack.parameters()), allow_unused=True)
        results.append((out, grads))
    assert counts[0]["packed"] > 0 and (counts[0]["whole"] > 0) != pad_every_row
    assert counts[1] == {"packed": 0, "whole": 0}

    (po, pg), (do, dg) = results
    torch.testing.assert_close(po.hidden, do.hidden, atol=1e-5, rtol=0)
    torch.testing.assert_close(po.halting.n_updates, do.halting.n_updates, atol=0, rtol=0)
    torch.testing.assert_close(po.halting.remainders, do.halting.remainders, atol=1e-5, rtol=0)
    n = po.halting.n_updates[~padding]
    assert len(set(n.tolist())) > 1, "halting steps should be spread"
    names = [name for name, _ in packed.named_parameters()]
    for name, a, b in zip(names, pg, dg):
        assert (a is None) == (b is None), name
        if a is not None:
            torch.testing.assert_close(a, b, atol=1e-5, rtol=0, msg=name)
    assert pg[names.index("halting.linear.weight")].abs().sum() > 0


def test_frozen_key_values_project_only_the_fresh_rows():
    """Keys/values of every position, step after step, equal the block's own projection of the
    step input (float64), while after the first step only the rows updated in the previous step
    are projected (matrix-multiply FLOPs counted)."""
    from torch.utils.flop_counter import FlopCounterMode

    from universal_transformer.modules.packed_act import FrozenKeyValues

    stack = _stack(33).double()
    blk = stack.block(1)
    torch.manual_seed(34)
    B, L, d = 2, 7, 16
    full_projection = 2 * B * L * d * 2 * d
    state = torch.randn(B, L, d, dtype=torch.float64)
    frozen = FrozenKeyValues()
    fresh = None
    for step in range(1, 5):
        time = torch.randn(d, dtype=torch.float64) * 3
        x = state + time
        with torch.no_grad(), FlopCounterMode(display=False) as flops:
            keys, values = frozen(blk, x, time, fresh)
        with torch.no_grad():
            want_keys, want_values = blk.self_kv(x)
        torch.testing.assert_close(keys, want_keys, atol=1e-10, rtol=0)
        torch.testing.assert_close(values, want_values, atol=1e-10, rtol=0)
        if step > 1:  # one row of each sequence and the timestep's term
            assert flops.get_total_flops() < full_projection / 2
        fresh = torch.tensor([[step % L], [(2 * step) % L]])  # one row of each sequence changes
        state = state.scatter(1, fresh[..., None].expand(-1, -1, d), torch.randn(B, 1, d, dtype=torch.float64))
