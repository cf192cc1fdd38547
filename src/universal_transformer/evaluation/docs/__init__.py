"""Generated sections of a markdown file: the tables of ``docs/results.md`` from run records.

A generated section is everything between two marker lines, each alone on its line::

    <!-- generated: NAME -->
    (the table; replaced by ``ut report``)
    <!-- end generated: NAME -->

``NAME`` is a table in :data:`TABLES` (``algorithmic-len400``, ``babi``, ``runs``, ...).
:func:`render` replaces the lines between the markers with the table built from the
records (framed by one blank line each side) and leaves every other line as it is, so the
prose around the tables stays hand-written. Sections cannot nest; markers inside fenced
code blocks (outside a section) are text, not markers. The markers are HTML comments,
invisible in rendered markdown.

Table families take the records whose experiment name starts with the family:
``algorithmic/...`` for the algorithmic tables, ``babi/...`` for the bAbI tables,
``demo/...`` for the demo table, ``lm/ptb...`` (models trained on Penn Treebank) for the
language-modelling tables; ``runs`` takes all. Where several seeds (records) fill
one cell, the one with the best validation ``score`` is shown, as the paper picks its best
seed. A run stopped by its time limit is labelled *partial*.

The package holds one module per experiment (``algorithmic``, ``lte``, ``babi``, ``lm``, ``mt``,
``precision``), the tables over every record (``runs``) and the paper's numbers beside ours
(``standing``); each registers its tables and figures with :mod:`.sections` on import, and
:mod:`.common` holds what they share. Adding a table is a builder in its experiment's module,
decorated with ``@register_table("NAME")``, and a marked section in the markdown.
"""

from __future__ import annotations

# Importing a module registers its tables and figures; the order is the figures' drawing order.
from . import algorithmic, lte, precision, babi, lm, mt, runs, standing  # noqa: F401
from .algorithmic import depth_table, length_curves
from .babi import babi_columns, depth_ponder_panels, stories_curves, stories_per_step, task_curve
from .common import NO_RECORDS, family, inference_steps, inference_window, model_label
from .lm import lm_models
from .sections import (
    FIGURES, TABLES, DocsError, Section, find_sections, register_table, render, stale_sections, update_figures, update_file,
)

__all__ = [
    "FIGURES", "NO_RECORDS", "TABLES", "DocsError", "Section", "babi_columns", "depth_ponder_panels", "depth_table", "family",
    "find_sections", "inference_steps", "inference_window", "length_curves", "lm_models", "model_label", "register_table",
    "render", "stale_sections", "stories_curves", "stories_per_step", "task_curve", "update_figures", "update_file",
]
