"""What the trainer needs from a task: typed options, global batches by step, evaluation, text I/O.

Adding a task is one file in this folder (a :class:`TaskOptions` dataclass and a
:class:`Task` subclass) plus one line in :mod:`universal_transformer.registry`; see
docs/design.md, "Adding a task".
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from torch import Tensor, nn

from ..config import ConfigError, check_field_types, reject_unknown_keys
from ..data.batch import Batch


@dataclass
class TaskOptions:
    """A task's options: a dataclass that validates itself (in ``__post_init__``) and
    round-trips through the ``task`` section of an experiment config."""

    name: ClassVar[str] = ""
    # Options that only change how the test split is decoded (e.g. a beam size): a run may
    # be resumed with them changed, since they alter neither training nor model selection.
    test_only: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        """Every option of its annotated type; a subclass checks its values after calling this."""
        check_field_types(self, prefix="task.")

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "task") -> "TaskOptions":
        """Build from a dict (``name`` may be present), rejecting unknown keys with a message naming them."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping of task options, got {type(data).__name__}")
        data = dict(data)
        name = data.pop("name", cls.name)
        if name != cls.name:
            raise ConfigError(f"{source}: task name is {name!r}, expected {cls.name!r}")
        reject_unknown_keys(cls, data, source=source, what=f"option(s) for task {cls.name!r}")
        try:
            return cls(**data)
        except ConfigError as err:
            raise ConfigError(f"{source}: {err}") from None
        except (TypeError, ValueError) as err:
            raise ConfigError(f"{source}: task {cls.name!r}: {err}") from None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **asdict(self)}

    def replace(self, **changes: Any) -> "TaskOptions":
        return dataclasses.replace(self, **changes)


def check_positive(options: TaskOptions, *names: str) -> None:
    """Refuse an option of ``names`` below 1 (its type, an integer, is checked with every field's)."""
    for name in names:
        value = getattr(options, name)
        if value < 1:
            raise ConfigError(f"task.{name} must be a positive integer, got {value!r}")


def check_length_penalty(value: Any) -> None:
    """Refuse a GNMT length penalty (``task.length_penalty``) that is not a number >= 0."""
    if not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"task.length_penalty must be a number >= 0, got {value!r}")


class Task(ABC):
    """A task builds batches, evaluates a model and converts text to and from tokens.

    ``train_batch(step)`` must be a pure function of the task's seed and ``step`` (this
    is what makes resuming exact and data parallelism equal to one big batch).
    """

    name: ClassVar[str] = ""
    options_class: ClassVar[type[TaskOptions]] = TaskOptions
    model_classes: ClassVar[tuple[str, ...]] = ()
    # Model config fields that the data decide (filled in by model_overrides); a run
    # resumed or re-checked may differ from its YAML in these.
    derived_model_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: TaskOptions | dict[str, Any], *, seed: int) -> None:
        if isinstance(options, dict):
            options = self.options_class.from_dict(options)
        if not isinstance(options, self.options_class):
            raise ConfigError(f"task {self.name!r} takes {self.options_class.__name__}, not {type(options).__name__}")
        self.options = options
        self.seed = seed

    @abstractmethod
    def train_batch(self, step: int, *, batch_tokens: int, max_batch_size: int) -> Batch:
        ...

    @abstractmethod
    def evaluate(self, model: nn.Module, split: str) -> dict[str, Any]:
        """Metrics of ``split`` (``validation`` or ``test``); ``score`` (higher is better) selects
        checkpoints, and an optional ``tie_break`` (higher is better) orders equal scores."""

    def model_overrides(self) -> dict[str, Any]:
        """Config values the task dictates (vocabulary size, special ids, ...)."""
        return {}

    def model_fields(self, config: Any, model_class: str) -> dict[str, Any]:
        """:meth:`model_overrides` that a model config ``config`` (of a ``model_class``) holds. A
        value the task sets for a field such a model lacks is refused, as the task option behind it
        would be ignored (algorithmic's ``operand_positions`` with an LSTM); a None is left out."""
        fields = {}
        for key, value in self.model_overrides().items():
            if hasattr(config, key):
                fields[key] = value
            elif value is not None:
                raise ConfigError(f"task {self.name!r} as configured sets the model's {key} ({value!r}), but a "
                                  f"{model_class} has no {key}: the task option behind it would be ignored")
        return fields

    def check_evaluation_data(self) -> None:
        """Read (and keep) every file that evaluation will read, raising :class:`ConfigError` for a
        missing, malformed or empty one. The trainer calls it before its first step, so such a
        file fails in seconds, not at the first evaluation or after the last step; the commands
        that only decode (``ut generate``, ``ut translate``) never need those files. This default
        has nothing to read: a task that reads its evaluation data when it is built."""

    def task_names(self) -> list[str]:
        """The tasks this one is made of (a joint bAbI model's ``task1``, ``task2``, ...), each
        scored in its own metrics ``NAME/...``; empty for a task that is one task."""
        return []

    def task_scores(self, metrics: dict[str, Any]) -> dict[str, float]:
        """Each task's selection score (higher is better) in evaluation ``metrics``, by name of
        :meth:`task_names` (``train.keep_best_per_task`` keeps a model per name)."""
        return {}

    def evaluate_task(self, model: nn.Module, split: str, name: str) -> dict[str, Any]:
        """Metrics of ``split`` that hold task ``name``'s (``NAME/...``; ``ut eval --per-task``
        scores each task with its own model). This default evaluates every task; a task made
        of several may evaluate ``name``'s examples alone."""
        return self.evaluate(model, split)

    def merge_task_metrics(self, metrics: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """One evaluation's metrics from evaluations of several models, one per name of
        :meth:`task_names` (``metrics[name]``): each task's own metrics from its model, and the
        overall ones recomputed from them."""
        raise ConfigError(f"task {self.name!r} is one task: there is nothing to merge")

    def encode_text(self, text: str) -> Tensor:
        raise ConfigError(f"task {self.name!r} does not take text input")

    def decode_tokens(self, tokens: list[int]) -> str:
        raise ConfigError(f"task {self.name!r} does not produce text output")

    # -- what `ut report` and `ut plot` show for this task -------------------------------

    @classmethod
    def report(cls, roots: dict[str, Path], *, length: int | None = None, ponder: bool = False, runs: bool = False) -> str:
        """The task's results tables (markdown) for folders of finished runs, one column group per root."""
        raise ConfigError(f"task {cls.name!r} has no report table yet")

    def plot(self, model: nn.Module, split: str, index: int, prefix: Path) -> list[Path]:
        """Figures of what ``model`` does on example ``index`` of ``split``; returns the files written."""
        raise ConfigError(f"task {self.name!r} has no plots yet")


__all__ = ["Batch", "Task", "TaskOptions"]
