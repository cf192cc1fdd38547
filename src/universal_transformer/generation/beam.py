"""Beam search with length penalty, batched over sentences and beams, on the key/value cache.

Works for every :class:`~.protocol.Decoder`. The conventions, fixed here once:

* **Lengths** count generated tokens without ``bos`` and without the final ``eos``:
  ``min_length`` and the maximum length bound the number of tokens before ``eos``.
  Once a hypothesis holds the maximum number of tokens, ``eos`` is forced, so every
  returned hypothesis has ended with ``eos``.
* **Outputs** (:class:`Hypothesis`) hold the tokens without ``eos``, the sum of the
  model's log-probabilities of every predicted token *including* that ``eos``
  (``log_prob``, with the per-token values in ``token_log_probs``), and the ``score``
  ``log_prob / lp(len(tokens) + 1)``, the length counting the ``eos`` because its
  probability is in the sum. ``lp`` is GNMT's ``((5 + |Y|) / 6) ** alpha`` (Wu et al.
  2016, eq. 14; ``alpha = 0.6`` as for the Transformer of Vaswani et al. 2017) or plainly
  ``|Y| ** alpha``; ``alpha = 0`` ranks by total log-probability.
* **Log-probabilities** are the model's own (``log_softmax`` of its logits over the whole
  vocabulary): the restrictions (``pad`` never, ``eos`` not before ``min_length``,
  only ``eos`` at the maximum length) remove candidates but do not renormalise.
* **Search** (as in fairseq; Ott et al. 2019): each step ranks the ``beam_size * V``
  extensions of a sentence's live hypotheses and looks at the best ``2 * beam_size``.
  ``eos`` extensions among the best ``beam_size`` of them finish (join the sentence's
  finished list); the best ``beam_size`` extensions that are not ``eos`` become the new
  live hypotheses. Sentences whose search is over leave the batch.
* **Stopping**. A sentence is always done when it has no live hypothesis left, or when
  none can still enter its n-best list: it has ``nbest`` finished hypotheses and the best
  live one, even if every further token had probability 1 and it ended at the length
  the penalty favours most, would not score above the ``nbest``-th (log-probabilities
  only fall as tokens are added, so this bound is exact: the tensor2tensor criterion).
  ``early_stopping=True`` (the default) also ends a sentence once ``beam_size``
  hypotheses have finished, every beam having ended once (fairseq's rule; faster, and
  what makes ``beam_size=1`` identical to greedy decoding), *provided that* no live
  hypothesis has a higher log-probability than the best finished one. fairseq stops
  without that proviso; then, when the model is confident (a small vocabulary, a
  learnt copy), the unlikely extensions of the other beams end first and fill the
  finished list while the likely hypothesis is still being written, and the search
  returns an unlikely one (a Learning-to-Execute Copy model, greedy 0.996 sequence
  accuracy, fell to 0.43 with 4 beams). With ``early_stopping=False`` the result is
  exactly that of running every beam to the maximum length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal, get_args

import torch
from torch import Tensor

from .decoding import check_max_new_tokens
from .protocol import Decoder, check_decoder, check_eos, eval_mode, expand_state, reorder_state

LengthPenaltyKind = Literal["gnmt", "plain"]


def compute_length_penalty(length: Tensor | int, alpha: float, kind: LengthPenaltyKind = "gnmt") -> Tensor | float:
    """The divisor ``lp(|Y|)`` of a hypothesis' log-probability: ``((5 + |Y|) / 6) ** alpha``
    (``"gnmt"``, Wu et al. 2016) or ``|Y| ** alpha`` (``"plain"``); ``|Y|`` counts the ``eos``."""
    if kind == "gnmt":
        return ((5 + length) / 6) ** alpha
    if kind == "plain":
        return length**alpha
    raise ValueError(f"length_penalty_kind must be one of {get_args(LengthPenaltyKind)}, got {kind!r}")


@dataclass
class Hypothesis:
    """One finished output of beam search (see the module docstring for the conventions)."""

    tokens: list[int]  # generated tokens, without bos and without the final eos
    score: float  # log_prob / lp(len(tokens) + 1): what beam search ranks by
    log_prob: float  # sum of token_log_probs
    token_log_probs: list[float]  # len(tokens) + 1 values, the last one the eos's


@dataclass
class BeamSearchOutput:
    """Per input row, up to ``nbest`` hypotheses, best (highest score) first."""

    hypotheses: list[list[Hypothesis]]

    @property
    def best(self) -> list[Hypothesis]:
        """The best hypothesis of every input row."""
        return [hyps[0] for hyps in self.hypotheses]

    def best_tokens(self, pad_id: int, eos_id: int | None = None) -> Tensor:
        """The best hypotheses as a ``[B, n]`` long tensor padded with ``pad_id``, each
        followed by ``eos_id`` if given (the layout :func:`~.decoding.generate` returns)."""
        rows = [h.tokens + ([] if eos_id is None else [eos_id]) for h in self.best]
        out = torch.full((len(rows), max(map(len, rows), default=0)), pad_id, dtype=torch.long)
        for i, row in enumerate(rows):
            out[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        return out


@torch.inference_mode()
def beam_search(
    model: Decoder,
    inputs: Tensor,
    *,
    beam_size: int = 4,
    max_new_tokens: int | None = None,
    max_length_a: float = 0.0,
    max_length_b: int | None = None,
    min_length: int = 0,
    length_penalty: float = 0.6,
    length_penalty_kind: LengthPenaltyKind = "gnmt",
    early_stopping: bool = True,
    nbest: int = 1,
    eos_id: int | None = None,
) -> BeamSearchOutput:
    """Beam search over ``inputs [B, L]`` (sources of an encoder-decoder, prompts of a
    language model); every row is searched independently, all in one batch.

    The maximum output length (tokens before ``eos``) is ``max_new_tokens``, or, per row,
    ``int(max_length_a * n + max_length_b)`` with ``n`` the row's number of non-``pad``
    tokens (give one or the other). ``min_length`` is the fewest tokens before ``eos``.
    ``length_penalty`` is ``alpha`` of :func:`compute_length_penalty`;
    ``early_stopping`` is described in the module docstring. ``eos_id`` overrides the
    config's.
    """
    config = model.config
    eos = config.eos_id if eos_id is None else eos_id
    check_decoder(model, eos)
    max_lengths = _max_lengths(inputs, config.pad_id, max_new_tokens, max_length_a, max_length_b)
    _check_arguments(beam_size, nbest, min_length, length_penalty_kind, max_lengths)
    k = beam_size
    batch = inputs.shape[0]
    if batch == 0:
        return BeamSearchOutput([])
    finished: list[list[Hypothesis]] = [[] for _ in range(batch)]
    n_finished = [0] * batch

    def penalty(length: int) -> float:
        return float(compute_length_penalty(length, length_penalty, length_penalty_kind))

    with eval_mode(model):
        state, logits = model.prefill(inputs)
        check_eos(eos, logits.shape[-1])
        expand_state(state, batch, k, inputs.device)
        logits = logits.repeat_interleave(k, dim=0)
        dtype = torch.promote_types(logits.dtype, torch.float32)
        beams = _Beams.start(batch, k, max_lengths, dtype, logits.device)
        not_eos = torch.arange(logits.shape[-1], device=logits.device) != eos

        for t in range(max(max_lengths) + 1):
            logp = logits.to(dtype).log_softmax(-1).view(len(beams.sentences), k, -1)
            logp[..., config.pad_id] = -math.inf
            if t < min_length:
                logp[..., eos] = -math.inf
            logp = logp.masked_fill((beams.limits == t)[:, None, None] & not_eos, -math.inf)  # force eos at the limit

            parent, token, top_lp = _best_extensions(beams.log_prob, logp)
            is_eos = token == eos
            # eos extensions among the best k finish
            ends = (is_eos[:, :k] & (top_lp[:, :k] > -math.inf)).nonzero()
            if len(ends):
                a, r = ends[:, 0], ends[:, 1]
                for row, hyp in beams.finish(a, parent[a, r], top_lp[a, r], logp[..., eos], penalty(t + 1)):
                    finished[row].append(hyp)
                    n_finished[row] += 1
                for row in {beams.sentences[i] for i in a.tolist()}:
                    finished[row] = sorted(finished[row], key=lambda h: -h.score)[:k]  # stable: ties keep finding order

            # The best k extensions that are not eos live on (at most k of the 2k are eos).
            keep = is_eos.to(torch.int8).argsort(dim=1, stable=True)[:, :k]
            parent, token, top_lp = parent.gather(1, keep), token.gather(1, keep), top_lp.gather(1, keep)
            done = _done(
                top_lp[:, 0].tolist(), [finished[s] for s in beams.sentences], [n_finished[s] for s in beams.sentences],
                beams.limits.tolist(), t, nbest, k if early_stopping else None, penalty,
            )
            if all(done):
                break
            going = torch.tensor([not d for d in done], device=logits.device).nonzero().squeeze(1)
            rows = beams.advance(going, parent, token, top_lp, logp)
            if not torch.equal(rows, torch.arange(len(done) * k, device=rows.device)):
                reorder_state(state, rows)
            logits = model.decode_step(beams.history[:, :, -1].reshape(-1, 1), state)[:, -1]

    return BeamSearchOutput([hyps[:nbest] for hyps in finished])


def _best_extensions(beam_lp: Tensor, logp: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The best ``2k`` of the ``k * V`` one-token extensions of each sentence's ``k`` beams,
    best first: their parent beam, token and total log-prob, each ``[A, 2k]``."""
    active, k, vocab = logp.shape
    top_lp, top = (beam_lp[..., None] + logp).view(active, k * vocab).topk(min(2 * k, k * vocab), dim=1)
    return top // vocab, top % vocab, top_lp


