"""Where the right characters of the Addition UT+ACT trained on tensor2tensor's draw come from at
length 400 (docs/results.md, "Addition as tensor2tensor draws it"). The published model
`algorithmic-t2t-operands/addition-ut-act-t2t-operands-warm` (1.00 / 0.995 at length 40) reads,
little-endian, output digit j from the first operand's digit j (source position j) and the
second's (position l1 + 1 + j). Trained on sources of 40 (l1 in 1..20), it has seen the distance
l1 + 1 up to 21 only; tensor2tensor's length-400 evaluation set draws l1 from 1..200.

On the length-400 test split (all its examples, teacher-forced, as tensor2tensor scores), it
prints the character accuracy over the target digits, split by the first operand's length l1 and
by the kind of digit: j < min(l1, l2) (both operands have a digit j to add), j >= min(l1, l2)
where the longer operand is the second (its digit at distance l1 + 1, plus a carry) or the first
(at distance 0), with each group's share of all the digits; the same by the output digit's position
j; and the operand lengths of the examples right in every token. Then the same with the model's
attention over the source confined to the distances of training (`attention_window` 21, scope
`source`, as `ut eval --attention-window 21 --attention-window-scope source`): whether the far keys
of a long input are what spoils the digits that look like training. Run from the repository root:

    python results/examples/addition-attention/t2t_draw.py > results/examples/addition-attention/t2t_draw.txt
"""

from pathlib import Path

import torch

from universal_transformer.cli.run import load_model, load_run
from universal_transformer.data.algorithmic import DIGIT0, EOS, PLUS
from universal_transformer.registry import build_task

torch.set_num_threads(1)
MODEL = Path("results/models/algorithmic-t2t-operands/addition-ut-act-t2t-operands-warm")
LENGTH = 400
L1_GROUPS = ((1, 20), (21, 40), (41, 100), (101, 200))  # 1..20: every distance l1 + 1 seen in training
KINDS = ("both operands", "rest of operand 2", "rest of operand 1")
J_GROUPS = ((0, 19), (20, 39), (40, 99), (100, 199), (200, 399))  # output positions; training: up to 40
WINDOWS = (None, 21)  # none, then the largest operand distance of training

experiment = load_run(MODEL, [])
task = build_task(experiment.task, seed=experiment.train.seed)
model = load_model(MODEL, None, "cpu")
batches = task.eval_batches("test", LENGTH)


def group_of(groups: tuple[tuple[int, int], ...], value: int) -> int:
    """The index of the (lo, hi) range of ``groups`` that holds ``value``."""
    return next(g for g, (lo, hi) in enumerate(groups) if lo <= value <= hi)


def table(label: str, groups: tuple[tuple[int, int], ...], right: torch.Tensor, count: torch.Tensor) -> None:
    """Accuracy (share of all digits) per group (rows) and kind of digit (columns)."""
    total = count.sum()
    print(f"{label:>9} | " + " | ".join(f"{k:>24}" for k in KINDS) + " | all")
    for g, (lo, hi) in enumerate(groups):
        cells = [f"{float(right[g, k] / count[g, k]):.3f} ({float(count[g, k] / total):.3f})" if count[g, k] else "-"
                 for k in range(len(KINDS))]
        every = float(right[g].sum() / count[g].sum()) if count[g].sum() else float("nan")
        print(f"{lo:>4}..{hi:<3} | " + " | ".join(f"{c:>24}" for c in cells)
              + f" | {every:.3f} ({float(count[g].sum() / total):.3f})")


def analyse(window: int | None) -> None:
    """Score the test set teacher-forced with attention over the source confined to ``window``; print the tables."""
    model.configure_runtime(attention_window=window, attention_window_scope="source")
    right = torch.zeros(len(L1_GROUPS), len(KINDS))
    count = torch.zeros(len(L1_GROUPS), len(KINDS))
    right_j = torch.zeros(len(J_GROUPS), len(KINDS))
    count_j = torch.zeros(len(J_GROUPS), len(KINDS))
    whole = []  # (l1, l2) of the examples whose every target token is right
    with torch.no_grad():
        for batch in batches:
            predicted = model(**batch.inputs()).logits.argmax(-1)
            for row in range(batch.src.shape[0]):
                src = batch.src[row].tolist()
                l1 = src.index(PLUS)
                l2 = sum(1 for t in src[l1 + 1:] if DIGIT0 <= t < DIGIT0 + 10)  # the second operand's digits
                labels = batch.labels[row]
                real = labels != batch.ignore_index
                if bool((predicted[row] == labels)[real].all()):
                    whole.append((l1, l2))
                group = group_of(L1_GROUPS, l1)
                for j in torch.nonzero(real & (labels != EOS)).flatten().tolist():  # the sum's digits
                    kind = 0 if j < min(l1, l2) else (1 if l2 > l1 else 2)
                    hit = float(predicted[row, j] == labels[j])
                    at = group_of(J_GROUPS, j)
                    count[group, kind] += 1
                    right[group, kind] += hit
                    count_j[at, kind] += 1
                    right_j[at, kind] += hit
    total = count.sum()
    print(f"{MODEL}, attention window over the source {window or 'none'}: length-{LENGTH} test split "
          f"(tensor2tensor's draw), teacher-forced; character accuracy over the sum's digits "
          f"{float(right.sum() / total):.3f} ({int(total)} digits)")
    print("accuracy (share of all digits) by the first operand's length l1 and the kind of output digit j")
    table("l1", L1_GROUPS, right, count)
    print("the same by the output digit's position j (training saw j < 40)")
    table("j", J_GROUPS, right_j, count_j)
    print(f"examples right in every token, teacher-forced: {len(whole)}, their (l1, l2): {sorted(whole)}")


for number, window in enumerate(WINDOWS):
    if number:
        print()
    analyse(window)
