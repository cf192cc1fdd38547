"""``ut train``, ``ut eval`` and ``ut generate``."""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import torch

from ..config import ConfigError, load_yaml
from ..data.textfile import decode_text_lines, read_text_lines
from ..evaluation.records import PUBLISHED_MODELS, RunRecord
from ..generation import beam_search, generate
from ..models import PretrainedModel
from ..registry import build_task
from ..tasks.base import Task
from ..training.config import ExperimentConfig, apply_overrides, load_experiment
from ..training.distributed import check_device, default_device, distributed_session
from ..training.offsets import evaluated
from ..training.trainer import Trainer


# Task options that chose the kept model during training: a re-score cannot choose again.
_TRAINING_TIME_TASK_OPTIONS = frozenset({"task.selection"})


def _eval_time_option(key: str) -> bool:
    """What `ut eval --set` may change: how the model is evaluated, never what it was trained as."""
    return (key.startswith("task.") and key not in _TRAINING_TIME_TASK_OPTIONS) or key == "train.eval_position_offsets"


def add_run_parsers(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "train",
        help="train a model from an experiment config (re-run with the same --out to resume)",
        description="Train from CONFIG.yaml into RUN_DIR. Running again with the same RUN_DIR resumes "
        "from its last checkpoint. For data parallelism launch with torchrun: "
        "torchrun --nproc_per_node=2 -m universal_transformer train ...",
    )
    p.add_argument("config", type=Path, help="experiment YAML (sections model_class, model, task, train)")
    p.add_argument("--out", type=Path, required=True, help="run directory (created, or resumed if it exists)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.lr=1e-3 --set model.num_steps=8")
    p.add_argument("--device", default="auto", type=device_name,
                   help="auto (default: CUDA when present), cpu, cuda or cuda:N")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="stop cleanly with a checkpoint after this much training time; the same command resumes "
                   "(shorthand for --set train.time_limit=SECONDS)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_record_arguments(p)
    p.set_defaults(run=run_train)

    p = commands.add_parser(
        "publish", help="copy a run's best model and config to results/models/NAME (committable, re-scorable)",
        description="Writes RESULTS/models/NAME/config.yaml and RESULTS/models/NAME/best/ (save_pretrained format), "
        "a run folder without checkpoints that 'ut eval', 'ut generate' and 'ut plot' accept, so that a "
        f"published model can be re-scored from a fresh clone. At most {PUBLISH_MODEL_MB} MB per model and "
        f"{PUBLISH_TOTAL_MB} MB for all published models.",
    )
    p.add_argument("run_dir", type=Path)
    p.add_argument("--name", required=True, help="e.g. algorithmic/reverse-ut")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="change a task option in the published config, e.g. --set task.data_dir=../shared/data/babi "
                   "for a run trained on a copy of the data (what 'ut eval --set' may change)")
    p.add_argument("--results", type=Path, default=Path("results"), help="the records folder (default results)")
    p.set_defaults(run=run_publish)

    p = commands.add_parser("eval", help="evaluate a trained run and print a table",
                            description="Evaluate RUN_DIR/best (or the model at --model) on a split; writes RUN_DIR/eval-SPLIT.json "
                            "(eval-SPLIT-stepsN.json with --steps N, eval-SPLIT-OPTION=VALUE.json with a --set that "
                            "changes what is scored, e.g. eval-test-length_draw=operand.json, and "
                            "eval-SPLIT-model=NAME.json with --model RUN_DIR/NAME: the run's own score stays).")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--split", default="test",
                   help="validation or test (default test); bAbI also train (its training stories: underfitting or "
                   "overfitting?); a language model also benchmarks (agreement and LAMBADA sets, task.agreement / task.lambada)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override task options, e.g. --set 'task.test_lengths=[400,800]'; or "
                   "--set train.eval_position_offsets=true (offsets drawn as in training, for models trained "
                   "with train.position_offset_per=step)")
    p.add_argument("--model", type=Path, default=None, help="a saved model folder (default RUN_DIR/best)")
    p.add_argument("--steps", type=int, default=None,
                   help="recurrent steps at inference (ACT: the step limit), e.g. more than in training")
    add_window_arguments(p)
    p.add_argument("--per-task", action="store_true",
                   help="a joint run trained with train.keep_best_per_task: score each task with the model best on "
                   "its own validation (RUN_DIR/best-per-task/NAME), as one evaluation; test split only. Record it as "
                   "JOINT-per-task for the joint run's record JOINT: the babi-readings table sets them side by side")
    add_device_argument(p)
    add_threads_argument(p)
    _add_record_arguments(p)
    p.set_defaults(run=run_eval)

    p = commands.add_parser(
        "generate", help="decode inputs with a trained model (greedy, sampled or beam search)",
        description="Decodes --input, or every line of --input-file ('-' = standard input), writing one output "
        "per line (with --nbest N: N lines per input, each 'score<TAB>output'); a blank line that the task "
        "cannot read (a language model reads it: a sentence start) gives blank output, as in 'ut translate'.",
    )
    p.add_argument("run_dir", type=Path)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="the input text, e.g. --input 12345")
    source.add_argument("--input-file", type=Path, help="one input per line; '-' reads standard input")
    p.add_argument("--max-new-tokens", type=int, default=None, help="default: 2 x input length + 8")
    p.add_argument("--beam", type=int, default=None, metavar="K", help="beam search with K beams")
    p.add_argument("--length-penalty", type=float, default=0.6, help="beam search: GNMT alpha (default 0.6)")
    p.add_argument("--nbest", type=int, default=1, help="beam search: print the N best outputs per input")
    p.add_argument("--sample", action="store_true", help="sample instead of greedy decoding")
    p.add_argument("--temperature", type=float, default=None, help="with --sample: divides the logits (default 1)")
    p.add_argument("--top-k", type=int, default=None, help="with --sample: draw from the K likeliest tokens")
    p.add_argument("--top-p", type=float, default=None,
                   help="with --sample: draw from the fewest tokens whose probability reaches P (nucleus)")
    p.add_argument("--steps", type=int, default=None,
                   help="recurrent steps at inference (ACT: the step limit), e.g. more than in training")
    add_window_arguments(p)
    p.add_argument("--batch-size", type=int, default=64,
                   help="inputs decoded together, longest first (a language model's prompts: of one length)")
    add_threads_argument(p)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=run_generate)


