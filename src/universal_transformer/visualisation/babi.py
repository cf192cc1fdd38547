"""Plots of what a bAbI model does: attention over facts per step and head, ponder time per position."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402
import torch  # noqa: E402

from ..data.babi import BabiExample  # noqa: E402
from ..data.batch import StoryBatch  # noqa: E402


def _labels(example: BabiExample, slots: int) -> list[str]:
    facts = [" ".join(f) for f in example.facts[-(slots - 1):]]
    return [""] * (slots - 1 - len(facts)) + facts + ["Q: " + " ".join(example.question)]


def _drawn(example: BabiExample, batch: StoryBatch, positions: int) -> tuple[torch.Tensor, list[str], int]:
    """Which of the model's ``positions`` to draw (the story's facts and the question, not its
    empty slots, nor those in front that a model computing them adds), their labels, and the
    number of the story's facts that did not fit the memory."""
    real = ~batch.facts[0].eq(0).all(-1)
    keep = torch.cat((real, torch.tensor([True])))
    labels = [l for l, k in zip(_labels(example, keep.numel()), keep.tolist()) if k]
    keep = torch.cat((keep.new_zeros(positions - keep.numel()), keep))
    return keep, labels, len(example.facts) - int(real.sum())


@torch.no_grad()
def plot_attention(model, example: BabiExample, batch: StoryBatch, out: str | Path, *, answers: list[str]) -> Path:
    """One panel per (step, head): the question position's attention over the facts (paper, Appendix D)."""
    model.eval()
    result = model(**batch.model_inputs(), need_weights=True)
    steps = result.attentions["encoder"]
    keep, labels, offset = _drawn(example, batch, steps[0]["self"].shape[-1])
    heads = steps[0]["self"].shape[1]
    fig, axes = plt.subplots(1, len(steps), figsize=(2.2 * len(steps) + 4, 0.3 * len(labels) + 2), squeeze=False)
    for t, weights in enumerate(steps):
        w = weights["self"][0, :, -1][:, keep].T.numpy()  # [facts, heads]: the question's attention
        ax = axes[0, t]
        ax.imshow(w, aspect="auto", cmap="Blues", vmin=0, vmax=max(w.max(), 1e-6))
        ax.set_title(f"step {t + 1}", fontsize=9)
        ax.set_xticks(range(heads), [f"h{h + 1}" for h in range(heads)], fontsize=7)
        ax.set_yticks(range(len(labels)), labels if t == 0 else [""] * len(labels), fontsize=7)
        for s in example.supporting:
            pos = s - offset
            if 0 <= pos < len(labels) - 1:
                ax.axhline(pos, color="red", lw=0.6, alpha=0.5)
    predicted = answers[int(result.logits.argmax(-1))]
    fig.suptitle(f"answer: {example.answer}, predicted: {predicted} (red: supporting facts)", fontsize=10)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


@torch.no_grad()
def plot_ponder(model, example: BabiExample, batch: StoryBatch, out: str | Path) -> Path:
    """Steps per fact and for the question (the paper's Figure 3): the depth N that the paper
    plots as ponder time (whole steps, 1 for halting after the first), and behind it, lighter,
    Graves' ponder time N + R."""
    model.eval()
    stats = model(**batch.model_inputs()).halting["encoder"]
    keep, labels, offset = _drawn(example, batch, stats.n_updates.shape[1])
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(labels) + 1.5))
    colors = ["tab:red" if (i + offset) in set(example.supporting) else "tab:blue" for i in range(len(labels) - 1)] + ["tab:green"]
    ax.barh(range(len(labels)), stats.ponder_time[0][keep].numpy(), color=colors, alpha=0.3, label="N + R (ponder cost)")
    ax.barh(range(len(labels)), stats.n_updates[0][keep].numpy(), color=colors, label="N (steps; the paper's ponder time)")
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("steps")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("red: supporting facts, green: question", fontsize=9)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


LEGEND_INSIDE = 6  # more lines than this and the legend goes beside the plot, where it hides none


