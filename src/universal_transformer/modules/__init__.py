"""Building blocks: attention, coordinate embedding, transitions, the UT step, halting, recurrence."""

from .attention import KVCache, MultiHeadAttention, attention_mask
from .block import UTBlock
from .embedding import CoordinateEmbedding, TokenEmbedding, sinusoid
from .halting import ACTState, HaltingUnit, act_step
from .recurrence import HaltingStats, RecurrentStack, StackCache, StackOutput
from .transition import FeedForward, SepConvT2TTransition, SepConvTransition, make_transition

__all__ = [
    "ACTState", "CoordinateEmbedding", "FeedForward", "HaltingStats", "HaltingUnit", "KVCache",
    "MultiHeadAttention", "RecurrentStack", "SepConvT2TTransition", "SepConvTransition", "StackCache", "StackOutput",
    "TokenEmbedding", "UTBlock", "act_step", "attention_mask", "make_transition", "sinusoid",
]
