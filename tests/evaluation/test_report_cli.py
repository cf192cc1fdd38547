"""``ut report``: writes the generated sections from results/, and --check fails on stale ones."""

from __future__ import annotations

import argparse

from universal_transformer.cli.report import add_report_parser

from .conftest import make_record

DOC = """# Results

Prose.

<!-- generated: runs -->
<!-- end generated: runs -->

<!-- generated: algorithmic-len400 -->
stale
<!-- end generated: algorithmic-len400 -->
"""


def _report(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="ut")
    add_report_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", *argv])
    return args.run(args)


def test_report_writes_then_check_passes_then_fails_on_new_record(tmp_path, capsys):
    results, doc = tmp_path / "results", tmp_path / "results.md"
    make_record("algorithmic/copy-ut", test={"len400/char_accuracy": 0.25, "len400/sequence_accuracy": 0.0,
                                             "len40/char_accuracy": 1.0, "len40/sequence_accuracy": 0.9}).save(
        results / "algorithmic" / "copy-ut.json")
    doc.write_text(DOC)
    args = ["--results", str(results), "--docs", str(doc)]

    assert _report(*args, "--check") == 1
    assert "stale section(s) runs, algorithmic-len400" in capsys.readouterr().err
    assert doc.read_text() == DOC

    assert _report(*args) == 0
    out = capsys.readouterr().out
    assert f"{doc}: runs: written" in out and f"{doc}: algorithmic-len400: written" in out
    text = doc.read_text()
    assert "| UT | 0.25 / 0.00 |" in text and "| algorithmic/copy-ut | - | 0 | done |" in text
    assert text.startswith("# Results\n\nProse.\n\n<!-- generated: runs -->\n\n| experiment |")
    figure = tmp_path / "figures" / "algorithmic-length.png"  # next to the docs file
    assert f"{figure}: drawn" in out and figure.read_bytes().startswith(b"\x89PNG")
    assert f"{tmp_path / 'figures' / 'demo-length'}.png: nothing to draw yet" in out

    assert _report(*args, "--check") == 0
    assert _report(*args) == 0
    assert f"{doc}: runs: unchanged" in capsys.readouterr().out

    make_record("algorithmic/reverse-ut", task={"name": "algorithmic", "task": "reverse"}).save(results / "r.json")
    assert _report(*args, "--check") == 1
    assert "stale section(s) runs, algorithmic-len400" in capsys.readouterr().err


def test_report_bad_input_is_a_clear_error(tmp_path, capsys):
    results, doc = tmp_path / "results", tmp_path / "results.md"
    results.mkdir()
    (results / "bad.json").write_text("{}")
    doc.write_text(DOC)
    assert _report("--results", str(results), "--docs", str(doc)) == 2
    assert f"{results / 'bad.json'}: missing key(s)" in capsys.readouterr().err
    (results / "bad.json").unlink()
    assert _report("--results", str(results), "--docs", str(tmp_path / "none.md")) == 2
    assert "none.md: docs file not found" in capsys.readouterr().err
    doc.write_text("<!-- generated: runs -->\n")
    assert _report("--results", str(results), "--docs", str(doc)) == 2
    assert "line 1: section 'runs' is never closed" in capsys.readouterr().err


def test_report_defaults():
    parser = argparse.ArgumentParser(prog="ut")
    add_report_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report"])
    assert (str(args.results), str(args.docs), args.check, args.figures) == ("results", "docs/results.md", False, None)
