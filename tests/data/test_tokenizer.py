"""The sentencepiece tokenizer: special ids, train / encode / decode round trips, bad models refused."""

from __future__ import annotations

import io
import itertools

import pytest
import sentencepiece as spm

from universal_transformer.data.parallel import find_file, read_lines
from universal_transformer.data.tokenizer import SubwordTokenizer, TokenizerError, file_sha256, train_tokenizer

from .test_parallel import MULTI30K, needs_data

SUBJECTS = ["a man", "the woman", "two dogs", "a little girl", "three children", "an old worker"]
VERBS = ["is running", "plays", "sits", "is jumping", "walks"]
PLACES = ["on the beach.", "in the park.", "near a red car.", "under the bridge.", "at the market."]


def small_corpus() -> list[str]:
    """150 English-like sentences (and German-like ones) to train a small vocabulary on."""
    english = [f"{s.capitalize()} {v} {p}" for s, v, p in itertools.product(SUBJECTS, VERBS, PLACES)]
    german = [f"Ein Mann läuft {p.replace('the', 'dem')}" for p in PLACES] * 5
    return english + german


@pytest.fixture(scope="module")
def bpe(tmp_path_factory) -> SubwordTokenizer:
    return train_tokenizer(small_corpus(), tmp_path_factory.mktemp("tok") / "bpe.model", vocab_size=80)


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_train_encode_decode_round_trip(tmp_path, model_type):
    tok = train_tokenizer(small_corpus(), tmp_path / "m.model", vocab_size=60, model_type=model_type)
    assert tok.vocab_size == 60
    assert [tok.processor.id_to_piece(i) for i in range(4)] == ["<pad>", "<s>", "</s>", "<unk>"]
    for text in small_corpus()[::7] + ["Two dogs sit near the old bridge.", "Ein  Mann   läuft."]:
        ids = tok.encode(text)
        assert ids and min(ids) >= 3, "no pad, bos or eos inside an encoded sentence"
        assert tok.decode(ids) == " ".join(text.split())  # detokenised: whitespace runs collapse, nothing else changes
    assert len(tok.encode("a man is running on the beach.")) < len("a man is running on the beach.")  # sub-words merged


def test_special_ids_match_the_models_and_decode_stops_at_eos(bpe):
    assert (bpe.pad_id, bpe.bos_id, bpe.eos_id, bpe.unk_id) == (0, 1, 2, 3)
    ids = bpe.encode("A man plays in the park.")
    assert bpe.decode([1, *ids, 2, 0, 0]) == "A man plays in the park."
    assert bpe.decode([*ids, 2, *bpe.encode("Ignored after eos.")]) == "A man plays in the park."
    assert 3 in bpe.encode("A man plays 大")  # a character never seen is unknown
    assert bpe.encode_batch(["a man", "two dogs"]) == [bpe.encode("a man"), bpe.encode("two dogs")]


def test_training_is_deterministic_and_the_checksum_names_the_file(tmp_path, bpe):
    again = train_tokenizer(small_corpus(), tmp_path / "again.model", vocab_size=80)
    assert again.sha256 == bpe.sha256 == file_sha256(bpe.path)
    other = train_tokenizer(small_corpus(), tmp_path / "other.model", vocab_size=90)
    assert other.sha256 != bpe.sha256


def test_models_with_other_special_ids_or_bad_files_are_refused(tmp_path):
    model = io.BytesIO()  # sentencepiece's defaults: unk 0, bos 1, eos 2, no padding
    spm.SentencePieceTrainer.train(sentence_iterator=iter(small_corpus()), model_writer=model, vocab_size=60, minloglevel=2)
    path = tmp_path / "defaults.model"
    path.write_bytes(model.getvalue())
    with pytest.raises(TokenizerError, match=r"defaults.model: pad_id is -1, but the models use 0"):
        SubwordTokenizer(path)
    junk = tmp_path / "junk.model"
    junk.write_bytes(b"not a model")
    with pytest.raises(TokenizerError, match="junk.model: not a sentencepiece model"):
        SubwordTokenizer(junk)
    with pytest.raises(TokenizerError, match="missing.model: tokenizer model not found"):
        SubwordTokenizer(tmp_path / "missing.model")


def test_training_errors_name_the_problem(tmp_path):
    with pytest.raises(TokenizerError, match=r"big.model: sentencepiece training failed: .*[Vv]ocabulary size"):
        train_tokenizer(small_corpus(), tmp_path / "big.model", vocab_size=5000)
    with pytest.raises(TokenizerError, match="model type must be one of bpe, unigram"):
        train_tokenizer(small_corpus(), tmp_path / "x.model", vocab_size=80, model_type="word")
    with pytest.raises(TokenizerError, match="empty.model: no non-empty training sentences"):
        train_tokenizer(["", "  "], tmp_path / "empty.model", vocab_size=80)
    assert not (tmp_path / "big.model").exists()


@needs_data
def test_multi30k_round_trip(tmp_path):
    """Trained on the first 3000 lines of each side; unseen validation sentences come back
    unchanged but for whitespace runs."""
    lines = [line for lang in ("en", "de") for line in read_lines(find_file(MULTI30K, "train", lang))[:3000]]
    tok = train_tokenizer(lines, tmp_path / "m30k.model", vocab_size=2000)
    for lang in ("en", "de"):
        validation = read_lines(find_file(MULTI30K, "val", lang))[:300]
        assert [tok.decode(tok.encode(s)) for s in validation] == [" ".join(s.split()) for s in validation]
        pieces = sum(len(tok.encode(s)) for s in validation) / sum(len(s.split()) for s in validation)
        assert 1.0 < pieces < 2.0  # sub-words: more pieces than words, far fewer than characters
