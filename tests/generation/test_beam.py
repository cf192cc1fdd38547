"""Beam search: exhaustive search on tiny vocabularies, greedy, cache vs recomputation, batching."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import pytest
import torch

from universal_transformer import (
    LSTMConfig,
    LSTMSeq2Seq,
    UniversalTransformer,
    UTLanguageModel,
    generate,
    transformer_config,
)
from universal_transformer.generation import beam as beam_module
from universal_transformer.generation import (
    UncachedDecoder,
    beam_search,
    compute_length_penalty,
    expand_state,
    reorder_state,
)

from ..conftest import small_config

TINY = dict(d_model=16, num_heads=4, d_ff=32, num_steps=2, dropout=0.0, attention_dropout=0.0, embedding_dropout=0.0)
ACT = dict(act=True, act_bias_init=0.0, num_steps=3)
EXACT = dict(rtol=1e-12, atol=1e-12)  # float64: equal up to the rounding of a different summation order


def _model(name: str, vocab: int = 13):
    """Tiny float64 models in eval mode; ``vocab`` tokens including pad 0, bos 1, eos 2.

    The output layer is untied and drawn with unit variance: tiny tied models at their
    initialisation predict one token almost everywhere, and beam choices would not matter.
    """
    if name == "lstm":
        model = LSTMSeq2Seq(LSTMConfig(vocab_size=vocab, d_model=16, num_layers=2, dropout=0.0, tie_embeddings=False))
    elif name == "transformer":
        model = UniversalTransformer(transformer_config(vocab_size=vocab, tie_embeddings=False, **TINY))
    elif name == "lm":
        model = UTLanguageModel(small_config(vocab_size=vocab, tie_embeddings=False))
    else:
        overrides = {"ut": {}, "ut-act": ACT, "ut-sepconv": dict(transition="sepconv"),
                     "ut-act-sepconv": dict(ACT, transition="sepconv"),
                     "ut-sepconv-t2t-nopos": dict(transition="sepconv_t2t", position_embedding="none")}[name]
        model = UniversalTransformer(small_config(vocab_size=vocab, tie_embeddings=False, **overrides))
    with torch.no_grad():
        model.output.weight.normal_()
    return model.double().eval()


def _inputs(b: int, n: int, vocab: int) -> torch.Tensor:
    return torch.randint(3, vocab, (b, n))


@dataclass
class Scored:
    tokens: list[int]
    score: float
    log_prob: float
    token_log_probs: list[float]


def _teacher_forced(model, row: torch.Tensor, outputs: list[list[int]]) -> list[list[float]]:
    """Per-token log-probs of ``outputs`` (each followed by eos) from one full forward pass each
    length group, no cache: the model's log_softmax over the whole vocabulary."""
    cfg = model.config
    result: dict[tuple[int, ...], list[float]] = {}
    for length, group in itertools.groupby(sorted(outputs, key=len), key=len):
        group = list(group)
        seqs = torch.tensor(group, dtype=torch.long).view(len(group), length)
        labels = torch.cat((seqs, torch.full((len(seqs), 1), cfg.eos_id)), dim=1)
        with torch.no_grad():
            if getattr(model, "is_encoder_decoder", False):
                tgt_in = torch.cat((torch.full((len(seqs), 1), cfg.bos_id), seqs), dim=1)
                logits = model(row.expand(len(seqs), -1), tgt_in).logits
            else:
                tokens = torch.cat((row.expand(len(seqs), -1), seqs), dim=1)
                logits = model(tokens).logits[:, row.shape[0] - 1 :]
        lps = logits.log_softmax(-1).gather(2, labels[..., None]).squeeze(-1)
        for seq, lp in zip(seqs.tolist(), lps.tolist()):
            result[tuple(seq)] = lp
    return [result[tuple(o)] for o in outputs]


def _exhaustive(model, row: torch.Tensor, max_len: int, alpha: float, kind: str = "gnmt") -> list[Scored]:
    """Every output of at most ``max_len`` tokens (no pad, no eos inside), best first."""
    cfg = model.config
    alphabet = [v for v in range(cfg.vocab_size) if v not in (cfg.pad_id, cfg.eos_id)]
    outputs = [list(s) for n in range(max_len + 1) for s in itertools.product(alphabet, repeat=n)]
    scored = []
    for out, lps in zip(outputs, _teacher_forced(model, row, outputs)):
        total = math.fsum(lps)
        length = len(lps)  # the tokens and the eos
        scored.append(Scored(out, total / (((5 + length) / 6) if kind == "gnmt" else length) ** alpha, total, lps))
    return sorted(scored, key=lambda s: -s.score)


