"""``ut demo``: a very short run prints the three-model table, the same on every run."""

from __future__ import annotations

import pytest
import torch

from universal_transformer.cli.main import main

MODELS = ("UT (T=4)", "UT+ACT", "Transformer (4 layers)")


def _table(output: str) -> list[str]:
    """The markdown table at the end of the demo's output (no wall times in it)."""
    return [line for line in output.splitlines() if line.startswith("|")]


def _demo(tmp_path, capsys, *extra: str) -> tuple[int, str, str]:
    args = ["demo", "--steps", "3", "--train-length", "3", "--test-lengths", "3", "5", "--threads", "1",
            "--out", str(tmp_path), *extra]
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_short_demo_prints_the_three_models_and_is_reproducible(tmp_path, capsys):
    threads = torch.get_num_threads()
    code, out, _ = _demo(tmp_path, capsys)
    assert code == 0
    table = _table(out)
    assert table[0] == "| model | steps | len 3 char / seq | len 5 char / seq | ponder time |"
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in table[2:]}
    assert list(rows) == list(MODELS)
    for cells in rows.values():
        assert cells[0] == "3"  # bounded by steps (3 steps never reach perfect validation)
        for cell in cells[1:3]:
            char, seq = (float(x) for x in cell.split(" / "))
            assert 0.0 <= seq <= char <= 1.0
    assert rows["UT (T=4)"][3] == "4.00" and rows["Transformer (4 layers)"][3] == "4.00"  # fixed depth
    assert 1.0 <= float(rows["UT+ACT"][3]) <= 8.0
    for name in ("ut", "ut-act", "transformer"):  # the runs are kept where --out says
        assert (tmp_path / name / "copy" / "metrics.json").is_file()
    assert torch.get_num_threads() == threads  # the demo gives the caller its thread count back

    code, again, _ = _demo(tmp_path, capsys)  # runs again from scratch over the old ones
    assert code == 0 and _table(again) == table


@pytest.mark.parametrize("option, value", [("--steps", "0"), ("--threads", "-1"), ("--steps", "1e3")])
def test_bad_budget_or_threads_is_a_clear_error(tmp_path, capsys, option, value):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", option, value, "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert f"argument {option}: must be a positive whole number, got '{value}'" in capsys.readouterr().err
