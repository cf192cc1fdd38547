"""The trainer behind ``ut train``: one loop for every task and model, resumable, data parallel.

Run directory::

    RUN_DIR/config.yaml        the fully resolved experiment config
    RUN_DIR/checkpoints/       step-XXXXXXXX.pt, the last ``keep_last`` (atomic writes)
    RUN_DIR/best/              the best model on validation (save_pretrained format): the
                               highest score, then the task's tie_break (selection_key)
    RUN_DIR/best-per-task/NAME/  with train.keep_best_per_task: per task of a joint task, the
                               model best on its own validation score, and selected.json (its
                               step and validation metrics)
    RUN_DIR/metrics.jsonl      one line per evaluation
    RUN_DIR/metrics.json       at the end: the best model's validation and test metrics
    RUN_DIR/record.json        the run record (evaluation/records.py): written at the end and at
                               every time-limit stop (status time_limit = partial); also to
                               RESULTS/NAME.json when the run is given a record name

Exactness. A training batch is a pure function of ``(seed, step)`` (see
:class:`~universal_transformer.tasks.base.Task`), and checkpoints hold model, optimizer,
scheduler and every RNG state, so a run killed at any moment and resumed ends with the
same weights as an uninterrupted one. Each step's global batch is split by rows across
``world_size`` processes and ``grad_accum`` micro-steps, and each part's loss is
normalised by the global batch's counts, so data-parallel training computes the same
gradient as one process with the combined batch.
"""

from __future__ import annotations

import json
import math
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from ..config import ConfigError, LSTMConfig, load_yaml
from ..data.batch import Batch
from ..evaluation.records import RecordError, RunRecord, git_commit, history_from_log, machine_info
from ..models import PretrainedModel
from ..objective import LossTerms, compute_loss, ponder_weight
from ..registry import build_task, model_class
from ..tasks.base import Task
from .checkpoint import CheckpointManager, rng_state, set_rng_state
from .config import ExperimentConfig, TrainConfig
from .distributed import DistributedContext, all_reduce_flag, init_distributed
from .offsets import evaluated, position_offsets
from .schedules import lr_multiplier

# Changing these between a run and its resumption is allowed: they do not alter the
# trajectory up to the point where the run stopped.
RESUMABLE_CHANGES = {
    "steps", "time_limit", "threads", "log_every", "early_stopping", "stop_at_score", "act_packed",
    "gradient_checkpointing", "allow_slow_bf16", "keep_best_per_task",
}

# Smallest width at which bf16 autocast beat fp32 on a CPU with bf16 instructions
# (docs/performance.md: 1.6-1.8x faster at d=512, 13x slower at d=128, 2 cores).
BF16_CPU_MIN_WIDTH = 512


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the message names the step and the last good checkpoint."""


def build_model(experiment: ExperimentConfig, task: Task) -> PretrainedModel:
    """The experiment's model, with the vocabulary and special ids the task dictates."""
    if task.model_classes and experiment.model_class not in task.model_classes:
        raise ConfigError(
            f"task {task.name!r} trains {', '.join(task.model_classes)}, not {experiment.model_class}"
        )
    config = experiment.model.replace(**task.model_fields(experiment.model, experiment.model_class))
    experiment.model = config
    return model_class(experiment.model_class)(config)


def batch_loss(model: nn.Module, part: Batch, totals: tuple[int, dict[str, int]], label_smoothing: float) -> LossTerms:
    """Loss of one part of a global batch, normalised by the global batch's counts
    (``totals`` = labelled targets, real positions per stack; see :mod:`..objective`)."""
    n_targets, positions = totals
    out = model(**part.model_inputs())
    config = getattr(model, "config", None) or model.module.config
    return compute_loss(
        out.logits, part.labels, out.halting, ignore_index=part.ignore_index, label_smoothing=label_smoothing,
        ponder_weight=ponder_weight(config), num_targets=n_targets, positions=positions,
    )


