"""Greedy decoding with the key/value cache vs. recomputing the whole prefix at every token.

Cached: ``universal_transformer.generation.generate(model, inputs, max_new_tokens=N,
stop_at_eos=False, eos_id=-1)`` (``eos_id=-1``: no row ever finishes, so both paths produce
exactly N argmax tokens). Uncached: ``generate_uncached(model, inputs, max_new_tokens=N)``,
which runs the full model on the whole prefix for every new token (the encoder-decoder
also re-encodes the source each time, as that function does).

Models: ``UTLanguageModel`` (prompt of ``--prompt`` tokens) and ``UniversalTransformer``
(source of ``--source`` tokens), fixed T steps, eval mode. Both paths must produce the same
tokens (checked). Goal (issue): cached >= 10x faster at 400 tokens.
"""

from __future__ import annotations

import torch

import timing
from universal_transformer.config import UTConfig
from universal_transformer.generation import generate, generate_uncached

GOAL = 10.0


def main() -> None:
    p = timing.parser(__doc__.split("\n")[0], reps=3, warmup=1)
    p.add_argument("--tokens", type=int, default=400, help="new tokens generated (and timed) by both paths")
    p.add_argument("--warmup-tokens", type=int, default=32, help="tokens per warm-up call")
    timing.add_model_args(p, d_model=256, heads=4, d_ff=1024, steps=4, batch=1)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--prompt", type=int, default=8, help="LM prompt length")
    p.add_argument("--source", type=int, default=16, help="encoder-decoder source length")
    p.add_argument("--models", default="lm,encdec", help="comma list of: lm, encdec")
    args = p.parse_args()
    if args.quick:
        args.tokens, args.warmup_tokens, args.d_model, args.d_ff, args.steps = 32, 8, 64, 256, 2
        args.reps, args.warmup = 3, 1
    info = timing.setup(args)
    d, h, ff, T, B, N = args.d_model, args.heads, args.d_ff, args.steps, args.batch, args.tokens
    print(f"config: d={d} heads={h} d_ff={ff} T={T} B={B} vocab={args.vocab} new tokens={N} "
          f"LM prompt={args.prompt} source={args.source}")
    cfg = UTConfig(vocab_size=args.vocab, d_model=d, num_heads=h, d_ff=ff, num_steps=T,
                   max_position=max(1024, args.prompt + N + 1, N + 2))

    summary, payload = [], {"machine": info, "args": vars(args), "medians": {}}
    for kind, title, model, inputs in timing.decoding_models(cfg, args, B):

        cached = generate(model, inputs, max_new_tokens=N, stop_at_eos=False, eos_id=-1)
        uncached, _ = generate_uncached(model, inputs, max_new_tokens=N)
        same = bool(torch.equal(cached, uncached))
        agree = (cached == uncached).float().mean().item()
        print(f"\n## {title}: cached == uncached tokens: {same} ({100 * agree:.1f}% of tokens agree)", flush=True)

        # Warm-up with a few tokens only (the uncached path is the expensive one), then time N.
        for _ in range(args.warmup):
            generate(model, inputs, max_new_tokens=args.warmup_tokens, stop_at_eos=False, eos_id=-1)
            generate_uncached(model, inputs, max_new_tokens=args.warmup_tokens)
        contenders = {
            "cached": lambda: generate(model, inputs, max_new_tokens=N, stop_at_eos=False, eos_id=-1),
            "uncached": lambda: generate_uncached(model, inputs, max_new_tokens=N),
        }
        res = timing.compare(contenders, reps=args.reps, warmup=0)
        rows = [[n, *timing.timing_row(t), f"{1000 * t.median / N:.2f}"] for n, t in res.items()]
        print(timing.markdown_table(["contender", *timing.TIMING_HEADERS, "ms/token"], rows))
        r = timing.ratios(res["uncached"], res["cached"])
        print(f"speed-up uncached/cached: {timing.fmt_ratios(r)}")
        summary.append([title, B, N, f"{res['cached'].median:.3f}", f"{res['uncached'].median:.3f}", timing.fmt_ratios(r),
                        "yes" if same else f"no ({100 * agree:.0f}%)", timing.verdict(r["median"] >= GOAL)])
        payload["medians"][kind] = {k: v.median for k, v in res.items()}
        payload.setdefault("times", {})[kind] = {k: v.times for k, v in res.items()}
        payload.setdefault("others", {})[kind] = {k: v.others for k, v in res.items()}

    print()
    print(timing.markdown_table(["model", "B", "tokens", "cached median s", "uncached median s", "uncached/cached",
                                 "same tokens", f"goal >= {GOAL:.0f}x"], summary))
    print(timing.RATIO_NOTE)
    timing.write_json(args.json, payload)


if __name__ == "__main__":
    main()
