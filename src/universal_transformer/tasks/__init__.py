"""Tasks: what to train on and how to score it. :mod:`universal_transformer.registry` maps names to them."""

from __future__ import annotations

from .agreement import NumberPredictionOptions, NumberPredictionTask
from .algorithmic import AlgorithmicOptions, AlgorithmicTask
from .babi import BabiOptions, BabiTask
from .base import Batch, Task, TaskOptions
from .lm import LMOptions, LMTask

__all__ = [
    "AlgorithmicOptions", "AlgorithmicTask", "BabiOptions", "BabiTask", "Batch", "LMOptions", "LMTask",
    "NumberPredictionOptions", "NumberPredictionTask", "Task", "TaskOptions",
]
