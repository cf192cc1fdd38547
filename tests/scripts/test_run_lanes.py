"""``scripts/run_lanes.sh``: two lanes take the runs as a queue, skip finished runs, and stop
by a DEADLINE; driven with a stand-in ``ut`` that only logs and sleeps."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "run_lanes.sh"

# Logs "NAME start|end TIME" to $LOG; sleeps 1.5 s for a run named long*, else 0.2 s; then
# writes its arguments to RUN_DIR/train-args and RUN_DIR/metrics.json, which marks the run
# finished, and RUN_DIR/best (a run named endless* never finishes: it appends its arguments and leaves RUN_DIR/best). `ut eval RUN_DIR ...` logs "NAME eval TIME" and writes its arguments to RUN_DIR/eval-args;
# `ut publish RUN_DIR ...` logs "NAME publish TIME" and writes them to RUN_DIR/publish-args (for a run
# named big*, it fails, as over the size cap).
FAKE_UT = """#!/usr/bin/env bash
if [ "$1" = eval ]; then
  echo "$(basename "$2") eval $(date +%s.%N)" >> "$LOG"; echo "$*" > "$2/eval-args"; exit 0
fi
if [ "$1" = publish ]; then
  [[ $(basename "$2") == big* ]] && { echo "over the cap" >&2; exit 1; }
  echo "$(basename "$2") publish $(date +%s.%N)" >> "$LOG"; echo "$*" > "$2/publish-args"; exit 0
fi
args="$*"
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
name=$(basename "$out")
echo "$name start $(date +%s.%N)" >> "$LOG"
case $name in long*) sleep 1.5;; *) sleep 0.2;; esac
if [[ $name == endless* ]]; then  # never finishes: each chunk only leaves a best model
  mkdir -p "$out/best" && echo "$args" >> "$out/train-args" && echo "$name end $(date +%s.%N)" >> "$LOG" && exit 0