def add_window_arguments(p: argparse.ArgumentParser) -> None:
    """``--attention-window`` and its scope, for the commands that load a trained model
    (``ut eval``, ``generate``, ``plot``; passed on to :func:`load_model`)."""
    p.add_argument("--attention-window", type=int, default=None, metavar="W",
                   help="local attention at inference: every query sees only keys at most W positions away")
    p.add_argument("--attention-window-scope", choices=("all", "source"), default=None,
                   help="with --attention-window: every attention (all, the default) or only over the source "
                   "(the encoder's and the cross-attention, not the decoder's over its own outputs)")


PUBLISH_MODEL_MB, PUBLISH_TOTAL_MB = 5, 48


def run_publish(args: argparse.Namespace) -> int:
    import shutil

    experiment = load_run(args.run_dir, args.overrides)  # a run folder with a valid config
    best = args.run_dir / "best"
    if not (best / "model.safetensors").is_file():
        raise ConfigError(f"{best}: no saved model (training writes RUN_DIR/best at its first evaluation)")
    size = sum(f.stat().st_size for f in best.iterdir()) / 2**20
    if size > PUBLISH_MODEL_MB:
        raise ConfigError(f"{best}: {size:.1f} MB; a published model may have at most {PUBLISH_MODEL_MB} MB")
    models = args.results / PUBLISHED_MODELS
    target = models / args.name
    others = sum(f.stat().st_size for f in models.rglob("*") if f.is_file() and target not in f.parents) / 2**20 \
        if models.is_dir() else 0.0
    if others + size > PUBLISH_TOTAL_MB:
        raise ConfigError(f"{models}: {others:.1f} MB published already; with {size:.1f} MB more the "
                          f"{PUBLISH_TOTAL_MB} MB for all published models would be exceeded")
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(best, target / "best")
    if args.overrides:
        experiment.save(target / "config.yaml")
    else:
        shutil.copy2(args.run_dir / "config.yaml", target / "config.yaml")
    print(f"wrote {target} ({size:.1f} MB); re-score it with: ut eval {target} --split test")
    return 0


def device_name(value: str) -> str:
    """An argparse type: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``."""
    if not re.fullmatch(r"auto|cpu|cuda(:[0-9]+)?", value):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N, got {value!r}")
    return value


