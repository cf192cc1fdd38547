"""Random position offsets (the paper's Section 3.4: "positions starting with randomized offsets
to further encourage the model to learn position-relative transformations"): the trainer's
draws, and a wrapper that draws them at evaluation too.

They are a training-time augmentation here: a model's forward pass takes them as an input and
evaluation gives it positions ``0..L-1``. tensor2tensor's ``position_start_index="random"``
instead draws a start index at every call that adds the position signal, evaluation included.
A model trained with offsets drawn anew at every recurrent step (``position_offset_per:
step``) learns to expect offsets that differ from step to step, which aligned positions never
give (docs/results.md, the pre-norm Reverse runs); ``train.eval_position_offsets`` scores it
as tensor2tensor would, through :class:`DrawnPositionOffsets`.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import Tensor, nn

from ..config import ConfigError
from ..data.batch import add_offsets
from .config import TrainConfig


def position_offsets(seed: int, step: int, size: int, *, maximum: int, per: str, steps: int = 0) -> torch.Tensor:
    """Random position offsets in ``0..maximum`` for the batch of ``step``: a pure function of
    ``(seed, step)``, so resuming and data parallelism see the same ones.

    ``per="example"``: ``[size]``, one per example, shared by its source and target;
    ``"batch"``: one for the whole batch; ``"stack"``: ``[size, 2]``, independent offsets for
    the source (column 0) and the target (column 1) of each example; ``"step"``:
    ``[size, 2, steps]``, independent for each example, stack and recurrent step (as
    tensor2tensor's ``position_start_index="random"`` draws a start index at every step)."""
    gen = torch.Generator().manual_seed((seed * 1_000_003 + step) * 7 + 3)
    if per == "stack":
        return torch.randint(0, maximum + 1, (size, 2), generator=gen)
    if per == "step":
        if steps < 1:
            raise ValueError("position_offset_per='step' needs the number of recurrent steps")
        return torch.randint(0, maximum + 1, (size, 2, steps), generator=gen)
    draws = torch.randint(0, maximum + 1, (size if per == "example" else 1,), generator=gen)
    return draws.expand(size).contiguous()


class DrawnPositionOffsets(nn.Module):
    """``model`` with position offsets drawn as in training at every call: its forward pass
    (teacher forcing) and, for an encoder-decoder, ``prefill`` (the offsets of the target
    stay with the decoding state, so that every new token continues the same positions).
    Offsets a caller passes (a task's own shift) get the draw added, as in training. Every
    other attribute is the model's.

    The draws are :func:`position_offsets` of ``seed`` and a call counter (apart from every
    training step's), so an evaluation is reproducible: a fresh wrapper draws the same offsets
    for the same sequence of calls (another order of calls, e.g. other test lengths before this
    one, draws others).
    """

    # The counter's start: past any training step and apart from every one modulo 2**32 (torch's
    # CPU generator keeps 32 bits of its seed), so no evaluation draw repeats a training batch's.
    FIRST_DRAW = 1 << 31

    def __init__(self, model: nn.Module, *, maximum: int, per: str, seed: int) -> None:
        super().__init__()
        if maximum < 1:
            raise ConfigError("offsets drawn at evaluation need train.max_position_offset >= 1")
        if per in ("stack", "step") and not _takes_offsets(getattr(model, "start_decoding", None)):
            raise ConfigError(f"position_offset_per={per!r} offsets at evaluation need an encoder-decoder; "
                              f"{type(model).__name__} is not one")
        if hasattr(model, "prefill") and not _takes_offsets(model.prefill):
            raise ConfigError(f"a {type(model).__name__} cannot decode with drawn position offsets "
                              "(train.eval_position_offsets)")
        self.model = model
        self.maximum, self.per, self.seed = maximum, per, seed
        self.calls = self.FIRST_DRAW

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)  # parameters, buffers, submodules (self.model)
        except AttributeError:
            return getattr(self.model, name)  # config, encoder, recurrent_steps, ...

    def draw(self, size: int) -> Tensor:
        """Offsets for the next call's ``size`` examples."""
        self.calls += 1
        return position_offsets(self.seed, self.calls, size, maximum=self.maximum, per=self.per,
                                steps=getattr(self.model, "recurrent_steps", 0))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        inputs = next(x for x in (*args, *kwargs.values()) if isinstance(x, Tensor))  # [B, ...]
        drawn = self.draw(inputs.shape[0]).to(inputs.device)
        kwargs["position_offset"] = add_offsets(kwargs.get("position_offset"), drawn)
        return self.model(*args, **kwargs)

    def prefill(self, src: Tensor, prefix: Tensor | None = None) -> Any:
        # decode_step needs no draw (the offsets stay in the state): it is the model's, via __getattr__
        return self.model.prefill(src, prefix, position_offset=self.draw(src.shape[0]).to(src.device))


def _takes_offsets(method: Any) -> bool:
    return method is not None and "position_offset" in inspect.signature(method).parameters


def evaluated(model: nn.Module, cfg: TrainConfig) -> nn.Module:
    """The model as evaluation should see it: with offsets drawn as in training if
    ``train.eval_position_offsets`` (a fixed seed, the same draws at every evaluation)."""
    if not cfg.eval_position_offsets:
        return model
    return DrawnPositionOffsets(model, maximum=cfg.max_position_offset, per=cfg.position_offset_per, seed=cfg.task_seed)
