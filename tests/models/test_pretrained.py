"""save_pretrained / from_pretrained round trips and clear errors."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from universal_transformer import (
    ConfigError, LoadError, LSTMConfig, LSTMLanguageModel, LSTMSeq2Seq, UniversalTransformer, UTClassifierConfig,
    UTEncoderClassifier, UTLanguageModel, from_pretrained,
)

from ..conftest import small_config

MODELS = [
    lambda: UniversalTransformer(small_config(act=True, target_vocab_size=17)),
    lambda: UniversalTransformer(small_config(tie_embeddings=False)),
    lambda: UTLanguageModel(small_config(transition="sepconv")),
    lambda: UTEncoderClassifier(small_config(UTClassifierConfig, num_classes=5)),
    lambda: LSTMSeq2Seq(LSTMConfig(vocab_size=13, d_model=16, num_layers=1)),
]


@pytest.mark.parametrize("make", MODELS)
def test_round_trip_gives_identical_outputs(tmp_path, make):
    model = make().eval()
    model.save_pretrained(tmp_path / "m")
    loaded = from_pretrained(tmp_path / "m").eval()
    assert type(loaded) is type(model) and loaded.config == model.config
    tokens = torch.randint(3, 13, (2, 6))
    with torch.no_grad():
        if isinstance(model, (UTLanguageModel, UTEncoderClassifier)):
            a, b = model(tokens).logits, loaded(tokens).logits
        else:
            a, b = model(tokens, tokens).logits, loaded(tokens, tokens).logits
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert not list((tmp_path / "m").glob("*.tmp"))  # atomic writes leave no temporaries


def test_a_loaded_model_is_in_eval_mode_on_its_device_in_its_dtype(tmp_path):
    model = UTLanguageModel(small_config(dropout=0.3)).double()
    model.save_pretrained(tmp_path / "m")
    loaded = from_pretrained(tmp_path / "m", map_location="cpu")
    assert not loaded.training  # dropout off: a forward pass is the model's function
    assert {t.dtype for t in [*loaded.parameters(), *loaded.buffers()] if t.is_floating_point()} == {torch.float64}
    tokens = torch.randint(3, 13, (2, 6))
    with torch.no_grad():
        torch.testing.assert_close(loaded(tokens).logits, model.eval()(tokens).logits, rtol=0, atol=0)
    assert loaded(tokens).logits.dtype == torch.float64


def test_a_run_folder_is_pointed_to_its_best_model(tmp_path):
    UTLanguageModel(small_config()).save_pretrained(tmp_path / "run" / "best")
    with pytest.raises(LoadError, match=r"is a run folder: its model is in .*run/best"):
        from_pretrained(tmp_path / "run")


@pytest.mark.parametrize("make, config", [
    (UniversalTransformer, lambda: LSTMConfig()), (LSTMSeq2Seq, small_config), (LSTMLanguageModel, small_config),
    (UTEncoderClassifier, small_config),
])
def test_a_config_of_another_model_family_is_refused_by_name(make, config):
    given = config()
    with pytest.raises(ConfigError, match=f"{make.__name__} takes a {make.config_class.__name__}, not a {type(given).__name__}"):
        make(given)


def test_missing_config(tmp_path):
    UTLanguageModel(small_config()).save_pretrained(tmp_path)
    (tmp_path / "config.json").unlink()
    with pytest.raises(LoadError, match=r"config.json: missing config file"):
        from_pretrained(tmp_path)


def test_missing_directory_and_weights(tmp_path):
    with pytest.raises(LoadError, match="no such directory"):
        from_pretrained(tmp_path / "nothing")
    UTLanguageModel(small_config()).save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(LoadError, match=r"model.safetensors: missing weights file"):
        from_pretrained(tmp_path)


def test_mismatched_shapes_are_named(tmp_path):
    UTLanguageModel(small_config()).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["d_ff"] = 48  # the weights were saved with d_ff=32
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(LoadError, match=r"decoder.blocks.0.transition.linear1.weight: shape \(32, 16\) in the file, \(48, 16\) in the model"):
        from_pretrained(tmp_path)


def test_missing_tensor_is_named(tmp_path):
    UTLanguageModel(small_config()).save_pretrained(tmp_path)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    del tensors["embed.weight"]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(LoadError, match="missing tensors: embed.weight"):
        from_pretrained(tmp_path)


def test_wrong_class_and_corrupt_files(tmp_path):
    UTLanguageModel(small_config()).save_pretrained(tmp_path)
    with pytest.raises(LoadError, match="holds a UTLanguageModel, not a UniversalTransformer"):
        UniversalTransformer.from_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(LoadError, match="cannot read safetensors file"):
        from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text("{oops")
    with pytest.raises(LoadError, match="config.json: not valid JSON"):
        from_pretrained(tmp_path)
