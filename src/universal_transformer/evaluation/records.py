"""Run records: one JSON file per finished (or stopped) run, committed under ``results/``.

A record holds everything a number in ``docs/results.md`` needs to be traced and
repeated: the experiment's name, its fully resolved config, the command line, the seeds,
the commit and machine it ran on, how long it trained, how it ended, and its validation
and test metrics. ``ut report`` builds the tables of ``docs/results.md`` from these files
(``evaluation/docs/``).

The file format (schema 1) is the JSON object of :meth:`RunRecord.to_dict`: exactly the
fields of :class:`RunRecord`, written with sorted keys, two-space indent and a trailing
newline, so that a record re-saved unchanged is byte-identical. The optional fields
(:data:`OPTIONAL_FIELDS`, e.g. ``parameters``) were added later: a file without them reads
as None, and a None one is left out of the file, so older records load and re-save unchanged.
``history`` is the run's validation curve (:func:`history_from_log`): how it got to its
best model, which the best model's metrics alone do not tell (e.g. a ponder time that rises,
then collapses).
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import tempfile
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

SCHEMA = 1
STATUSES = ("done", "early_stopped", "time_limit", "rescored")
"""How a run ended: ``done`` (all steps), ``early_stopped``, ``time_limit`` (stopped by
``train.time_limit`` before it finished: a *partial* result), ``rescored`` (test metrics
re-computed after training, e.g. by ``ut eval --split test``)."""
CONFIG_SECTIONS = ("model_class", "model", "task", "train")
METRIC_SPLITS = ("validation", "test")
OPTIONAL_METRIC_SPLITS = ("train",)
"""Splits a record may also have metrics for: ``train`` (the best model on its own training
data, from ``ut eval --split train``), which tells underfitting from overfitting."""
OPTIONAL_FIELDS = ("parameters", "history")
"""Fields that may be missing from a file (read as None) and are not written when None."""


class RecordError(ValueError):
    """A run record is malformed; the message names the file (or source) and the key."""


def utc_now() -> str:
    """The current time as an ISO 8601 UTC string with seconds, e.g. ``2026-11-22T08:47:00+00:00``."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


