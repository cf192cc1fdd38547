"""Decoding with the key/value cache: greedy and sampling."""

from .decoding import choose_next, generate, generate_uncached

__all__ = ["choose_next", "generate", "generate_uncached"]
