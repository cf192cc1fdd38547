"""Model configurations: dataclasses that validate themselves and round-trip to YAML/JSON.

One :class:`UTConfig` holds the architecture of every Transformer-family model of the
package (UT, UT+ACT, and the vanilla Transformer when ``share_weights=False``); a model
with a head of its own extends it (:class:`UTClassifierConfig`, :class:`StoryQAConfig`);
:class:`LSTMConfig` drives the LSTM baseline. All serialise with :meth:`to_dict` /
:meth:`from_dict` and to files with :meth:`save` / :func:`load_config` (``.json``,
``.yaml`` or ``.yml``).

A config holds the model, nothing else: how it is executed (packed ACT, gradient
checkpointing, dtype) is chosen at run time (``model.configure_runtime``, the trainer's
``train`` section), and training-time augmentation (random position offsets) is the
trainer's. Configs written by older versions still load: :func:`migrate` moves or drops
their old keys with a :class:`FutureWarning` that names them.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import types
import typing
import warnings
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field and the problem."""


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's floats: ``1e-3`` is a number, not the string
    PyYAML's YAML 1.1 rules make of it (they want ``1.0e-3``)."""


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper that quotes the strings :func:`load_yaml` would read as floats
    (``"1e5"``), so that a saved config reads back as it was."""


for _yaml_class in (_Loader, _Dumper):
    _yaml_class.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                     |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                     |\.[0-9_]+(?:[eE][-+][0-9]+)?
                     |[-+]?\.(?:inf|Inf|INF)
                     |\.(?:nan|NaN|NAN))$""", re.X),
        list("-+0123456789."),
    )


def load_yaml(text: str) -> Any:
    """Parse the YAML of a config (a file or a ``--set`` value); ``1e-3`` is a float."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader subclass)


def dump_yaml(data: Any) -> str:
    """YAML that :func:`load_yaml` reads back as ``data`` (keys in their order)."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False)


def check_attention_window(window: Any, scope: Any = "all") -> None:
    """Raise :class:`ConfigError` unless ``window`` is None or a number of positions >= 0 and
    ``scope`` one of ``all``/``source`` (the config's fields, or their test-time values)."""
    if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 0):
        raise ConfigError(f"attention_window must be a number of positions >= 0 or null, got {window!r}")
    if scope not in typing.get_args(_field_types(UTConfig)["attention_window_scope"]):
        raise ConfigError(f"attention_window_scope must be 'all' or 'source', got {scope!r}")


@functools.cache
def _field_types(cls: type) -> dict[str, Any]:
    """The resolved annotations of the dataclass ``cls``'s fields (strings under ``from __future__``)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def _describe(kind: Any) -> str:
    """A type annotation as a user reads it in an error: ``int | None`` -> ``an integer or null``."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arm) for arm in args)
    if origin is Literal:
        return "one of " + ", ".join(map(repr, args))
    if origin in (list, tuple):
        item = args[0] if args and (origin is list or args[-1] is Ellipsis or len(set(args)) == 1) else None
        size = f"{len(args)} " if origin is tuple and args and args[-1] is not Ellipsis else ""
        return f"a list of {size}" + (_describe(item).removeprefix("an ").removeprefix("a ") + "s" if item else "values")
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string", type(None): "null"}.get(
        kind, getattr(kind, "__name__", str(kind)))


def _fits(value: Any, kind: Any) -> bool:
    """Whether ``value`` (as YAML or JSON give it) is of the annotated type ``kind``."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arm) for arm in args)
    if origin is Literal:
        return value in args
    if origin in (list, tuple):  # a list and a tuple read alike from a file
        if not isinstance(value, (list, tuple)):
            return False
        if origin is tuple and args and args[-1] is not Ellipsis:
            return len(value) == len(args) and all(_fits(v, a) for v, a in zip(value, args))
        return not args or all(_fits(v, args[0]) for v in value)
    if origin is not None:
        return isinstance(value, origin)
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:  # True is an int to Python, not to a config
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:  # NaN is not a value a setting can have
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
    return isinstance(value, kind) if isinstance(kind, type) else True


def check_field_types(config: Any, *, prefix: str = "") -> None:
    """Raise :class:`ConfigError` naming the first field of the dataclass instance ``config``
    whose value is not of its annotated type (``act: "maybe"``, ``pad_id: 0.5``,
    ``dropout: null``): such a value would otherwise pass as truthy or fail later, far from
    its cause. An integer is a number; ``true`` is not an integer."""
    for name, kind in _field_types(type(config)).items():
        value = getattr(config, name)
        if not _fits(value, kind):
            raise ConfigError(f"{prefix}{name} must be {_describe(kind)}, got {value!r}")


def reject_unknown_keys(cls: type, data: dict[str, Any], *, source: str, what: str = "key(s)") -> None:
    """Raise :class:`ConfigError` naming every key of ``data`` that is not a field of the dataclass ``cls``."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        names = ", ".join(unknown)
        raise ConfigError(f"{source}: unknown {what.replace('(s)', '(s) ' + names, 1)}; known: {', '.join(sorted(known))}")


