"""The registry: names of tasks and models, as experiment configs use them.

* ``TASKS`` maps a task name (``task.name`` in a config) to its :class:`~.tasks.base.Task`
  class; adding a task is one file in ``tasks/`` plus one line here.
* ``MODELS`` maps a model class name (``model_class`` in a config, ``model_class`` in a
  saved ``config.json``) to the class; every subclass of
  :class:`~.models.base.PretrainedModel` enters it when defined, with its
  ``config_class``.
"""

from __future__ import annotations

from typing import Any

from .config import ConfigError, ModelConfig
from .models.base import MODEL_CLASSES as MODELS
from .models.base import PretrainedModel
from .tasks.algorithmic import AlgorithmicTask
from .tasks.agreement import NumberPredictionTask
from .tasks.babi import BabiTask
from .tasks.lm import LMTask
from .tasks.base import Task, TaskOptions
from .tasks.lte import LTETask
from .tasks.translation import TranslationTask

TASKS: dict[str, type[Task]] = {
    AlgorithmicTask.name: AlgorithmicTask,
    BabiTask.name: BabiTask,
    LTETask.name: LTETask,
    LMTask.name: LMTask,
    NumberPredictionTask.name: NumberPredictionTask,
    TranslationTask.name: TranslationTask,
}


def task_class(name: Any) -> type[Task]:
    if name not in TASKS:
        raise ConfigError(f"unknown task name {name!r}; known: {', '.join(sorted(TASKS))}")
    return TASKS[name]


def model_class(name: Any) -> type[PretrainedModel]:
    if name not in MODELS:
        raise ConfigError(f"unknown model_class {name!r}; known: {', '.join(sorted(MODELS))}")
    return MODELS[name]


def task_options(data: Any, *, source: str = "task") -> TaskOptions:
    """The typed options of the task named by ``data['name']``."""
    if not isinstance(data, dict) or "name" not in data:
        raise ConfigError(f"{source}: the task section needs a name (e.g. task: {{name: algorithmic, ...}})")
    return task_class(data["name"]).options_class.from_dict(data, source=source)


def build_task(options: TaskOptions | dict[str, Any], *, seed: int) -> Task:
    """The task of ``options`` (typed, or a dict with a ``name``)."""
    if isinstance(options, dict):
        options = task_options(options)
    return task_class(options.name)(options, seed=seed)


def build_model(name: str, config: ModelConfig) -> PretrainedModel:
    return model_class(name)(config)


__all__ = ["MODELS", "TASKS", "build_model", "build_task", "model_class", "task_class", "task_options"]