fi
mkdir -p "$out/best" && echo "$args" > "$out/train-args" && echo '{}' > "$out/metrics.json"
echo "$name end $(date +%s.%N)" >> "$LOG"
"""


def _run(tmp_path: Path, names: list[str], configs: Path | None = None, secs: str = "60",
         **env: str) -> tuple[subprocess.CompletedProcess, dict[str, dict[str, float]]]:
    fake = tmp_path / "ut"
    fake.write_text(FAKE_UT)
    fake.chmod(0o755)
    log = tmp_path / "log"
    log.unlink(missing_ok=True)
    configs = configs or tmp_path / "configs"
    result = subprocess.run(["bash", str(SCRIPT), str(configs), "group", str(tmp_path / "runs"), secs, *names],
                            env={**os.environ, "UT": str(fake), "LOG": str(log), **env},
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    events: dict[str, dict[str, float]] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        name, what, when = line.split()
        events.setdefault(name, {})[what] = float(when)
    return result, events


def test_a_free_lane_takes_the_next_run(tmp_path):
    result, events = _run(tmp_path, ["long", "a", "b", "c"])
    assert result.returncode == 0, result.stderr
    assert set(events) == {"long", "a", "b", "c"}
    # the second lane ran a, b and c one after another while the first was still on `long`
    assert events["a"]["end"] <= events["b"]["start"] and events["b"]["end"] <= events["c"]["start"]
    assert events["c"]["start"] < events["long"]["end"]
    assert (tmp_path / "runs" / "c.log").read_text().startswith("== c: chunk at ")

    again, events = _run(tmp_path, ["long", "a", "b", "c"])  # all finished: nothing runs
    assert again.returncode == 0 and events == {}


def test_deadline_passed_or_near_starts_nothing(tmp_path):
    result, events = _run(tmp_path, ["a"], DEADLINE="-1 minute")
    assert result.returncode == 2 and "has passed" in result.stderr and events == {}
    near, events = _run(tmp_path, ["a", "b"], DEADLINE="+1 minute")  # less than the 2 minutes a chunk needs
    assert near.returncode == 3 and events == {}
    assert "DEADLINE" in (tmp_path / "runs" / "a.log").read_text()


def test_a_time_of_day_long_past_means_tomorrow_and_one_just_past_has_passed(tmp_path):
    # a session that starts at 22:30 and must stop at "00:35" runs over midnight
    long_ago = time.strftime("%H:%M", time.localtime(time.time() - 13 * 3600))
    result, events = _run(tmp_path, ["a"], DEADLINE=long_ago)
    assert result.returncode == 0, result.stderr
    assert set(events) == {"a"}
    # a queue chained after one that ran to "14:50" starts at 14:51: it must not run till tomorrow
    just_past = time.strftime("%H:%M", time.localtime(time.time() - 120))
    late, events = _run(tmp_path, ["b"], DEADLINE=just_past)
    assert late.returncode == 2 and "has passed" in late.stderr and events == {}


def test_at_the_deadline_an_unfinished_run_with_a_best_model_is_scored_on_test(tmp_path):
    (tmp_path / "runs" / "partial" / "best").mkdir(parents=True)  # an earlier chunk's best model
    (tmp_path / "runs" / "fresh").mkdir(parents=True)  # no evaluation yet: nothing to score
    near, events = _run(tmp_path, ["partial", "fresh"], DEADLINE="+1 minute")
    assert near.returncode == 3 and set(events) == {"partial"} and set(events["partial"]) == {"eval"}
    args = (tmp_path / "runs" / "partial" / "eval-args").read_text().split()
    assert args == ["eval", str(tmp_path / "runs" / "partial"), "--split", "test", "--threads", "1",
                    "--record", "group/partial"]
    assert "scoring its best model on test" in (tmp_path / "runs" / "partial.log").read_text()
    # SET's training options are not evaluation options: `ut eval` gets only the task's
    (tmp_path / "runs" / "partial" / "eval-args").unlink()
    near, events = _run(tmp_path, ["partial"], DEADLINE="+1 minute", SET="task.set=en train.early_stopping=10")
    args = (tmp_path / "runs" / "partial" / "eval-args").read_text().split()
    assert near.returncode == 3 and args[-4:] == ["--set", "task.set=en", "--record", "group/partial"]


def test_publish_puts_each_best_model_scored_here_beside_its_record(tmp_path):
    (tmp_path / "runs" / "partial" / "best").mkdir(parents=True)
    near, events = _run(tmp_path, ["partial"], DEADLINE="+1 minute", PUBLISH="1")
    assert near.returncode == 3 and events["partial"]["eval"] <= events["partial"]["publish"]
    args = (tmp_path / "runs" / "partial" / "publish-args").read_text().split()
    assert args == ["publish", str(tmp_path / "runs" / "partial"), "--name", "group/partial"]
    # a run that finishes here is published after its last chunk; one finished before is not again
    result, events = _run(tmp_path, ["a"], PUBLISH="1")
    assert result.returncode == 0 and events["a"]["end"] <= events["a"]["publish"]
    again, events = _run(tmp_path, ["a"], PUBLISH="1")
    assert again.returncode == 0 and events == {}
    # without PUBLISH nothing is published
    result, events = _run(tmp_path, ["b"])
    assert result.returncode == 0 and set(events["b"]) == {"start", "end"}
    # a publish that fails is logged, and the queue goes on
    result, events = _run(tmp_path, ["big", "c"], PUBLISH="1", LANES="1")
    assert result.returncode == 0 and set(events) == {"big", "c"}
    log = (tmp_path / "runs" / "big.log").read_text()
    assert "over the cap" in log and "big: not published" in log


def test_run_seconds_caps_each_run_then_scores_it_and_takes_the_next(tmp_path):
    # 121 s leaves one to two seconds of chunks (0.2 s each here, more on a loaded machine) before
    # less than two minutes are left: the script counts whole seconds (`date +%s`), so the window
    # ends at the second after the one the run started in; each chunk's limit is what is left
    result, events = _run(tmp_path, ["endless", "a"], secs="600", LANES="1", RUN_SECONDS="121")
    assert result.returncode == 0, result.stderr
    assert set(events["endless"]) == {"start", "end", "eval"} and events["endless"]["eval"] <= events["a"]["start"]
    limits = [int(line.split()[line.split().index("--time-limit") + 1])
              for line in (tmp_path / "runs" / "endless" / "train-args").read_text().splitlines()]
    assert len(limits) >= 2 and 120 <= limits[0] <= 121  # cut from 600 to what is left
    assert limits == sorted(limits, reverse=True) and limits[-1] >= 118  # less with each chunk, never below 2 min
    log = (tmp_path / "runs" / "endless.log").read_text()
    assert "RUN_SECONDS=121 spent" in log and "scoring its best model on test" in log
    bad, events = _run(tmp_path, ["a"], RUN_SECONDS="soon")
    assert bad.returncode == 2 and "RUN_SECONDS must be a positive number" in bad.stderr and events == {}


def test_one_lane_runs_the_queue_one_after_another(tmp_path):
    result, events = _run(tmp_path, ["long", "a"], LANES="1")
    assert result.returncode == 0, result.stderr
    assert events["long"]["end"] <= events["a"]["start"]
    bad, events = _run(tmp_path, ["a"], LANES="0")
    assert bad.returncode == 2 and "LANES must be a positive number" in bad.stderr and events == {}


def test_a_grid_file_names_the_runs_with_their_configs_and_overrides(tmp_path):
    grid = tmp_path / "study.grid"
    grid.write_text("# a comment\nsingle/task1  configs/a.yaml  task.tasks=1 model.x=2  # trailing\n\n"
                    "single/task2  configs/a.yaml  task.tasks=2\njoint  configs/b.yaml\n")
    result, events = _run(tmp_path, [], configs=grid)  # no names: every run of the grid
    assert result.returncode == 0, result.stderr
    assert set(events) == {"task1", "task2", "joint"}
    runs = tmp_path / "runs"
    args = (runs / "single" / "task1" / "train-args").read_text().split()
    assert args[:2] == ["train", "configs/a.yaml"]
    assert args[args.index("--time-limit") + 2:] == ["--set", "task.tasks=1", "--set", "model.x=2", "--record", "group/single/task1"]
    assert (runs / "joint" / "train-args").read_text().split()[-2:] == ["--record", "group/joint"]
    assert (runs / "single" / "task2.log").exists()
    bad, events = _run(tmp_path, ["single/task3"], configs=grid)
    assert bad.returncode == 2 and "has no run named 'single/task3'" in bad.stderr and events == {}
    grid.write_text("lonely\n")
    bad, events = _run(tmp_path, [], configs=grid)
    assert bad.returncode == 2 and "study.grid:1: expected 'NAME CONFIG" in bad.stderr


def test_a_grid_recipe_stands_for_its_overrides_where_a_run_cites_it(tmp_path):
    grid = tmp_path / "study.grid"
    grid.write_text("@v2  model.norm=pre train.lr=[1,2]  # the recipe\n"
                    "single/task1  configs/a.yaml  task.tasks=1 @v2 model.x=2\n")
    result, _ = _run(tmp_path, [], configs=grid)
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "runs" / "single" / "task1" / "train-args").read_text().split()
    assert args[args.index("--time-limit") + 2:] == [
        "--set", "task.tasks=1", "--set", "model.norm=pre", "--set", "train.lr=[1,2]", "--set", "model.x=2",
        "--record", "group/single/task1"]
    grid.write_text("single/task1  configs/a.yaml  @v3\n@v3  model.norm=pre\n")  # cited before it is defined
    bad, events = _run(tmp_path, [], configs=grid)
    assert bad.returncode == 2 and "study.grid:1: recipe '@v3' is not defined above" in bad.stderr and events == {}


def test_a_run_finished_on_another_machine_is_not_run_again_and_a_partial_one_is(tmp_path):
    # results/GROUP/NAME.json as `ut` writes it (sorted keys, two-space indent), no run folder here
    records = tmp_path / "results" / "group"
    records.mkdir(parents=True)
    (records / "done.json").write_text('{\n  "status": "early_stopped",\n  "steps": 900\n}\n')
    (records / "cut.json").write_text('{\n  "status": "time_limit",\n  "steps": 900\n}\n')
    result, events = _run(tmp_path, ["done", "cut"])
    assert result.returncode == 0, result.stderr
    assert set(events) == {"cut"}  # the partial one starts afresh (ut keeps its record till it passes it)
    assert "finished elsewhere" in (tmp_path / "runs" / "done.log").read_text()
    (tmp_path / "runs" / "done").mkdir()  # its run folder here: the lane resumes it as before
    result, events = _run(tmp_path, ["done"])
    assert result.returncode == 0 and set(events) == {"done"}


def test_without_ut_it_stops_at_once_instead_of_failing_every_run(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "a.yaml").write_text("{}\n")
    result, events = _run(tmp_path, ["a"], UT=str(tmp_path / "no-such-ut"))
    assert result.returncode == 2 and "no-such-ut: not found" in result.stderr
    assert not (tmp_path / "runs").exists() and not events
