"""Peak memory of a UT training step with and without step (gradient) checkpointing, vs. T.

CPU torch has no memory-statistics API, so each setting runs in a FRESH subprocess
(``memory.py --child ...``) that builds a ``UTLanguageModel`` (d=512 by default), records
its resident set size (VmRSS) after building the model and batch, runs ``--train-steps``
training steps (forward, cross-entropy loss, backward, AdamW step), and reports its peak
resident set size (VmHWM from /proc/self/status). The parent also reads the child's
``ru_maxrss`` from ``os.wait4``. Settings run one after another (never two at once).
With ``--mmap-threshold`` glibc returns freed large blocks to the OS at once, so the peak
reflects live tensors rather than heap kept by the allocator.

Reported per T: peak RSS, peak minus the RSS before training ("training delta": activations,
gradients, optimizer state, allocator slack), and off/on ratios; and how the delta grows
with T (the slope per step). Checkpointing is ``model.set_gradient_checkpointing(True)``.
"""

from __future__ import annotations

import json
import os
import sys

import timing


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def child(args) -> None:
    import torch

    from universal_transformer.config import UTConfig
    from universal_transformer.models.transformer import UTLanguageModel

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    cfg = UTConfig(vocab_size=args.vocab, d_model=args.d_model, num_heads=args.heads, d_ff=args.d_ff,
                   num_steps=args.steps, dropout=0.1, max_position=max(1024, args.length + 1))
    model = UTLanguageModel(cfg).train()
    model.set_gradient_checkpointing(bool(args.checkpoint))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(3, args.vocab, (args.batch, args.length + 1))
    before = _status_kb("VmRSS")
    for _ in range(args.train_steps):
        out = model(tokens[:, :-1], tokens[:, 1:])
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        opt.step()
    print(json.dumps({"before_kb": before, "hwm_kb": _status_kb("VmHWM"), "rss_kb": _status_kb("VmRSS"),
                      "params": sum(p.numel() for p in model.parameters())}))


def run_child(args, steps: int, checkpoint: bool) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--steps", str(steps), "--checkpoint", str(int(checkpoint)),
           "--d-model", str(args.d_model), "--heads", str(args.heads), "--d-ff", str(args.d_ff),
           "--batch", str(args.batch), "--length", str(args.length), "--vocab", str(args.vocab),
           "--train-steps", str(args.train_steps), "--seed", str(args.seed)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    env = dict(os.environ)
    if args.mmap_threshold:
        env["MALLOC_MMAP_THRESHOLD_"] = str(args.mmap_threshold)
    out, usage, _ = timing.run_process(cmd, env)
    result = json.loads(out.strip().splitlines()[-1])
    result["ru_maxrss_kb"] = usage.ru_maxrss  # kilobytes on Linux
    return result


def main() -> None:
    p = timing.parser(__doc__.split("\n")[0], reps=1, warmup=0)
    p.add_argument("--child", action="store_true", help=argparse_hide())
    p.add_argument("--checkpoint", type=int, default=0, help=argparse_hide())
    p.add_argument("--steps", type=int, default=None, help="child only: T")
    p.add_argument("--sweep", default="6,12,24", help="values of T")
    timing.add_model_args(p, length=128)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--train-steps", type=int, default=2, help="training steps per subprocess (the first allocates AdamW state)")
    p.add_argument("--mmap-threshold", type=int, default=0, metavar="BYTES",
                   help="set glibc MALLOC_MMAP_THRESHOLD_ in the subprocesses (e.g. 131072): large tensors are then "
                        "mmapped and returned to the OS when freed, so peak RSS tracks live tensor memory instead of "
                        "heap the allocator kept (0 = leave malloc alone, what a user gets)")
    args = p.parse_args()
    if args.child:
        child(args)
        return
    if args.quick:
        args.d_model, args.heads, args.d_ff, args.batch, args.length, args.sweep, args.train_steps = 128, 4, 512, 4, 32, "4", 1
    info = timing.setup(args)  # (sets args.threads = 1 with --quick; passed on to the subprocesses)
    sweep = [int(s) for s in args.sweep.split(",")]
    print(f"config: UTLanguageModel d={args.d_model} heads={args.heads} d_ff={args.d_ff} B={args.batch} "
          f"L={args.length} vocab={args.vocab}, {args.train_steps} training steps per subprocess, T in {sweep}, "
          f"MALLOC_MMAP_THRESHOLD_={args.mmap_threshold or 'unset'}")
    results = {}
    for T in sweep:
        for ckpt in (False, True):
            r = run_child(args, T, ckpt)
            results[(T, ckpt)] = r
            print(f"  T={T:3d} checkpointing={'on ' if ckpt else 'off'}: peak {r['hwm_kb'] / 1024:.0f} MiB "
                  f"(ru_maxrss {r['ru_maxrss_kb'] / 1024:.0f} MiB), before training {r['before_kb'] / 1024:.0f} MiB",
                  flush=True)

    def mib(kb):
        return kb / 1024

    rows = []
    for T in sweep:
        off, on = results[(T, False)], results[(T, True)]
        d_off, d_on = off["hwm_kb"] - off["before_kb"], on["hwm_kb"] - on["before_kb"]
        rows.append([T, f"{mib(off['hwm_kb']):.0f}", f"{mib(on['hwm_kb']):.0f}", f"{off['hwm_kb'] / on['hwm_kb']:.2f}x",
                     f"{mib(d_off):.0f}", f"{mib(d_on):.0f}", f"{d_off / d_on:.2f}x"])
    print()
    print(timing.markdown_table(["T", "peak RSS off (MiB)", "peak RSS on (MiB)", "off/on", "training delta off (MiB)",
                                 "training delta on (MiB)", "delta off/on"], rows))
    if len(sweep) > 1:
        lo, hi = sweep[0], sweep[-1]
        for ckpt in (False, True):
            a, b = results[(lo, ckpt)], results[(hi, ckpt)]
            slope = (mib(b["hwm_kb"]) - mib(a["hwm_kb"])) / (hi - lo)
            print(f"checkpointing {'on ' if ckpt else 'off'}: peak grows {slope:.1f} MiB per step of T "
                  f"(T={lo} -> {hi}: {mib(a['hwm_kb']):.0f} -> {mib(b['hwm_kb']):.0f} MiB)")
    big = max(sweep)
    print(f"at T={big}: peak RSS without/with checkpointing = "
          f"{results[(big, False)]['hwm_kb'] / results[(big, True)]['hwm_kb']:.2f}x")
    timing.write_json(args.json, {"machine": info, "args": vars(args),
                                  "results": {f"T={k[0]},ckpt={k[1]}": v for k, v in results.items()}})


def argparse_hide():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
