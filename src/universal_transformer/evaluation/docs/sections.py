"""The generated sections of a markdown file: markers, the table and figure registries, and
the rendering that ``ut report`` runs (see the package's docstring)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from ..records import RunRecord


Builder = Callable[[list[RunRecord]], str]
TABLES: dict[str, Builder] = {}
"""Table builders by section name; fill it with :func:`register_table`."""
FigureBuilder = Callable[[list[RunRecord], Path], bool]
FIGURES: dict[str, FigureBuilder] = {}
"""Figure builders by name: ``builder(records, path)`` draws ``path`` (a PNG) and returns
True, or returns False when the records hold nothing to draw; :func:`update_figures`."""


_START = re.compile(r"\s*<!--\s*generated:\s*(\S+)\s*-->\s*")
_END = re.compile(r"\s*<!--\s*end generated:\s*(\S+)\s*-->\s*")
_MARKER_LIKE = re.compile(r"\s*<!--\s*(end\s+)?generated\b")
_FENCE = re.compile(r"\s*(```|~~~)")


class DocsError(ValueError):
    """A markdown file's generated sections are malformed; the message names the line."""


def register_table(name: str) -> Callable[[Builder], Builder]:
    """Decorator: register ``builder(records) -> markdown`` as the section ``name``."""
    if not re.fullmatch(r"\S+", name):
        raise ValueError(f"table name {name!r} must be one word (no spaces)")

    def decorator(builder: Builder) -> Builder:
        if name in TABLES:
            raise ValueError(f"table {name!r} is registered twice")
        TABLES[name] = builder
        return builder

    return decorator


@dataclass(frozen=True)
class Section:
    """A generated section: its table name and the 1-based lines of its two markers."""

    name: str
    start: int
    end: int


def find_sections(text: str, *, source: str = "<text>") -> list[Section]:
    """The generated sections of ``text``; malformed, unbalanced or nested markers and unknown
    table names raise :class:`DocsError` naming ``source`` and the line."""
    sections: list[Section] = []
    open_name, open_line, fence = None, 0, None
    for number, line in enumerate(text.split("\n"), start=1):
        where = f"{source}, line {number}"
        if open_name is None:
            fence_match = _FENCE.match(line)
            if fence_match:
                fence = None if fence == fence_match.group(1) else fence or fence_match.group(1)
                continue
            if fence is not None:
                continue
        start, end = _START.fullmatch(line), _END.fullmatch(line)
        if start:
            if open_name is not None:
                raise DocsError(f"{where}: section {start.group(1)!r} starts inside section {open_name!r} "
                                f"(opened on line {open_line}); sections cannot nest")
            if start.group(1) not in TABLES:
                raise DocsError(f"{where}: unknown table {start.group(1)!r}; known: {', '.join(sorted(TABLES))}")
            open_name, open_line = start.group(1), number
        elif end:
            if open_name is None:
                raise DocsError(f"{where}: end marker of {end.group(1)!r} without its start marker")
            if end.group(1) != open_name:
                raise DocsError(f"{where}: end marker of {end.group(1)!r}, but section {open_name!r} "
                                f"(line {open_line}) is open")
            sections.append(Section(open_name, open_line, number))
            open_name = None
        elif _MARKER_LIKE.match(line):
            raise DocsError(f"{where}: malformed marker {line.strip()!r}; expected "
                            "'<!-- generated: NAME -->' or '<!-- end generated: NAME -->' alone on the line")
    if open_name is not None:
        raise DocsError(f"{source}, line {open_line}: section {open_name!r} is never closed "
                        f"(no '<!-- end generated: {open_name} -->')")
    return sections


def _body(name: str, records: list[RunRecord]) -> list[str]:
    """The lines between a section's markers: the table, one blank line each side."""
    return ["", *TABLES[name](records).strip("\n").split("\n"), ""]


def render(text: str, records: list[RunRecord], *, source: str = "<text>") -> str:
    """``text`` with the body of every generated section replaced by its table."""
    lines = text.split("\n")
    out: list[str] = []
    done = 0  # lines before this index are copied or replaced
    for section in find_sections(text, source=source):
        out += lines[done:section.start] + _body(section.name, records)
        done = section.end - 1  # the end marker and what follows
    return "\n".join(out + lines[done:])


def stale_sections(text: str, records: list[RunRecord], *, source: str = "<text>") -> list[str]:
    """Names of the sections whose body differs from what ``records`` generate."""
    lines = text.split("\n")
    return [s.name for s in find_sections(text, source=source) if lines[s.start:s.end - 1] != _body(s.name, records)]


def update_file(path: str | Path, records: list[RunRecord], check: bool = False) -> bool:
    """Regenerate the sections of the markdown file ``path``. Returns True when the file was
    already up to date. With ``check`` nothing is written; otherwise the file is written
    only if something changed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise DocsError(f"{path}: cannot read: {err.strerror or err}") from None
    new = render(text, records, source=str(path))
    if new == text:
        return True
    if not check:
        path.write_text(new, encoding="utf-8")
    return False


def update_figures(folder: str | Path, records: list[RunRecord]) -> dict[str, Path | None]:
    """Draw every figure of :data:`FIGURES` that the records hold data for as
    ``folder/NAME.png`` (removing one they no longer hold data for); returns name -> the
    path written, or None (nothing to draw)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    drawn: dict[str, Path | None] = {}
    for name, build in FIGURES.items():
        path = folder / f"{name}.png"
        drawn[name] = path if build(records, path) else None
        if drawn[name] is None:
            path.unlink(missing_ok=True)  # its records are gone: so is the figure
    return drawn
