"""The bAbI question-answering model of the paper (Section 3.1).

Each fact and the question is embedded as ``sum_j E[w_j] * M_j``: word embeddings
multiplied elementwise by a learned vector per word position ``j``. The sequence of
fact embeddings (oldest first) followed by the question embedding is the UT encoder's
input; the answer is classified from the encoder output at the question's position
(``config.pooling`` ``last``, the default), or from the mean over all real positions
(``mean``, what the reference code's class-label output layer does). Empty fact slots are
left out (``empty_slots="skip"``) or, as in the reference code's fixed-shape stories, computed
like the other positions but never attended to (``"compute"``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..config import ConfigError, StoryQAConfig
from ..modules.recurrence import RecurrentStack
from .base import ModelOutput
from .transformer import _UTClassifierBase


class FactEncoder(nn.Module):
    """``[.., W]`` word ids -> ``[.., d]``: ``sum_j E[w_j] * M_j`` over real words (id 0 = padding).

    Without ``vocab_size`` the encoder holds only its mask ``M`` and embeds with the table ``E``
    it is given at each call (another encoder's: the question's own mask over the facts' words)."""

    def __init__(self, vocab_size: int | None, d_model: int, words: int) -> None:
        super().__init__()
        self.words = words
        self.embed = None if vocab_size is None else nn.Embedding(vocab_size, d_model, padding_idx=0)
        if self.embed is not None:
            nn.init.normal_(self.embed.weight, std=d_model**-0.5)
            with torch.no_grad():
                self.embed.weight[0].zero_()
        self.position_mask = nn.Parameter(torch.ones(words, d_model))
        self.scale = d_model**0.5  # unit-scale entries, like the scaled token embeddings

    def forward(self, words: Tensor, embed: nn.Embedding | None = None) -> Tensor:
        if words.shape[-1] > self.words:
            raise ValueError(f"a sentence has {words.shape[-1]} words; the model takes at most fact_words={self.words}")
        table = self.embed if self.embed is not None else embed
        if table is None:
            raise ValueError("this FactEncoder has no word table of its own (vocab_size=None): pass one as embed")
        w = words.shape[-1]
        # Padding words are masked out, not left to a zero embedding row: that row can
        # be changed (loaded weights, in-place edits) and then padding would leak in.
        terms = (table(words) * self.position_mask[:w]).masked_fill(words.eq(0)[..., None], 0.0)
        return terms.sum(-2) * self.scale


class UTStoryQA(_UTClassifierBase):
    """bAbI model: fact encoder -> UT encoder (optionally with ACT) -> answer classifier."""

    config_class = StoryQAConfig
    config: StoryQAConfig

    def __init__(self, config: StoryQAConfig) -> None:
        super().__init__(config)
        if config.fact_words is None:
            raise ConfigError("UTStoryQA needs fact_words (words per sentence) in the config")
        self.facts = FactEncoder(config.vocab_size, config.d_model, config.fact_words)
        # The paper embeds the question "in the same way" as the facts ("shared": their table and
        # mask); tensor2tensor's port gives it its own mask over the one word table ("shared_words");
        # "separate" gives it its own table and mask.
        own_words = config.vocab_size if config.question_encoder == "separate" else None
        self.question = (
            None if config.question_encoder == "shared" else FactEncoder(own_words, config.d_model, config.fact_words)
        )
        self.encoder = RecurrentStack(config, causal=False, cross_attention=False)
        self.head = nn.Linear(config.d_model, config.num_classes)
        self.post_init()

    def forward(
        self,
        facts: Tensor,
        question: Tensor,
        labels: Tensor | None = None,
        *,
        label_smoothing: float = 0.0,
        need_weights: bool = False,
        position_offset: Tensor | None = None,
    ) -> ModelOutput:
        """``facts [B, F, W]`` (empty fact slots all zeros, at the front), ``question [B, W]``, ``labels [B]``."""
        compute_empty = self.config.empty_slots == "compute"
        if compute_empty and position_offset is not None:
            facts, position_offset = self._whole_memory(facts, position_offset)
        question_encoder = self.question if self.question is not None else self.facts
        h = torch.cat((self.facts(facts), question_encoder(question, self.facts.embed)[:, None]), dim=1)
        empty = torch.cat((facts.eq(0).all(-1), facts.new_zeros(facts.shape[0], 1, dtype=torch.bool)), dim=1)
        empty = empty if bool(empty.any()) else None
        padding = None if compute_empty else empty  # computed empty slots are positions like the others
        out = self.encoder(
            self.embedding_dropout(h), padding=padding, masked_keys=empty if compute_empty else None,
            positions=self._positions(h[..., 0], position_offset), need_weights=need_weights,
            act_floor=self._act_floor(facts),
        )
        logits = self.head(self._pool(out.hidden, padding))
        return self._finish(logits, labels, {"encoder": out}, label_smoothing)

    @staticmethod
    def _whole_memory(facts: Tensor, position_offset: Tensor) -> tuple[Tensor, Tensor]:
        """A batch that dropped its unused oldest slots (``position_offset`` of them, the same for
        every story) with those slots back, empty, in front: every slot of the memory is computed."""
        dropped = int(position_offset.max())
        if int(position_offset.min()) != dropped:
            raise ValueError("empty_slots='compute' needs one position_offset for the whole batch (the slots it dropped)")
        return torch.nn.functional.pad(facts, (0, 0, dropped, 0)), position_offset - dropped

    def _check_depth(self, depth: int) -> None:
        """A depth below the facts' or the question's ACT floor is refused, as one below
        ``act_min_steps`` is: those positions could not halt by their own choice."""
        cfg = self.config
        floors = [v for v in (cfg.act_fact_min_steps, cfg.act_question_min_steps) if v is not None]
        if cfg.act and floors and depth < max(floors):
            raise ValueError(f"depth {depth} is below ACT's floor (act_fact_min_steps={cfg.act_fact_min_steps}, "
                             f"act_question_min_steps={cfg.act_question_min_steps}): those positions may not halt before it")

    def _act_floor(self, facts: Tensor) -> Tensor | None:
        """ACT's floor per position ``[B, F + 1]``: ``act_fact_min_steps`` at the facts and
        ``act_question_min_steps`` at the question (each ``act_min_steps`` when unset); None when both are unset."""
        cfg = self.config
        if cfg.act_fact_min_steps is None and cfg.act_question_min_steps is None:
            return None
        fact, question = (cfg.act_min_steps if v is None else v for v in (cfg.act_fact_min_steps, cfg.act_question_min_steps))
        steps = facts.new_full(facts.shape[:2], fact)
        return torch.cat((steps, steps.new_full((facts.shape[0], 1), question)), dim=1)


__all__ = ["FactEncoder", "UTStoryQA"]