def _assert_same_hypotheses(got, expected, tol: float = 1e-12) -> None:
    assert [h.tokens for h in got] == [e.tokens for e in expected]
    for h, e in zip(got, expected):
        assert math.isclose(h.score, e.score, rel_tol=tol, abs_tol=tol), (h.tokens, h.score, e.score)
        assert math.isclose(h.log_prob, e.log_prob, rel_tol=tol, abs_tol=tol)
        torch.testing.assert_close(torch.tensor(h.token_log_probs), torch.tensor(e.token_log_probs), rtol=tol, atol=tol)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
@pytest.mark.parametrize("name", ["ut", "ut-act", "transformer", "lstm", "lm"])
def test_wide_beam_equals_exhaustive_search(name, alpha):
    # vocab 5 = pad, bos, eos and two more: outputs over {bos, 3, 4} of at most 3 tokens, 40 in all
    model = _model(name, vocab=5)
    src = _inputs(2, 4, 5)
    expected = [_exhaustive(model, row, 3, alpha) for row in src]
    assert len(expected[0]) == 40
    out = beam_search(model, src, beam_size=40, nbest=40, max_new_tokens=3, length_penalty=alpha, early_stopping=False)
    for got, exp in zip(out.hypotheses, expected):
        _assert_same_hypotheses(got, exp)
    assert len({round(e.score, 9) for e in expected[0]}) == 40  # no ties: the order is well defined


@pytest.mark.parametrize("kind", ["gnmt", "plain"])
def test_strong_length_penalty_reorders_the_exhaustive_list(kind):
    model = _model("ut", vocab=5)
    src = _inputs(1, 4, 5)
    unpenalised, penalised = _exhaustive(model, src[0], 3, 0.0), _exhaustive(model, src[0], 3, 2.0, kind)
    assert [h.tokens for h in unpenalised] != [h.tokens for h in penalised]
    out = beam_search(model, src, beam_size=40, nbest=40, max_new_tokens=3, length_penalty=2.0,
                      length_penalty_kind=kind, early_stopping=False)  # type: ignore[arg-type]
    _assert_same_hypotheses(out.hypotheses[0], penalised)


def test_length_penalty_values():
    assert compute_length_penalty(7, 0.6) == pytest.approx((12 / 6) ** 0.6, rel=1e-15)
    assert compute_length_penalty(7, 0.6, "plain") == pytest.approx(7**0.6, rel=1e-15)
    assert compute_length_penalty(3, 0.0) == 1.0
    torch.testing.assert_close(compute_length_penalty(torch.tensor([1.0, 7.0]), 1.0), torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="length_penalty_kind must be one of"):
        compute_length_penalty(3, 1.0, "log")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["ut", "ut-act", "transformer", "lstm", "lm"])
def test_beam_size_one_is_greedy(name):
    model = _model(name)
    src = _inputs(4, 6, 13)
    produced = set(generate(model, src, max_new_tokens=8, eos_id=-1, stop_at_eos=False).flatten().tolist())
    lengths = set()
    # as end token: each token greedy produces (rows end at once or later) and one it never does (no row ends)
    for eos in sorted(produced) + [min(set(range(2, 13)) - produced)]:
        greedy = generate(model, src, max_new_tokens=8, eos_id=eos).tolist()
        out = beam_search(model, src, beam_size=1, max_new_tokens=8, eos_id=eos, length_penalty=1.0)
        for row, hyp in zip(greedy, out.best):
            n = row.index(eos) if eos in row else len(row)
            assert hyp.tokens == row[:n]
            lengths.add(n)
    assert 0 in lengths and 8 in lengths


@pytest.mark.parametrize("name", ["ut", "ut-act", "ut-sepconv", "ut-act-sepconv", "ut-sepconv-t2t-nopos", "transformer",
                                  "lstm", "lm"])
@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_cached_beam_search_equals_recomputation(name, alpha):
    model = _model(name)
    src = _inputs(3, 6, 13)
    if name != "lm":
        src[1, 4:] = 0  # a padded source row
    kwargs = dict(beam_size=3, nbest=3, max_new_tokens=7, length_penalty=alpha)
    cached = beam_search(model, src, **kwargs)
    uncached = beam_search(UncachedDecoder(model), src, **kwargs)
    for got, exp in zip(cached.hypotheses, uncached.hypotheses):
        assert len(got) == 3
        _assert_same_hypotheses(got, exp)


