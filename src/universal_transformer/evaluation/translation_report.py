"""The translation table of ``ut report`` (and the end of ``ut sweep``): one row per finished run."""

from __future__ import annotations

import json
from pathlib import Path

from .algorithmic_report import read_cell


def translation_table(roots: dict[str, Path]) -> str:
    """Markdown: run, steps, best step, training seconds, validation BLEU (as validated during
    training: see its beam and sentences), test BLEU and the test BLEU signature."""
    lines = ["| run | steps | best step | train s | validation BLEU | test BLEU | signature |", "|---|---|---|---|---|---|---|"]
    for name, root in roots.items():
        for summary in sorted(Path(root).glob("**/metrics.json")):
            run = summary.parent
            cell = read_cell(run)
            if cell is None:
                continue
            validation = json.loads(summary.read_text()).get("validation") or {}
            test = cell["test"]
            label = f"{name}/{run.relative_to(root)}" if run != Path(root) else name
            val = "-"
            if "bleu" in validation:
                val = f"{validation['bleu']:.2f} (beam {validation.get('beam_size')}, {validation.get('sentences')} sent.)"
            bleu = f"{test['bleu']:.2f}" if "bleu" in test else "-"
            signature = str(test.get("bleu_signature", "-")).replace("|", "\\|")  # its bars are not cell borders
            lines.append(f"| {label} | {cell['steps']} | {cell['best_step']} | {cell['seconds']} | {val} | {bleu} | {signature} |")
    if len(lines) == 2:
        return "no finished translation runs (RUN/metrics.json) under " + ", ".join(map(str, roots.values()))
    return "\n".join(lines)


__all__ = ["translation_table"]
