"""Achieved FLOP/s of a UT encoder training step vs. the measured peak of a plain matmul.

The training step is the one of ``train_step.py`` (``RecurrentStack`` encoder, fixed T steps,
forward + backward + AdamW). FLOPs are counted analytically (only matmuls and attention;
elementwise work, LayerNorm, softmax, dropout and the optimizer are not counted):

    forward per token per step = 2 * (4 d^2 + 2 d d_ff)   # q, k, v, out projections + two FF matmuls
                               + 4 L d                    # Q K^T and A V (non-causal, full L keys)
    forward  = B * L * T * (8 d^2 + 4 d d_ff + 4 L d)
    training = 3 * forward                                 # backward = 2 x forward

Peak: the median FLOP/s of plain ``torch.mm`` on matmuls of the step's shapes
([B*L, d] x [d, d_ff], [B*L, d_ff] x [d_ff, d], [B*L, d] x [d, d]); the best of them is the
peak, in fp32 and in bf16 (bf16 inputs, as autocast feeds them). Everything is timed in one
process, interleaved. Goal (issue): achieved / peak >= 50%.
"""

from __future__ import annotations

import torch

import timing
from train_step import make_step
from universal_transformer.config import UTConfig
from universal_transformer.modules.recurrence import RecurrentStack

GOAL = 0.5


def step_flops(d, d_ff, T, B, L) -> tuple[float, float]:
    fwd = B * L * T * (8 * d * d + 4 * d * d_ff + 4 * L * d)
    return fwd, 3 * fwd


def main() -> None:
    p = timing.parser(__doc__.split("\n")[0], reps=9, warmup=2)
    timing.add_model_args(p, steps=6, length=64)
    p.add_argument("--mm-seconds", type=float, default=0.2, help="target seconds of one timed matmul batch")
    args = p.parse_args()
    if args.quick:
        args.d_model, args.heads, args.d_ff, args.steps, args.batch, args.length = 128, 4, 512, 3, 4, 32
        args.reps, args.warmup, args.mm_seconds = 3, 1, 0.05
    info = timing.setup(args)
    d, h, ff, T, B, L = args.d_model, args.heads, args.d_ff, args.steps, args.batch, args.length
    fwd, train = step_flops(d, ff, T, B, L)
    print(f"config: d={d} heads={h} d_ff={ff} T={T} B={B} L={L}")
    print("FLOP formula: forward = B*L*T*(8 d^2 + 4 d d_ff + 4 L d); training step = 3 x forward")
    print(f"  = {fwd / 1e9:.2f} GFLOP forward, {train / 1e9:.2f} GFLOP per training step")

    x = torch.randn(B, L, d)
    cfg = UTConfig(d_model=d, num_heads=h, d_ff=ff, num_steps=T, dropout=0.1, max_position=max(1024, L))
    contenders, work = {}, {}
    for bf16 in (False, True):
        m = RecurrentStack(cfg, causal=False, cross_attention=False).train()
        name = f"UT train step {'bf16 autocast' if bf16 else 'fp32'}"
        contenders[name] = make_step(m, lambda x, m=m: m(x).hidden, x, bf16, 1e-4)
        work[name] = train

    M = B * L
    shapes = [(M, d, ff), (M, ff, d), (M, d, d)]
    mm_names = {False: [], True: []}
    for bf16 in (False, True):
        dtype = torch.bfloat16 if bf16 else torch.float32
        for m_, k_, n_ in shapes:
            a, b = torch.randn(m_, k_).to(dtype), torch.randn(k_, n_).to(dtype)
            flops = 2 * m_ * k_ * n_
            torch.mm(a, b)  # first call: kernel selection, allocation
            one = timing.time_once(lambda: [torch.mm(a, b) for _ in range(10)]) / 10
            inner = max(1, int(args.mm_seconds / max(one, 1e-6)))

            def run(a=a, b=b, inner=inner):
                for _ in range(inner):
                    torch.mm(a, b)

            name = f"mm {'bf16' if bf16 else 'fp32'} [{m_},{k_}]x[{k_},{n_}] x{inner}"
            contenders[name] = run
            work[name] = flops * inner
            mm_names[bf16].append(name)

    print(f"timing {len(contenders)} contenders, {args.warmup} warm-up + {args.reps} reps, interleaved ...", flush=True)
    res = timing.compare(contenders, reps=args.reps, warmup=args.warmup)
    rate = {n: work[n] / res[n].median for n in contenders}
    qrate = {n: work[n] / res[n].quiet_median for n in contenders}
    peak = {bf16: max(rate[n] for n in mm_names[bf16]) for bf16 in (False, True)}
    qpeak = {bf16: max(qrate[n] for n in mm_names[bf16]) for bf16 in (False, True)}

    def g(v):
        return "-" if v != v else f"{v / 1e9:.1f}"

    rows = [[n, *timing.timing_row(res[n]), f"{work[n] / 1e9:.2f}", g(rate[n]), g(qrate[n])] for n in contenders]
    print()
    print(timing.markdown_table(["contender", *timing.TIMING_HEADERS, "GFLOP", "GFLOP/s (median)", "GFLOP/s (quiet median)"], rows))
    print()
    summary = []
    for bf16 in (False, True):
        tag = "bf16 autocast" if bf16 else "fp32"
        name = f"UT train step {tag}"
        frac, qfrac = rate[name] / peak[bf16], qrate[name] / qpeak[bf16]
        summary.append([name, g(rate[name]), g(peak[bf16]), f"{100 * frac:.0f}%",
                        "-" if qfrac != qfrac else f"{100 * qfrac:.0f}%", timing.verdict(frac >= GOAL)])
    print(timing.markdown_table(["step", "achieved GFLOP/s", "peak mm GFLOP/s (same dtype)", "achieved/peak",
                                 "achieved/peak (quiet medians)", f"goal >= {GOAL:.0%}"], summary))
    r = timing.ratios(res["UT train step fp32"], res["UT train step bf16 autocast"])
    print(f"\nbf16 peak / fp32 peak: {peak[True] / peak[False]:.2f}x; UT step time fp32 / bf16: {timing.fmt_ratios(r)}")
    timing.write_json(args.json, {
        "machine": info, "args": vars(args), "flops": {"forward": fwd, "train": train},
        "medians": {k: v.median for k, v in res.items()}, "rate": rate, "peak": {str(k): v for k, v in peak.items()},
        "quiet_rate": qrate, "times": {k: v.times for k, v in res.items()}, "others": {k: v.others for k, v in res.items()},
    })


if __name__ == "__main__":
    main()
