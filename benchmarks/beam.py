"""Beam search with the key/value cache vs. recomputing the whole prefix, and its cost per beam vs. greedy.

Cached: ``universal_transformer.generation.beam_search(model, inputs, beam_size=K,
max_new_tokens=N, min_length=N)`` (``min_length = N``: eos is barred until the limit and
then forced, so every hypothesis holds exactly N tokens and every run takes N steps).
Uncached: the same call on ``UncachedDecoder(model)``, which reruns the full model on the
whole prefix of every beam at every step (the encoder-decoder also re-encodes the source).
Both must return the same hypotheses (checked). Greedy: ``generate(model, inputs,
max_new_tokens=N, stop_at_eos=False, eos_id=-1)`` on the same ``--batch`` rows, and on
``--batch * K`` rows (as many rows as the beams: what is left is beam search's own
bookkeeping: top-k, cache reordering, finished lists).

Models: ``UTLanguageModel`` (prompt of ``--prompt`` tokens) and ``UniversalTransformer``
(source of ``--source`` tokens), fixed T steps, eval mode; or, with ``--config``, the
model of an experiment config (e.g. ``configs/mt/ut.yaml``, a translation model) with a
``--vocab`` vocabulary. Goal (issue): cached >= 8x faster than uncached for beam 4 over
100 tokens.
"""

from __future__ import annotations

import timing
from universal_transformer.config import UTConfig
from universal_transformer.generation import UncachedDecoder, beam_search, generate
from universal_transformer.training.config import load_experiment

GOAL = 8.0


def main() -> None:
    p = timing.parser(__doc__.split("\n")[0], reps=3, warmup=1)
    p.add_argument("--tokens", type=int, default=100, help="tokens of every hypothesis (and of greedy)")
    p.add_argument("--beam", type=int, default=4, help="beam size K")
    p.add_argument("--warmup-tokens", type=int, default=16, help="tokens per warm-up call")
    timing.add_model_args(p, d_model=256, heads=4, d_ff=1024, steps=4, batch=1)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--prompt", type=int, default=8, help="LM prompt length")
    p.add_argument("--source", type=int, default=16, help="encoder-decoder source length")
    p.add_argument("--models", default="lm,encdec", help="comma list of: lm, encdec")
    p.add_argument("--config", default=None, metavar="YAML",
                   help="time the model of this experiment config (its sizes replace --d-model/--heads/--d-ff/--steps)")
    args = p.parse_args()
    if args.quick:
        args.tokens, args.warmup_tokens, args.d_model, args.d_ff, args.steps = 24, 8, 64, 256, 2
        args.reps, args.warmup = 3, 1
    info = timing.setup(args)
    B, N, K = args.batch, args.tokens, args.beam
    max_position = max(1024, args.prompt + N + 2)
    if args.config:
        cfg = load_experiment(args.config).model.replace(vocab_size=args.vocab, max_position=max_position)
    else:
        cfg = UTConfig(vocab_size=args.vocab, d_model=args.d_model, num_heads=args.heads, d_ff=args.d_ff,
                       num_steps=args.steps, max_position=max_position)
    print(f"config: {args.config or 'UTConfig'}: d={cfg.d_model} heads={cfg.num_heads} d_ff={cfg.d_ff} "
          f"T={cfg.num_steps} shared={cfg.share_weights} act={cfg.act} B={B} beam={K} vocab={args.vocab} tokens={N} "
          f"LM prompt={args.prompt} source={args.source}")

    summary, payload = [], {"machine": info, "args": vars(args), "medians": {}}
    for kind, title, model, inputs in timing.decoding_models(cfg, args, B):
        uncached_model = UncachedDecoder(model)
        rows = inputs.repeat_interleave(K, dim=0)

        def beam(m, n: int = N):
            return beam_search(m, inputs, beam_size=K, max_new_tokens=n, min_length=n)

        def greedy(x, n: int = N):
            return generate(model, x, max_new_tokens=n, stop_at_eos=False, eos_id=-1)

        cached, uncached = beam(model), beam(uncached_model)
        same = [h.tokens for h in cached.best] == [h.tokens for h in uncached.best]
        gap = max(abs(a.score - b.score) for a, b in zip(cached.best, uncached.best))
        print(f"\n## {title}: cached == uncached best hypotheses: {same} (largest score difference {gap:.2e})",
              flush=True)

        for _ in range(args.warmup):  # a few tokens only: the uncached path is the expensive one
            beam(model, args.warmup_tokens), beam(uncached_model, args.warmup_tokens)
            greedy(inputs, args.warmup_tokens), greedy(rows, args.warmup_tokens)
        contenders = {
            "beam cached": lambda: beam(model),
            "beam uncached": lambda: beam(uncached_model),
            f"greedy B={B}": lambda: greedy(inputs),
            f"greedy B={B * K}": lambda: greedy(rows),
        }
        res = timing.compare(contenders, reps=args.reps, warmup=0)
        table = [[n, *timing.timing_row(t), f"{1000 * t.median / N:.2f}"] for n, t in res.items()]
        print(timing.markdown_table(["contender", *timing.TIMING_HEADERS, "ms/token"], table))
        speedup = timing.ratios(res["beam uncached"], res["beam cached"])
        per_beam = timing.ratios(res["beam cached"], res[f"greedy B={B}"])
        per_beam = {key: value / K for key, value in per_beam.items()}
        overhead = timing.ratios(res["beam cached"], res[f"greedy B={B * K}"])
        print(f"speed-up uncached/cached: {timing.fmt_ratios(speedup)}")
        print(f"cost per beam, beam {K} / ({K} x greedy B={B}): {timing.fmt_ratios(per_beam)}")
        print(f"beam {K} / greedy on as many rows (B={B * K}): {timing.fmt_ratios(overhead)}")
        summary.append([title, B, K, N, f"{res['beam cached'].median:.3f}", f"{res['beam uncached'].median:.3f}",
                        timing.fmt_ratios(speedup), "yes" if same else "no", timing.verdict(speedup["median"] >= GOAL),
                        f"{per_beam['median']:.3g}x", f"{overhead['median']:.3g}x"])
        payload["medians"][kind] = {k: v.median for k, v in res.items()}
        payload.setdefault("times", {})[kind] = {k: v.times for k, v in res.items()}
        payload.setdefault("others", {})[kind] = {k: v.others for k, v in res.items()}

    print()
    print(timing.markdown_table(["model", "B", "beam", "tokens", "cached median s", "uncached median s",
                                 "uncached/cached", "same hypotheses", f"goal >= {GOAL:.0f}x",
                                 "per beam vs greedy", "vs greedy on B*beam rows"], summary))
    print(timing.RATIO_NOTE)
    timing.write_json(args.json, payload)


if __name__ == "__main__":
    main()
