"""The algorithmic tasks' tables and figures: cells, curves over lengths, depths and seeds."""

from __future__ import annotations

from universal_transformer.evaluation import docs
from universal_transformer.evaluation.docs import TABLES, model_label

from ..conftest import make_record
from .records import MODELS, algorithmic_record


def test_error_position_table_lists_the_records_that_measured_it():
    tenths = [0.5, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.125]
    measured = algorithmic_record("copy", "UT", 0.9, 0.0)
    measured.metrics["test"].update({"teacher_forced/len400/error_rate_by_tenth": tenths,
                                     "teacher_forced/len400/char_accuracy": 0.9,
                                     "teacher_forced/len400/end_accuracy": 0.25,
                                     "teacher_forced/len400/sequence_accuracy_before_end": 0.5})
    other = algorithmic_record("copy", "UT", 0.8, 0.0, family="algorithmic-offsets")
    other.metrics["test"]["teacher_forced/len400/error_rate_by_tenth"] = [0.0] * 10
    other.metrics["test"]["teacher_forced/len400/char_accuracy"] = 1.0
    table = TABLES["algorithmic-error-position"]([measured, other, algorithmic_record("reverse", "UT", 0.1, 0.0)])
    again = algorithmic_record("copy", "UT", 0.8, 0.0, family="algorithmic-source-eos", command="ut train a")
    again.metrics["test"].update(other.metrics["test"])
    rescored = algorithmic_record("copy", "UT", 0.8, 0.0, family="algorithmic-errors", command="ut train a")
    rescored.metrics["test"].update(measured.metrics["test"])
    shown = TABLES["algorithmic-error-position"]([again, rescored]).splitlines()[2:]
    assert len(shown) == 1 and shown[0].startswith("| algorithmic-errors/copy-UT |")  # the re-score only
    assert table.splitlines()[2:] == [
        "| algorithmic-offsets/copy-UT | " + "0.000 | " * 10 + "0.000 | - | - |",  # measured before the ends were
        "| algorithmic/copy-UT | 0.500 | 0.250 | " + "0.000 | " * 7 + "0.125 | 0.100 | 0.25 | 0.50 |",
    ]  # the record without the measurement is left out
    assert TABLES["algorithmic-error-position"]([]) == docs.NO_RECORDS


def test_model_label_from_config():
    for label, (model_class, model) in MODELS.items():
        assert model_label({"model_class": model_class, "model": model}) == label


def test_algorithmic_table_cells_best_seed_and_partial():
    records = [
        algorithmic_record("reverse", "UT", 0.061, 0.0),
        algorithmic_record("copy", "UT", 0.12, 0.01, score=0.1, seed=0),
        algorithmic_record("copy", "UT", 0.09, 0.02, score=0.9, seed=1),  # best on validation
        algorithmic_record("copy", "LSTM", 0.13, 0.0),
        algorithmic_record("copy", "UT+ACT", 0.034, 0.0, status="time_limit", steps=750, wall_time_seconds=252.3),
        algorithmic_record("addition", "Transformer", 0.1, 0.0),
        algorithmic_record("copy", "Transformer", 0.99, 0.99, family="demo"),  # another family: not shown
    ]
    assert TABLES["algorithmic-len400"](records) == "\n".join([
        "| model | Copy (len 400) | Reverse (len 400) | Addition (len 400) |",
        "|---|---|---|---|",
        "| LSTM | 0.13 / 0.00 | - | - |",
        "| Transformer | - | - | 0.10 / 0.00 |",
        "| UT | 0.09 / 0.02 | 0.06 / 0.00 | - |",
        "| UT+ACT | 0.03 / 0.00 (partial) | - | - |",
        "",
        "partial = stopped at its time limit: algorithmic/copy-UT+ACT (step 750, 252 s)",
    ])
    assert "| UT | 0.59 / 0.52 | 0.56 / 0.50 | - |" in TABLES["algorithmic-len40"](records)
    assert TABLES["algorithmic-len400"]([]) == docs.NO_RECORDS


