"""A tiny experiment config and a helper to run ``ut`` as a subprocess sees it (in this process by default)."""

from __future__ import annotations

import contextlib
import faulthandler
import io
import os
import random
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
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


# A `ut` subprocess spends 2-4 s importing torch, and the suite runs about a hundred of them:
# run_ut calls the command's entry point in this process instead, as a subprocess would see it:
# one thread (as OMP_NUM_THREADS=1 gives it), sys.argv, the interpreter's warning filters with
# warnings printed in the captured standard error, the exit status (argparse's included; an
# uncaught exception is status 1 with its traceback), the random states left as they were, and
# the timeout (a hung call ends the test run with every thread's traceback). Ctrl-C, which the
# command turns into status 130, still stops the tests. UT_TESTS_SUBPROCESS=1 runs every call
# as a real `python -m universal_transformer`; test_the_installed_command_runs_as_a_subprocess
# keeps that path under test by default.
SUBPROCESS = os.environ.get("UT_TESTS_SUBPROCESS", "") not in ("", "0")
# What a plain `python` ignores (its default filters, but for DeprecationWarning in __main__).
HIDDEN_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def run_ut(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``ut ARGS``: its exit status, standard output and standard error."""
    if SUBPROCESS:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        return subprocess.run(ut_command(*args), capture_output=True, text=True, timeout=timeout, env=env)
    from universal_transformer.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    threads, argv, python_random, numpy_random = torch.get_num_threads(), sys.argv, random.getstate(), np.random.get_state()
    torch.set_num_threads(1)
    sys.argv = ["ut", *args]
    faulthandler.dump_traceback_later(timeout, exit=True)
    try:
        with (contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings(),
              torch.random.fork_rng(devices=[])):
            warnings.resetwarnings()
            warnings.simplefilter("default")
            for category in HIDDEN_WARNINGS:
                warnings.simplefilter("ignore", category)
            warnings.showwarning = _print_warning
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's usage errors (2) and --help (0)
                code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
            except Exception:  # noqa: BLE001 (what the interpreter does with it in a subprocess)
                traceback.print_exc()
                code = 1
    finally:
        faulthandler.cancel_dump_traceback_later()
        torch.set_num_threads(threads)
        sys.argv = argv
        random.setstate(python_random)
        np.random.set_state(numpy_random)
    if code == 130:  # the command caught Ctrl-C
        raise KeyboardInterrupt
    return subprocess.CompletedProcess(["ut", *args], code, out.getvalue(), err.getvalue())
