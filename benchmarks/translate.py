"""Translating real sentences with a trained run: beam search with the key/value cache vs. recomputing.

Loads a translation run (``RUN_DIR/config.yaml``, its tokenizer, the model in ``--model``,
default ``RUN_DIR/best``) and translates the first ``--sentences`` sentences of ``--split``
twice per repetition, exactly as ``ut eval`` / ``ut translate`` do (longest first,
``--batch-size`` at a time, the run's beam, length penalty and maximum length; hypotheses
end at eos): once on the model (cached) and once on ``UncachedDecoder(model)``, which reruns
the whole model on every beam's prefix at every step (and re-encodes the source). Both must
give the same translations (checked). Unlike ``beam.py`` (random weights, every hypothesis
forced to 100 tokens), this is the speed-up a user of a trained model sees on real lengths.
"""

from __future__ import annotations

from pathlib import Path

import timing
from universal_transformer.generation import UncachedDecoder
from universal_transformer.models.base import PretrainedModel
from universal_transformer.registry import build_task
from universal_transformer.training.config import load_experiment


def main() -> None:
    p = timing.parser(__doc__.split("\n")[0], reps=3, warmup=1)
    p.add_argument("run_dir", type=Path, help="a translation run directory written by 'ut train'")
    p.add_argument("--model", type=Path, default=None, help="saved model folder (default RUN_DIR/best)")
    p.add_argument("--split", default="test", choices=("validation", "test"))
    p.add_argument("--sentences", type=int, default=64, help="the first N sentences of the split")
    p.add_argument("--batch-size", type=int, default=None, help="sentences per batch (default task.eval_batch_size)")
    p.add_argument("--beam", type=int, default=None, help="beams (default task.beam_size)")
    args = p.parse_args()
    if args.quick:
        args.sentences, args.reps, args.warmup = 8, 2, 0
    info = timing.setup(args)
    experiment = load_experiment(args.run_dir / "config.yaml")
    task = build_task(experiment.task, seed=experiment.train.seed)
    if not hasattr(task, "translate"):
        raise SystemExit(f"{args.run_dir} is a {task.name!r} run, not a translation run")
    model = PretrainedModel.from_pretrained(args.model or args.run_dir / "best").eval()
    sources = task.corpus(args.split).sources[: args.sentences]
    beam = args.beam or task.options.beam_size
    print(f"run {args.run_dir} ({args.model or 'best'}): {type(model).__name__}, {model.num_parameters():,} parameters; "
          f"{len(sources)} {args.split} sentences, beam {beam}, batch {args.batch_size or task.options.eval_batch_size}")

    def translate(m):  # (beam search runs under inference mode itself)
        return task.translate(m, sources, beam_size=beam, batch_size=args.batch_size)

    uncached_model = UncachedDecoder(model)
    cached, uncached = translate(model), translate(uncached_model)
    same = sum(a == b for a, b in zip(cached, uncached))
    print(f"cached == uncached translations: {same} of {len(sources)}")
    res = timing.compare({"cached": lambda: translate(model), "uncached": lambda: translate(uncached_model)},
                         reps=args.reps, warmup=args.warmup)
    table = [[n, *timing.timing_row(t), f"{len(sources) / t.median:.2f}"] for n, t in res.items()]
    print(timing.markdown_table(["contender", *timing.TIMING_HEADERS, "sentences/s"], table))
    print(f"speed-up uncached/cached: {timing.fmt_ratios(timing.ratios(res['uncached'], res['cached']))}")
    print(timing.RATIO_NOTE)
    timing.write_json(args.json, {"machine": info, "args": vars(args), "same": same,
                                  "medians": {k: v.median for k, v in res.items()},
                                  "times": {k: v.times for k, v in res.items()}})


if __name__ == "__main__":
    main()
