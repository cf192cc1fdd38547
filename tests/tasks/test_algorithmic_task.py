"""The algorithmic task: batches as a pure function of (seed, step), fixed evaluation sets, evaluate()."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from universal_transformer import UTConfig
from universal_transformer.config import ConfigError
from universal_transformer.data.algorithmic import BOS, DIGIT0, EOS, PAD, VOCAB_SIZE, Seq2SeqBatch
from universal_transformer.models import UniversalTransformer
from universal_transformer.tasks.algorithmic import AlgorithmicTask


def _task(**options) -> AlgorithmicTask:
    return AlgorithmicTask({"task": "copy", **options}, seed=0)


def _same(a: Seq2SeqBatch, b: Seq2SeqBatch) -> bool:
    return all(torch.equal(x, y) for x, y in ((a.src, b.src), (a.tgt_in, b.tgt_in), (a.labels, b.labels)))


def _source_lengths(task: str, batch: Seq2SeqBatch) -> list[int]:
    """Source digits per example, as ``length`` counts them (Addition: both operands)."""
    real = (batch.src != PAD).sum(1)
    return [int(n) - 1 if task == "addition" else int(n) for n in real]  # minus the '+'


def test_train_batch_is_a_pure_function_of_seed_and_step():
    task = _task()
    kwargs = dict(batch_tokens=512, max_batch_size=64)
    assert _same(task.train_batch(5, **kwargs), task.train_batch(5, **kwargs))
    assert _same(task.train_batch(5, **kwargs), _task().train_batch(5, **kwargs))  # a fresh task object too
    task.train_batch(99, **kwargs)  # drawing other steps in between changes nothing
    assert _same(task.train_batch(5, **kwargs), AlgorithmicTask({"task": "copy"}, seed=0).train_batch(5, **kwargs))
    others = [task.train_batch(6, **kwargs), AlgorithmicTask({"task": "copy"}, seed=1).train_batch(5, **kwargs)]
    assert not any(_same(task.train_batch(5, **kwargs), other) for other in others)


# Addition at length 1 still has two one-digit operands (3 source tokens), more than the
# length-based token estimate allows for, so the token budget is checked from length 2.
@pytest.mark.parametrize("name, min_length", [("copy", 1), ("reverse", 3), ("addition", 2)])
@pytest.mark.parametrize("bucket_width", [1, 8])
def test_train_lengths_sit_in_one_bucket_within_the_training_range(name, min_length, bucket_width):
    task = AlgorithmicTask(
        {"task": name, "train_min_length": min_length, "train_max_length": 30, "bucket_width": bucket_width}, seed=3
    )
    seen = set()
    for step in range(60):
        batch = task.train_batch(step, batch_tokens=1024, max_batch_size=10_000)
        lengths = _source_lengths(name, batch)
        seen.update(lengths)
        # Addition rounds each length down to two whole operands, which can widen the spread by one
        spread = bucket_width if name == "addition" else bucket_width - 1
        assert max(lengths) - min(lengths) <= spread, (step, lengths)
        low = 2 * (min_length // 2) if name == "addition" else min_length
        assert low <= min(lengths) and max(lengths) <= 30
        used = batch.src.numel() + batch.labels.numel()  # padded source and target slots
        assert used <= 1024, (step, batch.size, used)
        assert used >= 1024 // 2, (step, batch.size, used)  # the budget is used, not wasted
    assert len(seen) > 10  # the range is explored, not one length


def test_batch_size_is_capped_by_max_batch_size():
    task = _task(train_min_length=1, train_max_length=4)
    sizes = {task.train_batch(step, batch_tokens=100_000, max_batch_size=7).size for step in range(10)}
    assert sizes == {7}
    # a budget below one example still yields one example
    assert task.train_batch(0, batch_tokens=1, max_batch_size=7).size == 1


def test_eval_sets_are_fixed_per_split_and_length():
    task = _task(eval_examples=30, eval_batch_size=8)
    first = task.eval_batches("validation", 12)
    assert [b.size for b in first] == [8, 8, 8, 6]
    assert all(_source_lengths("copy", b) == [12] * b.size for b in first)
    assert all(_same(a, b) for a, b in zip(first, _task(eval_examples=30, eval_batch_size=8).eval_batches("validation", 12)))
    task.train_batch(3, batch_tokens=256, max_batch_size=32)  # training draws do not move them
    assert all(_same(a, b) for a, b in zip(first, task.eval_batches("validation", 12)))
    test = task.eval_batches("test", 12)
    assert not torch.equal(torch.cat([b.src for b in first]), torch.cat([b.src for b in test]))


def test_bad_options_are_refused():
    with pytest.raises(ConfigError, match="task.task must be one of copy, reverse, addition"):
        AlgorithmicTask({"task": "sort"}, seed=0)
    with pytest.raises(ConfigError, match=r"need 1 <= train_min_length \(9\) <= train_max_length \(4\)"):
        _task(train_min_length=9, train_max_length=4)
    with pytest.raises(ConfigError, match="unknown option"):
        _task(max_len=4)


class _Oracle(nn.Module):
    """Decodes the right answer (copy) except at the last digit of sources starting with 0-2.

    Enough of a model for ``generate``: ``config``, ``prefill`` and ``decode_step``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.config = SimpleNamespace(pad_id=PAD, eos_id=EOS, bos_id=BOS, act=False)
        self.dummy = nn.Parameter(torch.zeros(()))

    @staticmethod
    def answer(src: torch.Tensor) -> torch.Tensor:
        lengths = (src != PAD).sum(1)  # rows of a batch of mixed lengths end in padding
        target = torch.cat((src, torch.full_like(src[:, :1], PAD)), dim=1)
        rows, last = torch.arange(len(src)), lengths - 1
        wrong = src[:, 0] < DIGIT0 + 3
        target[rows[wrong], last[wrong]] = DIGIT0 + (target[rows[wrong], last[wrong]] - DIGIT0 + 1) % 10
        target[rows, lengths] = EOS
        return target

    def _logits(self, state: dict) -> torch.Tensor:
        token = state["answer"][:, min(state["at"], state["answer"].shape[1] - 1)]
        state["at"] += 1
        return nn.functional.one_hot(token, VOCAB_SIZE).float()

    def prefill(self, src: torch.Tensor):
        state = {"answer": self.answer(src), "at": 0}
        return state, self._logits(state)

    def decode_step(self, tokens: torch.Tensor, state: dict) -> torch.Tensor:
        return self._logits(state)[:, None]

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> SimpleNamespace:
        """Teacher-forced logits: the decoded answer, but an end-of-sequence first for sources
        starting with 7-9 (a mistake greedy decoding never makes here: it is this pass's own)."""
        predicted = self.answer(src)
        predicted[src[:, 0] >= DIGIT0 + 7, 0] = EOS
        assert predicted.shape == tgt_in.shape  # one prediction per target position
        return SimpleNamespace(logits=nn.functional.one_hot(predicted, VOCAB_SIZE).float())


