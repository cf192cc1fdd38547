"""``ut report``: regenerate the tables of ``docs/results.md`` (and the figures of ``docs/figures``)
from the records in ``results/``;
``ut report ROOT...``: print the task's tables for folders of runs (aliases ``babi-report``,
``algorithmic-report``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..evaluation.docs import DocsError, find_sections, stale_sections, update_figures, update_file
from ..evaluation.records import RecordError, load_records


def add_report_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``report`` command to ``commands`` and return its parser."""
    p = commands.add_parser(
        "report", aliases=["babi-report", "algorithmic-report"],
        help="regenerate the tables of docs/results.md from results/; or print the tables of run folders",
        description="Without ROOT: reads every run record (RESULTS/**/*.json) and rewrites the generated sections "
        "of DOCS (between '<!-- generated: NAME -->' and '<!-- end generated: NAME -->'); the text around them is "
        "left as it is. With --check nothing is written and the exit status is 1 if a section is stale. "
        "With ROOT...: prints the task's tables for folders of finished runs (ROOT/**/metrics.json; the task is "
        "read from the runs' config.yaml): bAbI per-task test error, best seed on validation, one column per "
        "ROOT; algorithmic tasks (runs named TASK-MODEL) char / seq accuracy at --length.",
    )
    p.add_argument("roots", nargs="*", type=Path, metavar="ROOT", help="folders of runs (default: regenerate the docs)")
    p.add_argument("--names", nargs="+", default=None, help="with ROOT: column names (default: folder names)")
    p.add_argument("--length", type=int, default=None, help="with ROOT, algorithmic tasks: the test length (400)")
    p.add_argument("--ponder", action="store_true", help="with ROOT, bAbI: the test ponder time per task")
    p.add_argument("--runs", action="store_true", help="with ROOT, bAbI: each cell's steps / best step / seconds")
    p.add_argument("--results", type=Path, default=Path("results"), help="folder of run records (default: results)")
    p.add_argument("--docs", type=Path, default=Path("docs/results.md"),
                   help="markdown file with generated sections (default: docs/results.md)")
    p.add_argument("--figures", type=Path, default=None,
                   help="folder for the figures drawn from the records, e.g. accuracy against test length "
                   "(default: figures/ next to DOCS; not with --check)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming the sections that differ from what the records generate")
    p.set_defaults(run=run_report)
    return p


def run_report(args: argparse.Namespace) -> int:
    """Update (or with ``args.check`` verify) ``args.docs`` from the records in ``args.results``.
    Returns the exit status: 0 up to date or written, 1 stale (check), 2 bad input.
    With ``args.roots``, print the tables of those run folders instead."""
    if getattr(args, "roots", None):
        from .experiments import report_runs

        return report_runs(args)
    try:
        records = load_records(args.results)
        text = args.docs.read_text(encoding="utf-8") if args.docs.is_file() else None
        if text is None:
            raise DocsError(f"{args.docs}: docs file not found")
        names = [s.name for s in find_sections(text, source=str(args.docs))]
        stale = stale_sections(text, records, source=str(args.docs))
        if args.check:
            if stale:
                print(f"{args.docs}: stale section(s) {', '.join(stale)}; run 'ut report' to regenerate them "
                      f"from {args.results}", file=sys.stderr)
                return 1
            print(f"{args.docs}: {len(names)} section(s) up to date with {len(records)} record(s)")
            return 0
        update_file(args.docs, records)
        figures_dir = args.figures if args.figures is not None else args.docs.parent / "figures"
        figures = update_figures(figures_dir, records)
    except (RecordError, DocsError) as err:
        print(f"ut report: error: {err}", file=sys.stderr)
        return 2
    for name in names:
        print(f"{args.docs}: {name}: {'written' if name in stale else 'unchanged'}")
    if not names:
        print(f"{args.docs}: no generated sections")
    for name, path in figures.items():
        print(f"{path}: drawn" if path is not None else f"{figures_dir / name}.png: nothing to draw yet")
    return 0
