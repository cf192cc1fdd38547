"""configs/mt: the UT and the Transformer have the same number of parameters (the paper's Table 7
compares models of equal size), on the CPU sizes of the files and the GPU sizes their comments give."""

from __future__ import annotations

from pathlib import Path

import pytest

from universal_transformer.models.transformer import UniversalTransformer
from universal_transformer.training.config import load_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "mt"
VOCAB = 8000  # the tokenizer the configs name: ut tokenizer train ... --vocab-size 8000


def parameters(name: str, overrides: list[str] = ()) -> int:
    experiment = load_experiment(CONFIGS / f"{name}.yaml", list(overrides))
    return UniversalTransformer(experiment.model.replace(vocab_size=VOCAB)).num_parameters()


@pytest.mark.parametrize(
    "sizes, transformer_count, ut_count",
    [
        ({}, 3_801_088, 3_825_536),  # the files: CPU sizes
        ({"transformer": ["model.d_model=256", "model.d_ff=1024"],
          "ut": ["model.d_model=512", "model.d_ff=2816"]}, 13_107_200, 13_026_816),  # GPU sizes of the comments
    ],
)
def test_ut_and_transformer_have_the_same_parameter_count(sizes, transformer_count, ut_count):
    transformer = parameters("transformer", sizes.get("transformer", []))
    ut = parameters("ut", sizes.get("ut", []))
    assert (transformer, ut) == (transformer_count, ut_count)  # the numbers the configs and docs state
    assert abs(ut - transformer) / transformer < 0.02
    d_model = load_experiment(CONFIGS / "ut.yaml", sizes.get("ut", [])).model.d_model
    assert parameters("ut-act", sizes.get("ut", [])) - ut == 2 * (d_model + 1)  # + a halting unit per stack


def test_the_configs_are_the_papers_models():
    transformer, ut, act = (load_experiment(CONFIGS / f"{n}.yaml") for n in ("transformer", "ut", "ut-act"))
    assert not transformer.model.share_weights and transformer.model.num_steps == 6
    assert ut.model.share_weights and ut.model.transition == "fc" and not ut.model.act
    assert act.model.act and act.model.transition == "fc"
    for experiment in (transformer, ut, act):
        train, task = experiment.train, experiment.task
        assert (train.optimizer, train.betas, train.schedule, train.label_smoothing) == ("adam", (0.9, 0.98), "inverse_sqrt", 0.1)
        assert (task.beam_size, task.length_penalty, task.max_length_a, task.max_length_b) == (4, 0.6, 1.0, 50)
    assert transformer.train == ut.train == act.train and transformer.task == ut.task == act.task  # trained alike