@pytest.mark.parametrize("name", ["ut", "ut-act", "transformer", "lstm"])
def test_batched_sentences_equal_each_alone(name):
    model = _model(name)
    lengths = [6, 3, 5, 2]
    src = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for i, n in enumerate(lengths):
        src[i, :n] = _inputs(1, n, 13)
    kwargs = dict(beam_size=3, nbest=2, max_length_a=1.0, max_length_b=2)
    batched = beam_search(model, src, **kwargs)
    for i, n in enumerate(lengths):
        alone = beam_search(model, src[i : i + 1, :n], **kwargs)
        _assert_same_hypotheses(batched.hypotheses[i], alone.hypotheses[0], tol=1e-10)


def test_max_length_follows_each_sources_real_length():
    model = _model("ut")
    lengths = [2, 4, 6]
    src = torch.zeros(3, 6, dtype=torch.long)
    for i, n in enumerate(lengths):
        src[i, :n] = _inputs(1, n, 13)
    # eos 12 is unlikely for this model: the best hypotheses run to each row's limit
    out = beam_search(model, src, beam_size=3, nbest=3, max_length_a=0.5, max_length_b=1, eos_id=12)
    for n, hyps in zip(lengths, out.hypotheses):
        assert max(len(h.tokens) for h in hyps) == int(0.5 * n + 1)


def test_min_length_nbest_and_order():
    model = _model("ut")
    src = _inputs(2, 5, 13)
    eos = int(generate(model, src, max_new_tokens=1)[0, 0])  # the most likely first token
    free = beam_search(model, src, beam_size=4, nbest=4, max_new_tokens=6, eos_id=eos)
    assert free.best[0].tokens == []  # without min_length the first row ends at once
    out = beam_search(model, src, beam_size=4, nbest=4, max_new_tokens=6, min_length=3, eos_id=eos)
    for hyps in out.hypotheses:
        assert len(hyps) == 4
        assert len({tuple(h.tokens) for h in hyps}) == 4
        assert all(3 <= len(h.tokens) <= 6 and eos not in h.tokens and 0 not in h.tokens for h in hyps)
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        assert all(len(h.token_log_probs) == len(h.tokens) + 1 for h in hyps)
    tokens = out.best_tokens(pad_id=0, eos_id=eos)
    for row, hyp in zip(tokens.tolist(), out.best):
        assert row[: len(hyp.tokens) + 1] == hyp.tokens + [eos] and set(row[len(hyp.tokens) + 1 :]) <= {0}


@pytest.mark.parametrize("alpha", [0.0, 2.0])
def test_exact_early_stopping_changes_nothing_and_saves_steps(monkeypatch, alpha):
    model = _model("ut")
    src = _inputs(3, 5, 13)
    eos = int(generate(model, src, max_new_tokens=3)[0, 2])  # make ending likely, so that the bound bites
    kwargs = dict(beam_size=4, nbest=2, max_new_tokens=12, length_penalty=alpha, early_stopping=False, eos_id=eos)
    calls = {"n": 0}
    step = model.decode_step

    def counting_step(tokens, state):
        calls["n"] += 1
        return step(tokens, state)

    monkeypatch.setattr(model, "decode_step", counting_step)
    stopped = beam_search(model, src, **kwargs)
    early_calls = calls["n"]
    # A reference that stops a sentence only when no live beam is left (at the maximum length).
    monkeypatch.setattr(beam_module, "_done", lambda best_live, *args: [x == -math.inf for x in best_live])
    calls["n"] = 0
    full = beam_search(model, src, **kwargs)
    for got, exp in zip(stopped.hypotheses, full.hypotheses):
        _assert_same_hypotheses(got, exp, tol=0.0)
    assert calls["n"] == 1 + 12  # (prefill feeds bos through decode_step)
    if alpha == 0.0:  # a penalty favouring length makes the bound loose: it never stops then
        assert early_calls < 1 + 12


