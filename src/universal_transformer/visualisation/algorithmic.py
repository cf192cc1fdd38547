"""What an algorithmic-task model attends to: the decoder's attention over the input, per step."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from ..data.batch import Seq2SeqBatch  # noqa: E402
from ..generation import generate  # noqa: E402


@torch.no_grad()
def plot_cross_attention(model, batch: Seq2SeqBatch, out: str | Path, *, decode_text=None, panels: int = 3) -> Path:
    """Heat maps of the decoder's attention over the input positions (mean over heads),
    one per chosen recurrent step (first, middle, last), on the example of ``batch``
    (one row), teacher-forced with its own target; the title says how much of the
    greedy output is right. For Copy the right pattern is the diagonal, for Reverse
    the anti-diagonal; where length generalisation fails, the pattern breaks off."""
    model.eval()
    result = model(**batch.inputs(), need_weights=True)
    steps = result.attentions["decoder"]
    chosen = sorted({0, (len(steps) - 1) // 2, len(steps) - 1})[:panels]
    target = batch.labels[0]
    real_target = int((target != batch.ignore_index).sum())
    real_source = int((batch.src[0] != batch.ignore_index).sum())
    greedy = generate(model, batch.src, max_new_tokens=real_target + 1)[0]
    width = min(greedy.numel(), real_target)
    right = int((greedy[:width] == target[:width]).sum())
    fig, axes = plt.subplots(1, len(chosen), figsize=(4.2 * len(chosen), 4.2), squeeze=False)
    for ax, t in zip(axes[0], chosen):
        w = steps[t]["cross"][0].mean(0)[:real_target, :real_source].numpy()  # [target, source]
        ax.imshow(w, aspect="auto", cmap="Blues", vmin=0, vmax=max(float(w.max()), 1e-6), interpolation="nearest")
        ax.set_title(f"recurrent step {t + 1} of {len(steps)}", fontsize=9)
        ax.set_xlabel("input position")
        ax.set_ylabel("output position")
    fig.suptitle(f"input length {real_source}: greedy output right at {right} of {real_target} positions "
                 f"(teacher-forced attention, mean over heads)", fontsize=10)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


__all__ = ["plot_cross_attention"]
