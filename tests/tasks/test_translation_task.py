"""The translation task: options, the tokenizer's checksum, batches by token count, beam-search translation, BLEU."""

from __future__ import annotations

import gzip
import itertools

import pytest
import torch

from universal_transformer.config import ConfigError, UTConfig
from universal_transformer.data.tokenizer import train_tokenizer
from universal_transformer.evaluation.bleu import corpus_bleu
from universal_transformer.generation import beam_search
from universal_transformer.models.transformer import UniversalTransformer
from universal_transformer.registry import build_task, task_options
from universal_transformer.tasks.translation import TranslationOptions, TranslationTask

WORDS = {"a": "ein", "man": "Mann", "dog": "Hund", "sees": "sieht", "likes": "mag", "red": "roter", "big": "großer",
         "ball": "Ball", "cat": "Katze", "the": "der", "runs": "läuft", "home": "heim"}


def sentence_pairs() -> list[tuple[str, str]]:
    """Word-for-word 'translations' of every short sentence over WORDS."""
    english = [f"{d} {n} {v} {o}" for d, n, v, o in itertools.product(["a", "the"], ["man", "dog", "cat"],
                                                                       ["sees", "likes", "runs"], ["big", "red", "home"])]
    return [(e.capitalize() + ".", " ".join(WORDS[w] for w in e.split()).capitalize() + ".") for e in english]


@pytest.fixture
def corpus_dir(tmp_path):
    """train (54 pairs + one over-long pair), val (6), test (4, gzipped), and a tokenizer."""
    pairs = sentence_pairs()
    train = pairs + [(" ".join(["man"] * 40), "Mann")]  # too long, and a length ratio of 40
    for prefix, rows in (("train", train), ("val", pairs[:6]), ("test", pairs[-4:])):
        (tmp_path / f"{prefix}.en").write_text("".join(s + "\n" for s, _ in rows))
        (tmp_path / f"{prefix}.de").write_text("".join(t + "\n" for _, t in rows))
    for lang in ("en", "de"):
        path = tmp_path / f"test.{lang}"
        (tmp_path / f"test.{lang}.gz").write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    train_tokenizer([s for pair in pairs for s in pair], tmp_path / "spm.model", vocab_size=60)
    return tmp_path


def options(corpus_dir, **changes) -> dict:
    return {"name": "translation", "data_dir": str(corpus_dir), "train_prefix": "train", "validation_prefix": "val",
            "test_prefix": "test", "tokenizer": str(corpus_dir / "spm.model"), "max_tokens": 30, "bucket_width": 2,
            **changes}


def tiny_model(task: TranslationTask, **changes) -> UniversalTransformer:
    config = UTConfig(d_model=16, num_heads=2, d_ff=32, num_steps=2, dropout=0.0, embedding_dropout=0.0, **changes)
    return UniversalTransformer(config.replace(**task.model_overrides())).eval()


def test_options_validate_and_record_the_tokenizer_checksum(corpus_dir):
    opts = task_options(options(corpus_dir))
    assert isinstance(opts, TranslationOptions) and len(opts.tokenizer_sha256) == 64
    assert opts.to_dict()["tokenizer_sha256"] == opts.tokenizer_sha256  # the run's config.yaml names the exact file
    with pytest.raises(ConfigError, match=r"unknown option\(s\) beam for task 'translation'"):
        task_options(options(corpus_dir, beam=4))
    with pytest.raises(ConfigError, match="task.validation_beam_size must be a positive integer"):
        task_options(options(corpus_dir, validation_beam_size=0))
    with pytest.raises(ConfigError, match="task.max_ratio must be >= 1"):
        task_options(options(corpus_dir, max_ratio=0.5))
    with pytest.raises(ConfigError, match="task.tokenizer must name a sentencepiece model"):
        task_options(options(corpus_dir, tokenizer=""))


def test_a_different_or_missing_tokenizer_is_refused(corpus_dir):
    recorded = task_options(options(corpus_dir)).tokenizer_sha256
    train_tokenizer([s for pair in sentence_pairs() for s in pair], corpus_dir / "spm.model", vocab_size=50)
    with pytest.raises(ConfigError, match=rf"has sha256 [0-9a-f]{{64}}, but the config \(the run\) names {recorded}"):
        build_task(options(corpus_dir, tokenizer_sha256=recorded), seed=0)
    with pytest.raises(ConfigError, match=r"nope.model: tokenizer model not found; make it with: ut tokenizer train --input "):
        build_task(options(corpus_dir, tokenizer=str(corpus_dir / "nope.model")), seed=0)


