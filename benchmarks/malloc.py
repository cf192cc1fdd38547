"""Training speed with glibc's malloc as it is vs. told to keep freed memory (GLIBC_TUNABLES).

With its defaults glibc hands large freed blocks back to the kernel (munmap, heap trimming), so
a training loop whose tensor shapes change from step to step (length buckets, ACT's shrinking
sets of running positions) can fault the same memory in again at every step: a UT+ACT an hour
into a CPU run beside two other jobs spent about 38% of its CPU time in the kernel (2026-11-27,
/proc/PID/stat), 3% once restarted with ``GLIBC_TUNABLES=glibc.malloc.trim_threshold=...:
glibc.malloc.mmap_threshold=...``. Measured here on an idle machine (150 steps from scratch, 3 of
each): 4% by default and no faster tuned (0.94x); whether long runs gain is what ``--steps`` is for.

The allocator is fixed at process start, so each contender is a fresh ``ut train`` subprocess
that trains CONFIG from scratch for ``--steps`` steps (one evaluation at the end, on a small
validation and test set), one subprocess at a time, in the order A B B A A B ...; the parent
reads each child's wall time, user and system CPU time and minor page faults (``os.wait4``).
Reported: the median wall time of each contender and their ratio (> 1: the tuned allocator is
faster), and per contender the system share of the CPU time and the page faults per second.
Wall times include the start (imports, building the training set), the same for both.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import timing

TUNED = "glibc.malloc.trim_threshold=4294967296:glibc.malloc.mmap_threshold=33554432"  # 32 MiB: glibc's maximum


def run_child(args, tunables: str | None, out: Path) -> dict[str, float]:
    """One ``ut train`` of ``args.steps`` steps in a fresh process; its wall time and rusage."""
    ut = Path(sys.executable).with_name("ut")
    cmd = [str(ut), "train", args.config, "--out", str(out), "--no-progress", "--set", f"train.steps={args.steps}",
           "--set", f"train.eval_every={args.steps}", "--set", "train.early_stopping=null",
           "--set", f"train.threads={args.threads or 1}", "--set", f"train.seed={args.seed}",
           "--set", "task.eval_examples=20", "--set", "task.test_lengths=[40]", "--set", "task.test_lengths_up_to=[]"]
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    if tunables:
        env["GLIBC_TUNABLES"] = tunables
    _, usage, wall = timing.run_process(cmd, env)
    shutil.rmtree(out)
    return {"wall": wall, "user": usage.ru_utime, "sys": usage.ru_stime, "faults": usage.ru_minflt}


def main() -> None:
    p = timing.parser(__doc__.split("\n")[0], reps=3, warmup=0)
    p.add_argument("--config", default="configs/algorithmic/addition-ut-act.yaml",
                   help="the experiment to train (default: the Addition UT+ACT, whose shapes change every step)")
    p.add_argument("--steps", type=int, default=300, help="training steps per subprocess")
    p.add_argument("--tunables", default=TUNED, help="GLIBC_TUNABLES of the tuned contender")
    args = p.parse_args()
    if args.quick:
        args.steps, args.reps = 20, 1
    info = timing.setup(args)
    print(f"config: {args.config}, {args.steps} steps per subprocess, {args.reps} of each, tuned: GLIBC_TUNABLES={args.tunables}")
    runs: dict[str, list[dict[str, float]]] = {"default": [], "tuned": []}
    order = ["default", "tuned"]
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for name in (order if rep % 2 == 0 else order[::-1]):
                r = run_child(args, args.tunables if name == "tuned" else None, Path(tmp) / name)
                runs[name].append(r)
                print(f"  {name:8s} wall {r['wall']:7.1f} s, user {r['user']:7.1f} s, sys {r['sys']:6.1f} s, "
                      f"{r['faults'] / r['wall']:8.0f} faults/s", flush=True)
    print()
    print("| malloc | wall (median) | sys / (user + sys) | minor faults / s |")
    print("|---|---|---|---|")
    medians = {}
    for name, rs in runs.items():
        medians[name] = statistics.median(r["wall"] for r in rs)
        sys_share = statistics.median(r["sys"] / (r["user"] + r["sys"]) for r in rs)
        faults = statistics.median(r["faults"] / r["wall"] for r in rs)
        print(f"| {name} | {medians[name]:.1f} s | {sys_share:.2f} | {faults:.0f} |")
    print(f"\nRATIO default / tuned wall time: {timing.ratio(medians['default'], medians['tuned']):.2f}x")
    timing.write_json(args.json, {"machine": info, "args": vars(args), "runs": runs, "medians": medians})


if __name__ == "__main__":
    main()
