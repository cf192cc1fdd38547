"""A tiny experiment config and a helper to run ``ut`` in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TINY = {
    "model_class": "UniversalTransformer",
    "model": {
        "d_model": 16, "num_heads": 2, "d_ff": 32, "num_steps": 2, "act": True, "act_bias_init": 0.0,
        "dropout": 0.1, "embedding_dropout": 0.1,
    },
    "task": {
        "name": "algorithmic", "task": "reverse", "train_max_length": 6, "validation_lengths": [6],
        "test_lengths": [6, 12], "eval_examples": 10, "eval_batch_size": 10,
    },
    "train": {"steps": 24, "lr": 0.003, "warmup_steps": 5, "batch_tokens": 256, "eval_every": 4, "threads": 1, "keep_last": 50,
              "max_position_offset": 8},
}


@pytest.fixture
def tiny_config(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return path


def ut_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "universal_transformer", *args]


def run_ut(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(ut_command(*args), capture_output=True, text=True, timeout=timeout, env=env)