def test_bad_arguments():
    model = _model("ut")
    src = _inputs(2, 4, 13)
    cases = [
        (dict(beam_size=0, max_new_tokens=3), "beam_size must be >= 1, got 0"),
        (dict(beam_size=2, nbest=3, max_new_tokens=3), r"nbest must be between 1 and beam_size \(2\), got 3"),
        (dict(beam_size=2, nbest=0, max_new_tokens=3), "nbest must be between"),
        (dict(beam_size=2), "give max_new_tokens, or max_length_b"),
        (dict(beam_size=2, max_new_tokens=3, max_length_b=2), "either max_new_tokens or max_length_a/max_length_b"),
        (dict(beam_size=2, max_new_tokens=3, min_length=4), r"length \(3 for some row\) is below min_length \(4\)"),
        (dict(beam_size=2, max_new_tokens=3, min_length=-1), "min_length must be >= 0"),
        (dict(beam_size=2, max_new_tokens=3, length_penalty_kind="log"), "length_penalty_kind must be one of"),
        (dict(beam_size=2, max_new_tokens=3, eos_id=0), r"eos_id \(0\) must differ from pad_id"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            beam_search(model, src, **kwargs)
    with pytest.raises(ValueError, match=r"inputs must be \[batch, length\]"):
        beam_search(model, src[0], beam_size=2, max_new_tokens=3)


@pytest.mark.parametrize("name", ["ut-act-sepconv", "lstm", "lm"])
def test_expanded_state_decodes_like_repeated_inputs(name):
    model = _model(name)
    src, tgt = _inputs(2, 5, 13), _inputs(6, 3, 13)
    with torch.no_grad():
        state, first = model.prefill(src)
        expand_state(state, 2, 3)
        ref_state, ref_first = model.prefill(src.repeat_interleave(3, dim=0))
        torch.testing.assert_close(first.repeat_interleave(3, dim=0), ref_first, **EXACT)
        torch.testing.assert_close(model.decode_step(tgt, state), model.decode_step(tgt, ref_state), **EXACT)
        # keep rows 5, 0, 0 (in that order): as if those rows had been decoded from the start
        index = torch.tensor([5, 0, 0])
        reorder_state(state, index)
        ref_state, _ = model.prefill(src[index // 3])
        model.decode_step(tgt[index], ref_state)
        nxt = _inputs(3, 1, 13)
        torch.testing.assert_close(model.decode_step(nxt, state), model.decode_step(nxt, ref_state), **EXACT)


def test_reorder_state_refuses_unknown_fields():
    @dataclass
    class Odd:
        rows: list

    with pytest.raises(TypeError, match="cannot reorder field 'rows' \\(list\\) of Odd"):
        reorder_state(Odd([1, 2]), torch.tensor([0]))
    with pytest.raises(TypeError, match="give it a reorder"):
        reorder_state(object(), torch.tensor([0]))


@dataclass
class _Written:
    length: torch.Tensor  # [B] tokens written so far


class ConfidentCopier(torch.nn.Module):
    """A decoder sure of its output, like a learnt copy: token 3 with probability 0.999 for
    six tokens, then eos; the unlikely alternatives rank eos first (0.0006), then 4, then bos."""

    def __init__(self) -> None:
        super().__init__()
        self.config = type("Config", (), {"pad_id": 0, "bos_id": 1, "eos_id": 2})()

    def _logits(self, length: torch.Tensor) -> torch.Tensor:
        writing = torch.tensor([1e-9, 1e-4, 6e-4, 0.999, 3e-4]).log()
        ending = torch.tensor([1e-9, 1e-4, 0.999, 6e-4, 3e-4]).log()
        return torch.where((length < 6)[:, None], writing, ending)

    def prefill(self, inputs: torch.Tensor):
        state = _Written(torch.zeros(inputs.shape[0], dtype=torch.long))
        return state, self._logits(state.length)

    def decode_step(self, tokens: torch.Tensor, state: _Written) -> torch.Tensor:
        state.length = state.length + 1
        return self._logits(state.length)[:, None]


@pytest.mark.parametrize("beam_size", [2, 4])
def test_early_stopping_waits_for_a_live_hypothesis_more_likely_than_every_ending(beam_size):
    """The unlikely beams end first (eos is their best extension) and fill the finished list
    while the likely hypothesis is still being written: stopping then (fairseq's rule) would
    return an unlikely ending; the search must go on until the likely one has ended."""
    model, src = ConfidentCopier(), torch.ones(3, 4, dtype=torch.long)
    greedy = generate(model, src, max_new_tokens=10)
    assert greedy[0].tolist() == [3] * 6 + [2] + [0] * (greedy.shape[1] - 7)
    for alpha in (0.0, 0.6):
        early = beam_search(model, src, beam_size=beam_size, max_new_tokens=10, length_penalty=alpha)
        exact = beam_search(model, src, beam_size=beam_size, max_new_tokens=10, length_penalty=alpha,
                            early_stopping=False)
        assert [h.tokens for h in early.best] == [h.tokens for h in exact.best] == [[3] * 6] * 3
        assert early.best[0].log_prob == pytest.approx(7 * math.log(0.999))
