"""Dropout on the CPU: ours (``modules/dropout.py``, masks from 16-bit lanes of 64-bit draws) vs. PyTorch's ``nn.Dropout``.

Two comparisons, each timed side by side and interleaved in one process:

1. the dropout alone, forward + backward, p = 0.1, float32, on activation shapes of the
   experiments' batches (``[64, 32, d]`` for d = 64, 128, 256, 512);
2. whole training steps (``Trainer.train_step``: forward, loss, backward, AdamW) of committed
   experiment configs (``--configs``; default the d=64 Learning-to-Execute UT and the d=128,
   8-step algorithmic UT), where the only difference is which dropout forward runs (both
   draw from the same generator; the model trains on across repetitions).

Reported: torch / ours median time (> 1: ours faster).
"""

from __future__ import annotations

import shutil
import tempfile

import torch
from torch import nn

import timing
from universal_transformer.modules import dropout as ours_module
from universal_transformer.training.config import load_experiment
from universal_transformer.training.trainer import Trainer

OURS = ours_module.Dropout.forward
TORCH = nn.Dropout.forward


def isolated(widths: list[int], args) -> list[list]:
    rows = []
    for d in widths:
        x = torch.randn(64, 32, d, requires_grad=True)
        grad = torch.randn_like(x)
        drop = ours_module.Dropout(0.1).train()

        def run(forward, reps=args.inner):
            def fn():
                for _ in range(reps):
                    forward(drop, x).backward(grad)
            return fn

        print(f"\n## dropout alone, [64, 32, {d}], forward + backward x {args.inner}", flush=True)
        res = timing.compare({"torch": run(TORCH), "ours": run(OURS)}, reps=args.reps, warmup=args.warmup)
        rows.append([f"[64, 32, {d}]", f"{res['torch'].median:.4f}", f"{res['ours'].median:.4f}",
                     timing.fmt_ratios(timing.ratios(res["torch"], res["ours"]))])
    return rows


def training_steps(configs: list[str], args) -> list[list]:
    rows = []
    for config in configs:
        run_dir = tempfile.mkdtemp(prefix="bench-dropout-")
        try:
            experiment = load_experiment(config, [f"train.threads={args.threads or 1}"])
            trainer = Trainer(experiment, run_dir, progress=False, verbose=False)
            trainer.prepare_run_dir()

            def steps(forward):
                def fn():
                    ours_module.Dropout.forward = forward
                    try:
                        for _ in range(args.steps):
                            trainer.train_step()
                    finally:
                        ours_module.Dropout.forward = OURS
                return fn

            print(f"\n## {config}: {trainer.model.num_parameters():,} parameters, {args.steps} training steps a call", flush=True)
            res = timing.compare({"torch": steps(TORCH), "ours": steps(OURS)}, reps=args.reps, warmup=args.warmup)
            rows.append([config, f"{res['torch'].median / args.steps:.4f}", f"{res['ours'].median / args.steps:.4f}",
                         timing.fmt_ratios(timing.ratios(res["torch"], res["ours"]))])
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
    return rows


def main() -> None:
    p = timing.parser(__doc__.split("\n")[0], reps=9, warmup=1)
    p.add_argument("--widths", default="64,128,256,512", help="d of the isolated activations [64, 32, d]")
    p.add_argument("--inner", type=int, default=20, help="dropout calls per timed call (isolated)")
    p.add_argument("--configs", default="configs/lte/program-ut.yaml,configs/algorithmic/reverse-ut.yaml")
    p.add_argument("--steps", type=int, default=5, help="training steps per timed call")
    args = p.parse_args()
    if args.quick:
        args.widths, args.inner, args.steps, args.reps, args.warmup = "64", 5, 1, 3, 1
        args.configs = "configs/lte/program-ut.yaml"
    info = timing.setup(args)
    iso = isolated([int(w) for w in args.widths.split(",")], args)
    steps = training_steps([c for c in args.configs.split(",") if c], args)
    print("\n## torch / ours (> 1: ours faster)\n")
    print(timing.markdown_table(["dropout alone", "torch median s", "ours median s", "torch / ours"], iso))
    print()
    print(timing.markdown_table(["training step of", "torch s / step", "ours s / step", "torch / ours"], steps))
    print(timing.RATIO_NOTE)
    timing.write_json(args.json, {"machine": info, "args": vars(args), "isolated": iso, "steps": steps})


if __name__ == "__main__":
    main()
