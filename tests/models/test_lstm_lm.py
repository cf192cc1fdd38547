"""The LSTM language model: same interface as UTLanguageModel, incremental decoding, save/load."""

from __future__ import annotations

import pytest
import torch

from universal_transformer import LSTMConfig, LSTMLanguageModel, UTLanguageModel, from_pretrained, generate
from universal_transformer.objective import compute_loss

from ..conftest import small_config

CONFIG = LSTMConfig(vocab_size=13, d_model=16, num_layers=2, dropout=0.0)


def test_loss_is_the_objective_and_padding_is_ignored():
    model = LSTMLanguageModel(CONFIG).eval()
    tokens = torch.randint(3, 13, (2, 7))
    labels = tokens.roll(-1, 1)
    labels[1, 4:] = CONFIG.pad_id
    out = model(tokens, labels)
    expected = compute_loss(out.logits, labels, {}, ignore_index=CONFIG.pad_id)
    torch.testing.assert_close(out.loss, expected.loss)
    assert out.halting == {} and float(out.ponder_cost) == 0.0
    # right padding changes nothing before it: the output at a position depends on the past only
    padded = torch.cat((tokens, torch.zeros(2, 3, dtype=torch.long)), dim=1)
    torch.testing.assert_close(model(padded).logits[:, :7], out.logits)
    # the trainer may pass random position offsets; an LSTM has no positions to shift
    torch.testing.assert_close(model(tokens, position_offset=torch.tensor([5, 9])).logits, out.logits)


def test_incremental_decoding_equals_the_full_pass():
    model = LSTMLanguageModel(CONFIG).eval()
    tokens = torch.randint(3, 13, (3, 9))
    with torch.no_grad():
        full = model(tokens).logits
        state, last = model.prefill(tokens[:, :4])
        torch.testing.assert_close(last, full[:, 3])
        steps = [model.decode_step(tokens[:, i : i + 1], state)[:, -1] for i in range(4, 9)]
    torch.testing.assert_close(torch.stack(steps, 1), full[:, 4:])


def test_generate_is_the_same_for_the_lstm_and_the_ut_interface():
    for model in (LSTMLanguageModel(CONFIG), UTLanguageModel(small_config())):
        prompt = torch.randint(3, 13, (2, 3))
        out = generate(model, prompt, max_new_tokens=5, stop_at_eos=False)
        assert out.shape == (2, 5) and not (out == 0).any()


@pytest.mark.parametrize("tied", [True, False])
def test_save_and_load(tmp_path, tied):
    model = LSTMLanguageModel(CONFIG.replace(tie_embeddings=tied)).eval()
    model.save_pretrained(tmp_path / "m")
    loaded = from_pretrained(tmp_path / "m").eval()
    assert type(loaded) is LSTMLanguageModel and loaded.config == model.config
    tokens = torch.randint(3, 13, (2, 6))
    torch.testing.assert_close(loaded(tokens).logits, model(tokens).logits, rtol=0, atol=0)
    assert (model.output is None) == tied
