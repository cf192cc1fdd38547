"""LAMBADA scores of a language model (Paperno et al. 2016; the paper's Section 3.3, Table 3).

For each passage the model reads ``<eos>`` and the context words (at most the last
``context_length`` tokens) and gives a distribution over the next word; the target is the
passage's last whitespace-delimited word, as LM evaluation tools take it on
``lambada_test.jsonl``. With a word-level vocabulary the target is one token, so:

* ``accuracy`` (language modelling, greedy): the most probable next token (padding
  excluded) is the target. A target outside the vocabulary is always wrong, also when
  ``<unk>`` is predicted.
* ``perplexity``: ``exp`` of the mean of ``-log p(target)`` over the passages whose target
  is in the vocabulary (``oov_targets`` counts the others: under a closed vocabulary they
  have no probability of their own).
* ``rc_accuracy`` (reading comprehension, Chu et al. 2017): the target is chosen among the
  distinct in-vocabulary context words by the same next-word probabilities. It is
  impossible when the target is not in the context (``target_in_context`` is the share of
  passages where it is; about 81% on the test set, the paper says).
* ``ponder_time`` / ``ponder_std`` (UT models): over every real position of every passage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from ..data.lambada import LambadaPassage
from ..data.text import EOS_ID, PAD_ID, UNK_ID, Vocabulary
from .lm import PonderStats, next_token_log_probs


def lambada_scores(
    model: nn.Module,
    vocab: Vocabulary,
    passages: Sequence[LambadaPassage],
    *,
    context_length: int,
    batch_size: int = 32,
) -> dict[str, float | int]:
    """Language-modelling and reading-comprehension scores of ``passages`` (see the module docstring)."""
    prefixes = [[EOS_ID, *vocab.encode(p.context)][-context_length:] for p in passages]
    targets = [vocab.id(p.target) for p in passages]
    candidates = [sorted(set(vocab.encode(p.context)) - {PAD_ID, UNK_ID, EOS_ID}) for p in passages]
    ponder = PonderStats()
    lm_hit = [False] * len(passages)
    rc_hit = [False] * len(passages)
    target_nll: list[float] = []
    for index, log_probs in next_token_log_probs(model, prefixes, batch_size=batch_size, ponder=ponder):
        log_probs = log_probs.clone()
        log_probs[:, PAD_ID] = -math.inf
        best = log_probs.argmax(-1).tolist()
        for row, j in enumerate(index):
            target = targets[j]
            if target == UNK_ID:
                continue
            target_nll.append(-float(log_probs[row, target]))
            lm_hit[j] = best[row] == target
            if candidates[j]:
                options = torch.tensor(candidates[j], device=log_probs.device)
                rc_hit[j] = int(options[log_probs[row, options].argmax()]) == target
    n = len(passages)
    result: dict[str, float | int] = {
        "accuracy": sum(lm_hit) / n,
        "perplexity": math.exp(sum(target_nll) / len(target_nll)) if target_nll else math.inf,
        "rc_accuracy": sum(rc_hit) / n,
        "target_in_context": sum(p.target in p.context for p in passages) / n,
        "passages": n,
        "oov_targets": targets.count(UNK_ID),
    }
    result.update(ponder.metrics())
    return result


__all__ = ["lambada_scores"]
