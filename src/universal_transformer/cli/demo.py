"""``ut demo``: train a small UT and a Transformer on an algorithmic task and compare them.

The embedded default job of the README: a few minutes on a laptop CPU, no data needed.
"""

from __future__ import annotations

import argparse
import time

import torch

from ..config import UTConfig, transformer_config
from ..data.algorithmic import TASKS, VOCAB_SIZE, make_batch
from ..models import UniversalTransformer
from ..training.loop import evaluate_generation, fit


def add_demo_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "demo",
        help="train a tiny UT, UT+ACT and Transformer on an algorithmic task and print a table",
        description=__doc__,
    )
    p.add_argument("--task", choices=TASKS, default="reverse")
    p.add_argument("--train-length", type=int, default=12, help="train on lengths 1..N (default 12)")
    p.add_argument("--test-lengths", type=int, nargs="+", default=[12, 24], help="evaluate at these lengths")
    p.add_argument("--seconds", type=float, default=100.0, help="training time per model (default 100)")
    p.add_argument("--steps", type=int, default=4000, help="at most this many steps per model")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    p.set_defaults(run=run_demo)


def demo_models(task_vocab: int, train_length: int) -> dict[str, UTConfig]:
    """The three contenders, sized so that each trains in about a minute on 2 CPU cores."""
    common = dict(
        vocab_size=task_vocab, d_model=64, num_heads=4, d_ff=128, dropout=0.0, embedding_dropout=0.0,
        max_position_offset=4 * train_length,
    )
    return {
        "UT (T=4)": UTConfig(num_steps=4, **common),
        "UT+ACT": UTConfig(num_steps=4, act=True, act_bias_init=-1.0, **common),
        "Transformer (4 layers)": transformer_config(num_steps=4, **common),
    }


def run_demo(args: argparse.Namespace) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"ut demo: {args.task}, train lengths 1..{args.train_length}, test lengths {args.test_lengths}, "
        f"{args.seconds:.0f}s per model, seed {args.seed}"
    )
    rows = []
    for name, config in demo_models(VOCAB_SIZE, args.train_length).items():
        torch.manual_seed(args.seed)
        model = UniversalTransformer(config)
        data = torch.Generator().manual_seed(args.seed + 1)
        started = time.perf_counter()
        result = fit(
            model,
            lambda step: make_batch(args.task, 64, data, min_length=1, max_length=args.train_length),
            steps=args.steps,
            lr=2e-3,
            warmup_steps=200,
            schedule="constant",
            time_limit=args.seconds,
        )
        scores = {}
        for length in args.test_lengths:
            test = torch.Generator().manual_seed(10_000 + length)
            batches = [make_batch(args.task, 100, test, min_length=length, max_length=length) for _ in range(2)]
            scores[length] = evaluate_generation(model, batches)
        elapsed = time.perf_counter() - started
        rows.append((name, result.steps, elapsed, scores))
        last = ", ".join(f"len {n}: {s['char_accuracy']:.3f}/{s['sequence_accuracy']:.3f}" for n, s in scores.items())
        print(f"  {name:<24} {result.steps:>5} steps {elapsed:6.1f}s  char/seq acc {last}", flush=True)

    header = "| model | steps | " + " | ".join(f"len {n} char / seq" for n in args.test_lengths) + " | ponder (enc) |"
    print()
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name, steps, _, scores in rows:
        cells = " | ".join(f"{s['char_accuracy']:.3f} / {s['sequence_accuracy']:.3f}" for s in scores.values())
        ponder = next(iter(scores.values())).get("encoder_ponder_time", float("nan"))
        print(f"| {name} | {steps} | {cells} | {ponder:.2f} |")
    return 0
