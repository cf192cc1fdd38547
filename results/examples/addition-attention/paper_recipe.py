"""Why the Addition UT trained on the paper's recipe does not extend (docs/results.md, "Addition
on the paper's recipe"). The published UT+ACT `algorithmic/addition-ut-act-warm-b8k` (one
position count over the whole source, random offsets in training; 1.00 / 1.00 at length 40) must
read, for output digit j, the first operand's digit j at source position j and the second's at
n + 1 + j, where n = length // 2 is the operands' length: the distance between the two digits it
adds is n + 1, at most 21 in training (lengths 1..40), 51 at length 100, 201 at 400.

For test inputs of each length (the test split's examples, teacher-forced, the first EXAMPLES),
it prints the character accuracy, then, per decoder step, the decoder's attention over the
source (mean over examples, heads and output digits, the final carry digit left out): the share
within W=2 positions of the first operand's digit j, the share within W of the second operand's
digit, and the median distance from the first operand's digit j to the key that gets the most
attention in the second operand (n + 1 where the model finds its digit). Run from the repository
root:

    python results/examples/addition-attention/paper_recipe.py > results/examples/addition-attention/paper_recipe.txt
"""

from pathlib import Path

import torch

from universal_transformer.cli.run import load_model, load_run
from universal_transformer.registry import build_task

torch.set_num_threads(1)
MODEL = Path("results/models/algorithmic/addition-ut-act-warm-b8k")
WINDOW, EXAMPLES, STEPS = 2, 50, 4
LENGTHS = (40, 44, 48, 52, 60, 80, 100, 200, 400)

experiment = load_run(MODEL, [])
task = build_task(experiment.task, seed=experiment.train.seed)
model = load_model(MODEL, None, "cpu")

print(f"{MODEL}: teacher-forced, {EXAMPLES} test examples per length; per decoder step 1..{STEPS}: "
      f"share of attention over the source within {WINDOW} of operand 1's digit j | of operand 2's "
      "digit j | median distance from operand 1's digit j to the strongest key in operand 2 (n + 1 = right)")
with torch.no_grad():
    for length in LENGTHS:
        batch = task.eval_batches("test", length)[0].select(slice(0, EXAMPLES))
        n = length // 2  # each operand's digits; the source is n digits, '+', n digits, EOS
        out = model(**batch.inputs(), need_weights=True)
        real = batch.labels != batch.ignore_index
        accuracy = float((out.logits.argmax(-1) == batch.labels)[real].float().mean())
        keys = torch.arange(batch.src.shape[1])
        digit = torch.arange(n)  # output digits 0..n-1 (digit n is the final carry)
        first = (keys[None, :] - digit[:, None]).abs() <= WINDOW  # [n, K]
        second = (keys[None, :] - (n + 1 + digit[:, None])).abs() <= WINDOW
        second_operand = (keys >= n + 1) & (keys <= 2 * n)
        cells = []
        for step in out.attentions["decoder"][:STEPS]:
            weights = step["cross"][:, :, :n, :]  # [B, H, n digits, K]
            on_first = float((weights * first).sum(-1).mean())
            on_second = float((weights * second).sum(-1).mean())
            strongest = (weights.masked_fill(~second_operand, -1.0)).argmax(-1)  # [B, H, n]
            distance = float((strongest - digit).float().median())
            cells.append(f"{on_first:.2f} {on_second:.2f} {distance:4.0f}")
        print(f"length {length:3d} (n + 1 = {n + 1:3d}): char accuracy {accuracy:.2f} | " + " | ".join(cells))