@dataclass
class RunRecord:
    """The lasting result of one run (one seed; or several, when a record aggregates seeds)."""

    experiment: str  # e.g. "algorithmic/reverse-ut", "babi/en-10k/ut-act/task2"
    task: str  # the task's name: "algorithmic", "babi", ...
    config: dict[str, Any]  # sections model_class, model, task, train, fully resolved
    command: str  # the exact command line that produced the run
    seeds: list[int]
    commit: str | None  # git commit, "-dirty" when the work tree had changes; None outside git
    machine: dict[str, Any]  # machine_info()
    wall_time_seconds: float
    steps: int
    best_step: int | None  # the step of the evaluated (best on validation) model
    metrics: dict[str, dict[str, Any]]  # {"validation": {...}, "test": {...}}, maybe "train"
    status: str  # one of STATUSES
    created: str = field(default_factory=utc_now)
    notes: list[str] = field(default_factory=list)
    schema: int = SCHEMA
    parameters: int | None = None  # the model's parameter count; None in records written before it
    history: list[dict[str, Any]] | None = None  # one entry per evaluation (history_from_log); None before it

    def __post_init__(self) -> None:
        self.validate("RunRecord")

    @property
    def partial(self) -> bool:
        """True when the run stopped at its time limit before it finished."""
        return self.status == "time_limit"

    def kept_over(self, new: "RunRecord") -> str | None:
        """Why this record (a committed ``results/NAME.json``) must not be replaced by ``new``,
        or None when it may be. A partial ``new`` with fewer steps does not replace it: a run
        started afresh under the same name (its run folder lost with a machine, say) would
        otherwise overwrite a record that went further, and the next commit lose it. The run
        replaces it once it has passed this record's steps or has finished."""
        if new.partial and self.steps > new.steps:
            return (f"it records {self.steps} steps ({self.status}); this run is partial at {new.steps}: "
                    f"it replaces it once past step {self.steps} or finished")
        return None

    def validate(self, source: str) -> None:
        """Raise :class:`RecordError` (naming ``source`` and the key) if a field is malformed."""
        for f in fields(self):
            check, expected = _CHECKS[f.name]
            value = getattr(self, f.name)
            if not check(value):
                raise RecordError(f"{source}: key {f.name!r} must be {expected}, got {_show(value)}")
        if not self.experiment.strip():
            raise RecordError(f"{source}: key 'experiment' must not be empty")
        if self.schema != SCHEMA:
            raise RecordError(f"{source}: key 'schema' is {self.schema}; this version reads schema {SCHEMA}")
        if self.status not in STATUSES:
            raise RecordError(f"{source}: key 'status' must be one of {', '.join(STATUSES)}, got {self.status!r}")
        missing = [s for s in CONFIG_SECTIONS if s not in self.config]
        if missing:
            raise RecordError(f"{source}: key 'config' lacks section(s) {', '.join(missing)}")
        if not set(METRIC_SPLITS) <= set(self.metrics) <= {*METRIC_SPLITS, *OPTIONAL_METRIC_SPLITS}:
            raise RecordError(f"{source}: key 'metrics' must have the keys validation and test (and maybe train), "
                              f"got {', '.join(sorted(self.metrics)) or 'none'}")
        for split in self.metrics:
            values = self.metrics[split]
            if not isinstance(values, dict):
                raise RecordError(f"{source}: key 'metrics.{split}' must be an object, got {_show(values)}")
            for name, value in values.items():
                if not _is_metric(value):
                    raise RecordError(f"{source}: key 'metrics.{split}.{name}' must be a finite number, "
                                      f"a string or a list of them, got {_show(value)}")
        for i, entry in enumerate(self.history or []):
            if not _is_int(entry.get("step")) or not all(_is_number(v) for v in entry.values()):
                raise RecordError(f"{source}: key 'history[{i}]' must map names to finite numbers, with an "
                                  f"integer 'step', got {_show(entry)}")
        try:
            datetime.fromisoformat(self.created)
        except ValueError:
            raise RecordError(f"{source}: key 'created' must be an ISO 8601 time, got {self.created!r}") from None

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict (the file format; optional fields only when set)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if not (f.name in OPTIONAL_FIELDS and getattr(self, f.name) is None)}

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "record") -> "RunRecord":
        """Build and validate a record; unknown, missing or mistyped keys raise :class:`RecordError`."""
        if not isinstance(data, dict):
            raise RecordError(f"{source}: expected a JSON object, got {_show(data)}")
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise RecordError(f"{source}: unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(names)}")
        missing = [name for name in names if name not in data and name not in OPTIONAL_FIELDS]
        if missing:
            raise RecordError(f"{source}: missing key(s) {', '.join(map(repr, missing))}")
        record = cls.__new__(cls)  # validate with the source's name before anything else can fail
        for name in names:
            setattr(record, name, data.get(name))
        record.validate(source)
        return record

    def to_json(self) -> str:
        """The file's text: sorted keys, indent 2, trailing newline (deterministic)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"

    def save(self, path: str | Path) -> Path:
        """Write the record to ``path`` atomically (a temporary file in the same folder, then
        a rename), creating parent folders."""
        path = Path(path)
        self.validate(str(path))
        try:
            text = self.to_json()
        except (TypeError, ValueError) as err:  # e.g. a Path or NaN inside config
            raise RecordError(f"{path}: cannot write the record as JSON: {err}") from None
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | Path) -> "RunRecord":
        """Read and validate a record file; any problem raises :class:`RecordError` naming it."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RecordError(f"{path}: record file not found") from None
        except (OSError, UnicodeDecodeError) as err:
            raise RecordError(f"{path}: cannot read: {err}") from None
        except json.JSONDecodeError as err:
            raise RecordError(f"{path}: not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})") from None
        return cls.from_dict(data, source=str(path))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _is_metric(value: Any) -> bool:
    if isinstance(value, list):
        return all(_is_number(v) or isinstance(v, str) for v in value)
    return _is_number(value) or isinstance(value, str)


def _show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "experiment": (lambda v: isinstance(v, str), "a string"),
    "task": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    "config": (lambda v: isinstance(v, dict), "an object"),
    "command": (lambda v: isinstance(v, str), "a string"),
    "seeds": (lambda v: isinstance(v, list) and all(map(_is_int, v)), "a list of integers"),
    "commit": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "machine": (lambda v: isinstance(v, dict), "an object"),
    "wall_time_seconds": (lambda v: _is_number(v) and v >= 0, "a number >= 0"),
    "steps": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "best_step": (lambda v: v is None or (_is_int(v) and v >= 0), "an integer >= 0 or null"),
    "metrics": (lambda v: isinstance(v, dict), "an object"),
    "status": (lambda v: isinstance(v, str), "a string"),
    "created": (lambda v: isinstance(v, str), "a string"),
    "notes": (lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v), "a list of strings"),
    "schema": (_is_int, "an integer"),
    "parameters": (lambda v: v is None or (_is_int(v) and v >= 0), "an integer >= 0 or null"),
    "history": (lambda v: v is None or (isinstance(v, list) and all(isinstance(e, dict) for e in v)),
                "a list of objects or null"),
}

