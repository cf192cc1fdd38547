"""Corpus BLEU with sacrebleu (Post 2018) on detokenised text, with its signature.

sacrebleu tokenises hypotheses and references itself (``13a``, the WMT standard), so
scores are comparable across tokenizers and papers only when computed on detokenised
output, as here; the signature says exactly how a number was computed.
"""

from __future__ import annotations

from typing import Any, Sequence


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, Any]:
    """``bleu`` (0-100), ``bleu_signature``, ``bleu_brevity_penalty`` and ``bleu_length_ratio``
    (hypothesis / reference length) of one reference per hypothesis."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    from sacrebleu.metrics import BLEU  # imported here: every `ut` command loads the task registry, few score

    metric = BLEU()
    result = metric.corpus_score(list(hypotheses), [list(references)])
    return {
        "bleu": float(result.score),
        "bleu_signature": str(metric.get_signature()),
        "bleu_brevity_penalty": float(result.bp),
        "bleu_length_ratio": result.sys_len / max(result.ref_len, 1),
    }


__all__ = ["corpus_bleu"]
