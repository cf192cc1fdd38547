"""The algorithmic table: a cell per task and model from a folder of runs, '-' where none."""

from __future__ import annotations

import json

from universal_transformer.evaluation.algorithmic_report import algorithmic_table, read_cell


def _accuracies(length: int, char: float, seq: float, ponder: float | None = None) -> dict[str, float]:
    out = {f"len{length}/char_accuracy": char, f"len{length}/sequence_accuracy": seq}
    if ponder is not None:
        out[f"len{length}/encoder_ponder_time"] = ponder
    return out


def _run(root, name, *, test=None, eval_test=None, log=()):
    folder = root / name
    folder.mkdir()
    if test is not None:
        (folder / "metrics.json").write_text(json.dumps({"status": "done", "test": test}))
    if eval_test is not None:
        (folder / "eval-test.json").write_text(json.dumps(eval_test))
    if log:
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    return folder


def _rows(table: str) -> dict[str, list[str]]:
    """First cell -> the other cells, for every table row."""
    rows = {}
    for line in table.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def test_table_cells_details_and_missing_runs(tmp_path):
    log = [{"step": 100, "score": 0.2, "elapsed": 10.0}, {"step": 200, "score": 0.9, "elapsed": 20.0},
           {"step": 300, "score": 0.5, "elapsed": 30.5}]
    _run(tmp_path, "copy-ut", test={**_accuracies(40, 1.0, 1.0), **_accuracies(400, 0.912, 0.354)}, log=log)
    # re-scored with `ut eval`: eval-test.json wins over metrics.json
    _run(tmp_path, "reverse-ut-act", test=_accuracies(400, 0.1, 0.0),
         eval_test={**_accuracies(40, 0.99, 0.9), **_accuracies(400, 0.957, 0.46, ponder=3.25)})
    _run(tmp_path, "addition-lstm", test=_accuracies(40, 0.5, 0.1))  # no length-400 result
    _run(tmp_path, "copy-transformer", log=log[:1])  # still training: no test metrics yet
    rows = _rows(algorithmic_table(tmp_path))

    assert rows["model"] == ["Copy (len 400)", "Reverse (len 400)", "Addition (len 400)"]
    assert rows["UT"] == ["0.91 / 0.35", "-", "-"]
    assert rows["UT+ACT"] == ["-", "0.96 / 0.46", "-"]
    assert rows["LSTM"] == ["-", "-", "-"] and rows["Transformer"] == ["-", "-", "-"]
    assert rows["copy-ut"] == ["300", "200", "30.5", "len40 1.00/1.00", ""]  # last step, best step, time
    assert rows["reverse-ut-act"] == ["-", "-", "-", "len40 0.99/0.90", "3.25"]  # no log; ponder: UT+ACT only
    assert "addition-lstm" not in rows and "copy-transformer" not in rows


def test_other_length_and_cell_reading(tmp_path):
    folder = _run(tmp_path, "copy-ut", test={**_accuracies(40, 1.0, 1.0), **_accuracies(100, 0.5, 0.25)})
    assert _rows(algorithmic_table(tmp_path, length=100))["UT"][0] == "0.50 / 0.25"
    assert read_cell(folder) == {"test": {**_accuracies(40, 1.0, 1.0), **_accuracies(100, 0.5, 0.25)},
                                 "steps": None, "seconds": None, "best_step": None}
    assert read_cell(_run(tmp_path, "empty")) is None


def test_best_step_among_equal_scores_is_the_trainers_pick_by_tie_break(tmp_path):
    """Validation saturates (score 1.0 from step 200 on); the trainer then keeps the model with
    the highest tie_break (step 300), and the table's best step says so, not the first 1.0."""
    log = [{"step": 100, "score": 0.5, "tie_break": -0.9}, {"step": 200, "score": 1.0, "tie_break": -0.3},
           {"step": 300, "score": 1.0, "tie_break": -0.1}, {"step": 400, "score": 1.0, "tie_break": -0.2}]
    folder = _run(tmp_path, "copy-ut", test=_accuracies(400, 1.0, 1.0), log=log)
    assert read_cell(folder)["best_step"] == 300
    assert _rows(algorithmic_table(tmp_path))["copy-ut"][:2] == ["400", "300"]


def test_empty_folder_gives_an_all_dash_table(tmp_path):
    rows = _rows(algorithmic_table(tmp_path))
    assert [rows[m] for m in ("LSTM", "Transformer", "UT", "UT+ACT")] == [["-", "-", "-"]] * 4
