"""``scripts/device_train.sh``: trains the named runs on CUDA side by side, optionally scores them
on test, and packs every run's record and logs into ``$OUT/records.tgz`` and the runs named in
``PACK`` (best model, newest checkpoint) into ``$OUT/NAME.tgz``; driven with a stand-in ``python3``
that writes what ``ut train`` and ``ut eval`` would."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "device_train.sh"

# `python3 -m universal_transformer train CONFIG --out RUN ... --record GROUP/NAME`: writes a run
# directory with two checkpoints and the record; `... eval RUN --split test ... --record GROUP/NAME`
# writes RUN/eval-test.json and the record. Both log their arguments.
FAKE_PYTHON = """#!/usr/bin/env bash
args="$*"
command=$3
[ "$command" = eval ] && run=$4
while [ $# -gt 0 ]; do
  case $1 in --out) run=$2;; --record) record=$2;; esac; shift
done
echo "$args"
if [ "$command" = eval ]; then
  echo '{}' > "$run/eval-test.json"; echo '{"test": 1}' > "results/$record.json"; exit 0
fi
mkdir -p "$run/checkpoints" "$run/best" "results/$(dirname "$record")"
touch "$run/config.yaml" "$run/metrics.jsonl" "$run/best/model.safetensors"
touch "$run/checkpoints/step-00000100.pt" "$run/checkpoints/step-00000200.pt"
echo '{}' > "results/$record.json"
"""


def _run(tmp_path: Path, names: list[str], *, out: Path | None = None, configs: str = "configs/lte",
         **env_vars: str) -> subprocess.CompletedProcess:
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake), "EXTRA": "--set task.x=1", **env_vars}
    for name in ("OUT", "PACK", "BUNDLE", "TEST", "TAG", "EVAL_SECONDS", "DEVICE"):
        if name not in env_vars:
            env.pop(name, None)
    if out is not None:
        env["OUT"] = str(out)
    return subprocess.run(["bash", str(SCRIPT), configs, "lte", "runs/lte", "420", *names], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)


def _members(archive: Path) -> set[str]:
    with tarfile.open(archive) as tar:
        return set(tar.getnames())


def test_each_run_comes_back_with_its_newest_checkpoint_and_every_record_in_one_archive(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = _run(tmp_path, ["copy-ut", "reverse-ut"], out=out)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["copy-ut.tgz", "records.tgz", "reverse-ut.tgz"]
    run = _members(out / "copy-ut.tgz")
    assert {"runs/lte/copy-ut/checkpoints/step-00000200.pt", "runs/lte/copy-ut/best/model.safetensors"} <= run
    assert "runs/lte/copy-ut/checkpoints/step-00000100.pt" not in run  # the newest is enough to resume
    records = _members(out / "records.tgz")
    for name in ("copy-ut", "reverse-ut"):
        assert {f"runs/lte/{name}/config.yaml", f"runs/lte/{name}.log", f"results/lte/{name}.json"} <= records
    assert not any(m.endswith(".pt") for m in records)
    args = (tmp_path / "runs/lte/copy-ut.log").read_text()
    assert args.startswith("-m universal_transformer train configs/lte/copy-ut.yaml --out runs/lte/copy-ut")
    assert "--device cuda" in args and "--time-limit 420" in args and args.rstrip().endswith("--set task.x=1")
    assert " eval " not in args  # no test scoring unless TEST=1


def test_test_scores_every_run_and_pack_chooses_the_runs_that_come_back_whole(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    names = [f"run{i}" for i in range(9)]  # more than come back as files: records.tgz holds them all
    result = _run(tmp_path, names, out=out, TEST="1", PACK="run3")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["records.tgz", "run3.tgz"]
    records = _members(out / "records.tgz")
    assert all(f"runs/lte/{name}/eval-test.json" in records for name in names)
    log = (tmp_path / "runs/lte/run0.log").read_text().splitlines()
    assert log[-1] == "-m universal_transformer eval runs/lte/run0 --split test --device cuda --record lte/run0"
    assert (tmp_path / "results/lte/run0.json").read_text().strip() == '{"test": 1}'


def test_refuses_without_out_or_with_more_packed_runs_than_come_back(tmp_path):
    unset = _run(tmp_path, ["copy-ut"])
    assert unset.returncode != 0 and "OUT is not set" in unset.stderr
    many = _run(tmp_path, ["a"], out=tmp_path, PACK=" ".join(f"run{i}" for i in range(8)))
    assert many.returncode == 2 and "PACK names more runs than come back" in many.stderr
    bad = _run(tmp_path, ["a"], out=tmp_path, BUNDLE="0")
    assert bad.returncode == 2 and "BUNDLE must be a positive number" in bad.stderr


def test_a_grid_file_names_the_runs_and_tag_names_the_records_archive(tmp_path):
    grid = tmp_path / "pre.grid"
    grid.write_text("# comment\nrev-pre  configs/alg/reverse-ut.yaml  model.norm=pre train.lr=[1,2]\n")
    out = tmp_path / "out"
    out.mkdir()
    result = _run(tmp_path, ["rev-pre"], out=out, configs=str(grid), TAG="pre", TEST="1", EVAL_SECONDS="30")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["records-pre.tgz", "rev-pre.tgz"]
    log = (tmp_path / "runs/lte/rev-pre.log").read_text().splitlines()
    assert log[0] == ("-m universal_transformer train configs/alg/reverse-ut.yaml --out runs/lte/rev-pre --device cuda"
                      " --no-progress --time-limit 420 --record lte/rev-pre --set model.norm=pre --set train.lr=[1,2]"
                      " --set task.x=1")
    assert log[-1].startswith("-m universal_transformer eval runs/lte/rev-pre")  # through `timeout 30`
    unknown = _run(tmp_path, ["nope"], out=out, configs=str(grid))
    assert unknown.returncode == 2 and "has no run named 'nope'" in unknown.stderr


def test_eval_seconds_bounds_each_scoring(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    slow = tmp_path / "python3"
    result = _run(tmp_path, ["a"], out=out, TEST="1")  # writes the stand-in python3 and a run
    assert result.returncode == 0, result.stderr
    slow.write_text(slow.read_text().replace("echo \"$args\"", "echo \"$args\"; [ \"$command\" = eval ] && sleep 30"))
    env = {**os.environ, "PYTHON": str(slow), "OUT": str(out), "TEST": "1", "EVAL_SECONDS": "1"}
    timed = subprocess.run(["bash", str(SCRIPT), "configs/lte", "lte", "runs/lte", "0", "a"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=20)
    assert timed.returncode == 1 and "a: ut eval failed" in timed.stderr
    assert (out / "records.tgz").exists()  # packed all the same


def test_names_with_slashes_pack_under_the_whole_name(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    grid = tmp_path / "seeds.grid"
    grid.write_text("a/seed-1  configs/alg/a.yaml  train.seed=1\nb/seed-1  configs/alg/b.yaml  train.seed=1\n")
    result = _run(tmp_path, ["a/seed-1", "b/seed-1"], out=out, configs=str(grid))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["a-seed-1.tgz", "b-seed-1.tgz", "records.tgz"]
    assert "runs/lte/b/seed-1/best/model.safetensors" in _members(out / "b-seed-1.tgz")


def test_bundle_packs_several_runs_to_an_archive_so_that_more_runs_come_back(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    grid = tmp_path / "seeds.grid"
    grid.write_text("".join(f"t16/seed-{s}  configs/babi/t.yaml  train.seed={s}\n" for s in range(1, 10)))
    names = [f"t16/seed-{s}" for s in range(1, 10)]  # nine runs: more than 7 files, but 3 archives of 4
    result = _run(tmp_path, names, out=out, configs=str(grid), BUNDLE="4")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["records.tgz", "t16-seed-1_and_3_more.tgz",
                                                     "t16-seed-5_and_3_more.tgz", "t16-seed-9.tgz"]
    first = _members(out / "t16-seed-1_and_3_more.tgz")
    for s in range(1, 5):
        assert {f"runs/lte/t16/seed-{s}/best/model.safetensors", f"runs/lte/t16/seed-{s}/checkpoints/step-00000200.pt"} <= first
    assert not any("seed-5" in m for m in first)
    too_many = _run(tmp_path, names, out=out, configs=str(grid), BUNDLE="1", PACK=" ".join(names))
    assert too_many.returncode == 2 and "at most 7 archives of BUNDLE=1 runs each" in too_many.stderr
