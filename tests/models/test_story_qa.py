"""The bAbI model: its fact encoder masks padding words itself, whatever row 0 of its embedding
holds; ``act_fact_min_steps`` and ``act_question_min_steps`` put a floor under the depth of
the facts or of the question alone."""

from __future__ import annotations

import pytest
import torch

from universal_transformer.config import ConfigError, StoryQAConfig
from universal_transformer.models.story_qa import FactEncoder, UTStoryQA


def _expected(enc: FactEncoder, words: torch.Tensor) -> torch.Tensor:
    """``sqrt(d) * sum_j E[w_j] * M_j`` over the real words, in float64."""
    E, M = enc.embed.weight.double(), enc.position_mask.double()
    d = E.shape[1]
    sentences = words.reshape(-1, words.shape[-1]).tolist()
    out = [sum((E[w] * M[j] for j, w in enumerate(s) if w != 0), torch.zeros(d, dtype=torch.float64)) for s in sentences]
    return torch.stack(out).reshape(*words.shape[:-1], d) * d**0.5


def test_padding_words_do_not_count_even_with_a_nonzero_row_zero():
    enc = FactEncoder(vocab_size=12, d_model=8, words=5)
    with torch.no_grad():
        enc.position_mask.normal_()
    words = torch.tensor([[[4, 7, 0, 0, 0], [9, 0, 0, 0, 0]], [[0, 0, 0, 0, 0], [3, 5, 11, 2, 6]]])  # [B, F, W]
    before = enc(words)
    with torch.no_grad():
        enc.embed.weight[0].normal_()  # e.g. weights trained or loaded without padding_idx
    after = enc(words)
    assert torch.equal(after, before)
    torch.testing.assert_close(after.double(), _expected(enc, words))
    assert torch.equal(after[1, 0], torch.zeros(8))  # an empty fact slot is exactly zero


def test_no_gradient_reaches_the_padding_row():
    enc = FactEncoder(vocab_size=12, d_model=8, words=3)
    with torch.no_grad():
        enc.embed.weight[0].normal_()
    enc(torch.tensor([[5, 0, 0], [0, 0, 0]])).sum().backward()
    assert torch.equal(enc.embed.weight.grad[0], torch.zeros(8))
    assert enc.embed.weight.grad[5].abs().sum() > 0


def _story_model(**overrides) -> UTStoryQA:
    torch.manual_seed(0)
    base = dict(vocab_size=20, num_classes=7, fact_words=4, d_model=16, num_heads=4, d_ff=32, num_steps=3,
                dropout=0.0, attention_dropout=0.0, embedding_dropout=0.0, act=True, act_bias_init=4.0)
    base.update(overrides)
    return UTStoryQA(StoryQAConfig(**base)).eval()


def test_facts_floor_holds_the_facts_and_leaves_the_question_to_act():
    """With p > 0.5 everywhere (bias +4) plain ACT halts every position by step 2. A facts' floor
    of 5 keeps every real fact running to step 5 at least; the question still halts by step 2."""
    facts = torch.tensor([[[0, 0, 0, 0], [3, 4, 5, 0], [6, 7, 0, 0]], [[8, 9, 10, 11], [12, 3, 0, 0], [5, 6, 7, 8]]])
    question = torch.tensor([[13, 14, 0, 0], [15, 16, 17, 0]])
    with torch.no_grad():
        plain = _story_model()(facts, question).halting["encoder"].n_updates
        held = _story_model(act_fact_min_steps=5)(facts, question).halting["encoder"].n_updates
    real_fact = facts.ne(0).any(-1)
    assert torch.all(plain[:, :-1][real_fact] <= 2) and torch.all(plain[:, -1] <= 2)
    assert torch.all(held[:, :-1][real_fact] >= 5) and torch.all(held[:, :-1][~real_fact] == 0)
    torch.testing.assert_close(held[:, -1], plain[:, -1], atol=0, rtol=0)  # the question halts before any fact moves


def test_question_floor_holds_the_question_and_leaves_the_facts_to_act():
    facts = torch.tensor([[[3, 4, 5, 0], [6, 7, 0, 0]], [[8, 9, 10, 11], [12, 3, 0, 0]]])
    question = torch.tensor([[13, 14, 0, 0], [15, 16, 17, 0]])
    with torch.no_grad():
        n = _story_model(act_question_min_steps=4)(facts, question).halting["encoder"].n_updates
    assert torch.all(n[:, :-1] <= 2) and torch.all(n[:, -1] >= 4)


def test_facts_and_question_floors_are_checked():
    with pytest.raises(ConfigError, match="act is false"):
        _story_model(act=False, act_fact_min_steps=4)
    with pytest.raises(ConfigError, match="act_fact_min_steps must be a step from act_min_steps .1.* \\(6\\), got 7"):
        _story_model(act_fact_min_steps=7)  # at most 2 x num_steps = 6
    with pytest.raises(ConfigError, match="act_question_min_steps must be"):
        _story_model(act_question_min_steps=0)
    with pytest.raises(ConfigError, match="act_fact_min_steps must be a step from act_min_steps .3."):
        _story_model(act_min_steps=3, act_fact_min_steps=2)  # every position's floor holds the facts too


@pytest.mark.parametrize("floor", ["act_fact_min_steps", "act_question_min_steps"])
def test_a_depth_below_a_positions_floor_is_refused(floor):
    # Those positions could not halt by their own choice: every one would be forced at the
    # last step, or, without halt_at_max_steps, never halt. The config refuses the same above max_steps.
    model = _story_model(**{floor: 4})
    with pytest.raises(ValueError, match=f"depth 3 is below ACT's floor .*{floor}=4"):
        model.configure_runtime(depth=3)
    model.configure_runtime(depth=4)
    assert model.encoder.policy.max_steps == 4


def test_the_story_model_takes_every_run_time_choice():
    # `ut eval --attention-window` reads the names configure_runtime takes.
    import inspect

    names = set(inspect.signature(UTStoryQA.configure_runtime).parameters)
    assert {"depth", "act_packed", "gradient_checkpointing", "attention_window", "attention_window_scope"} <= names