def test_algorithmic_curve_all_lengths_ponder_and_status():
    records = [
        algorithmic_record("copy", "UT", 0.09, 0.0),
        algorithmic_record("copy", "UT+ACT", 0.03, 0.0, status="time_limit", steps=750, best_step=500, wall_time_seconds=252.3),
    ]
    records[0].metrics["test"]["len100/char_accuracy"] = 0.4  # a length only one run has, without seq accuracy
    assert TABLES["algorithmic-curve"](records) == "\n".join([
        "| task | model | len 40 | len 100 | len 400 | ponder (len 400) | steps | best step | wall time | status |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| copy | UT | 0.59 / 0.50 | 0.40 / - | 0.09 / 0.00 | - | 1000 | 800 | 100 s | done |",
        "| copy | UT+ACT | 0.53 / 0.50 | - | 0.03 / 0.00 | 2.25 | 750 | 500 | 252 s | partial |",
    ])
    # the same runs scored teacher-forced (metrics teacher_forced/lenN/...): "-" where a run has none
    records[0].metrics["test"].update({"teacher_forced/len40/char_accuracy": 1.0,
                                       "teacher_forced/len40/sequence_accuracy": 1.0,
                                       "teacher_forced/len400/char_accuracy": 0.948,
                                       "teacher_forced/len400/sequence_accuracy": 0.0})
    forced = TABLES["algorithmic-curve-teacher-forced"](records).splitlines()
    assert forced[2] == "| copy | UT | 1.00 / 1.00 | - | 0.95 / 0.00 | - | 1000 | 800 | 100 s | done |"
    assert forced[3].startswith("| copy | UT+ACT | - | - | - | 2.25 |")
    # a cell that one of several runs fills: the footnote names the run shown and the others
    bigger = algorithmic_record("copy", "UT", 0.5, 0.25, score=0.9)
    bigger.experiment = "algorithmic/copy-UT-b8k"
    table = TABLES["algorithmic-curve"]([*records, bigger])
    assert "| copy | UT | 1.00 / 0.75 | 0.50 / 0.25 |" in table  # the better on validation
    assert table.endswith("\n\nbest on validation of several runs: copy UT: algorithmic/copy-UT-b8k "
                          "(- parameters; also algorithmic/copy-UT (-))")
    assert TABLES["algorithmic-mixed-lengths"](records) == docs.NO_RECORDS
    records[0].metrics["test"].update({"upto400/char_accuracy": 0.5, "upto400/sequence_accuracy": 0.25,
                                       "teacher_forced/upto400/char_accuracy": 0.97,
                                       "teacher_forced/upto400/sequence_accuracy": 0.41})
    assert TABLES["algorithmic-mixed-lengths"](records) == "\n".join([
        "| task | model | lengths 1..400, greedy | lengths 1..400, teacher-forced |",
        "|---|---|---|---|",
        "| copy | UT | 0.50 / 0.25 | 0.97 / 0.41 |",
        "| copy | UT+ACT | - | - |",
    ])
    longer = [algorithmic_record("copy", "UT", 0.1, 0.0, family="algorithmic-longer"),
              algorithmic_record("copy", "UT", 0.3, 0.1, family="algorithmic-longer")]
    longer[0].experiment, longer[1].experiment = "algorithmic-longer/copy-ut-step8000", "algorithmic-longer/copy-ut-step5000"
    longer[1].metrics["test"].update({"teacher_forced/len400/char_accuracy": 0.95, "upto400/char_accuracy": 0.4,
                                      "upto400/sequence_accuracy": 0.2})
    assert TABLES["algorithmic-longer"](longer + records) == "\n".join([
        "| model | len 40, greedy | len 40, forced | len 400, greedy | len 400, forced | 1..400, greedy | 1..400, forced "
        "| steps (best) | wall time |",
        "|---|---|---|---|---|---|---|---|---|",
        "| copy-ut-step5000 | 0.80 / 0.60 | - | 0.30 / 0.10 | 0.95 / - | 0.40 / 0.20 | - | 1000 (800) | 100 s |",
        "| copy-ut-step8000 | 0.60 / 0.50 | - | 0.10 / 0.00 | - | - | - | 1000 (800) | 100 s |",
    ])
    beam = algorithmic_record("reverse", "UT", 0.3, 0.1, family="algorithmic-beam")
    beam.metrics["test"].update({"beam4/len40/char_accuracy": 0.9, "beam4/len40/sequence_accuracy": 0.7,
                                 "beam4/len400/char_accuracy": 0.35, "beam4/len400/sequence_accuracy": 0.125})
    assert TABLES["algorithmic-beam"]([beam]) == "\n".join([
        "| model | len 40, greedy | len 40, forced | len 40, beam 4 | len 400, greedy | len 400, forced | len 400, beam 4 "
        "| steps (best) | wall time |",
        "|---|---|---|---|---|---|---|---|---|",
        "| reverse-UT | 0.80 / 0.60 | - | 0.90 / 0.70 | 0.30 / 0.10 | - | 0.35 / 0.12 | 1000 (800) | 100 s |",
    ])
    demo = TABLES["demo"]([algorithmic_record("copy", "UT", 0.9, 0.8, family="demo")])
    assert "| copy | UT | 1.40 / 1.30 | 0.90 / 0.80 | 1000 | 800 | 100 s | done |" in demo


