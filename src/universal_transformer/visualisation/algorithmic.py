"""Algorithmic-task figures: accuracy against test length (the paper's Section 3.4 asks how far
models trained on lengths up to 40 generalise), and the decoder's attention over the input, per step."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
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
    window = getattr(model.decoder, "attention_window", None)
    confined = "" if window is None else f"; attention window {window}, scope {model.decoder.attention_window_scope}"
    fig.suptitle(f"input length {real_source}: greedy output right at {right} of {real_target} positions "
                 f"(teacher-forced attention, mean over heads{confined})", fontsize=10)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# Curves: task -> model -> [(test length, character accuracy, sequence accuracy)]; None = not measured.
Curves = dict[str, dict[str, list[tuple[int, float | None, float | None]]]]


def plot_length_curves(curves: Curves, out: str | Path, *, title: str = "") -> Path:
    """One panel per task: character accuracy (solid) and sequence accuracy (dashed) of every
    model against the test length (log scale). The PNG carries no time stamp or version, so
    the same curves give the same bytes (the figure lives in git next to its table)."""
    tasks = list(curves)
    models = list(dict.fromkeys(m for task in tasks for m in curves[task]))  # one colour per model in every panel
    colors = {model: f"C{i}" for i, model in enumerate(models)}
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.6), squeeze=False, sharey=True)
    for ax, task in zip(axes[0], tasks):
        for model, points in curves[task].items():
            color = colors[model]
            for column, style in ((1, "-"), (2, "--")):
                xs = [p[0] for p in points if p[column] is not None]
                ys = [p[column] for p in points if p[column] is not None]
                ax.plot(xs, ys, style, marker="o", markersize=3, color=color)
        ax.set_xscale("log")
        lengths = sorted({p[0] for points in curves[task].values() for p in points})
        ax.set_xticks(lengths, [str(n) for n in lengths])
        ax.minorticks_off()
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(task, fontsize=10)
        ax.set_xlabel("test length")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("accuracy")
    handles = [Line2D([], [], color=colors[m], marker="o", markersize=3, label=m) for m in models]
    handles += [Line2D([], [], color="gray", linestyle=style, label=label) for style, label in (("-", "char"), ("--", "sequence"))]
    axes[0][-1].legend(handles=handles, fontsize=7, loc="best")
    if title:  # wrapped to the figure's width: one panel is narrower than most titles
        fig.suptitle(textwrap.fill(title, width=max(40, int(11 * 4.2 * len(tasks)))), fontsize=10)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out


__all__ = ["Curves", "plot_cross_attention", "plot_length_curves"]
