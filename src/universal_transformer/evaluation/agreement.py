"""Subject-verb agreement by ranking (Linzen et al. 2016; the paper's Section 3.2): the language
model reads the sentence up to the verb and must give the correct form of the verb a higher
probability than the wrong one.

Out-of-vocabulary words: an item whose correct or wrong verb form is not in the model's
vocabulary cannot be ranked (one of the two would be ``<unk>``); it is left out of the
accuracy and counted (``skipped_oov``), as Linzen et al. and Gulordava et al. kept only
verbs in their vocabularies. Unknown words of the prefix are read as ``<unk>`` and
counted (``prefix_unk_rate``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from torch import nn

from ..data.agreement import AgreementItem
from ..data.text import EOS_ID, UNK_ID, Vocabulary
from .lm import next_token_log_probs


def agreement_accuracy(
    model: nn.Module,
    vocab: Vocabulary,
    items: Sequence[AgreementItem],
    *,
    context_length: int,
    batch_size: int = 64,
) -> dict[str, float | int]:
    """Ranking accuracy over the items whose verb forms are both in ``vocab``, overall, by number
    of attractors (``attractors{k}/...``) and by kind (``original/...``, ``generated/...``).

    The model reads ``<eos>`` (the sentence boundary it saw before every sentence in
    training) and the prefix, at most the last ``context_length`` tokens of it. A tie
    counts as wrong.
    """
    prefixes, scored = [], []
    prefix_tokens = prefix_unk = skipped = 0
    for item in items:
        good, bad = vocab.id(item.correct), vocab.id(item.wrong)
        if UNK_ID in (good, bad) or good == bad:
            skipped += 1
            continue
        ids = [EOS_ID, *vocab.encode(item.prefix)]
        prefix_tokens += len(ids) - 1
        prefix_unk += ids.count(UNK_ID)
        prefixes.append(ids[-context_length:])
        scored.append((item, good, bad))
    hits = [False] * len(scored)
    for index, log_probs in next_token_log_probs(model, prefixes, batch_size=batch_size):
        for row, j in enumerate(index):
            _, good, bad = scored[j]
            hits[j] = bool(log_probs[row, good] > log_probs[row, bad])
    groups: dict[str, list[bool]] = defaultdict(list)
    for (item, _, _), hit in zip(scored, hits):
        groups[""].append(hit)
        if item.attractors is not None:
            groups[f"attractors{item.attractors}/"].append(hit)
        if item.kind is not None:
            groups[f"{item.kind}/"].append(hit)
    result: dict[str, float | int] = {}
    for name in sorted(groups, key=_group_order):
        values = groups[name]
        result[f"{name}accuracy"] = sum(values) / len(values)
        result[f"{name}items"] = len(values)
    result["skipped_oov"] = skipped
    result["prefix_unk_rate"] = prefix_unk / max(prefix_tokens, 1)
    return result


def _group_order(name: str) -> tuple[int, int, str]:
    if not name:
        return (0, 0, "")
    if name.startswith("attractors"):
        return (1, int(name[len("attractors") : -1]), "")
    return (2, 0, name)


__all__ = ["agreement_accuracy"]