def test_evaluate_scores_per_length_against_a_direct_count():
    task = _task(validation_lengths=[3, 9], eval_examples=40, eval_batch_size=16)
    result = task.evaluate(_Oracle(), "validation")
    for length in (3, 9):
        src = torch.cat([b.src for b in task.eval_batches("validation", length)])
        wrong = int((src[:, 0] < DIGIT0 + 3).sum())  # one wrong digit in each of these
        assert 0 < wrong < 40
        assert result[f"len{length}/sequence_accuracy"] == pytest.approx(1 - wrong / 40)
        assert result[f"len{length}/char_accuracy"] == pytest.approx(1 - wrong / (40 * (length + 1)))  # + eos
        forced_wrong = wrong + int((src[:, 0] >= DIGIT0 + 7).sum())  # and the teacher-forced pass's own
        assert forced_wrong > wrong
        assert result[f"teacher_forced/len{length}/sequence_accuracy"] == pytest.approx(1 - forced_wrong / 40)
        assert result[f"teacher_forced/len{length}/char_accuracy"] == pytest.approx(
            1 - forced_wrong / (40 * (length + 1)))
        early = int((src[:, 0] >= DIGIT0 + 7).sum())  # the forced pass ends those rows at their first digit
        assert result[f"teacher_forced/len{length}/early_eos_rate"] == pytest.approx(early / (40 * length))
        # every end is predicted where it is; the rows' wrong digits are all before it
        assert result[f"teacher_forced/len{length}/end_accuracy"] == 1.0
        assert result[f"teacher_forced/len{length}/sequence_accuracy_before_end"] == pytest.approx(1 - forced_wrong / 40)
    # Where the wrong tokens are (length 9: ten labels, one per tenth): the early ends in the
    # first tenth, the wrong last digits (label 8 of 10) in the ninth; length 3 (four labels)
    # leaves tenths empty, so no such list.
    src = torch.cat([b.src for b in task.eval_batches("validation", 9)])
    expected = [0.0] * 10
    expected[0] = float((src[:, 0] >= DIGIT0 + 7).sum()) / 40
    expected[8] = float((src[:, 0] < DIGIT0 + 3).sum()) / 40
    assert result["teacher_forced/len9/error_rate_by_tenth"] == pytest.approx(expected)
    assert "teacher_forced/len3/error_rate_by_tenth" not in result
    seq = [result["len3/sequence_accuracy"], result["len9/sequence_accuracy"]]
    char = [result["len3/char_accuracy"], result["len9/char_accuracy"]]
    assert result["score"] == pytest.approx(sum(seq) / 2 + 1e-3 * sum(char) / 2)
    assert not any("ponder" in key for key in result)  # the oracle has no steps
    with pytest.raises(ConfigError, match="unknown split 'train'"):
        task.evaluate(_Oracle(), "train")


