"""The Learning to Execute tables of the paper's Tables 5 (memorisation) and 6 (program
evaluation) from a folder of runs (``TASK-MODEL`` each, e.g. ``program-ut``)."""

from __future__ import annotations

from pathlib import Path

from ..config import load_yaml

from .algorithmic_report import MODEL_ORDER, accuracy_table, read_cell

MEMORISATION_ORDER = ("copy", "double", "reverse")
PROGRAM_ORDER = ("program", "control", "addition")


def lte_table(root: str | Path) -> str:
    """Markdown: memorisation and program evaluation tables (rows = models, cells = test
    char-acc / seq-acc), then one line per run with its length, nesting and progress."""
    root = Path(root)
    lines = ["Memorisation (Table 5):", "", *accuracy_table(root, MEMORISATION_ORDER), "",
             "Program evaluation (Table 6):", "", *accuracy_table(root, PROGRAM_ORDER), "",
             "| run | max length | max nesting | steps | best step | train s | ponder |", "|---|---|---|---|---|---|---|"]
    for model in MODEL_ORDER:
        for task in MEMORISATION_ORDER + PROGRAM_ORDER:
            run = root / f"{task}-{model}"
            cell = read_cell(run)
            if cell is None:
                continue
            config = load_yaml((run / "config.yaml").read_text()) if (run / "config.yaml").is_file() else {}
            options = (config or {}).get("task") or {}
            ponder = cell["test"].get("encoder_ponder_time")
            lines.append(
                f"| {task}-{model} | {options.get('max_length', '-')} | {options.get('max_nesting') or '-'} | "
                f"{cell['steps']} | {cell['best_step']} | {cell['seconds']} | {'-' if ponder is None else f'{ponder:.2f}'} |"
            )
    return "\n".join(lines)