def bf16_cpu_problem(d_model: int | None) -> str | None:
    """Why bf16 autocast would be slower than fp32 on this CPU, or None if it should pay.

    Without bf16 instructions (avx512_bf16 or amx_bf16) oneDNN emulates bf16 matrix
    products, 4-5x slower than fp32 (an Intel Xeon without them, torch 2.13); with them,
    small models still lose to the per-operation cost of the casts.
    """
    caps = torch.cpu.get_capabilities() if hasattr(torch.cpu, "get_capabilities") else {}
    if not (caps.get("avx512_bf16") or caps.get("amx_bf16")):
        return f"this CPU ({caps.get('cpu_name', 'unknown')}) has no bf16 instructions (avx512_bf16, amx_bf16): bf16 matrix products are emulated, slower than fp32"
    if d_model is not None and d_model < BF16_CPU_MIN_WIDTH:
        return f"at d_model={d_model} bf16 autocast is slower than fp32 on the CPU (it pays from d_model={BF16_CPU_MIN_WIDTH})"
    return None


def resolve_precision(cfg: TrainConfig, device: torch.device, d_model: int | None) -> str:
    """``fp32`` or ``bf16`` for this run; ConfigError for bf16 where it would only slow training down."""
    if cfg.precision == "auto":
        cuda_bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
        return "bf16" if cuda_bf16 else "fp32"
    if cfg.precision == "bf16" and device.type == "cpu" and not cfg.allow_slow_bf16:
        problem = bf16_cpu_problem(d_model)
        if problem:
            raise ConfigError(f"train.precision=bf16: {problem}. Use precision fp32 (or auto), or set "
                              "train.allow_slow_bf16=true to run it anyway")
    return cfg.precision