def test_train_batches_are_pure_in_seed_and_step_and_cover_the_filtered_data(corpus_dir):
    task = build_task(options(corpus_dir), seed=3)
    assert task.model_overrides() == {"vocab_size": 60, "target_vocab_size": None, "pad_id": 0, "bos_id": 1, "eos_id": 2}
    budget = 64
    batch = task.train_batch(0, batch_tokens=budget, max_batch_size=100)
    eos, bos = task.tokenizer.eos_id, task.tokenizer.bos_id
    lengths = (batch.src != 0).sum(1)
    assert (batch.src[torch.arange(batch.size), lengths - 1] == eos).all()  # every source ends with eos
    assert (batch.tgt_in[:, 0] == bos).all()
    assert (batch.labels[torch.arange(batch.size), (batch.labels != 0).sum(1) - 1] == eos).all()  # targets end with eos
    assert torch.equal(batch.labels[:, :-1] * (batch.tgt_in[:, 1:] != 0), batch.tgt_in[:, 1:])  # labels = tgt_in shifted
    assert 2 * max(batch.src.shape[1], batch.tgt_in.shape[1]) * batch.size <= budget or batch.size == 1

    other = build_task(options(corpus_dir), seed=3)
    for step in (5, 0, 17):
        a = task.train_batch(step, batch_tokens=budget, max_batch_size=100)
        b = other.train_batch(step, batch_tokens=budget, max_batch_size=100)
        assert torch.equal(a.src, b.src) and torch.equal(a.labels, b.labels)
    pairs, batcher = task._training_data()
    assert len(pairs) == 54 and task.notes == ["54 of 55 training pairs kept by the length filter"]
    seen = []
    for step in range(batcher.num_batches(budget, 100)):
        b = task.train_batch(step, batch_tokens=budget, max_batch_size=100)
        seen += [task.tokenizer.decode(row) for row in b.src.tolist()]
    assert sorted(seen) == sorted(" ".join(s.split()) for s, _ in sentence_pairs())  # each kept pair once an epoch


def test_bleu_of_identical_text_is_100_with_its_signature():
    refs = ["Ein Mann läuft am Strand.", "Zwei Hunde spielen im Park."]
    same = corpus_bleu(refs, refs)
    assert same["bleu"] == pytest.approx(100.0) and same["bleu_brevity_penalty"] == 1.0
    assert same["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert corpus_bleu(["Katze Katze.", "Baum."], refs)["bleu"] < 5
    half = corpus_bleu(["Ein Mann läuft am Strand.", "Baum."], refs)
    assert 0 < half["bleu"] < 100 and half["bleu_length_ratio"] < 1
    with pytest.raises(ValueError, match="1 hypotheses for 2 references"):
        corpus_bleu(refs[:1], refs)


def test_evaluate_scores_detokenised_output_against_raw_references(corpus_dir, monkeypatch):
    task = build_task(options(corpus_dir, validation_sentences=4, validation_beam_size=1), seed=0)
    calls = []

    def perfect(model, texts, *, beam_size=None, **kwargs):
        calls.append((len(texts), beam_size))
        lookup = dict(sentence_pairs())
        return [lookup[s] for s in texts]

    monkeypatch.setattr(task, "translate", perfect)
    validation, test = task.evaluate(None, "validation"), task.evaluate(None, "test")
    assert calls == [(4, 1), (4, 4)]  # validation: the first 4 sentences, greedy; test: all, beam 4
    for metrics in (validation, test):
        assert metrics["score"] == metrics["bleu"] == pytest.approx(100.0)
        assert "tok:13a" in metrics["bleu_signature"]
    assert (validation["sentences"], validation["beam_size"], test["sentences"], test["beam_size"]) == (4, 1, 4, 4)
    assert all(m["decode_seconds"] >= 0 and m["sentences_per_second"] > 0 for m in (validation, test))
    assert test["length_penalty"] == 0.6 and "length_penalty" not in validation  # greedy has none
    with pytest.raises(ConfigError, match="unknown split 'train'"):
        task.evaluate(None, "train")


def test_translate_keeps_the_order_and_equals_per_sentence_beam_search(corpus_dir):
    task = build_task(options(corpus_dir, max_length_b=6), seed=0)
    torch.manual_seed(0)
    model = tiny_model(task)
    texts = [s for s, _ in sentence_pairs()[:5]] + ["A cat."]
    batched = task.translate(model, texts, batch_size=4)
    assert batched == task.translate(model, texts, batch_size=1)
    for text, out in zip(texts, batched):
        best = beam_search(model, task.encode_text(text), beam_size=4, length_penalty=0.6, max_length_a=1.0,
                           max_length_b=6).best[0]
        assert out == task.tokenizer.decode(best.tokens)
        assert len(best.tokens) <= len(task.encode(text)) + 6  # a * source length + b
    greedy = task.translate(model, texts, beam_size=1)
    assert len(greedy) == len(texts)
    # an argument given as 0 is that value, not "take the option's" (b = 6)
    assert task.translate(model, texts, max_length_b=0, max_length_a=0.0) == [""] * len(texts)
    with pytest.raises(ValueError, match="beam_size must be >= 1"):
        task.translate(model, texts, beam_size=0)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        task.translate(model, texts, batch_size=0)
    assert task.decode_tokens(task.encode_text("A dog runs home.")[0].tolist()) == "A dog runs home."
