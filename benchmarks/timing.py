"""Shared helpers of the benchmark scripts: side-by-side median timing and a machine description.

The machine these benchmarks are written for is small (2 CPU cores) and noisy (other
jobs share it), so every comparison is timed in ONE process with the contenders
interleaved: each repetition runs every contender once, and the order is reversed on
every other repetition (A B C, C B A, A B C, ...), so that slow phases of the machine and
position effects (caches, allocator state) hit all contenders alike. After a warm-up,
the MEDIAN of the repetitions is reported, and comparisons are ratios of medians.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence


# -- timing --------------------------------------------------------------------------

QUIET = 0.25  # a timed call is "quiet" when other processes used < this many cores meanwhile


@dataclass
class Timing:
    """Wall-clock seconds of one contender over the repetitions.

    ``others[i]`` is how many cores OTHER processes used (on average) during call ``i``
    (from /proc/stat; coarse, 10 ms ticks), so contended calls can be told apart.
    """

    name: str
    times: list[float] = field(default_factory=list)
    others: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def max(self) -> float:
        return max(self.times)

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median (a noise indicator)."""
        if len(self.times) < 4:
            return (self.max - self.min) / self.median if self.median else 0.0
        q = statistics.quantiles(self.times, n=4)
        return (q[2] - q[0]) / self.median if self.median else 0.0

    def quiet_times(self) -> list[float]:
        return [t for t, o in zip(self.times, self.others) if o < QUIET]

    @property
    def quiet_median(self) -> float:
        """Median over the calls during which other processes used < QUIET cores (nan if < 3)."""
        q = self.quiet_times()
        return statistics.median(q) if len(q) >= 3 else float("nan")


def time_once(fn: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def compare(
    contenders: dict[str, Callable[[], Any]],
    *,
    reps: int,
    warmup: int = 1,
    verbose: bool = True,
) -> dict[str, Timing]:
    """Time each contender ``reps`` times, interleaved, after ``warmup`` untimed rounds.

    Repetition ``i`` runs the contenders in the given order when ``i`` is even and in
    reverse order when it is odd. Returns ``{name: Timing}`` in the given order.
    """
    names = list(contenders)
    total = MachineLoad()
    for i in range(warmup):
        for name in names if i % 2 == 0 else names[::-1]:
            contenders[name]()
    results = {name: Timing(name) for name in names}
    for i in range(reps):
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            load = MachineLoad()
            results[name].times.append(time_once(contenders[name]))
            results[name].others.append(load.others())
        if verbose:
            line = "  ".join(f"{n}={results[n].times[-1]:.4f}s" for n in names)
            busy = max(results[n].others[-1] for n in names)
            print(f"  rep {i + 1}/{reps}: {line}  [others <= {busy:.1f} cores]", flush=True)
    global last_load
    last_load = total.report()
    if verbose:
        print(f"  {last_load}", flush=True)
    return results


last_load = ""  # the machine-load line of the latest compare()


class MachineLoad:
    """How much CPU OTHER processes used since construction (from /proc/stat and os.times)."""

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        hz = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields) - fields[3] - fields[4]) / hz  # all but idle and iowait
        own = os.times()
        return time.perf_counter(), busy, own.user + own.system

    def _deltas(self) -> tuple[float, float, float] | None:
        end = self._sample()
        if self.start is None or end is None:
            return None
        return end[0] - self.start[0], end[1] - self.start[1], end[2] - self.start[2]

    def others(self) -> float:
        """Cores used by other processes on average since construction (nan if unknown)."""
        d = self._deltas()
        if d is None or d[0] <= 0:
            return float("nan")
        wall, busy, own = d
        return max(0.0, busy - own) / wall

    def report(self) -> str:
        d = self._deltas()
        if d is None:
            return "machine load: unknown"
        wall, busy, own = d
        cores = os.cpu_count() or 1
        quiet = "quiet" if max(0.0, busy - own) / wall < QUIET else "DISTURBED"
        return (f"machine load while timing: this process {own / wall:.2f} cores, other processes "
                f"{max(0.0, busy - own) / wall:.2f} of {cores} cores over {wall:.0f} s ({quiet})")