class Trainer:
    """Train the model of ``experiment`` on its task, writing into ``run_dir``."""

    def __init__(
        self,
        experiment: ExperimentConfig,
        run_dir: str | Path,
        *,
        device: str | None = None,
        progress: bool = True,
        verbose: bool = True,
        ctx: DistributedContext | None = None,
        record_name: str | None = None,
        results_dir: str | Path | None = None,
        command: str | None = None,
    ) -> None:
        """``record_name`` (e.g. ``algorithmic/reverse-ut``) also writes the run record to
        ``results_dir/record_name.json``; ``command`` is the command line it records."""
        self.experiment = experiment
        self.record_name = record_name
        self.results_dir = Path(results_dir) if results_dir is not None else None
        self.command = command
        self.cfg = experiment.train
        self.run_dir = Path(run_dir)
        self.ctx = ctx or init_distributed(device)
        self.progress = progress
        self.verbose = verbose
        if self.cfg.threads:
            torch.set_num_threads(self.cfg.threads)
        torch.manual_seed(self.cfg.seed)
        self.task = build_task(experiment.task, seed=self.cfg.task_seed)
        self.model = build_model(experiment, self.task).to(self.ctx.device)
        if self.ctx.rank:
            # Every process built the same weights from the seed; from here each draws its own
            # random numbers (dropout on its own rows of the batch), not copies of rank 0's.
            # Rank 0 keeps the seed's stream, so a one-process run is unchanged.
            torch.manual_seed(self.cfg.seed + 1_000_003 * self.ctx.rank)
        if self.cfg.keep_best_per_task and not self.task.task_names():
            raise ConfigError(f"train.keep_best_per_task keeps a model per task of a joint task; this {self.task.name} "
                              "task is one task (bAbI: list several in task.tasks)")
        self.precision = resolve_precision(self.cfg, self.ctx.device, getattr(self.model.config, "d_model", None))
        self._offset_steps = 0  # per-step position offsets: one for each step a stack may run
        if self.cfg.max_position_offset and self.cfg.position_offset_per == "step":
            if not hasattr(self.model, "recurrent_steps"):
                raise ConfigError(
                    f"train.position_offset_per=step draws offsets per recurrent step of an encoder-decoder; "
                    f"{experiment.model_class} has none"
                )
            self._offset_steps = self.model.recurrent_steps
        evaluated(self.model, self.cfg)  # a model that cannot be evaluated as configured fails now, not at step 1000
        if hasattr(self.model, "configure_runtime"):
            self.model.configure_runtime(act_packed=self.cfg.act_packed, gradient_checkpointing=self.cfg.gradient_checkpointing)
        elif self.cfg.gradient_checkpointing:  # asked for memory savings it would not get
            raise ConfigError(
                f"train.gradient_checkpointing checkpoints recurrent steps or layers; {experiment.model_class} has none"
            )
        if self.cfg.max_position_offset and isinstance(self.model.config, LSTMConfig):  # it takes them and reads none
            raise ConfigError(
                f"train.max_position_offset shifts the positions a model reads; {experiment.model_class} reads none"
            )
        # 'random' ACT never uses its halting layer; DDP must then not wait for its gradient.
        unused = getattr(self.model.config, "act", False) and getattr(self.model.config, "act_type", "") == "random"
        self.wrapped: nn.Module = (
            DistributedDataParallel(self.model, find_unused_parameters=unused) if self.ctx.enabled else self.model
        )
        opt = torch.optim.AdamW if self.cfg.optimizer == "adamw" else torch.optim.Adam
        self.optimizer = opt(
            self.model.parameters(), lr=self.cfg.lr, betas=self.cfg.betas, eps=self.cfg.eps,
            weight_decay=self.cfg.weight_decay,
        )
        multiplier = lr_multiplier(self.cfg.schedule, warmup_steps=self.cfg.warmup_steps, total_steps=self.cfg.steps)
        # The scheduler counts its own steps from 0; a warm start at init_step continues the schedule there.
        start = self.cfg.init_step
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: multiplier(s + start))
        self.checkpoints = CheckpointManager(self.run_dir / "checkpoints", self.cfg.keep_last)
        self.step = 0
        self.elapsed = 0.0
        self.best: dict[str, Any] = {"step": None, "metrics": None}
        self.best_per_task: dict[str, dict[str, Any]] = {}  # name -> step and score of its kept model
        self.evals_since_best = 0
        self._writer = None

    # -- set up / resume ---------------------------------------------------------------

    def prepare_run_dir(self) -> bool:
        """Write ``config.yaml`` or check it against an existing run; resume if possible.

        Returns True when resuming from a checkpoint.
        """
        saved = self.run_dir / "config.yaml"
        check_run_config(self.run_dir, self.experiment)
        # Every process has checked the old config before the main one rewrites it.
        self._barrier()
        if self.ctx.is_main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            tmp = saved.with_name("config.yaml.tmp")
            self.experiment.save(tmp)
            tmp.replace(saved)
            _drop_torn_line(self.run_dir / "metrics.jsonl")
        self._barrier()
        latest = self.checkpoints.latest()
        if latest is None:
            if self.cfg.init_from:
                self.warm_start(self.cfg.init_from)
            return False
        self.load_checkpoint(latest)
        return True

    def warm_start(self, source: str | Path) -> None:
        """Start from the weights saved in ``source`` (``train.init_from``) at ``train.init_step``."""
        saved = PretrainedModel.from_pretrained(source)
        ours = {"model_class": type(self.model).__name__, **self.model.config.to_dict()}
        theirs = {"model_class": type(saved).__name__, **saved.config.to_dict()}
        unknown = sorted(set(self.cfg.init_changes) - ours.keys())
        if unknown:
            raise ConfigError(f"train.init_changes: {', '.join(unknown)} not a setting of this run's model")
        differ = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k) and k not in self.cfg.init_changes)
        if differ:
            shown = "; ".join(f"{k}: {theirs.get(k)!r} there, {ours.get(k)!r} here" for k in differ[:6])
            raise ConfigError(f"train.init_from={source}: the saved model is not this run's model ({shown})")
        try:
            self.model.load_state_dict(saved.state_dict())
        except RuntimeError as err:  # a changed setting (train.init_changes) that the weights depend on
            raise ConfigError(f"train.init_from={source}: its weights do not fit this run's model: {err}") from None
        self.step = self.cfg.init_step

    def _barrier(self) -> None:
        if self.ctx.enabled:
            torch.distributed.barrier()

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": rng_state(),
            "step": self.step,
            "elapsed": self.elapsed,
            "best": self.best,
            "best_per_task": self.best_per_task,
            "evals_since_best": self.evals_since_best,
        }

    def load_checkpoint(self, path: Path) -> None:
        state = self.checkpoints.load(path)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        # This process's own RNG states (dropout draws differ between processes); rank 0's for a
        # checkpoint from another number of processes (or from before they were kept).
        ranks = state.get("rng_per_rank")
        set_rng_state(ranks[self.ctx.rank] if ranks and len(ranks) == self.ctx.world_size else state["rng"])
        self.step = state["step"]
        self.elapsed = state["elapsed"]
        self.best = state["best"]
        self.best_per_task = state.get("best_per_task", {})  # checkpoints from before keep_best_per_task
        self.evals_since_best = state["evals_since_best"]

    def save_checkpoint(self, *, interim: bool = False) -> Path | None:
        """Every process calls it (it gathers their RNG states); the main one writes the file.

        ``interim``: one written where a time limit stopped the run, between two evaluations,
        only needed to resume: the next checkpoint deletes it, so that the ``keep_last`` kept
        (and those ``ut average`` takes) are the evenly spaced ones of the evaluations."""
        ranks = None
        if self.ctx.enabled:
            ranks = [None] * self.ctx.world_size
            torch.distributed.all_gather_object(ranks, rng_state())
        if not self.ctx.is_main:
            return None
        state = self.state_dict()
        if ranks is not None:
            state["rng_per_rank"] = ranks
        every = self.cfg.eval_every
        return self.checkpoints.save(state, self.step, supersedes=None if interim else lambda step: step % every != 0)

    # -- the loop ----------------------------------------------------------------------

    def train_step(self) -> dict[str, float]:
        """One optimiser step on the global batch of ``self.step``."""
        cfg, ctx = self.cfg, self.ctx
        batch = self.task.train_batch(self.step, batch_tokens=cfg.batch_tokens, max_batch_size=cfg.max_batch_size)
        if cfg.max_position_offset:
            offsets = position_offsets(cfg.task_seed, self.step, batch.size, maximum=cfg.max_position_offset,
                                       per=cfg.position_offset_per, steps=self._offset_steps)
            batch = batch.with_position_offset(offsets)
        parts = ctx.world_size * cfg.grad_accum
        if batch.size < parts:
            raise ConfigError(
                f"step {self.step}: a batch of {batch.size} examples cannot be split into {parts} parts "
                f"({ctx.world_size} processes x grad_accum {cfg.grad_accum}); raise train.batch_tokens"
            )
        totals = (batch.num_targets, batch.positions())
        bounds = torch.linspace(0, batch.size, parts + 1).round().long().tolist()
        self.wrapped.train()
        autocast = torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16")
        ce_sum = torch.zeros(2, device=ctx.device)  # on the device: NCCL reduces no CPU tensors
        for micro in range(cfg.grad_accum):
            j = micro * ctx.world_size + ctx.rank
            part = batch.select(slice(bounds[j], bounds[j + 1])).to(ctx.device)
            sync = nullcontext() if (micro == cfg.grad_accum - 1 or not ctx.enabled) else self.wrapped.no_sync()
            with sync:
                with autocast:
                    terms = batch_loss(self.wrapped, part, totals, cfg.label_smoothing)
                # DDP averages gradients over processes; scale back to a sum over the global batch.
                (terms.loss * ctx.world_size).backward()
            ce_sum += torch.stack((terms.task_loss.detach().float(), terms.ponder_cost.detach().float()))
        if ctx.enabled:
            torch.distributed.all_reduce(ce_sum)
        ce_sum = ce_sum.cpu()
        loss_value = float(ce_sum[0])
        if all_reduce_flag(not math.isfinite(loss_value), ctx):
            latest = self.checkpoints.latest()
            raise TrainingDiverged(
                f"step {self.step}: the loss is {loss_value}; training stopped before the update. "
                f"Last good checkpoint: {latest or 'none yet'} (resume with e.g. --set train.lr=<lower>)"
            )
        if cfg.clip_norm:
            nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        self.step += 1
        return {"loss": loss_value, "ponder": float(ce_sum[1]), "targets": float(batch.num_targets)}

    def evaluate(self, split: str) -> dict[str, Any]:
        was_training = self.model.training
        metrics = self.task.evaluate(evaluated(self.model, self.cfg), split)
        self.model.train(was_training)
        return metrics

    def evaluate_best(self, split: str) -> dict[str, Any]:
        """Evaluate the best model on validation so far (``RUN_DIR/best``), else the current one."""
        best_dir = self.run_dir / "best"
        model = PretrainedModel.from_pretrained(best_dir).to(self.ctx.device) if best_dir.is_dir() else self.model
        return self.task.evaluate(evaluated(model, self.cfg), split)

    def fit(self) -> dict[str, Any]:
        """Train until ``train.steps`` (or early stopping, ``train.stop_at_score``, or
        ``train.time_limit``); returns a summary."""
        try:
            return self._fit()
        finally:
            if self._writer:  # TensorBoard's event file is complete, and its writer thread ends
                self._writer.close()
            self._writer = None

    def _fit(self) -> dict[str, Any]:
        cfg = self.cfg
        resumed = self.prepare_run_dir()
        self.task.check_evaluation_data()  # a bad evaluation file fails now, not after training
        if self.ctx.is_main and self.verbose:
            note = f"resuming at step {self.step}" if resumed else "starting"
            if not resumed and cfg.init_from:
                note = f"starting at step {self.step} from the weights of {cfg.init_from}"
            print(f"{note}: {self.experiment.model_class} with {self.model.num_parameters():,} parameters on {self.task.name}", flush=True)
        bar = _progress(self.step, cfg.steps, enabled=self.progress and self.ctx.is_main)
        window: list[dict[str, float]] = []
        started = time.perf_counter()
        base_elapsed = self.elapsed
        stopped_for_time = False
        # A run killed after it stopped early (during its test evaluation, say) must not train on
        # when resumed: its checkpoint already meets the stopping rule (as this config sets it).
        early_stopped = resumed and self._stopping_rule_met()
        while self.step < cfg.steps and not early_stopped:
            t0 = time.perf_counter()
            stats = self.train_step()
            stats["seconds"] = time.perf_counter() - t0
            window.append(stats)
            self.elapsed = base_elapsed + time.perf_counter() - started
            if bar is not None:
                bar.update(1)
                if self.step % 10 == 0 or self.step == cfg.steps:
                    recent = window[-10:]
                    bar.set_postfix(
                        loss=f"{sum(s['loss'] for s in recent) / len(recent):.4f}",
                        tok_s=f"{sum(s['targets'] for s in recent) / max(sum(s['seconds'] for s in recent), 1e-9):.0f}",
                    )
            if self.step % cfg.eval_every == 0 or self.step == cfg.steps:
                early_stopped = self._evaluate_and_log(window)
                window = []
                self.save_checkpoint()
                if early_stopped:
                    break
            over_time = cfg.time_limit is not None and self.elapsed - base_elapsed > cfg.time_limit
            # All processes stop together; past the last step the run has finished, not stopped.
            if cfg.time_limit is not None and self.step < cfg.steps and all_reduce_flag(over_time, self.ctx):
                self.save_checkpoint(interim=self.step % cfg.eval_every != 0)
                stopped_for_time = True
                break
        if bar is not None:
            bar.close()
        if stopped_for_time:
            if self.ctx.is_main:
                self.write_record("time_limit", test={})
                if self.verbose:
                    print(f"time limit reached at step {self.step}; run the same command again to resume", flush=True)
            return {"status": "time_limit", "step": self.step}
        return self._finish(early_stopped)

    def write_record(self, status: str, test: dict[str, Any]) -> RunRecord:
        """The run record of where the run stands: ``RUN_DIR/record.json`` (and ``results/NAME.json``)."""
        cfg = self.cfg
        notes = [f"world_size={self.ctx.world_size}", f"precision={self.precision}"]
        if cfg.data_seed is not None:
            notes.append(f"data_seed={cfg.data_seed}: the data drawn with it, the weights and dropout with seed {cfg.seed}")
        if cfg.init_from:
            notes.append(f"warm start: the weights of {cfg.init_from} at step {cfg.init_step}, fresh optimiser moments; its "
                         f"steps include the ones before it, its wall time only its own"
                         + (f"; model settings changed from it: {', '.join(cfg.init_changes)}" if cfg.init_changes else ""))
        record = RunRecord(
            experiment=self.record_name or self.run_dir.name,
            task=self.task.name,
            config=self.experiment.to_dict(),
            command=self.command or "",
            seeds=[self.cfg.seed],
            commit=git_commit(Path(__file__).parent),
            machine=machine_info(),
            wall_time_seconds=round(self.elapsed, 1),
            steps=self.step,
            best_step=self.best["step"],
            metrics={"validation": _plain(self.best["metrics"] or {}), "test": _plain(test)},
            status=status,
            notes=notes,
            parameters=self.model.num_parameters(),
            history=history_from_log(self.run_dir / "metrics.jsonl", up_to=self.step),
        )
        record.save(self.run_dir / "record.json")
        if self.record_name and self.results_dir is not None:
            target = self.results_dir / f"{self.record_name}.json"
            try:
                kept = RunRecord.load(target).kept_over(record) if target.is_file() else None
            except RecordError as err:  # not a record this run may overwrite: left for a person to look at
                kept = f"{err}; this run's record is {self.run_dir / 'record.json'}"
            if kept:
                print(f"kept {target}: {kept}", flush=True)
            else:
                record.save(target)
        return record

    def _evaluate_and_log(self, window: list[dict[str, float]]) -> bool:
        """Validate, log, keep the best model; True when early stopping triggers."""
        if not self.ctx.is_main:
            return all_reduce_flag(False, self.ctx)
        metrics = self.evaluate("validation")
        record = {
            "step": self.step,
            "split": "validation",
            "train_loss": sum(s["loss"] for s in window) / max(len(window), 1),
            "train_ponder": sum(s["ponder"] for s in window) / max(len(window), 1),
            "lr": self.scheduler.get_last_lr()[0],
            "target_tokens_per_second": sum(s["targets"] for s in window) / max(sum(s["seconds"] for s in window), 1e-9),
            "elapsed": round(self.elapsed, 1),
            **metrics,
        }
        with open(self.run_dir / "metrics.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
        self._tensorboard(record)
        if self.verbose:
            summary = ", ".join(f"{k}={v:.4f}" for k, v in metrics.items() if isinstance(v, float))
            print(f"step {self.step}: train_loss={record['train_loss']:.4f} {summary}", flush=True)
        if selection_key(metrics) > selection_key(self.best["metrics"]):
            self.best = {"step": self.step, "metrics": metrics}
            self.evals_since_best = 0
            self.model.save_pretrained(self.run_dir / "best")
        else:
            self.evals_since_best += 1
        if self.cfg.keep_best_per_task:
            self._keep_best_per_task(metrics)
        return all_reduce_flag(self._stopping_rule_met(), self.ctx)

    def _stopping_rule_met(self) -> bool:
        """Early stopping's patience is spent, or the best validation score has reached
        ``stop_at_score`` (the best is the highest score, so some evaluation reached it)."""
        stop = self.cfg.early_stopping is not None and self.evals_since_best >= self.cfg.early_stopping
        best = self.best["metrics"]
        return stop or (self.cfg.stop_at_score is not None and best is not None and best["score"] >= self.cfg.stop_at_score)

    def _keep_best_per_task(self, metrics: dict[str, Any]) -> None:
        """Save the model as ``best-per-task/NAME`` for each task whose validation score it beats
        (the first to reach a score keeps it, as for ``best``)."""
        for name, score in self.task.task_scores(metrics).items():
            if score > self.best_per_task.get(name, {}).get("score", -math.inf):
                self.best_per_task[name] = {"step": self.step, "score": score}
                folder = self.run_dir / "best-per-task" / name
                self.model.save_pretrained(folder)
                own = {k: v for k, v in metrics.items() if k.startswith(f"{name}/")}
                (folder / "selected.json").write_text(json.dumps({"step": self.step, "validation": own}, indent=2) + "\n")

    def _finish(self, early_stopped: bool) -> dict[str, Any]:
        summary: dict[str, Any] = {"status": "early_stopped" if early_stopped else "done", "step": self.step}
        if not self.ctx.is_main:
            return summary
        test = self.evaluate_best("test")
        summary.update(
            best_step=self.best["step"],
            validation=self.best["metrics"],
            test=test,
            wall_time_seconds=round(self.elapsed, 1),
            world_size=self.ctx.world_size,
        )
        tmp = self.run_dir / "metrics.json.tmp"
        tmp.write_text(json.dumps(summary, indent=2) + "\n")
        tmp.replace(self.run_dir / "metrics.json")
        self.write_record(summary["status"], test)
        return summary

    def _tensorboard(self, record: dict[str, Any]) -> None:
        if self._writer is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # TensorBoard is optional
                self._writer = False
                return
            self._writer = SummaryWriter(str(self.run_dir / "tensorboard"))
        if self._writer:
            for key, value in record.items():
                if isinstance(value, (int, float)) and key != "step":
                    self._writer.add_scalar(key, value, record["step"])


def _plain(metrics: dict[str, Any]) -> dict[str, Any]:
    """Metrics as a record holds them: numbers, strings and lists (no None)."""
    return {k: v for k, v in metrics.items() if v is not None}


def _drop_torn_line(log: Path) -> None:
    """Cut an evaluation line that a kill (or a full disk) left without its newline: resuming
    evaluates that step again from the checkpoint before it, and the next line appended to the
    fragment would make both unreadable (every later record of the run would fail on it)."""
    if not log.is_file():
        return
    text = log.read_bytes()
    if text and not text.endswith(b"\n"):
        with open(log, "r+b") as f:
            f.truncate(text.rfind(b"\n") + 1)


def _progress(start: int, total: int, *, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=start, unit="step", dynamic_ncols=True, mininterval=1.0)


def selection_key(metrics: dict[str, Any] | None) -> tuple[float, float]:
    """What the kept ("best") model maximises: the validation ``score``, then the task's
    ``tie_break`` among equal scores (a saturated accuracy leaves nothing else to select on;
    a task without one keeps the first model to reach a score)."""
    if not metrics:
        return (-math.inf, -math.inf)
    return (metrics["score"], metrics.get("tie_break", -math.inf))


def check_run_config(run_dir: str | Path, experiment: ExperimentConfig, *, derived: tuple[str, ...] = ()) -> None:
    """Raise :class:`ConfigError` if ``run_dir`` holds a run whose saved config differs from
    ``experiment`` in anything but :data:`RESUMABLE_CHANGES`, the task's ``test_only``
    options and the ``derived`` model fields (which the task fills in when the model is built)."""
    saved = Path(run_dir) / "config.yaml"
    if not saved.is_file():
        return
    old = ExperimentConfig.from_dict(_yaml_load(saved), source=str(saved))
    for section, key, a, b in _config_diff(old.to_dict(), experiment.to_dict()):
        if ((section == "train" and key in RESUMABLE_CHANGES) or (section == "model" and key in derived)
                or (section == "task" and key in type(experiment.task).test_only)):
            continue
        raise ConfigError(
            f"{run_dir} holds a run with a different config ({section}.{key}: {a!r} there, {b!r} now); "
            "use another --out, or the same config to resume"
        )


def _yaml_load(path: Path) -> Any:
    return load_yaml(path.read_text())


def _config_diff(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    out = []
    for section in ("model_class", "model", "task", "train"):
        x, y = a.get(section), b.get(section)
        if not isinstance(x, dict) or not isinstance(y, dict):
            if x != y:
                out.append((section, "", x, y))
            continue
        for key in sorted(set(x) | set(y)):
            if x.get(key) != y.get(key):
                out.append((section, key, x.get(key), y.get(key)))
    return out
