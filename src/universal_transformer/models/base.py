"""What every model shares: its output record and ``save_pretrained`` / ``from_pretrained``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from ..config import ConfigError, ModelConfig
from ..generation.protocol import check_prompt
from ..modules.recurrence import HaltingStats

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"

MODEL_CLASSES: dict[str, type["PretrainedModel"]] = {}


@dataclass
class ModelOutput:
    """What every forward returns.

    ``loss`` = task loss + ``ponder_weight * ponder_cost`` when labels were given (ACT
    only adds the ponder term; see :mod:`universal_transformer.objective`). ``halting`` maps ``"encoder"``/``"decoder"`` to
    per-position :class:`HaltingStats`; ``attentions`` maps them to per-step dicts of
    attention weights when asked for.
    """

    logits: Tensor
    loss: Tensor | None = None
    task_loss: Tensor | None = None
    ponder_cost: Tensor | None = None
    halting: dict[str, HaltingStats] = field(default_factory=dict)
    attentions: dict[str, list[dict[str, Tensor]]] | None = None


class LoadError(RuntimeError):
    """A checkpoint directory cannot be loaded; the message says exactly why."""


class PretrainedModel(nn.Module):
    """Mixin for ``save_pretrained(dir)`` / ``from_pretrained(dir)`` (safetensors + JSON config)."""

    config_class: ClassVar[type]
    config: ModelConfig
    # Whether the model has a decoder over a target vocabulary of its own (target_vocab_size).
    is_encoder_decoder: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):  # shared bases are not models of their own
            MODEL_CLASSES[cls.__name__] = cls

    def num_parameters(self) -> int:
        """The number of parameters (shared weights counted once)."""
        return sum(p.numel() for p in self.parameters())

    def _set_config(self, config: ModelConfig) -> None:
        """Keep ``config`` as ``self.config``, refusing a config of another model family
        (an ``LSTMConfig`` for a UT, say) before any of its fields is read."""
        if not isinstance(config, self.config_class):
            raise ConfigError(f"{type(self).__name__} takes a {self.config_class.__name__}, "
                              f"not a {type(config).__name__}")
        # Read only by an encoder-decoder's decoder; a one-stack model would ignore it without a word.
        if getattr(config, "target_vocab_size", None) is not None and not self.is_encoder_decoder:
            raise ConfigError(f"target_vocab_size ({config.target_vocab_size}) is the vocabulary of an "
                              f"encoder-decoder's decoder; {type(self).__name__} has one vocabulary, "
                              f"vocab_size ({config.vocab_size})")
        self.config = config

    def save_pretrained(self, directory: str | Path) -> Path:
        """Write ``config.json`` and ``model.safetensors`` into ``directory`` (created if needed).

        Both files are written to temporary names first and renamed, so a crash never
        leaves a half-written checkpoint behind.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = {"model_class": type(self).__name__, **self.config.to_dict()}
        tensors = {k: v.detach().contiguous() for k, v in self.state_dict().items()}
        tmp_weights = directory / (WEIGHTS_NAME + ".tmp")
        save_file(tensors, str(tmp_weights), metadata={"format": "pt"})
        tmp_config = directory / (CONFIG_NAME + ".tmp")
        tmp_config.write_text(json.dumps(config, indent=2) + "\n")
        tmp_weights.replace(directory / WEIGHTS_NAME)
        tmp_config.replace(directory / CONFIG_NAME)
        return directory

    @classmethod
    def from_pretrained(cls, directory: str | Path, map_location: str | torch.device = "cpu") -> "PretrainedModel":
        """Load a model saved by :meth:`save_pretrained`, on ``map_location``, in the floating
        dtype it was saved in and in eval mode (call ``.train()`` to train it on); errors name
        the file and the problem."""
        directory = Path(directory)
        config_path, weights_path = directory / CONFIG_NAME, directory / WEIGHTS_NAME
        if not directory.is_dir():
            raise LoadError(f"{directory}: no such directory")
        if not config_path.is_file() and (directory / "best" / CONFIG_NAME).is_file():
            raise LoadError(f"{config_path}: missing config file; {directory} is a run folder: its model is in "
                            f"{directory / 'best'}")
        if not config_path.is_file():
            raise LoadError(f"{config_path}: missing config file (save_pretrained writes it)")
        if not weights_path.is_file():
            raise LoadError(f"{weights_path}: missing weights file (save_pretrained writes it)")
        try:
            data = json.loads(config_path.read_text())
        except json.JSONDecodeError as err:
            raise LoadError(f"{config_path}: not valid JSON: {err}") from None
        name = data.pop("model_class", cls.__name__) if isinstance(data, dict) else None
        target = cls if cls is not PretrainedModel else MODEL_CLASSES.get(str(name))
        if target is None or name not in MODEL_CLASSES:
            raise LoadError(f"{config_path}: unknown model_class {name!r}; known: {', '.join(sorted(MODEL_CLASSES))}")
        if not issubclass(MODEL_CLASSES[name], target):
            raise LoadError(f"{config_path}: holds a {name}, not a {target.__name__}")
        model_class = MODEL_CLASSES[name]
        try:
            config = model_class.config_class.from_dict(data, source=str(config_path))
        except ConfigError as err:
            raise LoadError(str(err)) from None
        model = model_class(config)
        try:
            tensors = load_file(str(weights_path), device=str(map_location))
        except (SafetensorError, OSError) as err:
            raise LoadError(f"{weights_path}: cannot read safetensors file: {err}") from None
        _check_state(model.state_dict(), tensors, weights_path)
        dtypes = {t.dtype for t in tensors.values() if t.is_floating_point()}
        if len(dtypes) == 1:  # a model saved in float64 or bfloat16 comes back so
            model.to(dtypes.pop())
        model.load_state_dict(tensors)
        return model.to(map_location).eval()


class LanguageModelDecoding:
    """``prefill`` of the decoder-only models (:class:`~.transformer.UTLanguageModel`,
    :class:`~.lstm.LSTMLanguageModel`), from their ``start_decoding`` and ``decode_step``."""

    def prefill(self, prompt: Tensor) -> tuple[Any, Tensor]:
        """Run the prompt ``[B, n]`` through once; returns the state and next-token logits.
        The prompts of a batch are of one length (no padding: :func:`check_prompt`)."""
        check_prompt(prompt, self.config.pad_id)
        state = self.start_decoding()
        return state, self.decode_step(prompt, state)[:, -1]


def _check_state(expected: dict[str, Tensor], found: dict[str, Tensor], path: Path) -> None:
    problems = []
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    if missing:
        problems.append(f"missing tensors: {', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}")
    if unexpected:
        problems.append(f"unexpected tensors: {', '.join(unexpected[:8])}{' ...' if len(unexpected) > 8 else ''}")
    for key in sorted(set(expected) & set(found)):
        if expected[key].shape != found[key].shape:
            problems.append(
                f"{key}: shape {tuple(found[key].shape)} in the file, {tuple(expected[key].shape)} in the model"
            )
    if problems:
        raise LoadError(f"{path}: weights do not match the config: " + "; ".join(problems))


def from_pretrained(directory: str | Path, map_location: str | torch.device = "cpu") -> PretrainedModel:
    """Load any model of this package saved with ``save_pretrained`` (its class is in config.json)."""
    return PretrainedModel.from_pretrained(directory, map_location)
