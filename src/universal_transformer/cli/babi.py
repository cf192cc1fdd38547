"""``ut babi-report`` (tables) and ``ut babi-plot`` (attention and ponder figures)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ..config import ConfigError
from ..evaluation.babi_report import (
    best_of_seeds, collect_runs, error_table, ponder_by_supporting_facts, ponder_table, runs_table,
)
from ..tasks import build_task
from ..tasks.babi import DERIVED_MODEL_FIELDS, parse_tasks
from ..training.config import load_experiment
from ..training.distributed import shutdown_distributed
from ..training.trainer import Trainer, TrainingDiverged, check_run_config
from .run import _load_model, _load_run


def add_babi_parsers(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "babi-train",
        help="train bAbI models, single (one per task) or joint, over seeds; then print the table",
        description="'train single' trains one model per task into OUT/seed-S/taskN; --joint trains one model "
        "on all the given tasks into OUT/seed-S/joint. Runs that finished are skipped (if their saved config is "
        "the one asked for; otherwise it is an error) and an interrupted run resumes from its checkpoint, so the "
        "same command continues a sweep; train.time_limit applies to each run and stops the sweep. At the end "
        "the per-task test error table (best seed on validation) is printed, as by 'ut babi-report OUT'.",
    )
    p.add_argument("config", type=Path, help="experiment YAML with a babi task, e.g. configs/babi/ut-act.yaml")
    p.add_argument("--out", type=Path, required=True, help="root folder of the runs")
    p.add_argument("--tasks", nargs="+", default=["all"], help="task numbers, or 'all' (default)")
    p.add_argument("--data", dest="data_set", choices=("en", "en-10k"), default=None,
                   help="en (1k) or en-10k (default: the config's task.set)")
    p.add_argument("--seeds", nargs="+", type=int, default=[0], help="one run per seed (the paper: best of 10)")
    p.add_argument("--joint", action="store_true", help="one model on all the tasks ('train joint')")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.steps=3000")
    p.add_argument("--device", default=None)
    p.set_defaults(run=run_train_sweep)

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
    p.add_argument("--runs", action="store_true", help="also print each cell's run: steps / best step / training seconds")
    p.set_defaults(run=run_report)

    p = commands.add_parser("babi-plot", help="plot attention over facts per step/head and ponder time per fact")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--split", default="test")
    p.add_argument("--index", type=int, default=0, help="which example of the split")
    p.add_argument("--out", type=Path, default=None, help="output prefix (default RUN_DIR/plots/SPLIT-INDEX)")
    p.set_defaults(run=run_plot)


def run_train_sweep(args: argparse.Namespace) -> int:
    try:
        tasks = parse_tasks(args.tasks if args.tasks != ["all"] else "all")
    except ConfigError:
        raise ConfigError(f"--tasks takes task numbers 1..20 or 'all'; got {' '.join(args.tasks)!r}") from None
    groups = [tasks] if args.joint else [[t] for t in tasks]
    failed, is_main = [], True
    try:
        for seed in args.seeds:
            for group in groups:
                run_dir = args.out / f"seed-{seed}" / ("joint" if args.joint else f"task{group[0]}")
                overrides = [*args.overrides, f"task.tasks={json.dumps(group)}", f"train.seed={seed}"]
                if args.data_set:
                    overrides.append(f"task.set={args.data_set}")
                experiment = load_experiment(args.config, overrides)
                if experiment.task.get("name") != "babi":
                    raise ConfigError(f"{args.config}: task.name must be babi for babi-train")
                if (run_dir / "metrics.json").exists():
                    # finished: skip it, but only if it is the run asked for
                    check_run_config(run_dir, experiment, derived=DERIVED_MODEL_FIELDS)
                    print(f"{run_dir}: finished earlier, skipped", flush=True)
                    continue
                start = time.monotonic()
                try:
                    trainer = Trainer(experiment, run_dir, device=args.device, progress=False, verbose=False)
                    is_main = trainer.ctx.is_main
                    summary = trainer.fit()
                except TrainingDiverged as err:
                    failed.append(f"{run_dir}: {err}")
                    print(f"{run_dir}: training diverged: {err}", flush=True)
                    continue
                if summary.get("status") == "time_limit":
                    if is_main:
                        print(f"{run_dir}: train.time_limit reached at step {summary['step']}; "
                              "run the same command again to resume the sweep", flush=True)
                    return 0
                if is_main:
                    print(f"{run_dir}: step {summary['step']} (best {summary['best_step']}), validation error "
                          f"{summary['validation']['mean_error']:.1f}%, test error {summary['test']['mean_error']:.1f}%, "
                          f"{time.monotonic() - start:.0f} s", flush=True)
    finally:
        shutdown_distributed()
    if is_main:
        print()
        _print_report({args.out.name: best_of_seeds(collect_runs(args.out))}, ponder=False)
        for line in failed:
            print(f"failed: {line}")
    return 1 if failed else 0


def run_report(args: argparse.Namespace) -> int:
    names = args.names or [root.name for root in args.roots]
    columns = {name: best_of_seeds(collect_runs(root)) for name, root in zip(names, args.roots)}
    _print_report(columns, ponder=args.ponder, runs=args.runs)
    return 0


def _print_report(columns: dict, *, ponder: bool, runs: bool = False) -> None:
    print(error_table(columns))
    if ponder:
        print("\nTest ponder time per task, mean ± std over all positions:\n")
        print(ponder_table(columns))
    if runs:
        print("\nRuns: steps done / step of the best model (evaluated) / training seconds:\n")
        print(runs_table(columns))
    for name, column in columns.items():
        by_facts = ponder_by_supporting_facts(column)
        if by_facts:
            print(f"{name}: test ponder time, tasks with 1/2/3 supporting facts: "
                  + ", ".join(f"task {t}: {m:.2f}" + (f"±{s:.2f}" if s is not None else "") for t, (m, s) in by_facts.items()))


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