def resolve_device(value: str) -> str | None:
    """``--device`` as the trainer and :func:`load_model` take it: None for ``auto``."""
    return None if value == "auto" else value


def add_device_argument(p: argparse.ArgumentParser) -> None:
    """``--device`` of the commands that load a trained model (``ut eval``, ``translate``)."""
    p.add_argument("--device", default="cpu", type=device_name,
                   help="cpu (default), cuda, cuda:N, or auto (CUDA when present)")


def add_threads_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads (default: torch's choice); small models decode one input faster on 1 "
                        "(docs/performance.md)")


def set_threads(threads: int | None) -> None:
    """``torch.set_num_threads`` for a command's ``--threads`` (None: torch's choice)."""
    if threads is not None:
        if threads < 1:
            raise ConfigError(f"--threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)


def _add_record_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--record", metavar="NAME", default=None,
                   help="also write the run record to RESULTS/NAME.json (e.g. algorithmic/reverse-ut); "
                   "docs/results.md tables are generated from these files by 'ut report'")
    p.add_argument("--results", type=Path, default=Path("results"), help="the records folder (default results)")


def command_line() -> str:
    """The command as typed (``ut ...``), for run records."""
    return shlex.join(["ut", *sys.argv[1:]])


def run_train(args: argparse.Namespace) -> int:
    overrides = list(args.overrides)
    if args.time_limit is not None:
        overrides.append(f"train.time_limit={args.time_limit}")
    experiment = load_experiment(args.config, overrides)
    device = resolve_device(args.device)
    with distributed_session():
        trainer = Trainer(experiment, args.out, device=device, progress=not args.no_progress,
                          record_name=args.record, results_dir=args.results, command=command_line())
        summary = trainer.fit()
    if trainer.ctx.is_main and summary.get("status") != "time_limit":
        print_metrics(summary.get("test") or {}, title=f"test metrics of the best model (step {summary.get('best_step')})")
        print(f"wrote {args.out / 'metrics.json'}")
    return 0


def load_run(run_dir: Path, overrides: list[str]) -> ExperimentConfig:
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{path}: not found; is {run_dir} a run directory written by 'ut train'?")
    bad = [o for o in overrides if not _eval_time_option(o.split("=", 1)[0].strip())]
    if bad:
        key = bad[0].split("=", 1)[0].strip()
        if key in _TRAINING_TIME_TASK_OPTIONS:
            raise ConfigError(f"--set {bad[0]!r}: {key} chose the kept model during training; re-scoring it cannot choose again")
        raise ConfigError(f"--set {bad[0]!r}: only task options and train.eval_position_offsets can change at evaluation time")
    data = apply_overrides(load_yaml(path.read_text()), overrides)
    return ExperimentConfig.from_dict(data, source=str(path))


# Task options that say where the data lies or how much of it is scored at once, not what is scored.
_SAME_SCORE_OPTIONS = frozenset({"data_dir", "eval_batch_size"})


def changed_eval_options(trained: ExperimentConfig, experiment: ExperimentConfig) -> list[tuple[str, Any]]:
    """The options of ``experiment`` (the run's config ``trained`` with ``ut eval --set`` applied)
    that score the model otherwise than as trained: (name, value) for each task option, and
    ``eval_position_offsets``, whose value differs from the run's own config."""
    own, given = trained.task.to_dict(), experiment.task.to_dict()
    changed = [(key, value) for key, value in given.items() if key not in _SAME_SCORE_OPTIONS and own.get(key) != value]
    if experiment.train.eval_position_offsets != trained.train.eval_position_offsets:
        changed.append(("eval_position_offsets", experiment.train.eval_position_offsets))
    return changed


def _file_safe(value: Any) -> str:
    """``value`` as a piece of a file name: ``[400, 800]`` -> ``400_800``, ``"operand"`` ->
    ``operand``; a long one (a list of file paths, say) as 8 hex digits of its SHA-256."""
    text = json.dumps(value, sort_keys=True)
    safe = _name_piece(text) or "none"
    return safe if len(safe) <= 24 else hashlib.sha256(text.encode()).hexdigest()[:8]


