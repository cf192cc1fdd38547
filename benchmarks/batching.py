"""Training with batches of examples as drawn vs. batches grouped by length.

A batch is padded to its longest example. Two trainers of one config, one with ``--plain``
(the batches as drawn) and one with ``--grouped`` (examples of similar length together),
each run ``--steps`` consecutive training steps a call (forward, loss, backward, AdamW),
timed side by side and interleaved. Defaults: joint bAbI 10k, UT+ACT
(``configs/babi/ut-act-t2t-joint.yaml``), random stories vs. buckets of 4 facts
(``task.bucket_width``); for Learning to Execute, ``--config configs/lte/program-ut.yaml
--plain task.sort_pool=1 --grouped task.sort_pool=16``. Grouped batches can hold another
number of examples than plain ones, so the comparison is per example: the median time per
step over the mean examples per step of the steps timed.

Reported: plain / grouped time per example (> 1: grouping faster).

Any two override sets of one config compare the same way; ``--labels`` names them, e.g. the
ACT loops on bAbI: ``--plain train.act_packed=false --grouped train.act_packed=true --labels
dense,packed`` (docs/performance.md).
"""

from __future__ import annotations

import shutil
import tempfile

import timing
from universal_transformer.training.config import load_experiment
from universal_transformer.training.trainer import Trainer


def main() -> None:
    p = timing.parser(__doc__.split("\n")[0], reps=7, warmup=1)
    p.add_argument("--config", default="configs/babi/ut-act-t2t-joint.yaml")
    p.add_argument("--plain", default="task.bucket_width=0", help="override(s), comma-separated, of the plain trainer")
    p.add_argument("--grouped", default="task.bucket_width=4", help="override(s), comma-separated, of the grouped trainer")
    p.add_argument("--steps", type=int, default=20, help="training steps per timed call")
    p.add_argument("--labels", default="plain,grouped", help="the names of the two trainers in the output")
    args = p.parse_args()
    names = args.labels.split(",")
    if len(names) != 2 or names[0] == names[1]:
        p.error(f"--labels takes two different names, comma-separated, got {args.labels!r}")
    labels = dict(zip(("plain", "grouped"), names))
    quick = []
    if args.quick:
        args.steps, args.reps, args.warmup = 2, 3, 1
        quick = ["model.d_model=32", "model.d_ff=64", "model.num_steps=2"]  # a small model: a smoke run
        if "babi" in args.config:
            quick += ["task.set=en", "task.tasks=[1,2,3]"]
    info = timing.setup(args)
    threads = f"train.threads={args.threads or 1}"
    run_dirs, trainers = [], {}
    try:
        for name, overrides in (("plain", args.plain), ("grouped", args.grouped)):
            run_dirs.append(tempfile.mkdtemp(prefix="bench-batching-"))
            experiment = load_experiment(args.config, [*quick, threads, *filter(None, overrides.split(","))])
            trainers[name] = Trainer(experiment, run_dirs[-1], progress=False, verbose=False)
            trainers[name].prepare_run_dir()
        timed = (args.warmup + args.reps) * args.steps  # the steps the timed calls walk through, from 0
        examples = {}
        for name, trainer in trainers.items():
            cfg = trainer.cfg
            sizes = [trainer.task.train_batch(s, batch_tokens=cfg.batch_tokens, max_batch_size=cfg.max_batch_size).size
                     for s in range(timed)]
            examples[name] = sum(sizes) / len(sizes)

        def steps(trainer):
            def fn():
                for _ in range(args.steps):
                    trainer.train_step()
            return fn

        params = trainers["plain"].model.num_parameters()
        print(f"\n## {args.config}: {params:,} parameters, {args.steps} training steps a call", flush=True)
        res = timing.compare({labels[name]: steps(t) for name, t in trainers.items()}, reps=args.reps, warmup=args.warmup)
        res = {name: res[labels[name]] for name in trainers}
    finally:
        for d in run_dirs:
            shutil.rmtree(d, ignore_errors=True)
    per_example = {name: res[name].median / args.steps / examples[name] for name in trainers}
    rows = [[labels[name], getattr(args, name), f"{examples[name]:.1f}", f"{res[name].median / args.steps:.4f}",
             f"{1000 * per_example[name]:.2f}"] for name in trainers]
    a, b = labels["plain"], labels["grouped"]
    print(f"\n## {a} / {b} (> 1: {b} faster)\n")
    print(timing.markdown_table(["trainer", "overrides", "examples / step", "s / step", "s / 1000 examples"], rows))
    step_ratios = timing.fmt_ratios(timing.ratios(res["plain"], res["grouped"]))
    print(f"\n{a} / {b} time per example: {per_example['plain'] / per_example['grouped']:.2f}x "
          f"(per step: {step_ratios})")
    print(timing.RATIO_NOTE)
    timing.write_json(args.json, {"machine": info, "args": vars(args), "rows": rows})


if __name__ == "__main__":
    main()