@pytest.mark.parametrize("act", [False, True])
def test_evaluate_a_real_model_reports_every_length_and_ponder_time(act):
    task = AlgorithmicTask({"task": "addition", "test_lengths": [4, 6], "eval_examples": 6, "eval_batch_size": 4}, seed=0)
    cfg = UTConfig(vocab_size=VOCAB_SIZE, pad_id=PAD, bos_id=BOS, eos_id=EOS, d_model=16, num_heads=2, d_ff=32,
                   num_steps=3, dropout=0.0, embedding_dropout=0.0, act=act)
    result = task.evaluate(UniversalTransformer(cfg), "test")
    for length in (4, 6):
        assert 0.0 <= result[f"len{length}/char_accuracy"] <= 1.0
        assert 0.0 <= result[f"len{length}/sequence_accuracy"] <= result[f"len{length}/char_accuracy"] + 1e-9
        forced_char = result[f"teacher_forced/len{length}/char_accuracy"]
        assert 0.0 <= result[f"teacher_forced/len{length}/sequence_accuracy"] <= forced_char + 1e-9 <= 1.0 + 1e-9
        ponder = result[f"len{length}/encoder_ponder_time"]
        decoder_ponder = result.get(f"teacher_forced/len{length}/decoder_ponder_time")
        if act:
            assert 1.0 <= ponder <= cfg.max_steps + 1.0
            assert 1.0 <= decoder_ponder <= cfg.max_steps + 1.0
        else:
            assert ponder == 3.0 and decoder_ponder is None


def test_tie_break_is_minus_the_teacher_forced_loss_in_float64():
    """The loss that orders equal scores (a saturated validation) against a float64 log-softmax
    of the model's own logits, per labelled position, padding and all."""
    torch.manual_seed(0)
    task = AlgorithmicTask({"task": "reverse", "validation_lengths": [3, 7], "eval_examples": 6, "eval_batch_size": 4}, seed=0)
    cfg = UTConfig(vocab_size=VOCAB_SIZE, pad_id=PAD, bos_id=BOS, eos_id=EOS, d_model=16, num_heads=2, d_ff=32,
                   num_steps=2, dropout=0.0, embedding_dropout=0.0)
    model = UniversalTransformer(cfg).eval()
    result = task.evaluate(model, "validation")
    losses = []
    for length in (3, 7):
        nll, count = 0.0, 0
        for batch in task.eval_batches("validation", length):
            with torch.no_grad():
                logp = model(**batch.inputs()).logits.double().log_softmax(-1)
            for row, labels in zip(logp, batch.labels):
                for position, label in enumerate(labels.tolist()):
                    if label != PAD:
                        nll -= float(row[position, label])
                        count += 1
        assert count == 6 * (length + 1)  # every digit and the end of sequence
        assert result[f"teacher_forced/len{length}/loss"] == pytest.approx(nll / count, rel=1e-5)
        losses.append(nll / count)
    assert result["tie_break"] == pytest.approx(-sum(losses) / 2, rel=1e-5)


