"""The objective: cross-entropy + ponder cost, against an independent float64 computation."""

from __future__ import annotations

import math

import torch

from universal_transformer import UniversalTransformer
from universal_transformer.modules.recurrence import HaltingStats
from universal_transformer.objective import compute_loss

from .conftest import small_config


def _reference_ce(logits, labels, ignore, smoothing):
    """Label-smoothed cross-entropy, written out in float64 Python arithmetic."""
    total, count = 0.0, 0
    V = logits.shape[-1]
    for row, label in zip(logits.reshape(-1, V).tolist(), labels.reshape(-1).tolist()):
        if label == ignore:
            continue
        m = max(row)
        log_z = m + math.log(sum(math.exp(x - m) for x in row))
        logp = [x - log_z for x in row]
        total += -(1 - smoothing) * logp[label] - smoothing * sum(logp) / V
        count += 1
    return total / count


def _stats(seed):
    g = torch.Generator().manual_seed(seed)
    n = torch.randint(1, 5, (3, 4), generator=g).double()
    r = torch.rand(3, 4, generator=g, dtype=torch.float64)
    padding = torch.tensor([[False] * 4, [False, False, True, True], [False, False, False, True]])
    return HaltingStats(n.masked_fill(padding, 0), r.masked_fill(padding, 0), padding)


def test_loss_equals_float64_reference_and_parts_add_up():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 7, generator=g, dtype=torch.float64)
    labels = torch.randint(1, 7, (3, 5), generator=g)
    labels[1, 3:] = 0  # ignored (padding)
    halting = {"encoder": _stats(1), "decoder": _stats(2)}
    terms = compute_loss(logits, labels, halting, ignore_index=0, label_smoothing=0.1, ponder_weight=0.01)
    ce = _reference_ce(logits, labels, 0, 0.1)
    ponder = 0.0
    for stats in halting.values():
        real = ~stats.padding
        ponder += float((stats.n_updates + stats.remainders)[real].sum()) / int(real.sum())
    assert terms.loss.dtype == torch.float64  # a float64 model's loss is not rounded to float32
    assert abs(float(terms.task_loss) - ce) < 1e-12
    assert abs(float(terms.ponder_cost) - ponder) < 1e-12
    assert abs(float(terms.loss) - (ce + 0.01 * ponder)) < 1e-12

    # Rows split into parts, each normalised by the whole batch's counts, sum to the whole.
    totals = dict(num_targets=int((labels != 0).sum()),
                  positions={k: int((~s.padding).sum()) for k, s in halting.items()})
    parts = []
    for rows in (slice(0, 1), slice(1, 3)):
        part_halting = {k: HaltingStats(s.n_updates[rows], s.remainders[rows], s.padding[rows]) for k, s in halting.items()}
        parts.append(compute_loss(logits[rows], labels[rows], part_halting, ignore_index=0, label_smoothing=0.1,
                                  ponder_weight=0.01, **totals).loss)
    assert abs(float(sum(parts)) - float(terms.loss)) < 1e-12


def test_model_loss_goes_through_the_objective_and_ponder_only_counts_for_act():
    src, tgt = torch.randint(3, 13, (2, 5)), torch.randint(3, 13, (2, 6))
    for act in (False, True):
        model = UniversalTransformer(small_config(act=act, act_bias_init=0.0, ponder_weight=0.5)).double().eval()
        out = model(src, tgt[:, :-1], labels=tgt[:, 1:])
        expected = _reference_ce(out.logits.detach(), tgt[:, 1:], model.config.pad_id, 0.0)
        assert abs(float(out.task_loss) - expected) < 1e-12
        extra = 0.5 * float(out.ponder_cost) if act else 0.0
        assert abs(float(out.loss) - (expected + extra)) < 1e-12
        assert float(out.ponder_cost) >= 2.0  # encoder + decoder, at least one step each