@dataclass
class _Beams:
    """The live hypotheses of the sentences still being searched (``A`` of them, ``k`` beams each)."""

    sentences: list[int]  # the input row of each active sentence
    limits: Tensor  # [A] maximum number of tokens before eos
    log_prob: Tensor  # [A, k] total log-prob; -inf for beams that hold nothing
    history: Tensor  # [A, k, t] tokens so far
    history_lp: Tensor  # [A, k, t] their log-probs

    @classmethod
    def start(cls, batch: int, k: int, limits: list[int], dtype: torch.dtype, device: torch.device) -> "_Beams":
        # Only the first beam is live at the start: the others are copies of it.
        log_prob = torch.full((batch, k), -math.inf, dtype=dtype, device=device)
        log_prob[:, 0] = 0.0
        empty = torch.zeros((batch, k, 0), dtype=torch.long, device=device)
        return cls(list(range(batch)), torch.tensor(limits, device=device), log_prob, empty, empty.to(dtype))

    def finish(
        self, sentence: Tensor, parent: Tensor, total: Tensor, eos_lp: Tensor, penalty: float
    ) -> list[tuple[int, Hypothesis]]:
        """Hypotheses ending with eos now: beam ``parent`` of active sentence ``sentence`` + eos."""
        tokens = self.history[sentence, parent].tolist()
        lps = torch.cat((self.history_lp[sentence, parent], eos_lp[sentence, parent][:, None]), dim=1).tolist()
        return [
            (self.sentences[a], Hypothesis(toks, lp_sum / penalty, lp_sum, lp))
            for a, toks, lp, lp_sum in zip(sentence.tolist(), tokens, lps, total.tolist())
        ]

    def advance(self, going: Tensor, parent: Tensor, token: Tensor, total: Tensor, logp: Tensor) -> Tensor:
        """Keep the sentences ``going``, their beams extended by ``token`` from ``parent``;
        returns the decoder state rows to keep, in order."""
        active, k, t = self.history.shape
        rows = (going[:, None] * k + parent[going]).view(-1)
        new = token[going].view(-1, 1)
        step_lp = logp.view(active * k, -1)[rows].gather(1, new)
        self.history = torch.cat((self.history.view(active * k, t)[rows], new), dim=1).view(-1, k, t + 1)
        self.history_lp = torch.cat((self.history_lp.view(active * k, t)[rows], step_lp), dim=1).view(-1, k, t + 1)
        self.log_prob = total[going]
        self.limits = self.limits[going]
        self.sentences = [self.sentences[a] for a in going.tolist()]
        return rows