def test_little_endian_option_reaches_training_and_evaluation_examples():
    from universal_transformer.data.algorithmic import DIGIT0
    from universal_transformer.tasks.algorithmic import AlgorithmicTask

    def digits(tokens):
        return "".join(str(t - DIGIT0) for t in tokens if DIGIT0 <= t < DIGIT0 + 10)

    opts = {"task": "addition", "train_min_length": 6, "train_max_length": 6, "validation_lengths": [6],
            "eval_examples": 5}
    for little in (False, True):
        task = AlgorithmicTask({**opts, "little_endian": little}, seed=0)
        for batch in (task.train_batch(0, batch_tokens=200, max_batch_size=8), task.eval_batches("validation", 6)[0]):
            for src, labels in zip(batch.src.tolist(), batch.labels.tolist()):
                a, b = digits(src[:3]), digits(src[4:7])
                total = digits(labels)
                if little:
                    a, b, total = a[::-1], b[::-1], total[::-1]
                assert int(a) + int(b) == int(total)


def _rows(batch: Seq2SeqBatch) -> set[tuple[tuple[int, ...], tuple[int, ...]]]:
    return {(tuple(s[s != PAD].tolist()), tuple(t[t != PAD].tolist())) for s, t in zip(batch.src, batch.labels)}


@pytest.mark.parametrize("name", ["copy", "addition"])
def test_a_fixed_training_set_is_all_the_batches_ever_hold(name):
    task = AlgorithmicTask({"task": name, "train_examples": 40, "train_max_length": 12, "bucket_width": 4}, seed=3)
    pool = {(tuple(s), tuple(t) + (EOS,)) for s, t in task.training_set()}
    assert len(task.training_set()) == 40
    seen = set()
    for step in range(60):
        batch = task.train_batch(step, batch_tokens=256, max_batch_size=32)
        rows = _rows(batch)
        assert rows <= pool, f"step {step}: an example outside the training set"
        lengths = _source_lengths(name, batch)
        assert max(lengths) - min(lengths) < 4 + (1 if name == "addition" else 0)  # one bucket (Addition: even lengths)
        seen |= rows
    assert len(seen) > 20  # batches do go through the set
    # the set and the batches are functions of the seed
    again = AlgorithmicTask({"task": name, "train_examples": 40, "train_max_length": 12, "bucket_width": 4}, seed=3)
    assert again.training_set() == task.training_set()
    assert _same(again.train_batch(7, batch_tokens=256, max_batch_size=32), task.train_batch(7, batch_tokens=256, max_batch_size=32))
    other = AlgorithmicTask({"task": name, "train_examples": 40, "train_max_length": 12}, seed=4)
    assert other.training_set() != task.training_set()


def test_the_endless_stream_keeps_drawing_new_examples():
    task = _task(train_max_length=12)
    seen = set()
    for step in range(60):
        seen |= _rows(task.train_batch(step, batch_tokens=256, max_batch_size=32))
    assert len(seen) > 500  # far more than any small fixed set
    with pytest.raises(ConfigError, match="endless stream"):
        task.training_set()


def test_train_examples_must_be_positive():
    with pytest.raises(ConfigError, match="task.train_examples"):
        _task(train_examples=0)


def test_test_sets_of_lengths_up_to_n_are_seeded_mixed_and_scored_both_ways():
    task = _task(test_lengths=[3], test_lengths_up_to=[12], eval_examples=40, eval_batch_size=16)
    batches = task.eval_batches_up_to(12)
    lengths = [int(n) for b in batches for n in (b.src != PAD).sum(1)]
    assert len(lengths) == 40 and lengths == sorted(lengths) and 1 <= min(lengths) and max(lengths) <= 12
    assert len(set(lengths)) > 5  # mixed, not one length
    again = _task(test_lengths=[3], test_lengths_up_to=[12], eval_examples=40, eval_batch_size=16)
    assert all(torch.equal(a.src, b.src) for a, b in zip(batches, again.eval_batches_up_to(12)))
    result = task.evaluate(_Oracle(), "test")
    src = [row[row != PAD] for b in batches for row in b.src]
    wrong = sum(int(s[0] < DIGIT0 + 3) for s in src)
    forced_wrong = wrong + sum(int(s[0] >= DIGIT0 + 7) for s in src)
    tokens = sum(len(s) + 1 for s in src)  # + eos
    assert result["upto12/sequence_accuracy"] == pytest.approx(1 - wrong / 40)
    assert result["upto12/char_accuracy"] == pytest.approx(1 - wrong / tokens)
    assert result["teacher_forced/upto12/sequence_accuracy"] == pytest.approx(1 - forced_wrong / 40)
    assert "len3/char_accuracy" in result and result["score"] == pytest.approx(
        result["len3/sequence_accuracy"] + 1e-3 * result["len3/char_accuracy"])  # the mixed set does not count
    assert not any(key.startswith("upto") for key in task.evaluate(_Oracle(), "validation"))
    with pytest.raises(ConfigError, match="evaluation lengths must be positive"):
        _task(test_lengths_up_to=[0])


