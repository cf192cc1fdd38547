"""The algorithmic-task table of the paper's Table 4 from a folder of runs (``TASK-MODEL`` each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

TASK_ORDER = ("copy", "reverse", "addition")
MODEL_ORDER = ("lstm", "transformer", "ut", "ut-act")
MODEL_NAMES = {"lstm": "LSTM", "transformer": "Transformer", "ut": "UT", "ut-act": "UT+ACT"}


def read_cell(run: Path) -> dict[str, Any] | None:
    """Test metrics (``eval-test.json``, else ``metrics.json``) and training progress of one run."""
    test = None
    if (run / "eval-test.json").is_file():
        test = json.loads((run / "eval-test.json").read_text())
    elif (run / "metrics.json").is_file():
        test = json.loads((run / "metrics.json").read_text()).get("test")
    if test is None:
        return None
    lines = (run / "metrics.jsonl").read_text().splitlines() if (run / "metrics.jsonl").is_file() else []
    last = json.loads(lines[-1]) if lines else {}
    # Ranked as the trainer keeps its best model (training.trainer.selection_key): a saturated
    # validation score (1.00/1.00 at length 40) leaves the choice to the task's tie_break.
    best = max((json.loads(line) for line in lines), default={},
               key=lambda r: (r.get("score", float("-inf")), r.get("tie_break", float("-inf"))))
    return {"test": test, "steps": last.get("step"), "seconds": last.get("elapsed"), "best_step": best.get("step")}


def accuracy_table(root: str | Path, tasks: Sequence[str], key: str = "", *, headers: Sequence[str] | None = None) -> list[str]:
    """Markdown lines: rows = models, columns = ``tasks``, cells = test char-acc / seq-acc
    (metrics ``{key}char_accuracy`` and ``{key}sequence_accuracy``) of the run ``TASK-MODEL``
    under ``root``; ``-`` where a run or its metric is missing."""
    root = Path(root)
    headers = list(headers or [t.capitalize() for t in tasks])
    lines = ["| model | " + " | ".join(headers) + " |", "|---" * (len(tasks) + 1) + "|"]
    for model in MODEL_ORDER:
        cells = []
        for task in tasks:
            cell = read_cell(root / f"{task}-{model}")
            if cell is None or key + "char_accuracy" not in cell["test"]:
                cells.append("-")
                continue
            t = cell["test"]
            cells.append(f"{t[key + 'char_accuracy']:.2f} / {t[key + 'sequence_accuracy']:.2f}")
        lines.append(f"| {MODEL_NAMES[model]} | " + " | ".join(cells) + " |")
    return lines


def algorithmic_table(root: str | Path, length: int = 400) -> str:
    """Markdown: rows = models, columns = tasks, cells = char-acc / seq-acc at ``length``."""
    root = Path(root)
    key = f"len{length}/"
    lines = accuracy_table(root, TASK_ORDER, key, headers=[f"{t.capitalize()} (len {length})" for t in TASK_ORDER])
    details = []
    for model in MODEL_ORDER:
        for task in TASK_ORDER:
            cell = read_cell(root / f"{task}-{model}")
            if cell is None or key + "char_accuracy" not in cell["test"]:
                continue
            t = cell["test"]
            in_dist = [k for k in t if k.endswith("/sequence_accuracy") and k != key + "sequence_accuracy"]
            extra = ", ".join(f"{k.split('/')[0]} {t[k.replace('sequence', 'char')]:.2f}/{t[k]:.2f}" for k in in_dist)
            ponder = t.get(key + "encoder_ponder_time")
            details.append(
                f"| {task}-{model} | {_or_dash(cell['steps'])} | {_or_dash(cell['best_step'])} | {_or_dash(cell['seconds'])} | {extra} |"
                + (f" {ponder:.2f} |" if ponder is not None and model == "ut-act" else " |")
            )
    lines += ["", "| run | steps | best step | train s | char/seq at training length | ponder (len 400) |", "|---|---|---|---|---|---|"]
    return "\n".join(lines + details)


def _or_dash(value: Any) -> str:
    """A missing value (no ``metrics.jsonl`` yet) reads '-', like a missing cell."""
    return "-" if value is None else str(value)