HISTORY_LEFT_OUT = ("split", "lr", "target_tokens_per_second")
"""Evaluation-log fields that the history leaves out (bookkeeping, not results)."""
PER_TASK_ERROR = re.compile(r"task\d+/error")
PER_TASK_KEPT = re.compile(r"task\d+/(error|ponder_question)")
"""bAbI's per-task metrics that the history keeps for a run over several tasks (one with more
than one ``taskN/error``): how each task of a joint model learns, step by step, set beside the
same task trained alone, and how long its question ponders meanwhile (the halting pattern)."""


def history_from_log(path: str | Path, *, up_to: int | None = None) -> list[dict[str, Any]] | None:
    """A run's validation curve from its evaluation log (``RUN/metrics.jsonl``): per evaluation,
    in step order, its ``step``, ``elapsed`` seconds, training loss (and ponder time) and the
    task's summary metrics, the numbers whose names hold no ``/`` (``score``, ``mean_error``,
    ``ponder_question``, ...; per-task and per-length metrics stay in the log, so a record stays
    small, but for the per-task errors and question ponder times of a run over several bAbI tasks). A step logged twice (a
    chunk resumed from an earlier checkpoint evaluates it again) keeps its last line; steps after ``up_to`` (a killed chunk's evaluations that the run has not
    reached again) are left out. None when there is no log or no evaluation in it (a record
    then has no history); a malformed line is a :class:`RecordError` naming the file and line."""
    path = Path(path)
    if not path.is_file():
        return None
    by_step: dict[int, dict[str, Any]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as err:
            raise RecordError(f"{path}:{number}: not valid JSON: {err.msg}") from None
        if not isinstance(entry, dict) or not _is_int(entry.get("step")):
            raise RecordError(f"{path}:{number}: an evaluation line needs an integer 'step', got {_show(entry)}")
        if up_to is not None and entry["step"] > up_to:
            continue
        per_task = sum(1 for name in entry if PER_TASK_ERROR.fullmatch(name)) > 1
        by_step[entry["step"]] = {
            name: round(value, 6) if isinstance(value, float) else value for name, value in entry.items()
            if ("/" not in name or per_task and PER_TASK_KEPT.fullmatch(name))
            and name not in HISTORY_LEFT_OUT and _is_number(value)}
    return [by_step[step] for step in sorted(by_step)] or None


PUBLISHED_MODELS = "models"  # RESULTS/models/NAME: published models (`ut publish`), not records
EXAMPLES = "examples"  # RESULTS/examples/NAME: decodings and analyses of recorded models (their scripts' outputs)


def load_records(root: str | Path) -> list[RunRecord]:
    """Every ``*.json`` record under ``root`` (recursively, except the published models in
    ``root/models`` and the analyses in ``root/examples``), sorted by experiment name, then seeds. A malformed file, or two files
    recording the same experiment and seeds, is a :class:`RecordError` naming the file(s)."""
    root = Path(root)
    if not root.is_dir():
        raise RecordError(f"{root}: results folder not found")
    found: dict[tuple[str, tuple[int, ...]], Path] = {}
    records = []
    for path in sorted(root.rglob("*.json")):
        if path.relative_to(root).parts[0] in (PUBLISHED_MODELS, EXAMPLES):
            continue
        record = RunRecord.load(path)
        key = (record.experiment, tuple(record.seeds))
        if key in found:
            raise RecordError(f"{path}: records experiment {record.experiment!r} with seeds {record.seeds} "
                              f"again (already in {found[key]})")
        found[key] = path
        records.append(record)
    return sorted(records, key=lambda r: (r.experiment, r.seeds))


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass  # not Linux
    return platform.processor() or platform.machine() or "unknown"


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)  # the value is in KiB
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine_info() -> dict[str, Any]:
    """What the run ran on (no network): ``cpu`` model, ``logical_cores``, ``memory_gib``,
    ``torch_threads``, ``torch`` and ``python`` versions, ``platform``, and ``gpus`` (names;
    empty without CUDA) with the ``cuda`` version (None without CUDA)."""
    import torch  # here, not at import: reading records must not need torch loaded

    cuda = torch.cuda.is_available()
    return {
        "cpu": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "cuda": torch.version.cuda if cuda else None,
    }


def _git(path: str | Path, *args: str) -> str | None:
    try:
        result = subprocess.run(["git", *args], cwd=path, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):  # no git, no such folder, or it hangs
        return None
    return result.stdout if result.returncode == 0 else None


def git_commit(path: str | Path = ".") -> str | None:
    """The commit checked out at ``path``, with ``-dirty`` appended when tracked files have
    uncommitted changes (untracked files do not count, as in ``git describe --dirty``);
    None when git or the repository is missing."""
    head = _git(path, "rev-parse", "HEAD")
    if head is None:
        return None
    status = _git(path, "status", "--porcelain", "--untracked-files=no")
    if status is None:
        return None
    return head.strip() + ("-dirty" if status.strip() else "")