@pytest.mark.parametrize("train_examples", [None, 500])
def test_source_eos_ends_every_source_and_changes_nothing_else(train_examples):
    plain = _task(task="reverse", train_examples=train_examples, eval_examples=30, test_lengths_up_to=[12])
    ended = _task(task="reverse", train_examples=train_examples, eval_examples=30, test_lengths_up_to=[12],
                  source_eos=True)
    pairs = [(plain.train_batch(3, batch_tokens=256, max_batch_size=64), ended.train_batch(3, batch_tokens=256, max_batch_size=64)),
             (plain.eval_batches("test", 7)[0], ended.eval_batches("test", 7)[0]),
             (plain.eval_batches_up_to(12)[0], ended.eval_batches_up_to(12)[0])]
    for a, b in pairs:
        lengths = (a.src != PAD).sum(1)
        assert torch.equal((b.src != PAD).sum(1), lengths + 1)
        rows = torch.arange(len(lengths))
        assert bool((b.src[rows, lengths] == EOS).all()) and not bool((a.src == EOS).any())
        b_digits = b.src.clone()
        b_digits[rows, lengths] = PAD
        assert torch.equal(b_digits[:, : a.src.shape[1]], a.src)  # the same digits, drawn the same way
        assert torch.equal(a.labels, b.labels) and torch.equal(a.tgt_in, b.tgt_in)
    assert ended.encode_text("123").tolist()[0][-1] == EOS and plain.encode_text("123").tolist()[0][-1] != EOS


def test_beam_search_scores_every_test_set_beside_greedy_decoding():
    """``beam_size`` > 1 adds ``beamK/SET/...`` for the test split's sets (the fixed lengths and
    the mixed ones), each what beam search over that set scores; validation stays greedy."""
    from universal_transformer.evaluation.metrics import decode_accuracy

    torch.manual_seed(0)
    task = _task(test_lengths=[3, 5], test_lengths_up_to=[6], eval_examples=6, eval_batch_size=4, beam_size=3,
                 length_penalty=0.0)
    cfg = UTConfig(vocab_size=VOCAB_SIZE, pad_id=PAD, bos_id=BOS, eos_id=EOS, d_model=16, num_heads=2, d_ff=32,
                   num_steps=2, dropout=0.0, embedding_dropout=0.0, transition="sepconv_t2t", position_embedding="none")
    model = UniversalTransformer(cfg).eval()
    result = task.evaluate(model, "test")
    sets = {"len3": task.eval_batches("test", 3), "len5": task.eval_batches("test", 5), "upto6": task.eval_batches_up_to(6)}
    for name, batches in sets.items():
        searched = decode_accuracy(model, batches, PAD, beam_size=3, length_penalty=0.0, ponder=False)
        greedy = decode_accuracy(model, batches, PAD, ponder=False)
        for key in ("char_accuracy", "sequence_accuracy"):
            assert result[f"beam3/{name}/{key}"] == searched[key]
            assert result[f"{name}/{key}"] == greedy[key]
    assert result["score"] == pytest.approx(
        (result["len3/sequence_accuracy"] + result["len5/sequence_accuracy"]) / 2
        + 1e-3 * (result["len3/char_accuracy"] + result["len5/char_accuracy"]) / 2)  # greedy picks the model
    assert not any(key.startswith("beam") for key in task.evaluate(model, "validation"))
    for bad, message in (({"beam_size": 0}, "task.beam_size must be a positive integer"),
                         ({"length_penalty": -1}, "task.length_penalty must be a number >= 0")):
        with pytest.raises(ConfigError, match=message):
            _task(**bad)