def test_length_curves_and_their_figure(tmp_path):
    records = [
        algorithmic_record("copy", "UT", 0.9, 0.3),
        algorithmic_record("copy", "LSTM", 0.4, 0.1),
        make_record("algorithmic/reverse-UT", task={"name": "algorithmic", "task": "reverse"},
                    status="time_limit"),  # partial: no test metrics
        algorithmic_record("copy", "UT", 0.1, 0.1, family="demo"),  # another family
    ]
    assert docs.length_curves(records) == {  # (_algorithmic puts char + 0.5, seq + 0.5 at length 40)
        "copy": {"LSTM": [(40, 0.4 + 0.5, 0.1 + 0.5), (400, 0.4, 0.1)], "UT": [(40, 0.9 + 0.5, 0.3 + 0.5), (400, 0.9, 0.3)]},
    }
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    assert docs.FIGURES["algorithmic-length"](records, first) and docs.FIGURES["algorithmic-length"](records, second)
    assert first.read_bytes() == second.read_bytes()  # no time stamp: the same records draw the same file
    assert not docs.FIGURES["algorithmic-length"](records[2:3], tmp_path / "c.png")
    assert not (tmp_path / "c.png").exists()
    written = docs.update_figures(tmp_path / "figures", records)
    assert written == {"algorithmic-length": tmp_path / "figures" / "algorithmic-length.png",
                       "demo-length": tmp_path / "figures" / "demo-length.png", "babi-ponder-study": None,
                       "babi-ponder": None, "algorithmic-position-free-length": None, "babi-stories-per-step": None,
                       "babi-stories-ponder": None, "babi-floor": None, "babi-floor-task17": None, "babi-floor-joint17": None,
                       "babi-stories-joint": None,
                       "babi-depth": None}
    docs.update_figures(tmp_path / "figures", records[2:3])  # nothing to draw any more: the figures go
    assert not list((tmp_path / "figures").iterdir())


