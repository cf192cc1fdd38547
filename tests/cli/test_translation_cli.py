"""Machine translation through the command line, on a slice of Multi30k: tokenizer, train, average,
translate, evaluate, report."""

from __future__ import annotations

import gzip
import json
import os
import subprocess

import yaml

from universal_transformer.data.parallel import find_file, read_lines
from universal_transformer.evaluation.docs import TABLES
from universal_transformer.evaluation.records import RunRecord

from ..data.test_parallel import MULTI30K, needs_data
from ..training.conftest import run_ut, ut_command


def write_slice(folder, prefix: str, lines: int, *, packed: bool = False, crlf: bool = False) -> None:
    for lang in ("en", "de"):
        text = "".join(line + ("\r\n" if crlf else "\n") for line in read_lines(find_file(MULTI30K, prefix, lang))[:lines])
        data = text.encode("utf-8")
        path = folder / f"{prefix}.{lang}"
        if packed:
            path.with_name(path.name + ".gz").write_bytes(gzip.compress(data))
        else:
            path.write_bytes(data)


def translate(*args: str, stdin: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(ut_command("translate", *args), input=stdin, capture_output=True, text=True, timeout=300, env=env)


@needs_data
def test_tokenizer_train_translate_average_eval_end_to_end(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_slice(data, "train", 600, crlf=True)
    write_slice(data, "val", 8, packed=True)
    write_slice(data, "test_2016_flickr", 12)
    spm = tmp_path / "spm.model"
    made = run_ut("tokenizer", "train", "--input", str(data / "train.en"), str(data / "train.de"),
                  "--vocab-size", "500", "--out", str(spm))
    assert made.returncode == 0, made.stderr
    assert "bpe, 500 pieces from 1200 lines" in made.stdout

    config = {
        "model_class": "UniversalTransformer",
        "model": {"d_model": 32, "num_heads": 2, "d_ff": 64, "num_steps": 2, "dropout": 0.0, "embedding_dropout": 0.0},
        "task": {"name": "translation", "data_dir": str(data), "tokenizer": str(spm), "validation_beam_size": 1,
                 "validation_sentences": 5, "eval_batch_size": 8, "max_length_b": 8},
        "train": {"steps": 30, "optimizer": "adam", "lr": 0.003, "warmup_steps": 5, "label_smoothing": 0.1,
                  "batch_tokens": 1024, "eval_every": 10, "keep_last": 3, "threads": 1},
    }
    (tmp_path / "mt.yaml").write_text(yaml.safe_dump(config))
    run = tmp_path / "run"
    trained = run_ut("train", str(tmp_path / "mt.yaml"), "--out", str(run), "--no-progress")
    assert trained.returncode == 0, trained.stderr
    log = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [10, 20, 30] and log[-1]["train_loss"] < log[0]["train_loss"]
    assert all(r["beam_size"] == 1 and r["sentences"] == 5 and r["score"] == r["bleu"] for r in log)
    test = json.loads((run / "metrics.json").read_text())["test"]
    assert test["beam_size"] == 4 and test["sentences"] == 12 and test["score"] == test["bleu"] >= 0
    assert test["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert len(saved["task"]["tokenizer_sha256"]) == 64 and saved["model"]["vocab_size"] == 500

    averaged = run_ut("average", str(run), "--last", "3", "--out", str(tmp_path / "avg"))
    assert averaged.returncode == 0, averaged.stderr
    assert "averaged 3 checkpoints (step-00000010.pt, step-00000020.pt, step-00000030.pt)" in averaged.stdout

    sentences = "A man is riding a bike.\n\nTwo dogs play in the snow.\n"
    out = translate(str(run), "--model", str(tmp_path / "avg"), "--batch-size", "2", stdin=sentences)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert len(lines) == 4 and lines[-1] == ""  # one line per input line, the empty one included
    single = translate(str(run), "--model", str(tmp_path / "avg"), "--input", "Two dogs play in the snow.", stdin="")
    assert single.stdout == lines[2] + "\n"  # batching changes no output

    evaluated = run_ut("eval", str(run), "--model", str(tmp_path / "avg"), "--split", "test", "--threads", "1",
                       "--record", "mt/tiny-avg3", "--results", str(tmp_path / "results"))
    assert evaluated.returncode == 0, evaluated.stderr
    assert "bleu" in evaluated.stdout and json.loads((run / "eval-test-model=avg.json").read_text())["sentences"] == 12
    assert not (run / "eval-test.json").exists()  # the run's own score is not the averaged model's
    record = RunRecord.load(tmp_path / "results" / "mt" / "tiny-avg3.json")
    assert record.status == "rescored" and record.metrics["test"]["decode_seconds"] >= 0
    assert record.metrics["test"]["length_penalty"] == 0.6 and record.metrics["validation"] == {}  # not avg's
    assert any("evaluated model:" in note for note in record.notes)
    assert TABLES["mt"]([record]).splitlines()[2].split(" | ")[:4] == ["| tiny-avg3", "UT", "0.04M", "-"]
    assert "(beam 4, α 0.6, 12 sent.)" in TABLES["mt"]([record])
    bad = translate(str(run), "--threads", "0", stdin="Two dogs.\n")
    assert bad.returncode == 2 and "--threads must be >= 1, got 0" in bad.stderr
    report = run_ut("report", str(run))
    assert report.returncode == 0, report.stderr
    assert "| run | steps | best step |" in report.stdout
    assert r"nrefs:1\|case:mixed\|eff:no\|tok:13a" in report.stdout  # the signature's bars escaped in the table

    # Another tokenizer under the same name would misread the model's ids: refused, with the reason;
    # the run's own tokenizer, moved, is found with --set (its checksum matches).
    moved = tmp_path / "moved.model"
    moved.write_bytes(spm.read_bytes())
    made = run_ut("tokenizer", "train", "--input", str(data / "train.de"), "--vocab-size", "400", "--out", str(spm))
    assert made.returncode == 0, made.stderr
    refused = translate(str(run), "--model", str(tmp_path / "avg"), stdin="Two dogs play in the snow.\n")
    assert refused.returncode == 2 and "another tokenizer would misread the model's ids" in refused.stderr
    found = translate(str(run), "--model", str(tmp_path / "avg"), "--set", f"task.tokenizer={moved}",
                      stdin="Two dogs play in the snow.\n")
    assert found.returncode == 0 and found.stdout == lines[2] + "\n"
