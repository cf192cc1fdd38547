"""Does the Reverse UT trained with position offsets drawn anew at every recurrent step
(`reverse-ut-prenorm-step-offsets`, `train.position_offset_per: step`) need such offsets when it is
evaluated? (docs/results.md, the pre-norm Reverse runs.) Teacher-forced character accuracy of its
best model on the first validation/test batch of each length, with the positions given as in
`ut eval` (0..L-1 in both stacks), with offsets drawn as in training (per example, stack and step,
0..400 and 0..800), with one offset per example and stack, one per example, and 200 everywhere.
tensor2tensor's `position_start_index="random"` draws its offsets at evaluation too.

Run from the repository root: `python results/examples/step-offsets/analyse.py RUN_DIR`
(RUN_DIR: runs/algorithmic/reverse-ut-prenorm-step-offsets); writes
results/examples/step-offsets/teacher-forced.json."""

import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

from universal_transformer.models.base import from_pretrained
from universal_transformer.tasks import AlgorithmicTask
from universal_transformer.training.config import load_experiment
from universal_transformer.training.trainer import position_offsets

torch.set_num_threads(1)
run = Path(sys.argv[1])
model = from_pretrained(run / "best").eval()
experiment = load_experiment(run / "config.yaml")
task = AlgorithmicTask(experiment.task, seed=experiment.train.seed)
steps = model.recurrent_steps
DRAW_STEP = 10**6  # a trainer step never reached: draws unlike any training batch's


def accuracy(batch, offset) -> float:
    with torch.no_grad():
        logits = model(batch.src, batch.tgt_in, position_offset=offset).logits
    real = batch.labels != batch.ignore_index
    return float(((logits.argmax(-1) == batch.labels) & real).sum() / real.sum())


rows = {}
for split, length, rows_used in (("validation", 10, 100), ("validation", 20, 100), ("validation", 40, 100),
                                 ("test", 100, 50), ("test", 200, 50), ("test", 400, 50)):
    b = task.eval_batches(split, length)[0]
    b = type(b)(b.src[:rows_used], b.tgt_in[:rows_used], b.labels[:rows_used], ignore_index=b.ignore_index)
    size = b.src.shape[0]
    row = {"examples": size, "none (as ut eval)": accuracy(b, None)}
    for maximum in (400, 800):
        row[f"per step, 0..{maximum}"] = accuracy(
            b, position_offsets(0, DRAW_STEP, size, maximum=maximum, per="step", steps=steps))
    row["per stack, 0..400"] = accuracy(b, position_offsets(0, DRAW_STEP, size, maximum=400, per="stack"))
    row["per example, 0..400"] = accuracy(b, position_offsets(0, DRAW_STEP, size, maximum=400, per="example"))
    row["200 everywhere"] = accuracy(b, torch.full((size, 2, steps), 200, dtype=torch.long))
    rows[f"{split} length {length}"] = {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}
    print(f"{split} {length}: {rows[f'{split} length {length}']}", flush=True)

record = json.loads((run / "record.json").read_text())
out = {
    "what": "teacher-forced character accuracy of the best model under different position offsets",
    "run": str(run),
    "best_step": record.get("best_step"),
    "trained_steps": record.get("steps"),
    "run_commit": record.get("commit"),
    "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
    "command": "python results/examples/step-offsets/analyse.py " + str(run),
    "seed": experiment.train.seed,
    "offset_draws": f"trainer.position_offsets(seed 0, step {DRAW_STEP})",
    "machine": {"platform": platform.platform(), "torch": torch.__version__, "threads": 1},
    "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    "accuracy": rows,
}
Path("results/examples/step-offsets/teacher-forced.json").write_text(json.dumps(out, indent=2) + "\n")
