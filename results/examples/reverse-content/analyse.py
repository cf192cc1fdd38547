"""Does a Reverse model find its place in the source by content? (docs/results.md, "Small-scale
Reverse".) A decoder that has written y_0..y_{j-1} = x_{L-1}..x_{L-j} can find the next digit,
x_{L-j-1}, as the one left of where its last k outputs occur in the source; that rule holds at
every length, but only where those k digits occur once (or every occurrence has the same left
neighbour). For each target position j >= 1 of the test inputs, `context` is the smallest such k
(j + 1 when no k <= j is enough: only the whole output so far, anchored at the source's end,
is); a model that reads by content with a window of w digits errs where the context exceeds w,
and a model that addresses by position errs regardless of it. Teacher-forced argmax errors of each
run's best model, grouped by context, on the test inputs of each length.

Run from the repository root:
  python results/examples/reverse-content/analyse.py runs/algorithmic-mini/NAME [...]
writes results/examples/reverse-content/NAME.json for each run."""

import json
import platform
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

from universal_transformer.models.base import from_pretrained
from universal_transformer.tasks import AlgorithmicTask
from universal_transformer.training.config import load_experiment

torch.set_num_threads(1)
GROUPS = ("1", "2", "3", "4", "5+")


def context_needed(x: list[int], j: int) -> int:
    """The fewest last outputs that fix the next digit x[L-j-1] by content (j + 1: none do)."""
    length = len(x)
    for k in range(1, j + 1):
        gram = x[length - j:length - j + k]
        left = {x[p - 1] if p > 0 else None for p in range(length - k + 1) if x[p:p + k] == gram}
        if left == {x[length - j - 1]}:
            return k
    return j + 1


def analyse(run: Path) -> dict:
    model = from_pretrained(run / "best").eval()
    experiment = load_experiment(run / "config.yaml")
    task = AlgorithmicTask(experiment.task, seed=experiment.train.seed)
    by_length = {}
    for length in experiment.task.test_lengths:
        wrong, total = defaultdict(int), defaultdict(int)
        for batch in task.eval_batches("test", length):
            with torch.no_grad():
                predicted = model(batch.src, batch.tgt_in).logits.argmax(-1)
            for row in range(batch.src.shape[0]):
                x = batch.src[row, :length].tolist()  # the digits, without the end marker
                for j in range(1, length):
                    k = context_needed(x, j)
                    group = GROUPS[min(k, 5) - 1]
                    total[group] += 1
                    wrong[group] += int(predicted[row, j] != batch.labels[row, j])
        by_length[f"length {length}"] = {
            f"context {g}": {"positions": total[g], "error_rate": round(wrong[g] / total[g], 4) if total[g] else None}
            for g in GROUPS}
        print(run.name, length, by_length[f"length {length}"], flush=True)
    record = json.loads((run / "record.json").read_text())
    return {
        "what": "teacher-forced error rate of the best model by the context that fixes the next digit by content",
        "run": str(run),
        "record": record.get("experiment"),
        "best_step": record.get("best_step"),
        "trained_steps": record.get("steps"),
        "run_commit": record.get("commit"),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "command": "python results/examples/reverse-content/analyse.py " + str(run),
        "machine": {"platform": platform.platform(), "torch": torch.__version__, "threads": 1},
        "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "errors": by_length,
    }


for arg in sys.argv[1:]:
    run = Path(arg)
    Path(f"results/examples/reverse-content/{run.name}.json").write_text(json.dumps(analyse(run), indent=2) + "\n")