def _save_line_plot(fig, ax, out: str | Path) -> Path:
    """Grid, one legend (on ``ax``, of the lines of every panel, each label once) and a PNG
    without a time stamp (the same numbers draw the same file)."""
    lines: dict[str, object] = {}
    for axis in fig.axes:
        axis.grid(alpha=0.3)
        for handle, label in zip(*axis.get_legend_handles_labels()):
            lines.setdefault(label, handle)
    fig.tight_layout()  # before the legend: one beside the plot widens the figure, not shrinks the plot
    if len(lines) > LEGEND_INSIDE:
        ax.legend(lines.values(), lines.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    else:
        ax.legend(lines.values(), lines.keys(), fontsize=7)
    out = Path(out)
    fig.savefig(out, dpi=110, metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
    return out


Curves = dict[str, dict[int, tuple[float, float | None]]]  # label -> task (= supporting facts) -> (mean, std)


def _ponder_lines(ax, curves: Curves, *, paper: dict[int, float] | None, styles: dict[str, dict] | None = None) -> None:
    """One line per label over tasks 1, 2, 3 (± std where given), the paper's values dashed."""
    for i, (label, points) in enumerate(curves.items()):
        facts = sorted(points)
        means = [points[k][0] for k in facts]
        stds = [points[k][1] or 0.0 for k in facts]
        shift = (i - (len(curves) - 1) / 2) * 0.04  # side by side, so the error bars do not hide each other
        style = (styles or {}).get(label) or {"linestyle": ("-", "-.", ":")[i // 10 % 3]}  # past ten, the colours repeat
        ax.errorbar([k + shift for k in facts], means, yerr=stds, marker="o", markersize=4, capsize=3, label=label, **style)
    if paper:
        ax.plot(sorted(paper), [paper[k] for k in sorted(paper)], "k--", marker="s", markersize=4, label="paper")
    ax.set_xticks([1, 2, 3], ["task 1", "task 2", "task 3"])
    ax.set_xlabel("supporting facts (task 1: one, 2: two, 3: three)")


def plot_ponder_by_facts(curves: Curves, out: str | Path, *, paper: dict[int, float] | None = None) -> Path:
    """Mean test ponder time (± std over positions) against the number of supporting facts
    (bAbI tasks 1, 2, 3), one line per ACT setting, the paper's values dashed. The PNG
    carries no time stamp, so the same numbers draw the same file."""
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    _ponder_lines(ax, curves, paper=paper)
    ax.set_ylabel("mean ponder time (steps + remainder)")
    return _save_line_plot(fig, ax, out)


def plot_ponder_panels(panels: dict[str, Curves], out: str | Path, *, paper: dict[int, float] | None = None,
                       styles: dict[str, dict] | None = None) -> Path:
    """Side-by-side panels of ponder time against the number of supporting facts, one per
    title in ``panels`` (e.g. all positions, the question alone), sharing the y axis and one
    legend; the paper's values (a mean over all positions) are drawn in the first panel only.
    ``styles`` maps a label to matplotlib line options (colour per setting, line style per seed)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), sharey=True, squeeze=False)
    for i, (ax, (title, curves)) in enumerate(zip(axes[0], panels.items())):
        _ponder_lines(ax, curves, paper=paper if i == 0 else None, styles=styles)
        ax.set_title(title, fontsize=9)
    axes[0, 0].set_ylabel("ponder time (steps + remainder)")
    return _save_line_plot(fig, axes[0, -1], out)


def plot_learning_curves(curves: dict[str, list[tuple[float, float]]], out: str | Path, *, xlabel: str,
                         ylabel: str) -> Path:
    """One line per run of (x, y) points, e.g. a task's validation error against the stories of
    it seen. The PNG carries no time stamp, so the same numbers draw the same file."""
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    for label, points in curves.items():
        ax.plot([x for x, _ in points], [y for _, y in points], marker="o", markersize=2, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    # Steps and stories run to the hundreds of thousands: "250k", not digits that run together.
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k" if abs(x) >= 1000 else f"{x:g}"))
    return _save_line_plot(fig, ax, out)