def test_operand_positions_restart_the_source_count_at_the_plus():
    """``operand_positions``: the model built for the task restarts its source positions after
    Addition's ``+``, so both operands' i-th digits get position i; other tasks refuse it."""
    from universal_transformer.data.algorithmic import PLUS
    from universal_transformer.training.config import ExperimentConfig
    from universal_transformer.training.trainer import build_model

    opts = {"task": "addition", "little_endian": True, "operand_positions": True, "train_min_length": 5,
            "train_max_length": 5, "validation_lengths": [5], "eval_examples": 4}
    task = AlgorithmicTask(opts, seed=0)
    experiment = ExperimentConfig.from_dict({"model_class": "UniversalTransformer", "model": {"d_model": 16, "d_ff": 32},
                                             "task": {"name": "algorithmic", **opts}})
    model = build_model(experiment, task)
    assert model.config.position_restart_id == PLUS
    src = task.eval_batches("validation", 5)[0].src
    positions = model._positions(src, None, restart_id=PLUS)
    plus_at = (src == PLUS).nonzero()[:, 1]
    for row, at in zip(positions.tolist(), plus_at.tolist()):
        assert row[:at] == row[at + 1 : 2 * at + 1] == list(range(at))  # a_i and b_i share position i
    with pytest.raises(ConfigError, match="task 'copy' has one operand"):
        _task(task="copy", operand_positions=True)
    plain = build_model(ExperimentConfig.from_dict({"model_class": "UniversalTransformer", "model": {"d_model": 16, "d_ff": 32},
                                                    "task": {"name": "algorithmic", "task": "addition"}}),
                        AlgorithmicTask({"task": "addition"}, seed=0))
    assert plain.config.position_restart_id is None
    lstm = ExperimentConfig.from_dict({"model_class": "LSTMSeq2Seq", "model": {"model_type": "lstm", "d_model": 16},
                                       "task": {"name": "algorithmic", **opts}})
    with pytest.raises(ConfigError, match="sets the model's position_restart_id.*LSTMSeq2Seq has no position_restart_id"):
        build_model(lstm, task)  # an LSTM reads no positions: the option would change nothing
    from universal_transformer.cli.run import check_task_fits

    trained = build_model(ExperimentConfig.from_dict({"model_class": "LSTMSeq2Seq", "model": {"model_type": "lstm", "d_model": 16},
                                                      "task": {"name": "algorithmic", "task": "addition"}}),
                          AlgorithmicTask({"task": "addition"}, seed=0))
    with pytest.raises(ConfigError, match="LSTMSeq2Seq has no position_restart_id"):
        check_task_fits(task, trained, Path("run/best"))  # `ut eval RUN --set task.operand_positions=true`


def test_tensor2tensor_operand_lengths_draw_the_training_set_at_its_maximum_length():
    """``operand_lengths: tensor2tensor``: every training example is drawn with the maximum
    length, as tensor2tensor's training set is (first operands up to 20 digits, sources of every
    length from 3 to 40), the pool sorted by the sources' lengths for the buckets; evaluation sets
    of length L hold sources up to L; other tasks and unknown values are refused."""
    from universal_transformer.data.algorithmic import PLUS

    task = _task(task="addition", little_endian=True, operand_lengths="tensor2tensor", train_examples=3000,
                 source_eos=True)
    pairs = task.training_set()
    lengths = [len(src) - 1 for src, _ in pairs]
    firsts = [src.index(PLUS) for src, _ in pairs]
    assert lengths == sorted(lengths) and min(lengths) == 3 and max(lengths) == 40
    assert min(firsts) == 1 and max(firsts) == 20
    assert sum(n <= 10 for n in lengths) > 50  # short sums come from one long draw, not a short length
    test = task.eval_batches("test", 400)[0]
    source_lengths = (test.src != PAD).sum(1) - 1
    assert int(source_lengths.max()) <= 400 and int(source_lengths.min()) < 200
    with pytest.raises(ConfigError, match="task 'copy' has none"):
        _task(operand_lengths="tensor2tensor")
    with pytest.raises(ConfigError, match="task.operand_lengths must be one of halves, tensor2tensor, got 'thirds'"):
        _task(task="addition", operand_lengths="thirds")
