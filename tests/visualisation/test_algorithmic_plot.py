"""``ut plot`` for the algorithmic tasks: the decoder's attention over the input per step."""

from __future__ import annotations

import pytest
import torch

from universal_transformer import LSTMConfig, LSTMSeq2Seq, UniversalTransformer
from universal_transformer.config import ConfigError
from universal_transformer.tasks.algorithmic import AlgorithmicTask

from ..conftest import small_config


def test_plot_writes_the_attention_of_the_longest_length(tmp_path):
    task = AlgorithmicTask({"task": "reverse", "test_lengths": [6, 12], "eval_examples": 4, "eval_batch_size": 2}, seed=0)
    model = UniversalTransformer(small_config(vocab_size=14, num_steps=3))
    [path] = task.plot(model, "test", 3, tmp_path / "p")
    assert path.name == "p-len12-attention.png" and path.stat().st_size > 5000
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    # the weights drawn are a distribution over the real input positions, per step
    batch = task.eval_batches("test", 12)[1].select(slice(1, 2))
    with torch.no_grad():
        steps = model(**batch.inputs(), need_weights=True).attentions["decoder"]
    assert len(steps) == 3
    torch.testing.assert_close(steps[0]["cross"].sum(-1), torch.ones_like(steps[0]["cross"].sum(-1)))
    with pytest.raises(ConfigError, match="has 4 examples"):
        task.plot(model, "test", 4, tmp_path / "q")
    lstm = LSTMSeq2Seq(LSTMConfig(vocab_size=14, d_model=16, num_layers=1))
    with pytest.raises(ConfigError, match="not of a LSTMSeq2Seq"):
        task.plot(lstm, "test", 0, tmp_path / "r")