@dataclass
class _BaseConfig:
    """Shared serialisation and validation helpers."""

    model_type: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict with a ``model_type`` key, suitable for JSON/YAML."""
        return {"model_type": self.model_type, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "config") -> "_BaseConfig":
        """Build from a dict, rejecting unknown keys with a message naming them."""
        data = dict(data)
        kind = data.pop("model_type", cls.model_type)
        # Before the classifier configs existed, their models saved a plain UT config.
        legacy_ut = kind == "universal_transformer" and issubclass(cls, UTConfig)
        if kind != cls.model_type and not legacy_ut:
            raise ConfigError(f"{source}: model_type is {kind!r}, expected {cls.model_type!r}")
        data = migrate(cls, data, source=source)
        reject_unknown_keys(cls, data, source=source, what=f"key(s) for {cls.__name__}")
        try:
            config = cls(**data)
        except ConfigError as err:
            raise ConfigError(f"{source}: {err}") from None
        return config

    def replace(self, **changes: Any) -> "_BaseConfig":
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def save(self, path: str | Path) -> None:
        """Write to ``path`` as JSON or YAML, chosen by the file extension."""
        path = Path(path)
        text = _dump(self.to_dict(), path)
        path.write_text(text)

    def _check_positive(self, *names: str) -> None:
        for name in names:
            value = getattr(self, name)
            if value < 1:  # an integer: check_field_types ran first
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")

    def _check_probability(self, *names: str) -> None:
        for name in names:
            value = getattr(self, name)
            if not 0.0 <= float(value) < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {value!r}")


@dataclass
class _VocabularyConfig(_BaseConfig):
    """The vocabulary fields every sequence model shares: sizes and special ids."""

    vocab_size: int = 32
    target_vocab_size: int | None = None  # decoder vocabulary of an encoder-decoder; None = vocab_size
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def _check_vocabulary(self) -> None:
        self._check_positive("vocab_size")
        if self.target_vocab_size is not None:
            self._check_positive("target_vocab_size")
        for name in ("pad_id", "bos_id", "eos_id"):
            value = getattr(self, name)
            if not 0 <= value < min(self.vocab_size, self.tgt_vocab_size):
                raise ConfigError(f"{name} ({value}) must be a valid token id below the vocabulary size")
        if self.pad_id in (self.bos_id, self.eos_id):  # a decoder never emits padding, so it could never stop
            raise ConfigError(f"pad_id ({self.pad_id}) must differ from bos_id ({self.bos_id}) and eos_id ({self.eos_id})")

    @property
    def tgt_vocab_size(self) -> int:
        return self.target_vocab_size or self.vocab_size


@dataclass
class UTConfig(_VocabularyConfig):
    """Configuration of a Universal Transformer (or, untied, a vanilla Transformer).

    The defaults are a small UT with fixed depth. Field groups:

    * vocabulary: ``vocab_size`` (source / LM), ``target_vocab_size`` (decoder of an
      encoder-decoder; ``None`` = same as source), special ids;
    * width: ``d_model``, ``num_heads``, ``d_ff``;
    * depth: ``num_steps`` recurrent steps (UT) or layers (``share_weights=False``);
    * coordinate embedding (the paper's eq. 6-7): position + timestep signals added every step;
    * halting (Section 2.2 and Appendix B; Graves 2016): ``act`` and the ``act_*`` fields.
    """

    model_type: ClassVar[str] = "universal_transformer"

    d_model: int = 128
    num_heads: int = 4
    d_ff: int = 512
    dropout: float = 0.1
    attention_dropout: float = 0.0
    embedding_dropout: float = 0.1

    num_steps: int = 4
    decoder_num_steps: int | None = None
    share_weights: bool = True
    embed_every_step: bool = True
    norm: Literal["post", "pre"] = "post"
    transition: Literal["fc", "sepconv", "sepconv_t2t"] = "fc"
    conv_kernel_size: int = 3

    position_embedding: Literal["sinusoid", "learned", "none"] = "sinusoid"
    timestep_embedding: Literal["sinusoid", "learned", "none"] = "sinusoid"
    max_position: int = 1024
    # Source positions count from 0 again after each occurrence of this token id (an
    # encoder-decoder's source only). With Addition's `+`, the i-th digits of both operands share
    # position i, so aligning them needs no arithmetic on positions: a diagnostic of what the
    # paper's models must otherwise learn (docs/results.md, Addition), not the paper's recipe.
    position_restart_id: int | None = None
    # Local attention: a query attends only to keys whose position ids (offsets and restarts
    # included) are at most this far from its own, in self- and cross-attention. None: every key
    # (the paper). Attention weights learnt for the distances of training then cannot reach
    # distances never seen there, which break length generalisation (docs/results.md, Addition).
    attention_window: int | None = None
    # Which attention the window confines: "all", or "source" (an encoder's self-attention and the
    # decoder's cross-attention, not the decoder's attention over its own outputs; a language
    # model, which has no source, refuses it).
    attention_window_scope: Literal["all", "source"] = "all"
    tie_embeddings: bool = True
    scale_embeddings: bool = True
    # How the linear layers start: PyTorch's defaults, or the reference code's Glorot-uniform
    # kernels and zero biases (modules/initialisation.py).
    weight_init: Literal["torch", "tensor2tensor"] = "torch"

    act: bool = False
    act_type: Literal["basic", "accumulated", "global", "random"] = "basic"
    act_epsilon: float = 0.01
    act_max_steps: int | None = None
    act_bias_init: float = 1.0
    # The halting unit reads LayerNorm(step input) (its own norm) instead of the step input. With
    # norm="pre" the step input is the un-normalised residual stream, whose norm grows with every
    # step: the halting logit then drifts with depth and the sigmoid saturates (docs/design.md).
    act_halting_norm: bool = False
    act_halted_state: Literal["copy", "transform"] = "copy"
    act_halt_at_max_steps: bool = True
    # No position may halt before this step: the halting unit is first read at step
    # act_min_steps (p = 0 before it, so those steps carry no weight in the output). 1 is
    # Graves' ACT and the paper's. A floor under the depth for a task whose positions learn
    # to halt at step 1 and never leave it (bAbI task 19 in the joint model, docs/results.md).
    act_min_steps: int = 1
    ponder_weight: float = 0.01

    def __post_init__(self) -> None:
        check_field_types(self)  # the Literal fields' choices too
        self._check_vocabulary()
        self._check_positive("d_model", "num_heads", "d_ff", "num_steps", "max_position")
        self._check_positive("conv_kernel_size", "act_min_steps")
        for name in ("decoder_num_steps", "act_max_steps"):
            if getattr(self, name) is not None:
                self._check_positive(name)
        check_attention_window(self.attention_window)
        if self.position_restart_id is not None:
            if self.position_embedding == "none":
                raise ConfigError("position_restart_id restarts the source positions, but position_embedding is 'none'")
            if not 0 <= self.position_restart_id < self.vocab_size:
                raise ConfigError(f"position_restart_id must be a source token id below vocab_size "
                                  f"({self.vocab_size}), got {self.position_restart_id!r}")
        self._check_probability("dropout", "attention_dropout", "embedding_dropout")
        if self.d_model % self.num_heads:
            raise ConfigError(
                f"d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})"
            )
        if self.d_model % 2 and "sinusoid" in (self.position_embedding, self.timestep_embedding):
            raise ConfigError(f"d_model ({self.d_model}) must be even for sinusoidal embeddings")
        if not 0.0 < self.act_epsilon < 1.0:
            raise ConfigError(f"act_epsilon must be in (0, 1), got {self.act_epsilon!r}")
        if self.ponder_weight < 0:
            raise ConfigError(f"ponder_weight must be >= 0, got {self.ponder_weight!r}")
        if self.act_min_steps > self.max_steps:
            raise ConfigError(f"act_min_steps ({self.act_min_steps}) exceeds the most steps ACT may take "
                              f"({self.max_steps}; act_max_steps or 2 x num_steps)")
        if self.act and not self.share_weights:
            raise ConfigError("act=True needs share_weights=True: halting recurs one shared block")
        if self.act and self.decoder_num_steps is not None:
            raise ConfigError(
                "decoder_num_steps sets a fixed decoder depth, but with act=True depth is dynamic; "
                "set act_max_steps (the limit of both stacks) instead"
            )

    @property
    def max_steps(self) -> int:
        """Largest number of recurrent steps ACT may take (2 x ``num_steps`` unless ``act_max_steps`` is set)."""
        return self.act_max_steps if self.act_max_steps is not None else 2 * self.num_steps

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    @property
    def dec_steps(self) -> int:
        return self.decoder_num_steps or self.num_steps


@dataclass
class UTClassifierConfig(UTConfig):
    """A UT encoder with a classification head: ``num_classes`` answers, read by ``pooling``
    (``mean`` over the real positions, the ``first`` or the ``last`` real position)."""

    model_type: ClassVar[str] = "ut_classifier"

    num_classes: int | None = None  # may be left to the task, which knows its label set
    pooling: Literal["mean", "first", "last"] = "mean"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.num_classes is not None:
            self._check_positive("num_classes")


@dataclass
class StoryQAConfig(UTClassifierConfig):
    """The bAbI story model (the paper's Section 3.1): facts and question embedded as
    ``sum_j E[w_j] * M_j`` over their ``fact_words`` words, the answer read at the
    question (``pooling="last"``) or over all positions (``"mean"``, what the
    tensor2tensor class-label output does). ``question_encoder="shared"`` embeds the
    question with the facts' table and mask (the paper: "in the same way");
    ``"shared_words"`` with the facts' word table and a mask of its own (the authors' bAbI port
    for tensor2tensor, whose input modalities share one table); ``"separate"`` gives it a table
    and a mask of its own (our default)."""

    model_type: ClassVar[str] = "ut_story_qa"

    fact_words: int | None = None  # words per sentence; the task fills it in from the data
    pooling: Literal["mean", "first", "last"] = "last"
    question_encoder: Literal["separate", "shared", "shared_words"] = "separate"
    # With ACT, no fact may halt before act_fact_min_steps, and the question not before
    # act_question_min_steps (None: act_min_steps, the floor of every position, which each must
    # reach). A facts' floor that ACT never leaves gives the facts a fixed depth while the question
    # keeps its dynamic halting: in the tasks 1-3 mix, task 3 fails when ACT halts every fact at
    # its floor of 2, and not at a fixed depth of 8 (docs/results.md).
    act_fact_min_steps: int | None = None
    act_question_min_steps: int | None = None
    # The memory's empty fact slots: "skip" leaves them out (padding: no position, no key, no
    # ponder). "compute" is tensor2tensor's fixed-shape stories (the authors' bAbI port): every
    # one of the task's memory_size slots is a position that runs through the steps, ponders,
    # counts in the ponder cost and enters a mean readout, while its own input, all zeros, is
    # masked as a key (tensor2tensor's attention bias masks all-zero inputs); a story of 38 facts
    # in a memory of 130 then has 92 such scratch positions reading it.
    empty_slots: Literal["skip", "compute"] = "skip"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.fact_words is not None:
            self._check_positive("fact_words")
        for name in ("act_fact_min_steps", "act_question_min_steps"):
            floor = getattr(self, name)
            if floor is None:
                continue
            if not self.act:
                raise ConfigError(f"{name} is a floor for ACT's halting, but act is false")
            if not self.act_min_steps <= floor <= self.max_steps:
                raise ConfigError(f"{name} must be a step from act_min_steps ({self.act_min_steps}, every "
                                  f"position's floor) to the most steps ACT may take ({self.max_steps}), got {floor!r}")
        if self.pooling == "first":  # the oldest memory slot, usually padding
            raise ConfigError("the story model reads the answer with pooling 'last' (the question) or 'mean', not 'first'")


def transformer_config(config_class: type[UTConfig] = UTConfig, /, **overrides: Any) -> UTConfig:
    """The vanilla Transformer baseline: untied layers, position signal added once, no timestep.

    A ``config_class`` of the UT family gives the baseline of that model, e.g.
    ``transformer_config(UTClassifierConfig, num_classes=3)`` for ``UTEncoderClassifier``."""
    if not (isinstance(config_class, type) and issubclass(config_class, UTConfig)):
        raise ConfigError(f"transformer_config takes UTConfig or a subclass of it, got {config_class!r}")
    base = dict(share_weights=False, embed_every_step=False, timestep_embedding="none", num_steps=6)
    base.update(overrides)
    return config_class(**base)


@dataclass
class LSTMConfig(_VocabularyConfig):
    """Configuration of the LSTM encoder-decoder baseline with (Luong, dot) attention."""

    model_type: ClassVar[str] = "lstm"

    d_model: int = 256
    num_layers: int = 2
    dropout: float = 0.1
    bidirectional_encoder: bool = True
    tie_embeddings: bool = True

    def __post_init__(self) -> None:
        check_field_types(self)
        self._check_vocabulary()
        self._check_positive("d_model", "num_layers")
        self._check_probability("dropout")
        if self.bidirectional_encoder and self.d_model % 2:
            raise ConfigError(f"d_model ({self.d_model}) must be even with a bidirectional encoder")


CONFIG_CLASSES: dict[str, type[_BaseConfig]] = {
    cls.model_type: cls for cls in (UTConfig, UTClassifierConfig, StoryQAConfig, LSTMConfig)
}

ModelConfig = UTConfig | LSTMConfig

# Keys older versions wrote into model configs, and where they went.
_MOVED_KEYS = {
    "act_packed": "a run-time choice: model.configure_runtime(act_packed=...) or train.act_packed",
    "max_position_offset": "a training option: train.max_position_offset",
    "num_classes": "UTClassifierConfig / StoryQAConfig",
    "pooling": "UTClassifierConfig / StoryQAConfig",
    "fact_words": "StoryQAConfig",
}


def migrate(cls: type, data: dict[str, Any], *, source: str = "config") -> dict[str, Any]:
    """Bring a config dict written by an older version up to date for ``cls``.

    Keys that moved elsewhere are dropped (or kept, where ``cls`` has them now), with one
    :class:`FutureWarning` naming them; a ``None`` pooling means the class's default.
    """
    known = {f.name for f in fields(cls)}
    moved = [key for key in _MOVED_KEYS if key in data and key not in known]
    data = {k: v for k, v in data.items() if k not in moved}
    if "pooling" in known and data.get("pooling", "") is None:
        data.pop("pooling")
    if moved:
        where = "; ".join(f"{key} -> {_MOVED_KEYS[key]}" for key in moved)
        warnings.warn(f"{source}: written by an older version; moved key(s) dropped from the model config ({where})",
                      FutureWarning, stacklevel=3)
    return data


def config_from_dict(data: dict[str, Any], *, source: str = "config") -> ModelConfig:
    """Build the config class named by ``data['model_type']`` (default: UT). A ``model_class``
    key (the model a ``save_pretrained`` folder's ``config.json`` was saved from) is ignored."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of config keys, got {type(data).__name__}")
    data = {k: v for k, v in data.items() if k != "model_class"}
    kind = data.get("model_type", UTConfig.model_type)
    if kind not in CONFIG_CLASSES:
        raise ConfigError(
            f"{source}: unknown model_type {kind!r}; known: {', '.join(sorted(CONFIG_CLASSES))}"
        )
    return CONFIG_CLASSES[kind].from_dict(data, source=source)  # type: ignore[return-value]


def load_config(path: str | Path) -> ModelConfig:
    """Read a model config from a ``.json``/``.yaml``/``.yml`` file (one written by
    :meth:`_BaseConfig.save`, or the ``config.json`` of a ``save_pretrained`` folder)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    text = path.read_text()
    try:
        data = json.loads(text) if path.suffix == ".json" else load_yaml(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot parse: {err}") from None
    return config_from_dict(data, source=str(path))


def _dump(data: dict[str, Any], path: Path) -> str:
    if path.suffix == ".json":
        return json.dumps(data, indent=2, sort_keys=False) + "\n"
    if path.suffix in (".yaml", ".yml"):
        return dump_yaml(data)
    raise ConfigError(f"{path}: unsupported config extension {path.suffix!r} (use .json, .yaml or .yml)")


__all__ = [
    "ConfigError",
    "LSTMConfig",
    "ModelConfig",
    "StoryQAConfig",
    "UTClassifierConfig",
    "UTConfig",
    "config_from_dict",
    "load_config",
    "migrate",
    "transformer_config",
]
