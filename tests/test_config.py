"""Configs validate themselves and round-trip through YAML and JSON."""

from __future__ import annotations

import pytest

from universal_transformer import ConfigError, LSTMConfig, UTConfig, load_config, transformer_config
from universal_transformer.config import StoryQAConfig, UTClassifierConfig, config_from_dict


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
@pytest.mark.parametrize("config", [
    UTClassifierConfig(act=True, act_type="accumulated", num_classes=5), transformer_config(), LSTMConfig(num_layers=3),
    StoryQAConfig(num_classes=4, fact_words=6, pooling="mean", question_encoder="shared"), UTConfig(act=True),
])
def test_round_trip(tmp_path, suffix, config):
    path = tmp_path / f"model{suffix}"
    config.save(path)
    assert load_config(path) == config


def test_width_not_divisible_by_heads_names_both_numbers():
    with pytest.raises(ConfigError, match=r"d_model \(30\) must be divisible by num_heads \(4\)"):
        UTConfig(d_model=30, num_heads=4)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(norm="middle"), "norm must be one of 'post', 'pre'"),
        (dict(transition="conv"), "transition must be one of"),
        (dict(act_type="fancy"), "act_type must be one of"),
        (dict(dropout=1.5), r"dropout must be in \[0, 1\)"),
        (dict(num_steps=0), "num_steps must be a positive integer"),
        (dict(act_epsilon=0.0), r"act_epsilon must be in \(0, 1\)"),
        (dict(act=True, share_weights=False), "act=True needs share_weights=True"),
        (dict(vocab_size=2), r"bos_id \(1\)|eos_id \(2\)"),
        (dict(d_model=15, num_heads=3), r"d_model \(15\) must be even for sinusoidal"),
        (dict(act=True, decoder_num_steps=3), "decoder_num_steps sets a fixed decoder depth.*act_max_steps"),
        # Values of the wrong type, which would otherwise pass as truthy or fail far from their cause.
        (dict(act="maybe"), "act must be true or false, got 'maybe'"),
        (dict(share_weights="false"), "share_weights must be true or false, got 'false'"),
        (dict(pad_id=0.5), "pad_id must be an integer, got 0.5"),
        (dict(num_steps=True), "num_steps must be an integer, got True"),
        (dict(act_bias_init="x"), "act_bias_init must be a number, got 'x'"),
        (dict(dropout=None), "dropout must be a number, got None"),
        (dict(act_max_steps=2.5), "act_max_steps must be an integer or null, got 2.5"),
        (dict(pad_id=2), r"pad_id \(2\) must differ from bos_id \(1\) and eos_id \(2\)"),
    ],
)
def test_invalid_values_are_rejected_clearly(changes, message):
    with pytest.raises(ConfigError, match=message):
        UTConfig(**changes)


def test_numbers_of_either_kind_and_lists_for_tuples_are_accepted_nan_is_not():
    from universal_transformer.training.config import TrainConfig

    assert UTConfig(dropout=0, act_bias_init=1).dropout == 0  # an integer is a number
    assert TrainConfig(betas=[0.9, 0.99]).betas == (0.9, 0.99)  # YAML gives a list where the field is a tuple
    with pytest.raises(ConfigError, match="train.betas must be a list of 2 numbers, got"):
        TrainConfig(betas=[0.9])
    with pytest.raises(ConfigError, match="ponder_weight must be a number, got nan"):
        UTConfig(ponder_weight=float("nan"))


def test_the_config_json_of_a_saved_model_loads(tmp_path):
    from universal_transformer import UTLanguageModel

    config = UTConfig(vocab_size=12, d_model=16, num_heads=2, d_ff=32)
    UTLanguageModel(config).save_pretrained(tmp_path / "model")
    assert load_config(tmp_path / "model" / "config.json") == config  # its model_class key is the model's, not the config's


def test_unknown_key_in_file_names_file_and_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("d_model: 64\nnum_head: 4\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: unknown key\(s\) num_head"):
        load_config(path)


def test_invalid_value_in_file_names_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"d_model": 30, "num_heads": 4}')
    with pytest.raises(ConfigError, match=r"bad.json: d_model \(30\)"):
        load_config(path)


def test_missing_and_unparsable_files(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("d_model: [1, 2\n")
    with pytest.raises(ConfigError, match="broken.yaml: cannot parse"):
        load_config(broken)
    with pytest.raises(ConfigError, match="unknown model_type 'gru'"):
        config_from_dict({"model_type": "gru"})


def test_the_transformer_baseline_of_each_ut_model():
    assert transformer_config().share_weights is False and transformer_config().timestep_embedding == "none"
    classifier = transformer_config(UTClassifierConfig, num_classes=3, pooling="first")
    assert type(classifier) is UTClassifierConfig and classifier.share_weights is False and classifier.num_classes == 3
    with pytest.raises(ConfigError, match="transformer_config takes UTConfig or a subclass"):
        transformer_config(LSTMConfig)


def test_derived_values():
    cfg = UTConfig(num_steps=3, d_model=64, num_heads=8)
    assert cfg.max_steps == 6 and cfg.head_dim == 8  # default ACT limit: 2 x base steps
    assert UTConfig(act_max_steps=10).max_steps == 10


def test_model_specific_fields_live_in_their_model_configs():
    with pytest.raises(TypeError):
        UTConfig(num_classes=3)  # a classifier's field, not the UT's
    with pytest.raises(ConfigError, match="pooling must be one of"):
        UTClassifierConfig(num_classes=3, pooling="max")
    with pytest.raises(ConfigError, match="not 'first'"):
        StoryQAConfig(num_classes=3, fact_words=4, pooling="first")
    assert StoryQAConfig().pooling == "last" and UTClassifierConfig().pooling == "mean"


def test_old_configs_migrate_with_a_deprecation_message():
    """Configs written before the split (one UT config for every model) still load."""
    old = {
        "model_type": "universal_transformer", "d_model": 32, "num_heads": 4, "act_packed": False,
        "max_position_offset": 400, "num_classes": 7, "pooling": None, "fact_words": 5,
    }
    with pytest.warns(FutureWarning, match=r"act_packed.*max_position_offset"):
        story = StoryQAConfig.from_dict(old, source="old.json")
    assert (story.num_classes, story.fact_words, story.pooling, story.d_model) == (7, 5, "last", 32)
    with pytest.warns(FutureWarning, match="num_classes.*fact_words"):
        plain = UTConfig.from_dict(old, source="old.json")
    assert plain == UTConfig(d_model=32, num_heads=4)
    with pytest.raises(ConfigError, match="model_type is 'lstm'"):
        StoryQAConfig.from_dict({"model_type": "lstm"})
