"""Autoregressive generation: greedy and sampling (temperature, top-k, top-p) with the key/value cache.

Works for every :class:`~.protocol.Decoder` (``prefill(inputs) -> (state, next_logits)``,
``decode_step(tokens, state) -> logits``): the encoder-decoder UT and LSTM (``inputs``
= source ids) and the UT language model (``inputs`` = prompt ids). Beam search is in
:mod:`.beam`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .protocol import Decoder, UncachedDecoder, check_decoder, eval_mode


def choose_next(
    logits: Tensor,
    *,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Next token ids ``[B]`` from logits ``[B, V]``: argmax, or a sample from the tempered
    distribution cut to its ``top_k`` tokens and to the smallest set whose probability
    reaches ``top_p`` (nucleus sampling, Holtzman et al. 2020)."""
    if not do_sample:
        return logits.argmax(-1)
    if not (temperature > 0 and math.isfinite(temperature)):  # (NaN fails every comparison)
        raise ValueError(f"temperature must be a finite number > 0 when sampling, got {temperature}")
    logits = logits.float() / temperature
    if top_k is not None:
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if top_p is not None and top_p < 1.0:  # 1 keeps every token (the rounded running sum can reach 1 before the tail)
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        probs = sorted_logits.softmax(-1)
        drop_sorted = probs.cumsum(-1) - probs >= top_p  # the better tokens already reach top_p; the best stays
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return torch.multinomial(logits.softmax(-1), 1, generator=generator).squeeze(-1)


@torch.inference_mode()
def generate(
    model: Decoder,
    inputs: Tensor,
    *,
    max_new_tokens: int,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    eos_id: int | None = None,
    stop_at_eos: bool = True,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Generate up to ``max_new_tokens`` tokens ``[B, n]`` after ``inputs``.

    Each step feeds only the newest token; everything earlier comes from the cache.
    After a row emits ``eos_id`` it is padded with ``pad_id``; generation stops early
    once every row has finished (if ``stop_at_eos``).
    """
    config = model.config
    eos = config.eos_id if eos_id is None else eos_id
    check_decoder(model, eos)
    check_max_new_tokens(max_new_tokens)
    if not do_sample and (temperature != 1.0 or top_k is not None or top_p is not None):
        raise ValueError("temperature, top_k and top_p shape sampling: pass do_sample=True (greedy decoding would ignore them)")
    out = []
    with eval_mode(model):
        state, logits = model.prefill(inputs)
        finished = torch.zeros(inputs.shape[0], dtype=torch.bool, device=inputs.device)
        for _ in range(max_new_tokens):
            logits = _never_pad(logits, config.pad_id)
            token = choose_next(logits, do_sample=do_sample, temperature=temperature, top_k=top_k, top_p=top_p,
                                generator=generator)
            token = token.masked_fill(finished, config.pad_id)
            out.append(token)
            finished |= token == eos
            if stop_at_eos and bool(finished.all()):
                break
            logits = model.decode_step(token[:, None], state)[:, -1]
    return torch.stack(out, dim=1) if out else inputs.new_zeros((inputs.shape[0], 0))


@torch.inference_mode()
def generate_uncached(model: Decoder, inputs: Tensor, *, max_new_tokens: int) -> tuple[Tensor, Tensor]:
    """Greedy decoding that recomputes the whole prefix at every step (no cache).

    The reference the cached path is tested and benchmarked against (through
    :class:`~.protocol.UncachedDecoder`). Returns the tokens ``[B, n]`` and the logits
    ``[B, n, V]`` each step chose from; never stops at eos.
    """
    check_max_new_tokens(max_new_tokens)
    uncached = UncachedDecoder(model)
    tokens, step_logits = [], []
    with eval_mode(uncached):
        state, logits = uncached.prefill(inputs)
        for i in range(max_new_tokens):
            logits = _never_pad(logits, model.config.pad_id)
            token = logits.argmax(-1)
            tokens.append(token)
            step_logits.append(logits)
            if i + 1 < max_new_tokens:
                logits = uncached.decode_step(token[:, None], state)[:, -1]
    if not tokens:
        return inputs.new_zeros((inputs.shape[0], 0)), logits.new_zeros((inputs.shape[0], 0, logits.shape[-1]))
    return torch.stack(tokens, 1), torch.stack(step_logits, 1)


def check_max_new_tokens(max_new_tokens: int) -> None:
    """Refuse a negative number of tokens to generate (it gave an empty output, as 0 does)."""
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")


def _never_pad(logits: Tensor, pad_id: int) -> Tensor:
    """Padding is not a token to generate (and a generated pad would read as padding later).
    Out of place, in one operation: the caller's logits stay as they were."""
    return logits.index_fill(-1, torch.tensor([pad_id], device=logits.device), float("-inf"))
