"""The committed tables of docs/results.md are the ones the committed records in results/ generate."""

from __future__ import annotations

from pathlib import Path

import pytest

from universal_transformer.evaluation.docs import find_sections, stale_sections
from universal_transformer.evaluation.records import load_records

ROOT = Path(__file__).resolve().parents[2]
RESULTS, DOCS = ROOT / "results", ROOT / "docs" / "results.md"


@pytest.mark.skipif(not RESULTS.is_dir(), reason="no results/ records committed yet")
def test_results_md_tables_match_the_records():
    text = DOCS.read_text(encoding="utf-8")
    assert find_sections(text, source=str(DOCS)), f"{DOCS} has no generated sections, but {RESULTS} has records"
    stale = stale_sections(text, load_records(RESULTS), source=str(DOCS))
    assert not stale, f"{DOCS}: section(s) {', '.join(stale)} differ from {RESULTS}; run 'ut report'"