def test_position_free_curves_pick_those_runs_greedy_and_teacher_forced(tmp_path):
    def run(label, char, *, positions, score):
        record = algorithmic_record("reverse", label, char, char / 2, family="algorithmic-prenorm", score=score)
        record.config["model"] = {**record.config["model"], "position_embedding": "sinusoid" if positions else "none"}
        record.metrics["test"].update({"teacher_forced/len40/char_accuracy": 1.0, "teacher_forced/len40/sequence_accuracy": 0.75,
                                       "teacher_forced/len400/char_accuracy": char + 0.25,
                                       "teacher_forced/len400/sequence_accuracy": 0.0})
        return record

    # the positional UT is best on validation, but only the position-free ones compete here
    records = [run("UT", 0.1, positions=True, score=0.9), run("UT", 0.25, positions=False, score=0.5),
               run("Transformer", 0.125, positions=False, score=0.5)]
    free = lambda r: r.config["model"]["position_embedding"] == "none"  # noqa: E731
    assert docs.length_curves(records, name="algorithmic-prenorm", prefix="teacher_forced/", select=free) == {
        "reverse": {"UT": [(40, 1.0, 0.75), (400, 0.5, 0.0)], "Transformer": [(40, 1.0, 0.75), (400, 0.375, 0.0)]}}
    assert docs.length_curves(records, name="algorithmic-prenorm")["reverse"]["UT"][1] == (400, 0.1, 0.05)
    assert docs.FIGURES["algorithmic-position-free-length"](records, tmp_path / "free.png")
    assert (tmp_path / "free.png").stat().st_size > 0
    assert not docs.FIGURES["algorithmic-position-free-length"](records[:1], tmp_path / "none.png")


def test_depth_table_puts_test_time_depths_under_their_trained_run():
    def rescored(record, steps, char, seq):
        return make_record(record.experiment + f"-steps{steps}", model_class=record.config["model_class"],
                           model=record.config["model"], task=record.config["task"], command=record.command,
                           test={"len40/char_accuracy": char, "len40/sequence_accuracy": seq, "inference_steps": steps},
                           status="rescored")

    ut = algorithmic_record("reverse", "UT", 0.5, 0.1, command="ut train configs/algorithmic/reverse-ut.yaml")
    ut.config["model"] = {**ut.config["model"], "num_steps": 4}  # a copy: MODELS is shared
    act = algorithmic_record("copy", "UT+ACT", 0.2, 0.0, command="ut train configs/algorithmic/copy-ut-act.yaml")
    act.config["model"] = {**act.config["model"], "num_steps": 4, "act_max_steps": 6}
    records = [ut, rescored(ut, 8, 0.75, 0.25), rescored(ut, 6, 0.625, 0.125), act, rescored(act, 12, 0.5, 0.0)]
    assert TABLES["algorithmic-depth"](records) == "\n".join([
        "| task | model | steps at test | len 40 |",
        "|---|---|---|---|",
        "| copy | UT+ACT | 6 (trained) | 0.70 / 0.50 |",
        "| copy | UT+ACT | 12 | 0.50 / 0.00 |",
        "| reverse | UT | 4 (trained) | 1.00 / 0.60 |",
        "| reverse | UT | 6 | 0.62 / 0.12 |",
        "| reverse | UT | 8 | 0.75 / 0.25 |",
    ])
    # the model tables keep showing the trained depth
    assert "| UT | - | 0.50 / 0.10 |" in TABLES["algorithmic-len400"](records)
    assert TABLES["algorithmic-depth"](records[:1]) == docs.NO_RECORDS
    # the demo's three runs share one command: their configs tell them apart
    demo = [algorithmic_record("copy", label, 0.5, 0.1, family="demo", command="ut demo --record") for label in ("UT", "UT+ACT")]
    table = TABLES["demo-depth"]([*demo, rescored(demo[0], 8, 0.75, 0.25)])
    assert [line.split(" | ")[2] for line in table.splitlines()[2:]] == ["? (trained)", "8"]  # no num_steps: unknown
    # another re-score of the run at its own depth (e.g. averaged checkpoints) is not its trained row
    averaged = make_record("algorithmic/reverse-UT-averaged", model_class=ut.config["model_class"], model=ut.config["model"],
                           task=ut.config["task"], command=ut.command, test={"len40/char_accuracy": 0.1}, status="rescored")
    assert "| reverse | UT | 4 (trained) | 1.00 / 0.60 |" in TABLES["algorithmic-depth"]([averaged, *records])
    # a depth re-score of the validation split stays out of the model tables too
    validation = make_record("algorithmic/reverse-UT-steps8", model_class=ut.config["model_class"], model=ut.config["model"],
                             task=ut.config["task"], command=ut.command, validation={"score": 9.0, "inference_steps": 8},
                             test=ut.metrics["test"], status="rescored")
    assert docs.inference_steps(validation) == 8
    assert "| reverse | UT | 4 (trained) |" in TABLES["algorithmic-depth"]([validation, ut])
    assert "rescored" not in TABLES["algorithmic-curve"]([validation, ut])
    # with a prefix, the metrics named so (teacher-forced); "-" where a run has none
    forced = rescored(ut, 8, 0.75, 0.25)
    forced.metrics["test"]["teacher_forced/len40/char_accuracy"] = 0.875
    forced.metrics["test"]["teacher_forced/len40/sequence_accuracy"] = 0.5
    assert docs.depth_table([ut, forced], name="algorithmic", prefix="teacher_forced/").splitlines()[2:] == [
        "| reverse | UT | 4 (trained) | - |", "| reverse | UT | 8 | 0.88 / 0.50 |"]


