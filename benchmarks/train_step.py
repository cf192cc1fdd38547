"""Training step of the fixed-step UT encoder vs. T applications of one torch TransformerEncoderLayer.

Ours: ``RecurrentStack(UTConfig(num_steps=T, dropout=0.1), causal=False, cross_attention=False)``
on random input embeddings ``[B, L, d]``. Reference: ONE ``torch.nn.TransformerEncoderLayer``
(same d, heads, d_ff, post-norm, ReLU, dropout 0.1) applied T times (shared weights), with the
same sinusoidal position+timestep signal added before each step (``--no-ref-signal`` drops it).
One step = forward, loss = mean(output^2), backward, AdamW step. Attention-weight dropout is
set to the same value in both (``--attention-dropout``, default 0.0 = ours' default).

Rows: ours fp32, ours bf16 autocast, [ours torch.compile fp32 / bf16], reference fp32,
reference bf16 autocast. Ratio = reference fp32 median / ours median (> 1: ours faster).
Goal (issue): ours >= 1.3x faster than the reference.
"""

from __future__ import annotations

import contextlib
import time

import torch
from torch import nn

import timing
from universal_transformer.config import UTConfig
from universal_transformer.modules.embedding import sinusoid
from universal_transformer.modules.recurrence import RecurrentStack

GOAL = 1.3


def autocast(bf16: bool):
    return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()


class ReferenceLoop(nn.Module):
    """One ``nn.TransformerEncoderLayer`` applied ``T`` times, optionally adding ``P^t`` each step."""

    def __init__(self, d, heads, d_ff, steps, length, dropout, attention_dropout, signal=True):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, heads, d_ff, dropout=dropout, batch_first=True)
        self.layer.self_attn.dropout = attention_dropout
        self.steps = steps
        if signal:
            pos = sinusoid(torch.arange(length), d)
            sig = torch.stack([pos + sinusoid(torch.tensor(float(t)), d) for t in range(1, steps + 1)])
            self.register_buffer("signal", sig)  # [T, L, d]
        else:
            self.signal = None

    def forward(self, x):
        for t in range(self.steps):
            if self.signal is not None:
                x = x + self.signal[t].to(x.dtype)
            x = self.layer(x)
        return x


def make_step(model, forward, x, bf16, lr):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)

    def step():
        with autocast(bf16):
            y = forward(x)
            loss = y.float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def main() -> None:
    p = timing.parser(__doc__.split("\n")[0], reps=9, warmup=2)
    timing.add_model_args(p, steps=6, length=64)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--attention-dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--no-ref-signal", action="store_true", help="reference adds no sinusoidal signal")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile rows")
    p.add_argument("--no-bf16", action="store_true", help="skip the bf16 autocast rows")
    args = p.parse_args()
    if args.quick:
        args.d_model, args.heads, args.d_ff, args.steps, args.batch, args.length = 128, 4, 512, 3, 4, 32
        args.reps, args.warmup, args.no_compile = 3, 1, True
    info = timing.setup(args)
    d, h, ff, T, B, L = args.d_model, args.heads, args.d_ff, args.steps, args.batch, args.length
    print(f"config: d={d} heads={h} d_ff={ff} T={T} B={B} L={L} dropout={args.dropout} "
          f"attention_dropout={args.attention_dropout} reference signal={not args.no_ref_signal}")

    x = torch.randn(B, L, d)
    cfg = UTConfig(d_model=d, num_heads=h, d_ff=ff, num_steps=T, dropout=args.dropout,
                   attention_dropout=args.attention_dropout, max_position=max(1024, L))

    def ours_model():
        return RecurrentStack(cfg, causal=False, cross_attention=False).train()

    def ref_model():
        return ReferenceLoop(d, h, ff, T, L, args.dropout, args.attention_dropout, not args.no_ref_signal).train()

    precisions = [False] if args.no_bf16 else [False, True]
    contenders = {}
    ours_names, ref_names = [], []
    for bf16 in precisions:
        tag = "bf16 autocast" if bf16 else "fp32"
        m = ours_model()
        contenders[f"ours {tag}"] = make_step(m, lambda x, m=m: m(x).hidden, x, bf16, args.lr)
        ours_names.append((f"ours {tag}", bf16))

    compile_times = {}
    if not args.no_compile:
        for bf16 in precisions:
            tag = "bf16 autocast" if bf16 else "fp32"
            m = ours_model()
            cm = torch.compile(m)
            step = make_step(m, lambda x, cm=cm: cm(x).hidden, x, bf16, args.lr)
            name = f"ours torch.compile {tag}"
            print(f"compiling {name} ...", flush=True)
            try:
                start = time.perf_counter()
                step()
                compile_times[name] = time.perf_counter() - start
                print(f"  first call (compile) {compile_times[name]:.1f} s", flush=True)
                contenders[name] = step
                ours_names.append((name, bf16))
            except Exception as err:  # noqa: BLE001 - report and go on without the row
                print(f"  torch.compile failed, row left out: {type(err).__name__}: {err}")

    for bf16 in precisions:
        tag = "bf16 autocast" if bf16 else "fp32"
        m = ref_model()
        contenders[f"reference {tag}"] = make_step(m, m, x, bf16, args.lr)
        ref_names.append((f"reference {tag}", bf16))

    n_ours = sum(p.numel() for p in ours_model().parameters())
    n_ref = sum(p.numel() for p in ref_model().parameters())
    print(f"parameters: ours {n_ours:,}  reference {n_ref:,}")
    print(f"timing {len(contenders)} contenders, {args.warmup} warm-up + {args.reps} reps, interleaved ...", flush=True)
    res = timing.compare(contenders, reps=args.reps, warmup=args.warmup)

    ref32 = res["reference fp32"]
    rows = []
    for name, bf16 in ours_names + ref_names:
        t = res[name]
        same = res["reference bf16 autocast" if bf16 else "reference fp32"]
        rows.append([name, *timing.timing_row(t), timing.fmt_ratios(timing.ratios(ref32, t)),
                     timing.fmt_ratios(timing.ratios(same, t))])
    print()
    print(timing.markdown_table(["contender", *timing.TIMING_HEADERS, "ref fp32 / this", "ref same precision / this"], rows))
    print(timing.RATIO_NOTE)
    if compile_times:
        print("\ntorch.compile first-call (compile) time: " + ", ".join(f"{k}: {v:.1f} s" for k, v in compile_times.items()))
    print()
    ratios = {}
    for name, _ in ours_names:
        r = timing.ratios(ref32, res[name])
        ratios[name] = r
        print(f"reference fp32 / {name}: {timing.fmt_ratios(r)}  (goal >= {GOAL}x: {timing.verdict(r['median'] >= GOAL)})")
    best_name = min((n for n, _ in ours_names), key=lambda n: res[n].median)
    print(f"fastest of ours: {best_name}, {ratios[best_name]['median']:.2f}x the reference fp32; "
          f"fp32 vs fp32: {ratios['ours fp32']['median']:.2f}x")
    timing.write_json(args.json, {
        "machine": info, "args": vars(args), "compile_s": compile_times,
        "medians": {k: v.median for k, v in res.items()}, "times": {k: v.times for k, v in res.items()},
        "others": {k: v.others for k, v in res.items()}, "ratios": ratios,
    })


if __name__ == "__main__":
    main()
