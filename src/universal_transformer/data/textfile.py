"""Reading text files the way every reader of the package does: UTF-8, a byte-order mark and
CRLF line ends accepted, ``.gz`` decompressed, and undecodable bytes reported as an error
that names the file, the line and the column, never a bare ``UnicodeDecodeError``."""

from __future__ import annotations

import codecs
import gzip
import zlib
from pathlib import Path


def read_text_lines(path: str | Path, error: type[Exception] = ValueError, *, lone_cr: bool = True) -> list[str]:
    """The lines of ``path`` without their line ends.

    ``\\n``, ``\\r\\n`` and (``lone_cr``, as Python's universal newlines) a lone ``\\r``, as
    old Mac files have it, end lines; nothing else does (not form feeds or Unicode line
    separators, which ``str.splitlines`` would split at inside a sentence; parallel text keeps
    a lone ``\\r`` inside its sentence). A final line end does not start another line. Problems raise ``error`` with a message that starts with
    the file (and line) it concerns.
    """
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: a folder, not a file")
    if not path.is_file():
        raise error(f"{path}: file not found")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as handle:
                data = handle.read()
        else:
            data = path.read_bytes()
    except (OSError, EOFError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        raise error(f"{path}: cannot read: {err}") from None
    return decode_text_lines(data, str(path), error, lone_cr=lone_cr)


def decode_text_lines(data: bytes, where: str, error: type[Exception] = ValueError, *, lone_cr: bool = True) -> list[str]:
    """The lines of UTF-8 ``data`` (e.g. standard input), as :func:`read_text_lines` reads a file;
    errors name ``where``."""
    if data.startswith(b"\x1f\x8b"):  # gzip's magic number, under a name without .gz
        raise error(f"{where}: gzip-compressed data; name the file *.gz to have it decompressed")
    data = data.removeprefix(codecs.BOM_UTF8)  # here, not via "utf-8-sig", so offsets count from 0
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        before = data[: err.start].replace(b"\r\n", b"\n")
        if lone_cr:
            before = before.replace(b"\r", b"\n")
        line = before.count(b"\n") + 1
        column = len(before) - (before.rfind(b"\n") + 1) + 1
        raise error(
            f"{where}:{line}: not valid UTF-8 text (byte 0x{data[err.start]:02x} at column {column}: {err.reason})"
        ) from None
    text = text.replace("\r\n", "\n")
    if lone_cr:
        text = text.replace("\r", "\n")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


__all__ = ["decode_text_lines", "read_text_lines"]