def run_process(cmd: list[str], env: dict[str, str] | None = None) -> tuple[str, Any, float]:
    """Run ``cmd`` in a fresh process (one whose allocator or memory counters start clean); its
    stdout, resource usage (``os.wait4``: CPU times, faults, peak RSS) and wall time. Its output
    goes through temporary files, so a child that writes much cannot fill a pipe and hang; a
    failure raises with the end of its stderr."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4: tell Popen
        out.seek(0), err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{os.path.basename(cmd[0])} failed ({proc.returncode}): {err.read()[-2000:]}")
        return out.read(), usage, wall


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def paired_ratio(a: Timing, b: Timing) -> float:
    """Median over repetitions of ``a_i / b_i``: the two calls of a repetition ran close in time."""
    return statistics.median(x / y for x, y in zip(a.times, b.times))


def ratios(a: Timing, b: Timing) -> dict[str, float]:
    """``a / b`` three ways: ratio of medians (the headline), paired, and of the quiet medians."""
    return {"median": ratio(a.median, b.median), "paired": paired_ratio(a, b),
            "quiet": ratio(a.quiet_median, b.quiet_median)}


def fmt_ratios(r: dict[str, float]) -> str:
    quiet = "-" if r["quiet"] != r["quiet"] else f"{r['quiet']:.3g}x"
    return f"{r['median']:.3g}x (paired {r['paired']:.3g}x, quiet {quiet})"


# -- machine -------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def source_version() -> str:
    """``git`` commit of the working tree, with ``+dirty`` if src/ has uncommitted changes."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "src"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+dirty" if dirty else "")


def machine_info() -> dict[str, Any]:
    flags = cpu_flags()
    simd = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    import torch  # imported here so that memory.py's parent process stays small

    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "simd": " ".join(simd),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "source": source_version(),
        "load_avg_1m": round(load[0], 2),
    }


def print_machine() -> dict[str, Any]:
    info = machine_info()
    print(
        f"machine: {info['cpu']}, {info['cores']} cores ({info['simd']}), torch {info['torch']}, "
        f"{info['threads']} threads, python {info['python']}, load avg {info['load_avg_1m']}, {info['date']}, "
        f"source {info['source']}"
    )
    return info


# -- output --------------------------------------------------------------------------


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            if value != value:  # nan
                return "-"
            return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def timing_row(t: Timing) -> list[Any]:
    """``median, quiet median (n), min, max, spread`` cells (seconds) for a table."""
    quiet = t.quiet_times()
    qm = "-" if t.quiet_median != t.quiet_median else f"{t.quiet_median:.4f}"
    return [f"{t.median:.4f}", f"{qm} ({len(quiet)}/{len(t.times)})", f"{t.min:.4f}", f"{t.max:.4f}",
            f"{100 * t.spread:.0f}%"]


TIMING_HEADERS = ["median s", "quiet median s (n)", "min s", "max s", "IQR/median"]

RATIO_NOTE = (f"ratios: of medians over all reps (headline); 'paired' = median of per-repetition ratios; "
              f"'quiet' = of medians over calls during which other processes used < {QUIET} cores")


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


# -- command line --------------------------------------------------------------------


def parser(description: str, *, reps: int, warmup: int = 1) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--reps", type=int, default=reps, help="timed repetitions per contender")
    p.add_argument("--warmup", type=int, default=warmup, help="untimed warm-up rounds")
    p.add_argument("--quick", action="store_true", help="tiny sizes, few repetitions, 1 thread unless --threads: a smoke run (< 20 s)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", default=None, help="also write the results to this JSON file")
    return p


def add_model_args(
    p: argparse.ArgumentParser, *, d_model: int = 512, heads: int = 8, d_ff: int = 2048,
    steps: int | None = None, batch: int = 16, length: int | None = None,
) -> None:
    """The model-shape options every benchmark shares (``None`` = the script adds its own)."""
    p.add_argument("--d-model", type=int, default=d_model)
    p.add_argument("--heads", type=int, default=heads)
    p.add_argument("--d-ff", type=int, default=d_ff)
    if steps is not None:
        p.add_argument("--steps", type=int, default=steps, help="T")
    p.add_argument("--batch", type=int, default=batch)
    if length is not None:
        p.add_argument("--length", type=int, default=length)


def setup(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    if args.quick and not args.threads:
        args.threads = 1  # a smoke run: one thread is immune to the OpenMP stalls of a shared machine
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    return print_machine()


def write_json(path: str | None, payload: dict[str, Any]) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(payload, f, indent=2, default=str)
        print(f"wrote {path}")


def decoding_models(cfg: Any, args: argparse.Namespace, batch: int):
    """``(kind, title, model, inputs)`` of the decoding benchmarks, one per ``--models`` entry: the
    UT language model on a ``--prompt`` and the encoder-decoder on a ``--source``, seeded alike."""
    import torch

    from universal_transformer.models.transformer import UniversalTransformer, UTLanguageModel

    for kind in args.models.split(","):
        torch.manual_seed(args.seed)
        if kind == "lm":
            yield (kind, f"UTLanguageModel, prompt {args.prompt}", UTLanguageModel(cfg).eval(),
                   torch.randint(3, args.vocab, (batch, args.prompt)))
        else:
            yield (kind, f"UniversalTransformer, source {args.source}", UniversalTransformer(cfg).eval(),
                   torch.randint(3, args.vocab, (batch, args.source)))
