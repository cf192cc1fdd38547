"""Where the Addition UT's attention goes on inputs longer than in training (docs/results.md,
"Addition at the paper's scale"). For the published pre-norm Addition UT with operand positions,
on the first 20 test examples of each length, teacher-forced: the share of attention that falls
on keys more than W=2 positions from the query's own (position ids, counted from each operand's
start; for the decoder's attention over the source, output digit j's own position is j), per
recurrent step (mean over examples, heads and real queries), for the encoder's self-attention and
the decoder's attention over the source; and the teacher-forced character accuracy without and
with the window of 2 over the source (what `ut eval --attention-window 2
--attention-window-scope source` applies). Run from the repository root:

    python results/examples/addition-attention/analyse.py > results/examples/addition-attention/summary.txt
"""

from pathlib import Path

import torch

from universal_transformer.cli.run import load_model, load_run
from universal_transformer.modules.attention import attention_mask
from universal_transformer.registry import build_task

torch.set_num_threads(1)
MODEL = Path("results/models/algorithmic-prenorm/addition-ut-prenorm-operand-positions")
WINDOW, EXAMPLES = 2, 20

experiment = load_run(MODEL, [])
task = build_task(experiment.task, seed=experiment.train.seed)
model = load_model(MODEL, None, "cpu")


def far_share(weights: torch.Tensor, query_pos: torch.Tensor, key_pos: torch.Tensor,
              query_real: torch.Tensor, key_real: torch.Tensor) -> float:
    """Mean attention mass on the real keys the window would mask (the library's own mask),
    over examples, heads and real queries."""
    near = attention_mask(None, window=WINDOW, query_position=query_pos, key_position=key_pos)  # [B, 1, Q, K]
    far = ~near & key_real[:, None, None, :]
    mass = (weights * far).sum(-1)  # [B, H, Q]
    keep = query_real[:, None, :].expand_as(mass)
    return float(mass[keep].mean())


def char_accuracy(batch, window: int | None) -> float:
    model.configure_runtime(attention_window=window, attention_window_scope="source")
    logits = model(**batch.inputs()).logits
    real = batch.labels != batch.ignore_index
    return float((logits.argmax(-1) == batch.labels)[real].float().mean())


print(f"share of attention beyond {WINDOW} positions, per recurrent step 1..8 (teacher-forced, "
      f"{EXAMPLES} test examples per length)")
with torch.no_grad():
    for length in (40, 100, 200, 400, 800):
        batch = task.eval_batches("test", length)[0].select(slice(0, EXAMPLES))
        model.configure_runtime(attention_window=None)
        out = model(**batch.inputs(), need_weights=True)
        src_real = batch.src != model.config.pad_id
        src_pos = model.source_positions(batch.src)
        tgt_real = batch.labels != batch.ignore_index
        tgt_pos = torch.arange(batch.labels.shape[1]).expand_as(batch.labels)
        enc = [far_share(s["self"], src_pos, src_pos, src_real, src_real) for s in out.attentions["encoder"]]
        cross = [far_share(s["cross"], tgt_pos, src_pos, tgt_real, src_real) for s in out.attentions["decoder"]]
        plain, windowed = char_accuracy(batch, None), char_accuracy(batch, WINDOW)
        print(f"length {length}: encoder self " + " ".join(f"{x:.2f}" for x in enc)
              + " | decoder over source " + " ".join(f"{x:.2f}" for x in cross)
              + f" | char accuracy {plain:.2f}, with the window {windowed:.2f}")
