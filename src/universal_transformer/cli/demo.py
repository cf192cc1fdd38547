"""``ut demo``: train a small UT, UT+ACT and Transformer on an algorithmic task and compare them.

The embedded default job of the README: about five minutes on a 2-core CPU, no data
needed. It runs the same trainer and task as ``ut train`` (runs go to ``--out``).
Training is bounded by steps and runs on a fixed number of threads, so the table is the
same on every run of a machine; only the wall time differs.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import torch

from ..data.algorithmic import TASKS
from ..training.config import ExperimentConfig
from ..training.trainer import Trainer
from .run import command_line

DEMO_STEPS = 1200  # about 4.5 minutes for the three models on 2 idle cores
DEMO_THREADS = 2  # fixed, as the thread count changes the float reductions and so the result


def add_demo_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "demo",
        help="train a tiny UT, UT+ACT and Transformer on an algorithmic task and print a table",
        description=__doc__,
    )
    p.add_argument("--task", choices=TASKS, default="copy")
    p.add_argument("--train-length", type=int, default=10, help="train on lengths 1..N (default 10)")
    p.add_argument("--test-lengths", type=int, nargs="+", default=[10, 20], help="evaluate at these lengths")
    p.add_argument("--steps", type=_positive, default=DEMO_STEPS,
                   help=f"training steps per model (default {DEMO_STEPS}; fewer if validation is perfect first)")
    p.add_argument("--threads", type=_positive, default=DEMO_THREADS,
                   help=f"CPU threads (default {DEMO_THREADS}; the table is the same on every run with the same count)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/demo"),
                   help="where the three runs go (default runs/demo; the demo's previous runs there are replaced)")
    p.add_argument("--record", action="store_true",
                   help="also write the three run records to RESULTS/demo/{ut,ut-act,transformer}.json")
    p.add_argument("--results", type=Path, default=Path("results"), help="the records folder (default results)")
    p.set_defaults(run=run_demo)


def _positive(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return int(text)


def demo_experiments(args: argparse.Namespace) -> dict[str, ExperimentConfig]:
    """The three contenders, the same size and training budget."""
    common = dict(d_model=64, num_heads=4, d_ff=128, num_steps=4, dropout=0.0, embedding_dropout=0.0)
    models = {
        "UT (T=4)": common,
        "UT+ACT": {**common, "act": True, "act_bias_init": -1.0},
        "Transformer (4 layers)": {**common, "share_weights": False, "embed_every_step": False, "timestep_embedding": "none"},
    }
    task = {"name": "algorithmic", "task": args.task, "train_max_length": args.train_length,
            "validation_lengths": [args.train_length], "test_lengths": args.test_lengths,
            "eval_examples": 200, "eval_batch_size": 100}
    train = {"seed": args.seed, "steps": args.steps, "lr": 0.002, "schedule": "constant", "warmup_steps": 200,
             "batch_tokens": 2048, "eval_every": 200, "stop_at_score": 1.0, "threads": args.threads,
             "max_position_offset": 2 * max(args.test_lengths)}
    return {name: ExperimentConfig.from_dict({"model": model, "task": task, "train": train}, source=f"demo {name}")
            for name, model in models.items()}


def run_demo(args: argparse.Namespace) -> int:
    threads = torch.get_num_threads()
    try:
        return _run_demo(args)
    finally:  # the trainer sets the process's thread count; a caller in the same process gets its own back
        torch.set_num_threads(threads)


def _run_demo(args: argparse.Namespace) -> int:
    print(
        f"ut demo: {args.task}, train lengths 1..{args.train_length}, test lengths {args.test_lengths}, "
        f"up to {args.steps} training steps per model on {args.threads} threads, seed {args.seed}, runs in {args.out}"
    )
    rows = []
    for name, experiment in demo_experiments(args).items():
        short = name.split()[0].lower().replace("+", "-")
        run_dir = args.out / short / args.task
        if (run_dir / "config.yaml").is_file():  # the demo starts afresh: its own old run goes
            shutil.rmtree(run_dir)
        trainer = Trainer(experiment, run_dir, progress=False, verbose=False, command=command_line(),
                          record_name=f"demo/{short}" if args.record else None, results_dir=args.results)
        test = trainer.fit()["test"]  # the best model's test metrics
        rows.append((name, trainer.step, test))
        cells = ", ".join(f"len {n}: {test[f'len{n}/char_accuracy']:.3f}/{test[f'len{n}/sequence_accuracy']:.3f}"
                          for n in args.test_lengths)
        print(f"  {name:<24} {trainer.step:>5} steps {trainer.elapsed:6.1f}s  char/seq acc {cells}", flush=True)

    header = "| model | steps | " + " | ".join(f"len {n} char / seq" for n in args.test_lengths) + " | ponder time |"
    print()
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name, steps, test in rows:
        cells = " | ".join(f"{test[f'len{n}/char_accuracy']:.3f} / {test[f'len{n}/sequence_accuracy']:.3f}" for n in args.test_lengths)
        ponder = test.get(f"len{args.test_lengths[0]}/encoder_ponder_time", float("nan"))
        print(f"| {name} | {steps} | {cells} | {ponder:.2f} |")
    return 0
