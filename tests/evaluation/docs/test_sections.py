"""Generated sections: only the marked bodies change; malformed markers are errors naming the line."""

from __future__ import annotations

import pytest

from universal_transformer.evaluation.docs import TABLES, DocsError, register_table, render, stale_sections, update_file

from ..conftest import make_record


PROSE = """# Results

Hand-written prose, kept as it is.
<!-- generated: echo -->
old table
<!-- end generated: echo -->
More prose.

```markdown
<!-- generated: not-a-table -->
```
<!-- generated: echo -->
<!-- end generated: echo -->
"""


@pytest.fixture
def echo(monkeypatch):
    """A table that lists the records' experiments."""
    monkeypatch.setitem(TABLES, "echo", lambda records: "| experiment |\n|---|\n" + "\n".join(
        f"| {r.experiment} |" for r in records))


def test_render_replaces_only_the_marked_bodies(echo):
    records = [make_record("algorithmic/a"), make_record("algorithmic/b")]
    out = render(PROSE, records)
    table = "<!-- generated: echo -->\n\n| experiment |\n|---|\n| algorithmic/a |\n| algorithmic/b |\n\n<!-- end generated: echo -->"
    assert out == f"""# Results

Hand-written prose, kept as it is.
{table}
More prose.

```markdown
<!-- generated: not-a-table -->
```
{table}
"""
    assert render(out, records) == out  # idempotent
    assert stale_sections(out, records) == [] and stale_sections(PROSE, records) == ["echo", "echo"]
    assert stale_sections(out, records[:1]) == ["echo", "echo"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\n<!-- generated: nope -->\n<!-- end generated: nope -->\n", "line 2: unknown table 'nope'; known: "),
        ("a\nb\n<!-- end generated: echo -->\n", "line 3: end marker of 'echo' without its start marker"),
        ("<!-- generated: echo -->\nx\n", "line 1: section 'echo' is never closed"),
        ("<!-- generated: echo -->\n<!-- generated: runs -->\n", "line 2: section 'runs' starts inside section 'echo' (opened on line 1)"),
        ("<!-- generated: echo -->\n<!-- end generated: runs -->\n", "line 2: end marker of 'runs', but section 'echo' (line 1) is open"),
        ("x\n<!-- generated: echo --> trailing\n", "line 2: malformed marker"),
        ("<!-- generated: echo -->\n<!--generated:-->\n<!-- end generated: echo -->", "line 2: malformed marker"),
    ],
)
def test_marker_errors_name_the_line(echo, text, message):
    with pytest.raises(DocsError) as err:
        render(text, [], source="docs/results.md")
    assert str(err.value).startswith("docs/results.md, line ") and message in str(err.value)


def test_register_table_refuses_duplicates_and_spaces():
    with pytest.raises(ValueError, match="registered twice"):
        register_table("runs")(lambda records: "")
    with pytest.raises(ValueError, match="one word"):
        register_table("two words")


def test_update_file_check_mode_writes_nothing(echo, tmp_path):
    path = tmp_path / "results.md"
    path.write_text(PROSE)
    records = [make_record()]
    assert update_file(path, records, check=True) is False
    assert path.read_text() == PROSE
    assert update_file(path, records) is False  # was stale: written
    assert path.read_text() == render(PROSE, records)
    assert update_file(path, records, check=True) is True
    assert update_file(path, records) is True
    with pytest.raises(DocsError, match="absent.md: cannot read"):
        update_file(tmp_path / "absent.md", records)