def test_seeds_rows_table_mean_and_sample_sd_over_the_seeds_of_an_experiment():
    def run(experiment, seed, char, seq, **test):
        return make_record(f"algorithmic-prenorm/{experiment}", seeds=[seed],
                           test={"len400/char_accuracy": char, "len400/sequence_accuracy": seq, **test})

    records = [run("rev-ut", 0, 0.5, 0.25), run("rev-ut/seed-1", 1, 0.75, 0.75), run("rev-ut/seed-2", 2, 1.0, 0.5),
               run("copy-ut", 0, 0.5, 0.0),  # one seed: no row
               make_record("algorithmic-prenorm/copy-ut/seed-1", seeds=[1]),  # not scored on test: left out
               run("add-ut", 0, 0.25, 0.0, **{"teacher_forced/len400/char_accuracy": 0.5,
                                              "teacher_forced/len400/sequence_accuracy": 0.0}),
               run("add-ut/seed-1", 1, 0.25, 0.0)]  # one seed lacks teacher forcing: "-"
    assert TABLES["algorithmic-prenorm-seeds"](records) == "\n".join([
        "| model | seeds | len 400, greedy | len 400, forced |",
        "|---|---|---|---|",
        "| add-ut | 0, 1 | 0.25 ± 0.00 / 0.00 ± 0.00 | - |",
        "| rev-ut | 0, 1, 2 | 0.75 ± 0.25 / 0.50 ± 0.25 | - |",
    ])
    assert TABLES["algorithmic-prenorm-seeds"](records[3:5]) == docs.NO_RECORDS


def test_window_rescores_are_rows_of_their_own_and_stay_out_of_the_model_tables():
    """A record re-scored with local attention at test time (``ut eval --attention-window``) is a
    different model: it is a row of the per-record tables, never a cell of the model tables, even
    where its validation score ties with its run's."""
    ut = algorithmic_record("copy", "UT", 0.5, 0.1, family="algorithmic-prenorm")
    windowed = make_record(ut.experiment + "-test-window2-source", model_class=ut.config["model_class"],
                           model=ut.config["model"], task=ut.config["task"], command=ut.command,
                           validation=ut.metrics["validation"], status="rescored",
                           test={"len40/char_accuracy": 1.0, "len40/sequence_accuracy": 1.0, "inference_attention_window": 2})
    assert docs.inference_window(windowed) == 2 and docs.inference_window(ut) is None
    assert docs.family([windowed, ut], "algorithmic-prenorm") == [ut]
    rows = TABLES["algorithmic-prenorm"]([windowed, ut])
    assert "| copy-UT-test-window2-source | 1.00 / 1.00 |" in rows and "| copy-UT | 1.00 / 0.60 |" in rows
    assert docs.length_curves([windowed, ut], name="algorithmic-prenorm")["copy"]["UT"] == [(40, 1.0, 0.6), (400, 0.5, 0.1)]
