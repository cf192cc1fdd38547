"""``ut generate``: the layout of its output."""

from __future__ import annotations

from ..training.conftest import run_ut, tiny_config  # noqa: F401 (a fixture)


def test_nbest_gives_every_input_n_lines_even_when_fewer_outputs_exist(tmp_path, tiny_config):  # noqa: F811
    """With --max-new-tokens 1 the algorithmic vocabulary has 13 outputs (empty, or one token), fewer
    than --nbest 16: the rest are blank lines, so that input i's lines are still lines 16i..16i+15."""
    run = tmp_path / "run"
    trained = run_ut("train", str(tiny_config), "--out", str(run), "--no-progress", "--set", "train.steps=2",
                     "--set", "train.eval_every=2")
    assert trained.returncode == 0, trained.stderr
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("12\n34\n")
    both = run_ut("generate", str(run), "--input-file", str(inputs), "--beam", "16", "--nbest", "16", "--max-new-tokens", "1")
    assert both.returncode == 0, both.stderr
    lines = both.stdout.split("\n")[:-1]
    assert len(lines) == 32
    for i, text in enumerate(("12", "34")):
        alone = run_ut("generate", str(run), "--input", text, "--beam", "16", "--nbest", "16", "--max-new-tokens", "1")
        assert lines[16 * i : 16 * i + 16] == alone.stdout.split("\n")[:-1]
        assert lines[16 * i + 12] != "" and lines[16 * i + 13 : 16 * i + 16] == ["", "", ""]
