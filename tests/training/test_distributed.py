"""torchrun with two CPU processes (gloo) equals one process with the combined batch."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist

from .conftest import TINY, run_ut


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo")
def test_two_processes_equal_one_with_the_combined_batch(tmp_path, tiny_config):
    # Dropout and random position offsets draw from each process's own RNG; switch them
    # off so that the two runs must agree to rounding. Adam's eps is raised: with eps=1e-9 a
    # gradient that is zero up to rounding gets a full-size update of either sign, which
    # would turn summation-order noise into visible weight differences.
    common = ["--no-progress", "--set", "model.dropout=0.0", "--set", "model.embedding_dropout=0.0",
              "--set", "train.max_position_offset=0", "--set", "train.steps=8",
              "--set", "train.eps=0.001"]
    single = run_ut("train", str(tiny_config), "--out", str(tmp_path / "one"), *common)
    assert single.returncode == 0, single.stderr
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    ddp = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "universal_transformer", "train", str(tiny_config), "--out", str(tmp_path / "two"), *common],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert ddp.returncode == 0, ddp.stderr[-3000:]
    a = torch.load(tmp_path / "one" / "checkpoints" / "step-00000008.pt", weights_only=False)
    b = torch.load(tmp_path / "two" / "checkpoints" / "step-00000008.pt", weights_only=False)
    moved = False
    first = torch.load(tmp_path / "one" / "checkpoints" / "step-00000004.pt", weights_only=False)
    for key in a["model"]:
        torch.testing.assert_close(a["model"][key], b["model"][key], atol=2e-5, rtol=1e-4, msg=lambda m: f"{key}: {m}")
        moved |= not torch.allclose(first["model"][key], a["model"][key])
    assert moved  # training changed the weights, so equality is not trivial
    assert "world_size" in (tmp_path / "two" / "metrics.json").read_text()


def _train_straight_and_resumed(rank: int, port: int, root: str) -> None:
    """One of two processes: 4 steps straight, and 2 steps then a resumption to 4."""
    import yaml

    from universal_transformer.training.config import ExperimentConfig
    from universal_transformer.training.distributed import shutdown_distributed
    from universal_transformer.training.trainer import Trainer

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", RANK=str(rank), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    for out, steps in (("straight", 4), ("resumed", 2), ("resumed", 4)):
        data = yaml.safe_load(yaml.safe_dump(TINY))
        data["train"].update(steps=steps, eval_every=2)
        Trainer(ExperimentConfig.from_dict(data), f"{root}/{out}", device="cpu", progress=False, verbose=False).fit()
    shutdown_distributed()


def _draws_after_building(rank: int, port: int, root: str) -> None:
    """One of two processes: the weights it built and the next numbers its dropout would draw."""
    import yaml

    from universal_transformer.training.config import ExperimentConfig
    from universal_transformer.training.distributed import shutdown_distributed
    from universal_transformer.training.trainer import Trainer

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", RANK=str(rank), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    trainer = Trainer(ExperimentConfig.from_dict(yaml.safe_load(yaml.safe_dump(TINY))), f"{root}/run", device="cpu",
                      progress=False, verbose=False)
    torch.save({"weights": trainer.model.state_dict(), "draws": torch.rand(16)}, f"{root}/rank{rank}.pt")
    shutdown_distributed()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo")
def test_processes_start_from_one_model_and_draw_their_own_dropout(tmp_path):
    """With one seed for all, every process would drop the same units of its rows."""
    import torch.multiprocessing as mp

    mp.spawn(_draws_after_building, args=(_free_port(), str(tmp_path)), nprocs=2)
    zero, one = (torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in (0, 1))
    for key in zero["weights"]:
        assert torch.equal(zero["weights"][key], one["weights"][key]), key
    assert not torch.equal(zero["draws"], one["draws"])


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo")
def test_two_processes_with_dropout_resume_exactly(tmp_path):
    """Each process's dropout draws its own numbers (its part of the batch differs, and so,
    with ACT, does how many it draws): a resumed process continues its own RNG states, not
    the main process's."""
    import torch.multiprocessing as mp

    mp.spawn(_train_straight_and_resumed, args=(_free_port(), str(tmp_path)), nprocs=2)
    a = torch.load(tmp_path / "straight" / "checkpoints" / "step-00000004.pt", weights_only=False)
    b = torch.load(tmp_path / "resumed" / "checkpoints" / "step-00000004.pt", weights_only=False)
    assert len(b["rng_per_rank"]) == 2
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or not dist.is_nccl_available(), reason="needs a CUDA device and NCCL")
def test_data_parallel_training_on_nccl_reduces_only_cuda_tensors(tmp_path):
    """NCCL has no CPU collectives ("No backend type associated with device type cpu"): every
    tensor the trainer reduces must be on its device. One process in an NCCL group, with the
    trainer's collectives switched on, runs the same calls as torchrun on several GPUs."""
    import socket

    import yaml

    from universal_transformer.training.config import ExperimentConfig
    from universal_transformer.training.distributed import DistributedContext
    from universal_transformer.training.trainer import Trainer

    class Collective(DistributedContext):
        enabled = True  # a one-process group, as if there were several

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        data = yaml.safe_load(yaml.safe_dump(TINY))
        data["train"].update(steps=2, eval_every=2)
        ctx = Collective(0, 1, 0, torch.device("cuda", 0))
        summary = Trainer(ExperimentConfig.from_dict(data), tmp_path, ctx=ctx, progress=False, verbose=False).fit()
    finally:
        dist.destroy_process_group()
    assert summary["status"] == "done" and summary["step"] == 2


def test_other_ranks_wait_out_a_long_evaluation_on_rank_0(monkeypatch):
    """Rank 0 evaluates alone while the others wait in a collective: torch's default timeouts
    (NCCL 10 minutes, gloo 30) would end a run whose test evaluation takes longer."""
    from datetime import timedelta

    from universal_transformer.training import distributed

    calls = []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda **kwargs: calls.append(kwargs))
    ctx = distributed.init_distributed("cpu")
    assert ctx.enabled and calls[0]["backend"] == "gloo"
    assert calls[0].get("timeout", timedelta(minutes=30)) >= timedelta(hours=2)


def test_processes_leave_together_after_a_normal_end_and_at_once_after_an_error(monkeypatch):
    """A normal end (a time-limit return included) waits for every process before tearing the
    group down: rank 0 still scores the test split when the others finish, and a gloo process
    that left then was once seen to abort. After an error the others may never arrive."""
    from universal_transformer.training.distributed import distributed_session

    calls = []
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    monkeypatch.setattr(dist, "barrier", lambda: calls.append("barrier"))
    monkeypatch.setattr(dist, "destroy_process_group", lambda: calls.append("destroy"))

    def train(fail: bool) -> int:
        with distributed_session():
            if fail:
                raise RuntimeError("rank 0 failed")
            return 0

    assert train(False) == 0 and calls == ["barrier", "destroy"]
    calls.clear()
    with pytest.raises(RuntimeError, match="rank 0 failed"):
        train(True)
    assert calls == ["destroy"]
