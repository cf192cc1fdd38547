"""The coordinate embedding is exact in the model's dtype: float64 models get float64 sinusoids."""

from __future__ import annotations

import math

import pytest
import torch

from universal_transformer.models import UniversalTransformer
from universal_transformer.modules.embedding import CoordinateEmbedding

from ..conftest import small_config

D = 16
EXACT = 1e-12  # float64 rounding of angles up to a few thousand; float32 tables are off by > 1e-8


def _reference(index: list[int], d: int) -> torch.Tensor:
    """Eq. 6-7 for one signal, in Python floats (float64): sin at 2j, cos at 2j+1."""
    rows = []
    for i in index:
        row = []
        for j in range(d // 2):
            angle = i / 10000.0 ** (2 * j / d)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64)


POSITIONS = [0, 1, 2, 7, 63, 500, 1023]


def _check_exact(coordinates: CoordinateEmbedding, positions=POSITIONS, steps=(1, 2, 5, 8)) -> None:
    pos = coordinates.position(torch.tensor(positions))
    assert pos.dtype == torch.float64
    torch.testing.assert_close(pos, _reference(positions, D), atol=EXACT, rtol=0)
    for t in steps:
        torch.testing.assert_close(coordinates.timestep(t), _reference([t], D)[0], atol=EXACT, rtol=0)


def test_a_float32_table_is_not_exact_in_float64():
    """The check below can fail: float32 rounding shows at this tolerance."""
    table = CoordinateEmbedding(D).position(torch.tensor(POSITIONS)).double()
    assert (table - _reference(POSITIONS, D)).abs().max() > 100 * EXACT


@pytest.mark.parametrize(
    "to_double", [lambda m: m.double(), lambda m: m.to(torch.float64), lambda m: m.float().double()],
    ids=["double", "to", "float-double"],
)
def test_double_embedding_is_exact(to_double):
    _check_exact(to_double(CoordinateEmbedding(D, max_position=1024, max_steps=8)))


def test_tables_grown_on_demand_stay_exact():
    coordinates = CoordinateEmbedding(D, max_position=4, max_steps=2).double()
    _check_exact(coordinates, positions=[0, 3, 4, 9, 2047], steps=(1, 3, 17))
    assert coordinates._sin_positions.dtype == torch.float64


def test_back_to_float32_rounds_once_from_float64():
    coordinates = CoordinateEmbedding(D).double().float()
    pos = coordinates.position(torch.tensor(POSITIONS))
    assert pos.dtype == torch.float32
    assert torch.equal(pos, _reference(POSITIONS, D).float())


def test_double_model_signal_is_exact():
    """Through a whole model: the encoder's P^t for positions 0..L-1 at step t."""
    model = UniversalTransformer(small_config(d_model=D)).double()
    stack = model.encoder
    positions = torch.arange(12).expand(2, 12)
    for step in (1, 2):
        signal = stack.signal(positions, step)
        expected = _reference(list(range(12)), D) + _reference([step], D)
        torch.testing.assert_close(signal, expected.expand(2, 12, D), atol=2 * EXACT, rtol=0)


@pytest.mark.parametrize("kind", ["sinusoid", "learned"])
def test_a_negative_position_is_refused_by_name(kind):
    # The sinusoid table had read position -3 as its row 1021 (max_position 1024), silently.
    coordinates = CoordinateEmbedding(D, position=kind)
    with pytest.raises(ValueError, match="position -3 is negative"):
        coordinates.position(torch.tensor([[-3, -2, 0]]))
    model = UniversalTransformer(small_config(position_embedding=kind))
    tokens = torch.randint(3, 13, (1, 4))
    with pytest.raises(ValueError, match="position -2 is negative"):
        model(tokens, tokens, position_offset=torch.tensor([-2]))
