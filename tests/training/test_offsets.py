"""Position offsets drawn at evaluation (``train.eval_position_offsets``; training/offsets.py)."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

from universal_transformer.config import ConfigError
from universal_transformer.models import UTLanguageModel
from universal_transformer.training.config import ExperimentConfig
from universal_transformer.training.offsets import DrawnPositionOffsets, position_offsets
from universal_transformer.training.trainer import Trainer

from .conftest import TINY, run_ut


def _experiment(**train):
    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["train"].update(steps=6, eval_every=3, position_offset_per="step", **train)
    return ExperimentConfig.from_dict(data, source="offsets.yaml")


def test_offsets_at_evaluation_need_offsets_in_training():
    with pytest.raises(ConfigError, match="eval_position_offsets.*max_position_offset >= 1"):
        _experiment(max_position_offset=0, eval_position_offsets=True)


@pytest.mark.parametrize("per", ["batch", "stack", "step"])
def test_a_way_to_draw_offsets_needs_offsets_to_draw(per):
    """Without max_position_offset no offsets are drawn: position_offset_per would be ignored."""
    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["train"].update(max_position_offset=0, position_offset_per=per)
    with pytest.raises(ConfigError, match=f"position_offset_per={per} says how.*max_position_offset >= 1"):
        ExperimentConfig.from_dict(data, source="offsets.yaml")
    data["train"].update(position_offset_per="example")  # the default: nothing asked
    assert ExperimentConfig.from_dict(data, source="offsets.yaml").train.max_position_offset == 0


def test_drawn_offsets_change_the_evaluation_and_repeat_it(tmp_path):
    """The same model scored with offsets drawn as in training: other numbers than with positions
    0..L-1, the same numbers at every evaluation."""
    trainer = Trainer(_experiment(eval_position_offsets=True), tmp_path / "run", progress=False)
    for _ in range(6):
        trainer.train_step()
    drawn = trainer.evaluate("test")
    assert trainer.evaluate("test") == drawn
    trainer.cfg.eval_position_offsets = False
    aligned = trainer.evaluate("test")
    assert drawn["teacher_forced/len12/loss"] != aligned["teacher_forced/len12/loss"]
    assert drawn.keys() == aligned.keys()
    model = trainer.model.eval()
    wrapped = DrawnPositionOffsets(model, maximum=8, per="step", seed=0)
    src = torch.randint(3, 13, (4, 5))
    with torch.no_grad():
        _, logits = wrapped.prefill(src)  # the first call's draw; the decoder keeps its part
        expected = position_offsets(0, wrapped.FIRST_DRAW + 1, 4, maximum=8, per="step", steps=model.recurrent_steps)
        torch.testing.assert_close(logits, model.prefill(src, position_offset=expected)[1])
        assert not torch.equal(expected, position_offsets(0, 1, 4, maximum=8, per="step", steps=model.recurrent_steps))
        assert not torch.allclose(logits, model.prefill(src)[1])
    with pytest.raises(ConfigError, match="need an encoder-decoder; UTLanguageModel"):
        DrawnPositionOffsets(UTLanguageModel(trainer.model.config), maximum=8, per="step", seed=0)


def test_ut_eval_and_generate_follow_the_run_and_eval_can_override_it(tmp_path):
    run = tmp_path / "run"
    Trainer(_experiment(eval_position_offsets=True), run, progress=False).fit()
    drawn = run_ut("eval", str(run), "--split", "test", "--threads", "1")
    assert drawn.returncode == 0, drawn.stderr
    drawn_metrics = json.loads((run / "eval-test.json").read_text())
    aligned = run_ut("eval", str(run), "--split", "test", "--threads", "1", "--set", "train.eval_position_offsets=false")
    assert aligned.returncode == 0, aligned.stderr
    aligned_metrics = json.loads((run / "eval-test-eval_position_offsets=false.json").read_text())
    assert drawn_metrics["teacher_forced/len12/loss"] != aligned_metrics["teacher_forced/len12/loss"]
    assert json.loads((run / "eval-test.json").read_text()) == drawn_metrics  # the run's own score stays
    for beam in ([], ["--beam", "2"]):
        generated = run_ut("generate", str(run), "--input", "1234", *beam)
        assert generated.returncode == 0, generated.stderr
        assert set(generated.stdout.strip()) <= set("0123456789")
    refused = run_ut("eval", str(run), "--split", "test", "--set", "train.lr=0.1")
    assert refused.returncode == 2
    assert "only task options and train.eval_position_offsets can change at evaluation time" in refused.stderr


def test_the_wrapper_is_the_model_for_everything_but_the_draws():
    """Attributes evaluation reads (the encoder's steps, the protocol flags) are the model's;
    offsets a caller passes (a bAbI batch's own shift) get the draw added, as in training."""
    from universal_transformer import UniversalTransformer
    from universal_transformer.data.batch import Seq2SeqBatch
    from universal_transformer.evaluation.metrics import encoder_ponder_time

    from ..conftest import small_config

    model = UniversalTransformer(small_config(num_steps=3)).eval()
    wrapped = DrawnPositionOffsets(model, maximum=50, per="step", seed=3)
    batch = Seq2SeqBatch.from_pairs([([3, 4, 5], [6, 7]), ([8, 9, 10, 11], [12])], pad_id=0, bos_id=1, eos_id=2)
    assert encoder_ponder_time(wrapped, batch) == 3.0 and wrapped.is_encoder_decoder and wrapped.config is model.config
    given = torch.tensor([7, 0])
    with torch.no_grad():
        out = wrapped(batch.src, batch.tgt_in, position_offset=given).logits
        draw = position_offsets(3, DrawnPositionOffsets.FIRST_DRAW + 1, 2, maximum=50, per="step", steps=3)
        torch.testing.assert_close(out, model(batch.src, batch.tgt_in, position_offset=given[:, None, None] + draw).logits)


def test_a_model_that_cannot_decode_with_offsets_is_refused_before_training(tmp_path):
    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["model_class"] = "LSTMSeq2Seq"
    data["model"] = {"d_model": 16, "num_layers": 1}
    data["train"].update(eval_position_offsets=True)
    with pytest.raises(ConfigError, match="LSTMSeq2Seq cannot decode with drawn position offsets"):
        Trainer(ExperimentConfig.from_dict(data, source="lstm.yaml"), tmp_path / "lstm", progress=False)