def _name_piece(text: str) -> str:
    """``text`` with every run of characters other than letters, digits, ``.`` and ``-`` as one ``_``."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", text).strip("_")


def _model_name(model_dir: Path, run_dir: Path) -> str:
    """``--model``'s folder as a piece of a file name: its path inside the run folder
    (``avg5``; ``best-per-task/task3`` as ``best-per-task_task3``), else its own name."""
    try:
        name = model_dir.resolve().relative_to(run_dir.resolve()).as_posix()
    except ValueError:
        name = model_dir.resolve().name
    return _name_piece(name) or "model"


def load_model(run_dir: Path, model_dir: Path | None, device: str, *, steps: int | None = None,
                window: int | None = None, window_scope: str | None = None, task: Task | None = None) -> PretrainedModel:
    """The saved model, at test-time depth ``steps`` and with local attention ``window`` if given;
    with ``task``, checked to read that task's data as it was trained to (see :func:`check_task_fits`)."""
    folder = model_dir or run_dir / "best"
    device = default_device(resolve_device(device))
    if not folder.is_dir():
        raise ConfigError(f"{folder}: no saved model (training writes RUN_DIR/best at its first evaluation)")
    check_device(device)
    model = PretrainedModel.from_pretrained(folder).to(device).eval()
    if task is not None:
        check_task_fits(task, model, folder)
    if steps is not None:
        if not hasattr(model, "configure_runtime"):
            raise ConfigError(f"--steps: a {type(model).__name__} has no recurrent steps")
        try:
            model.configure_runtime(depth=steps)
        except ValueError as err:
            raise ConfigError(f"--steps: {err}") from None
    if window is None and window_scope is not None:  # a scope alone would change nothing
        raise ConfigError("--attention-window-scope says which attention --attention-window confines; give the window too")
    if window is not None:
        window_scope = window_scope or "all"
        if not hasattr(model, "configure_runtime") or "attention_window" not in inspect.signature(model.configure_runtime).parameters:
            raise ConfigError(f"--attention-window: a {type(model).__name__} has no attention to confine")
        try:
            model.configure_runtime(attention_window=window, attention_window_scope=window_scope)
        except ValueError as err:
            raise ConfigError(f"--attention-window: {err}") from None
    return model


def check_task_fits(task: Task, model: PretrainedModel, folder: Path) -> None:
    """The model fields the task derives from its data (vocabulary and answer sizes, special ids)
    must be those the model was trained with: other data (a task option changed with ``--set``,
    e.g. bAbI's ``task.tasks`` for a joint model) would give other token ids, and wrong results
    without an error."""
    for key, value in task.model_fields(model.config, type(model).__name__).items():
        trained = getattr(model.config, key)
        if trained != value:
            raise ConfigError(
                f"{folder}: the model was trained with {key}={trained!r}, the task as configured here gives "
                f"{key}={value!r}: other data, whose token ids the model would misread. Keep the task options "
                f"that decide the vocabulary as trained (a joint bAbI model is evaluated on all its tasks, "
                f"each reported; 'ut plot --task N' picks a story of one)"
            )


