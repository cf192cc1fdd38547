"""``ut babi-report`` (tables) and ``ut babi-plot`` (attention and ponder figures)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..evaluation.babi_report import best_of_seeds, collect_runs, error_table, ponder_by_supporting_facts, ponder_table
from ..tasks import build_task
from .run import _load_model, _load_run


def add_babi_parsers(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "babi-report",
        help="tabulate bAbI runs: per-task test error, average, failed tasks (best seed on validation)",
        description="Each ROOT holds finished runs (ROOT/**/metrics.json), e.g. seed-S/taskN for 'train single' "
        "or seed-S/joint for 'train joint'. For every task the run with the best validation score is shown; "
        "a joint model is picked as a whole, on its validation score over all tasks.",
    )
    p.add_argument("roots", nargs="+", type=Path, metavar="ROOT")
    p.add_argument("--names", nargs="+", default=None, help="column names (default: folder names)")
    p.add_argument("--ponder", action="store_true", help="also print the test ponder time per task (mean ± std)")
    p.set_defaults(run=run_report)

    p = commands.add_parser("babi-plot", help="plot attention over facts per step/head and ponder time per fact")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--split", default="test")
    p.add_argument("--index", type=int, default=0, help="which example of the split")
    p.add_argument("--out", type=Path, default=None, help="output prefix (default RUN_DIR/plots/SPLIT-INDEX)")
    p.set_defaults(run=run_plot)


def run_report(args: argparse.Namespace) -> int:
    names = args.names or [root.name for root in args.roots]
    columns = {name: best_of_seeds(collect_runs(root)) for name, root in zip(names, args.roots)}
    print(error_table(columns))
    if args.ponder:
        print("\nTest ponder time per task, mean ± std over all positions:\n")
        print(ponder_table(columns))
    for name, column in columns.items():
        ponder = ponder_by_supporting_facts(column)
        if ponder:
            print(f"{name}: test ponder time, tasks with 1/2/3 supporting facts: "
                  + ", ".join(f"task {t}: {m:.2f}" + (f"±{s:.2f}" if s is not None else "") for t, (m, s) in ponder.items()))
    return 0


def run_plot(args: argparse.Namespace) -> int:
    from ..visualisation.babi import plot_attention, plot_ponder

    experiment = _load_run(args.run_dir, [])
    task = build_task(experiment.task, seed=experiment.train.seed)
    model = _load_model(args.run_dir, None, "cpu")
    example, batch = task.example(args.split, args.index)
    prefix = args.out or args.run_dir / "plots" / f"{args.split}-{args.index}"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    a = plot_attention(model, example, batch, f"{prefix}-attention.png", answers=task.answers)
    b = plot_ponder(model, example, batch, f"{prefix}-ponder.png")
    print(f"wrote {a}\nwrote {b}")
    return 0