def _done(
    best_live: list[float],
    finished: list[list[Hypothesis]],
    n_finished: list[int],
    limits: list[int],
    t: int,
    nbest: int,
    finish_count: int | None,
    penalty: Callable[[int], float],
) -> list[bool]:
    """Which active sentences are done after step ``t`` (module docstring, "Stopping")."""
    done = []
    for live, hyps, count, limit in zip(best_live, finished, n_finished, limits):
        if live == -math.inf:
            done.append(True)
            continue
        # Early stopping: every beam has ended once, and nothing live is more likely than the best ending.
        if finish_count is not None and count >= finish_count and live <= max(h.log_prob for h in hyps):
            done.append(True)
            continue
        # A live hypothesis holds t + 1 tokens: it can end with eos at lengths t + 2 .. limit + 1.
        bound = live / max(penalty(t + 2), penalty(limit + 1))
        done.append(len(hyps) >= nbest and bound <= hyps[nbest - 1].score)
    return done


def _max_lengths(
    inputs: Tensor, pad_id: int, max_new_tokens: int | None, a: float, b: int | None
) -> list[int]:
    """Each row's maximum number of tokens before eos."""
    if inputs.dim() != 2:
        raise ValueError(f"inputs must be [batch, length] token ids, got shape {tuple(inputs.shape)}")
    if max_new_tokens is not None:
        if b is not None or a != 0.0:
            raise ValueError("give either max_new_tokens or max_length_a/max_length_b, not both")
        check_max_new_tokens(max_new_tokens)
        a, b = 0.0, max_new_tokens
    if b is None:
        raise ValueError("give max_new_tokens, or max_length_b (and max_length_a): the maximum output length")
    lengths = (inputs != pad_id).sum(1).tolist()
    return [int(a * n + b) for n in lengths]


def _check_arguments(beam_size: int, nbest: int, min_length: int, kind: str, max_lengths: list[int]) -> None:
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}")
    if not 1 <= nbest <= beam_size:
        raise ValueError(f"nbest must be between 1 and beam_size ({beam_size}), got {nbest}")
    if min_length < 0:
        raise ValueError(f"min_length must be >= 0, got {min_length}")
    if kind not in get_args(LengthPenaltyKind):
        raise ValueError(f"length_penalty_kind must be one of {get_args(LengthPenaltyKind)}, got {kind!r}")
    shortest = min(max_lengths, default=0)
    if shortest < min_length:
        raise ValueError(f"the maximum output length ({shortest} for some row) is below min_length ({min_length})")
