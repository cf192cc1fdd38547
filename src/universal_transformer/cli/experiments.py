"""``ut sweep`` (runs over seeds, and bAbI tasks) and ``ut plot`` (figures of a trained model), for
every task; the tables of run folders (``report_runs``) behind ``ut report ROOT...``.

The commands of earlier versions stay as aliases: ``babi-train`` = ``sweep``, ``babi-plot`` = ``plot``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


from ..config import ConfigError, load_yaml
from ..registry import build_task, task_class
from ..tasks.babi import parse_tasks
from ..training.config import ExperimentConfig, load_experiment
from ..training.distributed import distributed_session
from ..training.trainer import Trainer, TrainingDiverged, check_run_config
from .run import add_window_arguments, device_name, load_model, load_run, resolve_device


def add_experiment_parsers(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "sweep", aliases=["babi-train"],
        help="train one run per seed (bAbI: per task, or one joint model), then print the task's table",
        description="Runs go to OUT/seed-S (bAbI 'train single': OUT/seed-S/taskN; --joint: OUT/seed-S/joint). "
        "Runs that finished are skipped (if their saved config is the one asked for; otherwise it is an error) "
        "and an interrupted run resumes from its checkpoint, so the same command continues a sweep; "
        "train.time_limit applies to each run and stops the sweep. At the end the task's table is printed, "
        "as by 'ut report OUT'.",
    )
    p.add_argument("config", type=Path, help="experiment YAML, e.g. configs/babi/ut-act.yaml")
    p.add_argument("--out", type=Path, required=True, help="root folder of the runs")
    p.add_argument("--seeds", nargs="+", type=int, default=[0],
                   help="one run per seed (the paper: best of 10 on bAbI); each sets train.seed, so a config's "
                        "train.data_seed, where set, keeps its data the same over the runs")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.steps=3000")
    p.add_argument("--device", default="auto", type=device_name,
                   help="auto (default: CUDA when present), cpu, cuda or cuda:N")
    bab = p.add_argument_group("bAbI")
    bab.add_argument("--tasks", nargs="+", default=None, help="task numbers, or 'all' (bAbI default: all)")
    bab.add_argument("--data", dest="data_set", choices=("en", "en-10k"), default=None,
                     help="en (1k) or en-10k (default: the config's task.set)")
    bab.add_argument("--joint", action="store_true", help="one model on all the tasks ('train joint')")
    p.set_defaults(run=run_sweep)

    p = commands.add_parser("plot", aliases=["babi-plot"],
                            help="plot what a trained model does on one example (bAbI: attention per step and head, ponder time)",
                            description="Figures of what RUN_DIR/best does on one example of a split: attention per "
                            "recurrent step and head, and (ACT) ponder time per position, for bAbI stories and algorithmic "
                            "inputs. Writes PNGs under RUN_DIR/plots/ (or --out).")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--split", default="test", help="the split the example comes from (default test)")
    p.add_argument("--index", type=int, default=0, help="which example of the split (with --task: of that task's)")
    p.add_argument("--task", type=int, default=None, metavar="N",
                   help="bAbI: a story of task N (of a joint model's tasks), --index counting among its questions")
    p.add_argument("--out", type=Path, default=None, help="output prefix (default RUN_DIR/plots/SPLIT-INDEX)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override task options, e.g. --set 'task.test_lengths=[400]'")
    add_window_arguments(p)
    p.set_defaults(run=run_plot)


def _sweep_groups(args: argparse.Namespace, experiment: ExperimentConfig) -> list[tuple[str, list[str]]]:
    """``(run name, overrides)`` per run of one seed."""
    babi = experiment.task.name == "babi"
    if not babi:
        if args.tasks or args.joint or args.data_set:
            raise ConfigError("--tasks, --joint and --data are for bAbI sweeps")
        return [("", [])]
    try:
        tasks = parse_tasks(args.tasks if args.tasks not in (None, ["all"]) else "all")
    except ConfigError:
        raise ConfigError(f"--tasks takes task numbers 1..20 or 'all'; got {' '.join(args.tasks)!r}") from None
    data = [f"task.set={args.data_set}"] if args.data_set else []
    if args.joint:
        return [("joint", [f"task.tasks={json.dumps(tasks)}", *data])]
    return [(f"task{t}", [f"task.tasks={json.dumps([t])}", *data]) for t in tasks]


def run_sweep(args: argparse.Namespace) -> int:
    failed, is_main = [], True
    groups = _sweep_groups(args, load_experiment(args.config, args.overrides))
    with distributed_session():
        for seed in args.seeds:
            for name, group in groups:
                run_dir = args.out / f"seed-{seed}" / name if name else args.out / f"seed-{seed}"
                experiment = load_experiment(args.config, [*args.overrides, *group, f"train.seed={seed}"])
                if (run_dir / "metrics.json").exists():
                    # finished: skip it, but only if it is the run asked for
                    derived = task_class(experiment.task.name).derived_model_fields
                    check_run_config(run_dir, experiment, derived=derived)
                    print(f"{run_dir}: finished earlier, skipped", flush=True)
                    continue
                start = time.monotonic()
                try:
                    trainer = Trainer(experiment, run_dir, device=resolve_device(args.device), progress=False, verbose=False)
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
                    score = summary["validation"].get("score")
                    print(f"{run_dir}: step {summary['step']} (best {summary['best_step']}), validation score "
                          f"{score:.4f}, {time.monotonic() - start:.0f} s", flush=True)
    if is_main:
        print()
        try:
            print(task_class(experiment.task.name).report({args.out.name: args.out}))
        except ConfigError as err:  # a task without a report table: the runs are done all the same
            print(f"no table: {err}")
        for line in failed:
            print(f"failed: {line}")
    return 1 if failed else 0


def _task_of_runs(roots: list[Path]) -> str:
    """The task name of the runs under ``roots`` (from their config.yaml); one task per report."""
    names = set()
    for root in roots:
        if not root.is_dir():
            raise ConfigError(f"{root}: no such folder of runs")
        for path in root.glob("**/config.yaml"):
            data = load_yaml(path.read_text()) or {}
            names.add((data.get("task") or {}).get("name"))
    names.discard(None)
    if not names:
        raise ConfigError(f"no runs (RUN/config.yaml) under {', '.join(map(str, roots))}")
    if len(names) > 1:
        raise ConfigError(f"runs of several tasks ({', '.join(sorted(names))}) under these roots: report one task at a time")
    return names.pop()


def report_runs(args: argparse.Namespace) -> int:
    """``ut report ROOT...``: the task's tables for folders of finished runs."""
    names = args.names or [root.name for root in args.roots]
    if len(names) != len(args.roots):
        raise ConfigError(f"--names gives {len(names)} names for {len(args.roots)} roots")
    task = task_class(_task_of_runs(args.roots))
    print(task.report(dict(zip(names, args.roots)), length=args.length, ponder=args.ponder, runs=args.runs))
    return 0


def run_plot(args: argparse.Namespace) -> int:
    experiment = load_run(args.run_dir, args.overrides)
    task = build_task(experiment.task, seed=experiment.train.task_seed)
    model = load_model(args.run_dir, None, "cpu", window=args.attention_window, window_scope=args.attention_window_scope,
                       task=task)
    options = {}
    if args.task is not None:
        if experiment.task.name != "babi":
            raise ConfigError(f"--task picks the story of one bAbI task; {args.run_dir} is a {experiment.task.name!r} run")
        options["story_task"] = args.task
    default = f"{args.split}-{args.index}" if args.task is None else f"{args.split}-task{args.task}-{args.index}"
    prefix = args.out or args.run_dir / "plots" / default
    prefix.parent.mkdir(parents=True, exist_ok=True)
    for path in task.plot(model, args.split, args.index, prefix, **options):
        print(f"wrote {path}")
    return 0