def run_eval(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    experiment = load_run(args.run_dir, args.overrides)
    task = build_task(experiment.task, seed=experiment.train.task_seed)
    if args.per_task:
        return run_eval_per_task(args, experiment, task)
    window = args.attention_window
    model = load_model(args.run_dir, args.model, args.device, steps=args.steps, window=window,
                        window_scope=args.attention_window_scope, task=task)
    metrics = task.evaluate(evaluated(model, experiment.train), args.split)
    if args.steps is not None:  # the depth it ran at, so that tables tell test-time depth from training depth
        metrics["inference_steps"] = args.steps
    if window is not None:
        metrics["inference_attention_window"] = window
        metrics["inference_attention_window_scope"] = args.attention_window_scope or "all"
    print_metrics(metrics, title=f"{args.split} metrics of {args.model or args.run_dir / 'best'}")
    # At another depth or window, or on a test set changed with --set, its own file: the folder
    # reports read eval-SPLIT.json as the trained model's own score.
    suffix = f"-steps{args.steps}" if args.steps is not None else ""
    if window is not None:
        suffix += f"-window{window}" + ("-source" if args.attention_window_scope == "source" else "")
    if args.overrides:
        trained = load_run(args.run_dir, [])
        suffix += "".join(f"-{name}={_file_safe(value)}" for name, value in changed_eval_options(trained, experiment))
    if args.model is not None and args.model.resolve() != (args.run_dir / "best").resolve():
        suffix += f"-model={_model_name(args.model, args.run_dir)}"
    out = args.run_dir / f"eval-{args.split}{suffix}.json"
    out.write_text(json.dumps(metrics, indent=2) + "\n")
    print(f"wrote {out}")
    if args.record:
        target = args.results / f"{args.record}.json"
        previous = RunRecord.load(target) if target.is_file() else None
        if args.split == "train":
            record = train_scored_record(args.run_dir, experiment, metrics, target=target, previous=previous,
                                         model_dir=args.model)
        else:
            record = rescored_record(args.run_dir, experiment, args.split, metrics, name=args.record,
                                     parameters=model.num_parameters(), model_dir=args.model, previous=previous)
            kept = previous.kept_over(record) if previous is not None else None
            if kept:
                raise ConfigError(f"{target} kept: {kept} (the scores above are in {out})")
        print(f"wrote {record.save(target)}")
    return 0


def run_eval_per_task(args: argparse.Namespace, experiment: ExperimentConfig, task: Task) -> int:
    """``ut eval --per-task``: each task of a joint run scored by the model kept for it
    (``train.keep_best_per_task``), merged into one evaluation (``eval-test-per-task.json``) and,
    with ``--record``, one record whose validation metrics are those that selected each model."""
    others = [flag for flag, given in (("--model", args.model), ("--steps", args.steps),
                                       ("--attention-window", args.attention_window)) if given is not None]
    if others or args.split != "test":
        raise ConfigError(f"--per-task scores the test split with the kept models as trained; "
                          f"leave out {', '.join(others) or '--split ' + args.split}")
    folder = args.run_dir / "best-per-task"
    names = task.task_names()
    missing = [n for n in names if not (folder / n / "selected.json").is_file()]
    if not names or missing:
        raise ConfigError(f"{folder}: no model kept for {', '.join(missing) or 'the tasks of a single task'} "
                          "(train a joint run with train.keep_best_per_task=true)")
    selected = {n: json.loads((folder / n / "selected.json").read_text()) for n in names}
    scored, parameters = {}, None
    for name in names:
        model = load_model(args.run_dir, folder / name, args.device, task=task)
        scored[name] = task.evaluate_task(evaluated(model, experiment.train), "test", name)
        parameters = model.num_parameters()
    # "selection" marks the record as models picked per task, which the tables keep apart from a joint model's
    metrics = {**task.merge_task_metrics(scored), "selection": "per_task"}
    validation = task.merge_task_metrics({n: s["validation"] for n, s in selected.items()})
    steps = ", ".join(f"{n} {s['step']}" for n, s in selected.items())
    print_metrics(metrics, title=f"test metrics, each task by its own best model ({folder})")
    out = args.run_dir / "eval-test-per-task.json"
    out.write_text(json.dumps(metrics, indent=2) + "\n")
    print(f"wrote {out}")
    if args.record:
        target = args.results / f"{args.record}.json"
        run = rescored_record(args.run_dir, experiment, "test", metrics, name=args.record, parameters=parameters)
        record = RunRecord.from_dict(run.to_dict() | {
            "best_step": None, "metrics": {"validation": validation, "test": metrics},
            "notes": [*run.notes, f"per task: each task's validation and test metrics are those of the model best on "
                                  f"its own validation, kept at steps {steps} ({folder})"]})
        print(f"wrote {record.save(target)}")
    return 0


def _same_model(a: RunRecord, b: RunRecord) -> bool:
    """Whether two records of one run measured the same best model (same steps, same best step)."""
    return (a.steps, a.best_step) == (b.steps, b.best_step)


def train_scored_record(run_dir: Path, experiment: ExperimentConfig, metrics: dict, *, target: Path,
                        previous: RunRecord | None, model_dir: Path | None) -> RunRecord:
    """``previous`` (the run's scored record, file ``target``) with the best model's metrics on
    its own training data added as ``metrics.train``: a diagnostic beside the record's scores,
    which stay as they are. Refused when the record measured another model than the run's best."""
    how = f"score the run first: ut eval {run_dir} --split test --record NAME"
    if model_dir is not None and Path(model_dir).resolve() != (run_dir / "best").resolve():
        raise ConfigError("--split train --record adds to the record of the run's best model; leave out --model")
    if previous is None:
        raise ConfigError(f"{target}: no record to add the training-set metrics to; {how}")
    if (run_dir / "record.json").is_file():
        current = _brought_up_to_date(RunRecord.load(run_dir / "record.json"), run_dir, experiment)
        if not _same_model(current, previous):
            raise ConfigError(f"{target} measured the best model at step {previous.best_step} of {previous.steps}; "
                              f"the run's is at step {current.best_step} of {current.steps}: {how}")
    return RunRecord.from_dict(previous.to_dict() | {
        "metrics": {**previous.metrics, "train": {k: v for k, v in metrics.items() if v is not None}},
        "notes": [*previous.notes, f"train scored by: {command_line()}"]})


def rescored_record(run_dir: Path, experiment: ExperimentConfig, split: str, metrics: dict, *, name: str,
                    parameters: int | None = None, model_dir: Path | None = None, previous: RunRecord | None = None):
    """The run's record with ``split`` metrics from a new evaluation (status ``rescored``;
    a partial run, stopped by its time limit, stays ``time_limit``: scoring its best model
    so far on test does not make it a finished run).

    Training facts (steps, wall time, validation) come from the run's own record, or from
    its ``metrics.json`` / ``metrics.jsonl`` for runs older than records. A run stopped
    between records (killed mid-chunk) has a newer checkpoint than its record: then the
    steps, wall time, best step and validation metrics are the checkpoint's, the config the
    run's ``config.yaml``, and the record says so (the resume command is not known). ``parameters``
    (the evaluated model's count) fills in a record written before records had it. When
    the evaluated model is another one than the run's best (``model_dir``, e.g. averaged
    checkpoints), the other split's metrics are left out: they measured the best model.
    ``previous`` (the record file this one replaces) hands on its training-set metrics
    (:func:`train_scored_record`) and its metrics of the other split (an earlier re-score,
    e.g. with a measure added since) when it measured the same model, and is the base of the
    new record when the run folder is a published model (no record, no training log).
    """
    from ..evaluation.records import git_commit, history_from_log, machine_info

    evaluated = {k: v for k, v in metrics.items() if v is not None}
    other = "validation" if split == "test" else "test"
    own_best = model_dir is None or Path(model_dir).resolve() == (run_dir / "best").resolve()
    if (run_dir / "record.json").is_file():
        old = RunRecord.load(run_dir / "record.json")
        old = _brought_up_to_date(old, run_dir, experiment)
        notes = [*old.notes, f"{split} re-scored by: {command_line()}"]
        if old.partial:
            notes.append(f"partial: the best model at step {old.best_step} of a run stopped at step {old.steps}")
        if not own_best:
            notes.append(f"evaluated model: {model_dir}; the {other} metrics of the run's best model are left out")
        metrics = {split: evaluated, other: old.metrics[other] if own_best else {}}
        if own_best and previous is not None and _same_model(old, previous):  # the record replaced measured this model
            if previous.metrics.get(other):  # an earlier re-score of the other split: kept
                metrics[other] = previous.metrics[other]
                notes += [n for n in previous.notes if n.startswith(f"{other} re-scored by: ") and n not in notes]
            if "train" in previous.metrics:
                metrics["train"] = previous.metrics["train"]
                notes += [n for n in previous.notes if n.startswith("train scored by: ")]
        return RunRecord(
            experiment=name, task=old.task, config=old.config, command=old.command, seeds=old.seeds,
            commit=old.commit, machine=old.machine, wall_time_seconds=old.wall_time_seconds, steps=old.steps,
            best_step=old.best_step, metrics=metrics, status="time_limit" if old.partial else "rescored", notes=notes,
            parameters=old.parameters if old.parameters is not None else parameters,
            # records written before histories get theirs from the run's evaluation log
            history=old.history if old.history is not None else history_from_log(run_dir / "metrics.jsonl", up_to=old.steps),
        )
    if previous is not None and own_best and not (run_dir / "metrics.jsonl").is_file():
        # a published model (results/models/NAME) keeps no training log: the record it is
        # published from holds the run's facts
        note = f"{split} re-scored by: {command_line()}"  # once: the same command again re-scores the same model
        return RunRecord.from_dict(previous.to_dict() | {
            "metrics": {**previous.metrics, split: evaluated},
            "status": "time_limit" if previous.partial else "rescored",
            "notes": [*(n for n in previous.notes if n != note), note]})
    lines = (run_dir / "metrics.jsonl").read_text().splitlines() if (run_dir / "metrics.jsonl").is_file() else []
    log = [json.loads(line) for line in lines]
    best = max(log, key=lambda r: r.get("score", float("-inf")), default={})
    validation = {k: v for k, v in best.items() if k not in ("step", "split") and v is not None}
    # No record and no metrics.json but checkpoints: a run stopped (killed) in its first chunk,
    # before the trainer wrote a record; otherwise a finished run from before run records.
    stopped = not (run_dir / "metrics.json").is_file() and (run_dir / "checkpoints").is_dir()
    how = ("the run stopped before its first record (killed mid-chunk): partial; its training command is not known"
           if stopped else "the run predates run records")
    return RunRecord(
        experiment=name, task=experiment.task.name, config=experiment.to_dict(), command=command_line(),
        seeds=[experiment.train.seed], commit=git_commit(Path(__file__).parent), machine=machine_info(),
        wall_time_seconds=float(log[-1].get("elapsed", 0.0)) if log else 0.0, steps=int(log[-1]["step"]) if log else 0,
        best_step=best.get("step"), status="time_limit" if stopped else "rescored",
        metrics={"validation": validation, "test": evaluated} if split == "test" else {"validation": evaluated, "test": {}},
        notes=[f"training facts from metrics.jsonl ({how}); machine = the re-scoring machine"],
        parameters=parameters, history=history_from_log(run_dir / "metrics.jsonl"),
    )


def _brought_up_to_date(record, run_dir: Path, experiment: ExperimentConfig):
    """``record`` with the training facts of the run's latest checkpoint when that is newer
    (the trainer writes a record at the end of each chunk; a chunk killed after further
    checkpoints leaves the record behind the run)."""
    from ..evaluation.records import history_from_log
    from ..training.checkpoint import CheckpointManager

    checkpoints = CheckpointManager(run_dir / "checkpoints")
    latest = checkpoints.latest()
    if latest is None:
        return record
    state = checkpoints.load(latest)
    if state["step"] <= record.steps:
        return record
    best = state["best"]
    return RunRecord.from_dict(record.to_dict() | {
        "config": experiment.to_dict(),
        "wall_time_seconds": round(float(state["elapsed"]), 1),
        "steps": int(state["step"]),
        "best_step": best["step"],
        "metrics": {**record.metrics, "validation": {k: v for k, v in (best["metrics"] or {}).items() if v is not None}},
        "history": history_from_log(run_dir / "metrics.jsonl", up_to=int(state["step"])),
        "status": "time_limit",
        "notes": [*record.notes, f"training facts from {latest.relative_to(run_dir)}: the run went on after its "
                  f"last record (step {record.steps}), by a command not recorded, with the config above"],
    })


def _check_generate_options(args: argparse.Namespace) -> None:
    """Refuse decoding options that are out of range or would be ignored, naming the flag."""
    for flag, value, least in (("--batch-size", args.batch_size, 1), ("--max-new-tokens", args.max_new_tokens, 1),
                               ("--beam", args.beam, 1), ("--nbest", args.nbest, 1), ("--top-k", args.top_k, 1)):
        if value is not None and value < least:
            raise ConfigError(f"{flag} must be >= {least}, got {value}")
    if args.nbest > 1 and not args.beam:
        raise ConfigError("--nbest needs --beam")
    if args.beam and args.nbest > args.beam:
        raise ConfigError(f"--nbest ({args.nbest}) cannot exceed --beam ({args.beam}): the search keeps {args.beam} hypotheses")
    sampling = [flag for flag, value in (("--temperature", args.temperature), ("--top-k", args.top_k),
                                         ("--top-p", args.top_p)) if value is not None]
    if args.sample and args.beam:
        raise ConfigError("--sample and --beam exclude each other (beam search is deterministic)")
    if sampling and not args.sample:
        raise ConfigError(f"{', '.join(sampling)} shape(s) sampling: add --sample (greedy decoding would ignore it)")
    if args.temperature is not None and not args.temperature > 0:
        raise ConfigError(f"--temperature must be > 0, got {args.temperature}")
    if args.top_p is not None and not 0 < args.top_p <= 1:
        raise ConfigError(f"--top-p must be in (0, 1], got {args.top_p}")


def _decoding_batches(lengths: list[int], size: int, *, one_length: bool) -> list[list[int]]:
    """Indices of the inputs, longest first, ``size`` at a time (little padding); with
    ``one_length`` (a language model's prompts, which cannot be padded) a batch also ends
    where the length changes."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if not batches or len(batches[-1]) == size or (one_length and lengths[batches[-1][0]] != lengths[i]):
            batches.append([])
        batches[-1].append(i)
    return batches


def run_generate(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    _check_generate_options(args)
    experiment = load_run(args.run_dir, [])
    task = build_task(experiment.task, seed=experiment.train.task_seed)
    # As evaluation sees it: a run with train.eval_position_offsets decodes with drawn offsets
    # (drawn per batch of inputs, so there --batch-size changes the draws).
    model = evaluated(load_model(args.run_dir, None, "cpu", steps=args.steps, window=args.attention_window,
                                  window_scope=args.attention_window_scope, task=task), experiment.train)
    if args.input is not None:
        texts = [args.input]
    elif str(args.input_file) == "-":
        texts = decode_text_lines(sys.stdin.buffer.read(), "<stdin>", ConfigError)
    else:  # as every reader of the package: UTF-8 (errors with line and column), .gz, CRLF
        texts = read_text_lines(args.input_file, ConfigError)
    source = "<stdin>" if str(args.input_file) == "-" else args.input_file
    # By line. A blank line is an input where the task reads one (a language model's empty prompt:
    # generation from a sentence start); where it does not, it gives blank output, as in ut translate.
    rows: dict[int, torch.Tensor] = {}
    for i, text in enumerate(texts):
        try:
            row = task.encode_text(text)[0]
        except ValueError as err:
            if not text.strip():
                continue
            raise ConfigError(f"{f'{source}:{i + 1}' if args.input is None else '--input'}: {err}") from None
        if row.numel():
            rows[i] = row
    gen = torch.Generator().manual_seed(args.seed)
    outputs: list[list[str]] = [[""] * args.nbest for _ in texts]  # --nbest N: N lines per input, always
    one_length = not getattr(model, "is_encoder_decoder", False)
    given = list(rows)
    for batch in _decoding_batches([len(rows[i]) for i in given], args.batch_size, one_length=one_length):
        chunk = [given[b] for b in batch]
        inputs = torch.nn.utils.rnn.pad_sequence([rows[i] for i in chunk], batch_first=True,
                                                 padding_value=model.config.pad_id)
        if args.beam:
            lengths = dict(max_new_tokens=args.max_new_tokens) if args.max_new_tokens else dict(max_length_a=2, max_length_b=8)
            result = beam_search(model, inputs, beam_size=args.beam, length_penalty=args.length_penalty,
                                 nbest=args.nbest, **lengths)
            for i, hypotheses in zip(chunk, result.hypotheses):
                # Fewer hypotheses than --nbest (fewer outputs exist, e.g. --max-new-tokens 1 on a small
                # vocabulary): blank lines for the rest, so that every input still has N lines.
                outputs[i][: len(hypotheses)] = [f"{hyp.score:.4f}\t{task.decode_tokens(hyp.tokens)}" if args.nbest > 1
                                                 else task.decode_tokens(hyp.tokens) for hyp in hypotheses]
        else:
            # Each input's own limit (2 x its length + 8 by default), so batching changes no greedy output.
            limits = [args.max_new_tokens or 2 * len(rows[i]) + 8 for i in chunk]
            tokens = generate(model, inputs, max_new_tokens=max(limits), do_sample=args.sample,
                              temperature=args.temperature or 1.0, top_k=args.top_k, top_p=args.top_p, generator=gen)
            for i, row, limit in zip(chunk, tokens.tolist(), limits):
                outputs[i] = [task.decode_tokens(row[:limit])]
    for lines in outputs:
        for line in lines:
            print(line)
    return 0


def print_metrics(metrics: dict, *, title: str) -> None:
    """A two-column table of the numeric metrics."""
    rows = [(k, v) for k, v in metrics.items() if isinstance(v, (int, float))]
    if not rows:
        return
    width = max(len(k) for k, _ in rows)
    print(title)
    for key, value in rows:
        print(f"  {key:<{width}}  {value:.4f}" if isinstance(value, float) else f"  {key:<{width}}  {value}")
