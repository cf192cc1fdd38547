"""Experiment configuration: ``model`` + ``task`` + ``train`` sections of one YAML file.

``ut train CONFIG.yaml --set train.lr=1e-3 --set model.num_steps=8`` reads it, applies the
overrides (dotted keys, values parsed as YAML scalars), validates everything, and writes
the fully resolved result to ``RUN_DIR/config.yaml``.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from ..config import ConfigError, ModelConfig, check_field_types, dump_yaml, load_yaml, reject_unknown_keys
from ..registry import model_class as lookup_model_class
from ..registry import task_options
from ..tasks.base import TaskOptions
from .schedules import SCHEDULES


@dataclass
class TrainConfig:
    """Optimisation, batching, evaluation and checkpointing of one run."""

    # seed draws the initial weights and the dropout masks; data_seed the data (the order and
    # batches of training examples, the position offsets, and for tasks that generate their
    # data the examples themselves, validation and test sets included). null: seed draws both.
    # Set apart, they separate what a seed decides (does a run leave a plateau because of its
    # weights or its batches?).
    seed: int = 0
    data_seed: int | None = None
    steps: int = 10_000
    optimizer: Literal["adam", "adamw"] = "adamw"
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-9
    weight_decay: float = 0.0
    schedule: str = "inverse_sqrt"
    warmup_steps: int = 1000
    label_smoothing: float = 0.0
    clip_norm: float | None = 1.0
    grad_accum: int = 1
    batch_tokens: int = 4096
    max_batch_size: int = 512
    # fp32, bf16 (autocast), or auto: bf16 on a CUDA device that supports it, else fp32.
    precision: Literal["fp32", "bf16", "auto"] = "fp32"
    # bf16 autocast is refused on a CPU where it is slower than fp32 (see bf16_cpu_problem);
    # this lets it run anyway, e.g. to check bf16 numerics.
    allow_slow_bf16: bool = False
    eval_every: int = 500
    log_every: int = 50
    early_stopping: int | None = None
    stop_at_score: float | None = None
    keep_last: int = 2
    time_limit: float | None = None
    threads: int | None = None
    # Random position offsets (the paper's Section 3.4): positions of a training example
    # start at a random offset in 0..max_position_offset, drawn from (data seed, step): one per
    # example ("example"), one per batch ("batch"), or, for encoder-decoders, one per example
    # for the source and another for the target ("stack"), or for encoder-decoders one per
    # example, stack and recurrent step ("step": tensor2tensor's position_start_index="random"
    # draws a fresh start index at every call that adds the position signal, i.e. at every
    # step of each stack, so positions can neither align source and target nor carry an
    # absolute meaning across steps; it draws one per batch, in 0..length-1).
    max_position_offset: int = 0
    position_offset_per: Literal["example", "batch", "stack", "step"] = "example"
    # Evaluate (validation, test, `ut eval`) with offsets drawn as in training, as
    # tensor2tensor's position_start_index="random" does at every call; a model trained with
    # offsets per step needs them (training/offsets.py). Off: positions 0..L-1.
    eval_position_offsets: bool = False
    # Execution choices that leave the model's function unchanged.
    act_packed: bool = True
    gradient_checkpointing: bool = False
    # Warm start: a new run begins from the weights of a saved model (a run's best/ or a
    # published model, the save_pretrained format) instead of an initialisation, with fresh
    # optimiser moments. init_step is where its step counter, data stream (a batch is a
    # function of the data seed and step) and learning-rate schedule start: the source run's step, to
    # continue it where its checkpoint is lost but its model is not. A resumed checkpoint wins.
    init_from: str | None = None
    init_step: int = 0
    # Model settings this run changes on purpose from init_from's model (e.g. ACT's floors,
    # which no weight depends on: act_question_min_steps); any other difference is refused, so
    # a warm start cannot change the model by mistake. The weights must still load exactly.
    init_changes: list[str] = field(default_factory=list)
    # A task made of several tasks (bAbI with more than one in task.tasks): also keep, per task,
    # the model best on that task's validation (RUN_DIR/best-per-task/NAME), the selection of a
    # run per task on all tasks' data (tensor2tensor's babi_qa_sentence_taskN problems);
    # `ut eval RUN --per-task` scores them. RUN_DIR/best stays the best on the overall score.
    keep_best_per_task: bool = False

    @property
    def task_seed(self) -> int:
        """The seed the task (its data) is built with: ``data_seed``, or ``seed`` where that is null."""
        return self.seed if self.data_seed is None else self.data_seed

    def __post_init__(self) -> None:
        check_field_types(self, prefix="train.")  # the Literal fields' choices too
        self.betas = tuple(self.betas)  # type: ignore[assignment]
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"train.schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        for name in ("steps", "grad_accum", "batch_tokens", "max_batch_size", "eval_every", "log_every", "keep_last"):
            value = getattr(self, name)
            if value < 1:
                raise ConfigError(f"train.{name} must be a positive integer, got {value!r}")
        for name in ("threads", "early_stopping"):  # None: torch's default threads; no early stopping
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"train.{name} must be a positive integer or null, got {value!r}")
        for name in ("lr", "eps", "clip_norm"):  # a clip_norm below 0 would flip the gradient
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigError(f"train.{name} must be > 0{' or null' if name == 'clip_norm' else ''}, got {value!r}")
        if self.time_limit is not None and self.time_limit < 0:  # 0: stop after the first step
            raise ConfigError(f"train.time_limit must be a number of seconds >= 0 or null, got {self.time_limit!r}")
        if not all(0 <= beta < 1 for beta in self.betas):
            raise ConfigError(f"train.betas must be two numbers in [0, 1), got {list(self.betas)!r}")
        for name in ("weight_decay", "warmup_steps"):
            if getattr(self, name) < 0:
                raise ConfigError(f"train.{name} must be >= 0, got {getattr(self, name)!r}")
        if not 0 <= self.label_smoothing < 1:
            raise ConfigError(f"train.label_smoothing must be in [0, 1), got {self.label_smoothing!r}")
        if self.max_position_offset < 0:
            raise ConfigError(f"train.max_position_offset must be an integer >= 0, got {self.max_position_offset!r}")
        if self.eval_position_offsets and not self.max_position_offset:
            raise ConfigError("train.eval_position_offsets draws offsets as in training: it needs train.max_position_offset >= 1")
        if self.position_offset_per != "example" and not self.max_position_offset:  # "example" is the default
            raise ConfigError(f"train.position_offset_per={self.position_offset_per} says how offsets are drawn: "
                              "it needs train.max_position_offset >= 1")
        if self.init_step < 0:
            raise ConfigError(f"train.init_step must be an integer >= 0, got {self.init_step!r}")
        if self.init_step and not self.init_from:
            raise ConfigError("train.init_step starts a warm-started run at a step: it needs train.init_from")
        if self.init_step >= self.steps:
            raise ConfigError(f"train.init_step ({self.init_step}) must be below train.steps ({self.steps})")
        if self.init_changes and not self.init_from:
            raise ConfigError("train.init_changes names model settings changed from train.init_from's model: it needs train.init_from")


@dataclass
class ExperimentConfig:
    """A whole run: which model (class + config), which task, how to train."""

    model_class: str
    model: ModelConfig
    task: TaskOptions
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model_class": self.model_class,
            "model": self.model.to_dict(),
            "task": self.task.to_dict(),
            "train": {**asdict(self.train), "betas": list(self.train.betas)},
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(dump_yaml(self.to_dict()))

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "config") -> "ExperimentConfig":
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping with model_class, model, task and train sections")
        unknown = sorted(set(data) - {"model_class", "model", "task", "train"})
        if unknown:
            raise ConfigError(f"{source}: unknown section(s) {', '.join(unknown)}; expected model_class, model, task, train")
        model_class = data.get("model_class", "UniversalTransformer")
        try:
            config_class = lookup_model_class(model_class).config_class
        except ConfigError as err:
            raise ConfigError(f"{source}: {err}") from None
        model_data = dict(data.get("model") or {})
        train_data = data.get("train") or {}
        if not isinstance(train_data, dict):
            raise ConfigError(f"{source}: the train section must be a mapping")
        train_data = dict(train_data)
        if "max_position_offset" in model_data:  # moved: a training choice
            offset = model_data.pop("max_position_offset")
            if offset and "max_position_offset" not in train_data:
                train_data["max_position_offset"] = offset
            warnings.warn(f"{source}: model.max_position_offset is now train.max_position_offset", FutureWarning, stacklevel=2)
        model = config_class.from_dict(model_data, source=f"{source}: model")
        task = task_options(data.get("task"), source=f"{source}: task")
        reject_unknown_keys(TrainConfig, train_data, source=source, what="train key(s)")
        try:
            train = TrainConfig(**train_data)
        except ConfigError as err:
            raise ConfigError(f"{source}: {err}") from None
        except TypeError as err:
            raise ConfigError(f"{source}: train: {err}") from None
        return cls(model_class, model, task, train)


def apply_overrides(data: dict[str, Any], overrides: list[str], *, source: str = "--set") -> dict[str, Any]:
    """Apply ``section.key=value`` overrides to a raw config dict (values parsed as YAML)."""
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"{source} {item!r}: expected key=value, e.g. train.lr=0.001")
        key, raw = item.split("=", 1)
        parts = key.strip().split(".")
        if len(parts) == 1 and parts[0] == "model_class":
            data["model_class"] = raw
            continue
        if len(parts) != 2 or parts[0] not in ("model", "task", "train"):
            raise ConfigError(f"{source} {item!r}: key must be model.NAME, task.NAME or train.NAME")
        try:
            value = load_yaml(raw)
        except yaml.YAMLError as err:
            raise ConfigError(f"{source} {item!r}: cannot parse value: {err}") from None
        section = data.setdefault(parts[0], {})
        if section is None:
            section = data[parts[0]] = {}
        section[parts[1]] = value
    return data


def load_experiment(path: str | Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Read an experiment YAML, apply ``--set`` overrides, validate."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        data = load_yaml(path.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: cannot parse YAML: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with model_class, model, task and train sections")
    data = apply_overrides(data, overrides or [])
    return ExperimentConfig.from_dict(data, source=str(path))
