"""Data parallelism on PyTorch's own engine: ``torchrun`` + DistributedDataParallel.

``torchrun --nproc_per_node=2 -m universal_transformer train CONFIG --out RUN`` sets the
environment this module reads; gloo is used on CPU, NCCL on GPUs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from ..config import ConfigError


# Rank 0 evaluates alone (validation, and the test split at the end) while the other ranks
# wait in a collective; a long evaluation (bAbI's test stories, beam search over a test set)
# outlasts torch's defaults (NCCL 10 minutes, gloo 30) and would kill a healthy run. A
# process that fails still stops them all at once: torchrun ends the other workers.
COLLECTIVE_TIMEOUT = timedelta(hours=4)


@dataclass
class DistributedContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def check_device(device: str | None) -> None:
    """Refuse a CUDA device on a machine without one, with what to do instead (torch would
    fail deep inside the first ``.to`` with an assertion)."""
    if device is not None and device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r}: no CUDA device is visible to this torch "
                          f"({torch.__version__}); use --device cpu")


def default_device(device: str | None) -> str:
    """``device``, or (None: auto) CUDA when present, else the CPU."""
    return device or ("cuda" if torch.cuda.is_available() else "cpu")


def init_distributed(device: str | None = None) -> DistributedContext:
    """Join the process group if launched by torchrun (``WORLD_SIZE`` > 1); else a single process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    check_device(device)
    use_cuda = default_device(device).startswith("cuda")
    if use_cuda:
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
    else:
        dev = torch.device("cpu")
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if use_cuda else "gloo", timeout=COLLECTIVE_TIMEOUT)
    return DistributedContext(rank, world, local, dev)


def shutdown_distributed(*, synchronize: bool = True) -> None:
    """Leave the process group (if any).

    ``synchronize`` (a normal end): first wait until every process has got here, so that none
    tears down its connections while another still works (rank 0 scores the test split alone
    after the others are done), the usual remedy for teardown races (a two-process gloo test
    once ended with one process aborted, "terminate called without an active exception", where
    they left at different times). After an error, pass False and leave at once: the others
    may never arrive.
    """
    if not dist.is_initialized():
        return
    if synchronize and dist.get_world_size() > 1:
        dist.barrier()
    dist.destroy_process_group()


@contextmanager
def distributed_session() -> Iterator[None]:
    """Leave the process group when the block ends: together with the others when it ends
    normally (returns included), at once when it raises."""
    try:
        yield
    except BaseException:
        shutdown_distributed(synchronize=False)
        raise
    shutdown_distributed()


def all_reduce_flag(flag: bool, ctx: DistributedContext) -> bool:
    """True on every rank if it is True on any (e.g. a NaN seen by one rank stops all)."""
    if not ctx.enabled:
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=ctx.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)
