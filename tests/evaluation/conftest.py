"""Hand-made run records for the records, tables and ``ut report`` tests."""

from __future__ import annotations

from typing import Any

from universal_transformer.evaluation.records import RunRecord

MACHINE = {"cpu": "Test CPU", "logical_cores": 2, "gpus": [], "cuda": None}


def make_record(
    experiment: str = "algorithmic/copy-ut",
    *,
    model_class: str = "UniversalTransformer",
    model: dict[str, Any] | None = None,
    task: dict[str, Any] | None = None,
    validation: dict[str, Any] | None = None,
    test: dict[str, Any] | None = None,
    **fields: Any,
) -> RunRecord:
    """A valid record; keyword arguments replace any field."""
    task = task or {"name": "algorithmic", "task": "copy"}
    values: dict[str, Any] = dict(
        experiment=experiment,
        task=task["name"],
        config={"model_class": model_class, "model": model or {}, "task": task, "train": {"seed": 0}},
        command=f"ut train configs/{experiment}.yaml",
        seeds=[0],
        commit="0123456789abcdef0123456789abcdef01234567",
        machine=dict(MACHINE),
        wall_time_seconds=100.0,
        steps=1000,
        best_step=800,
        metrics={"validation": validation or {"score": 0.5}, "test": test or {}},
        status="done",
        created="2026-11-22T08:47:00+00:00",
    )
    values.update(fields)
    return RunRecord(**values)
