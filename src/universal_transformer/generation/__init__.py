"""Decoding with the key/value cache: greedy, sampling and beam search, through one protocol."""

from .beam import BeamSearchOutput, Hypothesis, beam_search, compute_length_penalty
from .decoding import choose_next, generate, generate_uncached
from .protocol import Decoder, UncachedDecoder, expand_state, reorder_state, repeat_index

__all__ = [
    "BeamSearchOutput", "Decoder", "Hypothesis", "UncachedDecoder", "beam_search", "choose_next",
    "compute_length_penalty", "expand_state", "generate", "generate_uncached", "reorder_state", "repeat_index",
]
