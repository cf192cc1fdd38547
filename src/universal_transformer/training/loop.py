"""A compact training loop for sequence-to-sequence models on generated batches.

Used by the ``ut demo`` job and the learning tests; the full trainer (checkpoints,
resume, DDP, configs) builds on the same pieces.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn

from ..data.algorithmic import Seq2SeqBatch
from ..evaluation.metrics import AccuracyCounts
from ..generation import generate
from .schedules import lr_multiplier


@dataclass
class TrainResult:
    steps: int
    seconds: float
    losses: list[float] = field(default_factory=list)
    ponder: list[float] = field(default_factory=list)


def fit(
    model: nn.Module,
    next_batch: Callable[[int], Seq2SeqBatch],
    *,
    steps: int,
    lr: float = 1e-3,
    warmup_steps: int = 100,
    schedule: str = "constant",
    weight_decay: float = 0.0,
    clip_norm: float | None = 1.0,
    label_smoothing: float = 0.0,
    time_limit: float | None = None,
    callback: Callable[[int, float], bool | None] | None = None,
) -> TrainResult:
    """Train ``model`` on ``next_batch(step)`` with AdamW for ``steps`` steps (or ``time_limit`` s).

    ``callback(step, loss)`` may return True to stop early.
    """
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_multiplier(schedule, warmup_steps=warmup_steps, total_steps=steps)
    )
    model.train()
    result = TrainResult(0, 0.0)
    start = time.perf_counter()
    for step in range(steps):
        batch = next_batch(step)
        out = model(batch.src, batch.tgt_in, batch.labels, label_smoothing=label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        if clip_norm:
            nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        optimizer.step()
        scheduler.step()
        loss = float(out.loss.detach())
        result.losses.append(loss)
        result.ponder.append(float(out.ponder_cost.detach()))
        result.steps = step + 1
        result.seconds = time.perf_counter() - start
        if callback is not None and callback(step, loss):
            break
        if time_limit is not None and result.seconds > time_limit:
            break
    model.eval()
    return result


@torch.no_grad()
def evaluate_generation(model: nn.Module, batches: list[Seq2SeqBatch], *, extra_tokens: int = 1) -> dict[str, float]:
    """Greedy-decode each batch (no teacher forcing) and score char and sequence accuracy.

    Also reports the mean encoder/decoder ponder time of the teacher-forced pass.
    """
    model.eval()
    counts = AccuracyCounts()
    ponder: dict[str, list[float]] = {}
    for batch in batches:
        tokens = generate(model, batch.src, max_new_tokens=batch.labels.shape[1] + extra_tokens)
        counts.update(tokens, batch.labels, model.config.pad_id)
        out = model(batch.src, batch.tgt_in)
        for name, stats in out.halting.items():
            ponder.setdefault(name, []).append(float(stats.ponder_cost))
    result = counts.as_dict()
    for name, values in ponder.items():
        result[f"{name}_ponder_time"] = sum(values) / len(values)
    return result
