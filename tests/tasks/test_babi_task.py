"""The bAbI task and model: fact encoding, splits, the 10k fallback, and padding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from universal_transformer.config import ConfigError, StoryQAConfig, dump_yaml, load_yaml
from universal_transformer.data.babi import read_babi
from universal_transformer.models import UTStoryQA
from universal_transformer.models.story_qa import FactEncoder
from universal_transformer.tasks.babi import DEPTH_MEASURES, ROLES, BabiTask, _summary, error_percent, parse_tasks
from universal_transformer.training.config import ExperimentConfig, load_experiment
from universal_transformer.training.trainer import Trainer

from ..data.test_babi import BABI, needs_data


def test_fact_encoder_is_the_masked_sum_of_word_embeddings():
    enc = FactEncoder(vocab_size=10, d_model=8, words=4)
    with torch.no_grad():
        enc.position_mask.normal_()
    words = torch.tensor([[3, 5, 7, 0], [9, 0, 0, 0]])
    out = enc(words)
    E, M = enc.embed.weight.double(), enc.position_mask.double()
    for row in range(2):
        expected = sum(E[w] * M[j] for j, w in enumerate(words[row].tolist()) if w != 0) * 8**0.5
        torch.testing.assert_close(out[row].double(), expected)
    with pytest.raises(ValueError, match="at most fact_words=4"):
        enc(torch.ones(1, 5, dtype=torch.long))


def test_story_model_ignores_empty_fact_slots():
    cfg = StoryQAConfig(vocab_size=20, num_classes=5, fact_words=4, d_model=16, num_heads=2, d_ff=32,
                        dropout=0, embedding_dropout=0, act=True, act_bias_init=0.0)
    model = UTStoryQA(cfg).eval()
    facts = torch.randint(3, 20, (2, 3, 4))
    question = torch.randint(3, 20, (2, 4))
    more_slots = torch.cat((torch.zeros(2, 4, 4, dtype=torch.long), facts), dim=1)
    with torch.no_grad():
        a = model(facts, question).logits
        b = model(more_slots, question).logits
    # empty slots are padding; the real facts keep their distance to the question, but their
    # absolute positions move, so compare with positions switched off.
    cfg2 = cfg.replace(position_embedding="none")
    model2 = UTStoryQA(cfg2).eval()
    model2.load_state_dict(model.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(model2(facts, question).logits, model2(more_slots, question).logits, atol=1e-5, rtol=1e-5)
    assert a.shape == b.shape == (2, 5)


def test_parse_tasks():
    assert parse_tasks("all") == list(range(1, 21))
    assert parse_tasks([3, 1, 3]) == [1, 3]
    with pytest.raises(ConfigError, match="tasks 1..20"):
        parse_tasks(21)
    with pytest.raises(ConfigError, match="a task number, a list of them, or 'all'"):
        parse_tasks("some")


def test_pooled_error_is_counted_so_that_equal_counts_tie_exactly():
    """81 wrong answers of the 10k joint validation split's 19,101 questions pool to the same
    error wherever they fall (task 18 holds 1,008 questions, task 20 993, task 3 100)."""
    sizes = [1000] * 17 + [100, 1008, 993]
    def pooled(wrong):
        result = {f"task{t}/{key}": value for t, (w, n) in enumerate(zip(wrong, sizes), 1)
                  for key, value in (("error", 100.0 * w / n), ("questions", n))}
        return _summary(result, [f"task{t}" for t in range(1, 21)], "pooled")["pooled_error"]
    in_one, spread = [0] * 20, [1] + [0] * 17 + [80, 0]
    in_one[18] = 81
    assert pooled(in_one) == pooled(spread) == 100.0 * 81 / sum(sizes)


@pytest.mark.parametrize("wrong, questions", [(50, 1000), (10, 200), (5, 100), (500, 10000)])
def test_exactly_five_percent_error_is_five_and_does_not_fail(wrong, questions):
    """A task fails at more than 5% error: exactly 5% (50 of bAbI's 1000 test questions) does
    not; float32's 1 - mean had made it 5.0000012."""
    right = torch.arange(questions) >= wrong
    assert error_percent(right) == 5.0
    assert _summary({"task1/error": error_percent(right)}, ["task1"], "mean")["failed_tasks"] == 0
    assert error_percent(torch.arange(questions) > wrong) > 5.0  # one more wrong fails


@needs_data
def test_task_split_vocab_and_encoding():
    task = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 8], "memory_size": 20}, seed=0)
    assert len(task.splits["train"]) + len(task.splits["validation"]) == 2000
    assert len(task.splits["test"]) == 2000
    # 10% of the stories of each task are held out, whole: no story is in both splits
    raw = task._load()
    for t in (1, 8):
        train_stories = {ex.story for ex in raw["train"] if ex.task == t}
        held_stories = {ex.story for ex in raw["validation"] if ex.task == t}
        assert not train_stories & held_stories
        assert len(held_stories) == round(0.1 * (len(train_stories) + len(held_stories)))
    assert any("," in a for a in task.answers)  # task 8 list answers are classes
    batch = task.train_batch(0, batch_tokens=0, max_batch_size=16)
    slots = batch.facts.shape[1]  # the memory (20) less the slots none of these stories uses
    assert slots <= 20 and batch.facts.shape == (16, slots, task.fact_words) and batch.labels.shape == (16,)
    assert torch.equal(batch.position_offset, torch.full((16,), 20 - slots))
    # facts are right-aligned: the newest fact sits in the last slot
    assert bool(batch.facts[:, -1].ne(0).any(-1).all())
    again = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 8], "memory_size": 20}, seed=0)
    assert torch.equal(again.train_batch(5, batch_tokens=0, max_batch_size=16).facts, task.train_batch(5, batch_tokens=0, max_batch_size=16).facts)



@needs_data
def test_encoding_is_each_story_slot_by_slot_and_splits_are_encoded_when_used():
    """Every memory slot against the raw example, written out directly: the newest ``memory_size``
    facts right-aligned, their word ids, roles and supporting-fact ranks (task 3's stories outgrow a
    memory of 20, so some supporting facts fall out)."""
    task = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [2, 3], "memory_size": 20}, seed=0)
    assert "test" in task.splits and not task.splits._encoded  # nothing is encoded before it is used
    data, raw = task.splits["test"], task._load()["test"]
    assert set(task.splits._encoded) == {"test"}
    f, w = 20, task.fact_words
    dropped = 0
    for i in range(0, len(raw), 7):
        ex = raw[i]
        facts = torch.zeros(f, w, dtype=torch.long)
        roles, ranks = ["empty"] * f + ["question"], [0] * (f + 1)
        kept = ex.facts[-f:]
        for j, sentence in enumerate(kept):
            slot = f - len(kept) + j
            ids = [task.words.get(word, 1) for word in sentence][:w]
            facts[slot, : len(ids)] = torch.tensor(ids)
            index = len(ex.facts) - len(kept) + j  # in ex.facts
            roles[slot] = "supporting" if index in ex.supporting else "other"
            if index in ex.supporting:
                ranks[slot] = ex.supporting.index(index) + 1
        dropped += sum(s < len(ex.facts) - f for s in ex.supporting)
        question = [task.words.get(word, 1) for word in ex.question][:w]
        assert torch.equal(data.facts[i], facts)
        assert data.question[i].tolist() == question + [0] * (w - len(question))
        assert [ROLES[r] for r in data.roles[i].tolist()] == roles
        assert data.support_rank[i].tolist() == ranks
        assert task.answers[int(data.labels[i])] == ex.answer and int(data.task[i]) == ex.task
    assert dropped > 0

@needs_data
def test_missing_10k_file_falls_back_to_1k_and_says_so(capsys):
    task = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en-10k", "tasks": 3}, seed=0)
    assert "task 3" in task.notes[0] and "using" in task.notes[0]
    assert "note: task 3" in capsys.readouterr().err
    assert len(task.splits["train"]) + len(task.splits["validation"]) == 1000


@needs_data
def test_a_test_answer_that_training_never_gives_is_named(capsys):
    BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": 8}, seed=0)
    assert "note: task 8 test: the answer 'football,apple,milk' answers no training question" in capsys.readouterr().err


def test_bad_data_dir_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no such bAbI folder"):
        BabiTask({"name": "babi", "data_dir": str(tmp_path), "set": "en", "tasks": 1}, seed=0)



def test_a_fact_of_no_words_is_an_empty_slot(tmp_path):
    """A fact line with no word ("3 ?!") encodes as an empty slot: no word ids, not counted in the
    story's length, so batches do not pad for it."""
    folder = tmp_path / "en"
    folder.mkdir()
    story = ("1 Mary went to the kitchen.\n2 John went to the garden.\n3 ?!\n"
             "4 Where is Mary?\tkitchen\t1\n5 Where is John?\tgarden\t2\n")
    for split in ("train", "test"):
        (folder / f"qa1_single-supporting-fact_{split}.txt").write_text(story * 5)
    task = BabiTask({"name": "babi", "data_dir": str(tmp_path), "set": "en", "tasks": 1, "memory_size": 4,
                     "validation_fraction": 0.4}, seed=0)
    data = task.splits["test"]
    assert data.facts.shape == (10, 4, task.fact_words)
    # right-aligned: slot 0 empty, 1 and 2 the two sentences, 3 the line "?!"
    assert data.facts[:, 3].eq(0).all() and data.facts[:, 1:3].ne(0).any(-1).all()
    assert data.story_lengths().tolist() == [2] * 10
    assert data.batch(torch.arange(10)).facts.shape[1] == 3  # the empty first slot dropped, the wordless one kept

@needs_data
def test_ponder_time_is_averaged_over_all_real_positions():
    """Paper section 3.1: mean and std of the ponder time over all positions of all test examples."""
    task = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 2], "memory_size": 10,
                     "eval_batch_size": 64}, seed=0)
    cfg = StoryQAConfig(vocab_size=task.model_overrides()["vocab_size"], num_classes=len(task.answers),
                        fact_words=task.fact_words, d_model=16, num_heads=2, d_ff=32, num_steps=3,
                        act=True, act_bias_init=-0.5, position_embedding="none")  # batching moves absolute positions
    torch.manual_seed(0)
    model = UTStoryQA(cfg)
    result = task.evaluate(model, "validation")
    data = task.splits["validation"]
    values: dict[int, list[float]] = {1: [], 2: []}
    steps: dict[int, list[float]] = {1: [], 2: []}
    hits: dict[int, list[bool]] = {1: [], 2: []}
    with torch.no_grad():
        for i in range(len(data)):  # one example at a time: no padding beyond its own empty slots
            batch = data.batch(torch.tensor([i]))
            out = model(**batch.model_inputs())
            stats = out.halting["encoder"]
            hits[int(data.task[i])].append(bool(out.logits.argmax(-1)[0] == batch.labels[0]))
            real = ~stats.padding[0] if stats.padding is not None else torch.ones(stats.ponder_time.shape[1], dtype=torch.bool)
            values[int(data.task[i])] += stats.ponder_time[0][real].double().tolist()
            steps[int(data.task[i])] += stats.n_updates[0][real].double().tolist()
    for t in (1, 2):
        v = torch.tensor(values[t], dtype=torch.float64)
        assert len(v) > 100 and v.std() > 0.01  # ACT makes the ponder time vary over positions
        assert result[f"task{t}/ponder_time"] == pytest.approx(v.mean().item(), rel=1e-5)
        assert result[f"task{t}/ponder_std"] == pytest.approx(v.std().item(), rel=1e-4)
        # the depth, the steps alone (the authors' measure): whole numbers, below the ponder time
        n = torch.tensor(steps[t], dtype=torch.float64)
        assert n.eq(n.round()).all() and (n < v).all()
        assert result[f"task{t}/depth"] == pytest.approx(n.mean().item(), rel=1e-5)
        assert result[f"task{t}/depth_std"] == pytest.approx(n.std().item(), rel=1e-4)
        # evaluation batches stories sorted by length; each result still counts for its own task
        assert result[f"task{t}/error"] == pytest.approx(100.0 * (1 - sum(hits[t]) / len(hits[t])))


@pytest.mark.parametrize("pooling", [None, "last", "mean"])
def test_story_model_reads_the_answer_at_the_question_by_default(pooling):
    cfg = StoryQAConfig(vocab_size=20, num_classes=5, fact_words=4, d_model=16, num_heads=2, d_ff=32,
                        **({} if pooling is None else {"pooling": pooling}))
    model = UTStoryQA(cfg).eval()
    facts = torch.cat((torch.zeros(2, 2, 4, dtype=torch.long), torch.randint(3, 20, (2, 3, 4))), dim=1)
    facts[1, 2] = 0  # one more empty slot in the second story
    seen = {}
    model.encoder.register_forward_hook(lambda m, i, out: seen.update(hidden=out.hidden))
    model.head.register_forward_hook(lambda m, i, out: seen.update(read=i[0]))
    with torch.no_grad():
        model(facts, torch.randint(3, 20, (2, 4)))
    h = seen["hidden"].double()
    if pooling == "mean":
        real = torch.cat((facts.ne(0).any(-1), torch.ones(2, 1, dtype=torch.bool)), dim=1).double()[..., None]
        expected = (h * real).sum(1) / real.sum(1)
    else:  # the question is the last position
        expected = h[:, -1]
    torch.testing.assert_close(seen["read"].double(), expected)


def test_story_model_refuses_first_pooling():
    with pytest.raises(ConfigError, match="not 'first'"):
        UTStoryQA(StoryQAConfig(vocab_size=20, num_classes=5, fact_words=4, d_model=16, num_heads=2, d_ff=32, pooling="first"))


def test_story_model_shared_question_encoder_embeds_the_question_like_a_fact():
    """question_encoder='shared' (the paper: the question is embedded "in the same way")."""
    cfg = StoryQAConfig(vocab_size=20, num_classes=5, fact_words=4, d_model=16, num_heads=2, d_ff=32,
                        question_encoder="shared", dropout=0, embedding_dropout=0)
    model = UTStoryQA(cfg).eval()
    assert model.question is None
    facts, question = torch.randint(3, 20, (2, 3, 4)), torch.randint(3, 20, (2, 4))
    seen = {}
    model.encoder.register_forward_pre_hook(lambda m, args: seen.update(h=args[0]))
    with torch.no_grad():
        model(facts, question)
        torch.testing.assert_close(seen["h"][:, -1], model.facts(question))
    separate = UTStoryQA(cfg.replace(question_encoder="separate"))
    assert sum(p.numel() for p in separate.parameters()) > sum(p.numel() for p in model.parameters())


def test_story_model_shared_words_gives_the_question_its_own_mask_over_the_facts_table():
    """question_encoder='shared_words' (tensor2tensor's bAbI port): one word table, two masks."""
    cfg = StoryQAConfig(vocab_size=20, num_classes=5, fact_words=4, d_model=16, num_heads=2, d_ff=32,
                        question_encoder="shared_words", dropout=0, embedding_dropout=0)
    model = UTStoryQA(cfg).eval()
    assert model.question.embed is None and "question.position_mask" in model.state_dict()
    with torch.no_grad():
        model.question.position_mask.uniform_(-1, 1)
    facts, question = torch.randint(3, 20, (2, 3, 4)), torch.randint(3, 20, (2, 4))
    seen = {}
    model.encoder.register_forward_pre_hook(lambda m, args: seen.update(h=args[0]))
    with torch.no_grad():
        model(facts, question)
    # sum_j E[w_j] * M_j with the facts' E and the question's own M, in float64
    E, M = model.facts.embed.weight.double(), model.question.position_mask.double()
    expected = (E[question] * M).sum(-2) * 16**0.5
    torch.testing.assert_close(seen["h"][:, -1].double(), expected, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(seen["h"][:, -1], model.facts(question))
    # a word's gradient reaches the one table from both facts and question
    model.train()
    model(facts, question, labels=torch.tensor([0, 1])).loss.backward()
    assert model.facts.embed.weight.grad[question.flatten()].abs().sum() > 0
    assert model.question.position_mask.grad is not None
    sizes = {q: sum(p.numel() for p in UTStoryQA(cfg.replace(question_encoder=q)).parameters())
             for q in ("shared", "shared_words", "separate")}
    assert sizes["shared"] + 4 * 16 == sizes["shared_words"] < sizes["separate"]


def test_fact_encoder_without_a_table_needs_one():
    enc = FactEncoder(None, d_model=8, words=4)
    with pytest.raises(ValueError, match="no word table of its own"):
        enc(torch.tensor([[1, 2, 0, 0]]))


@needs_data
@pytest.mark.parametrize("fraction, held", [(0.002, 0), (0.999, 200)])
def test_validation_needs_a_story_and_so_does_training(fraction, held):
    with pytest.raises(ConfigError, match=f"holds out {held} of the 200 stories of .*qa1_.*; validation and training each need"):
        BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": 1, "validation_fraction": fraction}, seed=0)


@needs_data
def test_validation_test_is_the_ports_protocol_whole_training_file_evaluated_on_test():
    opts = {"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 8], "memory_size": 20}
    held_out = BabiTask(opts, seed=0)
    port = BabiTask({**opts, "validation": "test", "validation_fraction": 0.999}, seed=0)  # the fraction is unused
    assert len(port.splits["train"]) == len(held_out.splits["train"]) + len(held_out.splits["validation"]) == 2000
    assert torch.equal(port.splits["validation"].labels, port.splits["test"].labels)
    assert torch.equal(port.splits["validation"].slots, port.splits["test"].slots)
    assert torch.equal(port.splits["validation"].question, port.splits["test"].question)
    assert "chosen on test questions" in port.notes[-1] and not held_out.notes
    with pytest.raises(ConfigError, match="task.validation must be 'held_out' or 'test', got 'train'"):
        BabiTask({**opts, "validation": "train"}, seed=0)


@needs_data
def test_train_fraction_keeps_the_first_training_stories_and_the_same_validation():
    opts = {"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 2], "memory_size": 20}
    whole = BabiTask(opts, seed=0)._load()
    parts = {f: BabiTask({**opts, "train_fraction": f}, seed=0)._load() for f in (0.1, 0.5)}
    for t in (1, 2):
        stories = sorted({ex.story for ex in whole["train"] if ex.task == t})  # file order
        kept = {}
        for f, raw in parts.items():
            assert [(ex.task, ex.story, ex.answer) for ex in raw["validation"]] == [
                (ex.task, ex.story, ex.answer) for ex in whole["validation"]]
            kept[f] = sorted({ex.story for ex in raw["train"] if ex.task == t})
            assert kept[f] == stories[: round(f * len(stories))]
            # a kept story keeps all its questions
            assert sum(ex.task == t for ex in raw["train"]) == sum(
                ex.task == t and ex.story in set(kept[f]) for ex in whole["train"])
        assert set(kept[0.1]) < set(kept[0.5]) < set(stories)
    # The port's protocol has no held-out stories: the fraction is of the whole file.
    port = BabiTask({**opts, "validation": "test", "train_fraction": 0.5}, seed=0)._load()
    train_file = sorted({ex.story for ex in whole["train"] + whole["validation"] if ex.task == 1})
    assert sorted({ex.story for ex in port["train"] if ex.task == 1}) == train_file[: round(0.5 * len(train_file))]
    assert len(port["test"]) == len(whole["test"])
    for bad in (0, 1.5):
        with pytest.raises(ConfigError, match=f"task.train_fraction must be in \\(0, 1\\], got {bad}"):
            BabiTask({**opts, "train_fraction": bad}, seed=0)


@needs_data
def test_repeat_lists_a_tasks_training_questions_that_many_times_and_nothing_else():
    opts = {"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 16], "memory_size": 20}
    whole = BabiTask(opts, seed=0)
    for repeat in ({16: 3}, {"16": 3}):  # YAML's {16: 3} and the command line's {"16":3}
        task = BabiTask({**opts, "repeat": repeat}, seed=0)
        assert task.options.repeat == {16: 3}
        raw, base = task._load(), whole._load()
        key = lambda ex: (ex.task, ex.story, ex.question, ex.answer)  # noqa: E731
        assert sorted(map(key, raw["train"])) == sorted(
            [key(ex) for ex in base["train"]] + 2 * [key(ex) for ex in base["train"] if ex.task == 16])
        for split in ("validation", "test"):
            assert list(map(key, raw[split])) == list(map(key, base[split]))
        # an epoch of batches walks through the repeated questions: task 16's share of it triples
        share = task.splits["train"].task.eq(16).float().mean().item()
        assert share == pytest.approx(3 * 900 / (900 + 3 * 900))
    options = BabiTask.options_class.from_dict({**opts, "repeat": {16: 3, 1: 2}}).to_dict()
    assert list(options["repeat"].items()) == [(1, 2), (16, 3)]  # task order: the same stream whatever the order written
    assert BabiTask.options_class.from_dict(json.loads(json.dumps(options))).repeat == {1: 2, 16: 3}
    assert BabiTask.options_class.from_dict(load_yaml(dump_yaml(options))).repeat == {1: 2, 16: 3}
    for same in ({16: 1}, {}):  # the paper's data: no repeat at all
        assert BabiTask.options_class.from_dict({**opts, "repeat": same}).repeat is None
    for bad, message in (({968: None}, "968 is not one of the tasks trained .*write \\{16: 8\\}"),
                         ({2: 3}, "2 is not one of the tasks trained"), ({True: 3}, "True is not one"),
                         ({"²": 3}, "is not one"), ({16: 0}, "task 16's factor must be a whole number >= 1, got 0"),
                         ({16: 1.5}, "got 1.5"), ([16, 3], "must map tasks to whole factors")):
        with pytest.raises(ConfigError, match=f"task.repeat.*{message}"):
            BabiTask({**opts, "repeat": bad}, seed=0)


@needs_data
def test_vocabulary_tasks_give_a_single_task_model_the_joint_models_shape_and_nothing_else():
    opts = {"name": "babi", "data_dir": str(BABI), "set": "en", "memory_size": 20}
    joint = BabiTask({**opts, "tasks": [1, 16, 19]}, seed=0)
    alone = BabiTask({**opts, "tasks": 16}, seed=0)
    shaped = BabiTask({**opts, "tasks": 16, "vocabulary_tasks": [1, 16, 19]}, seed=0)
    assert alone.model_overrides() != joint.model_overrides()  # task 16 alone has fewer words and answers
    assert shaped.model_overrides() == joint.model_overrides()
    assert shaped.words == joint.words and shaped.answers == joint.answers and shaped.fact_words == joint.fact_words
    key = lambda ex: (ex.task, ex.story, ex.question, ex.answer)  # noqa: E731
    for split in ("train", "validation", "test"):  # trained and scored on task 16 alone, as before
        assert list(map(key, shaped._raw[split])) == list(map(key, alone._raw[split]))
    assert torch.equal(shaped.splits["validation"].task, alone.splits["validation"].task)
    with pytest.raises(ConfigError, match=r"task.vocabulary_tasks \(\[1, 19\]\) must hold every task trained; it lacks \[16\]"):
        BabiTask({**opts, "tasks": [1, 16], "vocabulary_tasks": [1, 19]}, seed=0)
    options = BabiTask.options_class.from_dict({**opts, "tasks": 16, "vocabulary_tasks": "all"})
    assert BabiTask.options_class.from_dict(load_yaml(dump_yaml(options.to_dict()))).vocabulary_tasks == "all"


@needs_data
def test_a_joint_run_warm_starts_from_a_single_task_model_built_with_its_vocabulary(tmp_path):
    def experiment(task: dict, **train) -> ExperimentConfig:
        return ExperimentConfig.from_dict({
            "model_class": "UTStoryQA", "model": dict(d_model=16, num_heads=2, d_ff=32, num_steps=2, act=False),
            "task": {"name": "babi", "data_dir": str(BABI), "set": "en", "memory_size": 20, **task},
            "train": {"steps": 2, "eval_every": 2, "threads": 1, "max_batch_size": 8, **train}})

    first = Trainer(experiment({"tasks": 16, "vocabulary_tasks": [1, 16]}), tmp_path / "t16", progress=False, verbose=False)
    first.fit()
    saved = first.model.save_pretrained(tmp_path / "t16-model")
    joint = Trainer(experiment({"tasks": [1, 16]}, init_from=str(saved)), tmp_path / "joint", progress=False, verbose=False)
    joint.prepare_run_dir()
    for key, value in first.model.state_dict().items():
        assert torch.equal(joint.model.state_dict()[key], value), key
    plain = Trainer(experiment({"tasks": 16}), tmp_path / "plain", progress=False, verbose=False)
    plain.fit()
    other = plain.model.save_pretrained(tmp_path / "plain-model")
    with pytest.raises(ConfigError, match="the saved model is not this run's model .*vocab_size"):
        Trainer(experiment({"tasks": [1, 16]}, init_from=str(other)), tmp_path / "refused", progress=False,
                verbose=False).prepare_run_dir()


@needs_data
def test_batches_drop_unused_fact_slots_and_the_model_computes_the_same():
    task = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 3], "memory_size": 130}, seed=0)
    data = task.splits["train"]
    index = torch.arange(0, 64)
    batch = data.batch(index)
    full_slots = data.facts.shape[1]
    assert batch.facts.shape[1] < full_slots  # these stories are shorter than the memory
    assert bool(batch.facts.ne(0).any(-1).any(0)[0])  # the first kept slot is used by some story
    assert torch.equal(batch.position_offset, torch.full((64,), full_slots - batch.facts.shape[1]))
    cfg = StoryQAConfig(vocab_size=task.model_overrides()["vocab_size"], num_classes=len(task.answers),
                        fact_words=task.fact_words, d_model=16, num_heads=2, d_ff=32, num_steps=3,
                        act=True, act_bias_init=-0.5, dropout=0, embedding_dropout=0)
    model = UTStoryQA(cfg).eval()
    with torch.no_grad():
        trimmed = model(**batch.model_inputs())
        full = model(data.facts[index], data.question[index])
    torch.testing.assert_close(trimmed.logits, full.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(trimmed.ponder_cost, full.ponder_cost, atol=1e-6, rtol=0)


def _task2_with_act_model(num_steps: int, seed: int, **options) -> tuple[BabiTask, UTStoryQA]:
    """Task 2 of the 1k set with a memory of 10 facts, and a small untrained UT+ACT story model for it."""
    task = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [2], "memory_size": 10,
                     "eval_batch_size": 64, **options}, seed=0)
    return task, _tiny_model(task, seed=seed, num_steps=num_steps, act=True, act_bias_init=-0.5, dropout=0,
                             embedding_dropout=0)


def _tiny_model(task: BabiTask, *, seed: int, **options) -> UTStoryQA:
    """An untrained story model sized for ``task`` (d_model 16, 2 heads), in eval mode."""
    cfg = StoryQAConfig(vocab_size=task.model_overrides()["vocab_size"], num_classes=len(task.answers),
                        fact_words=task.fact_words, d_model=16, num_heads=2, d_ff=32, **options)
    torch.manual_seed(seed)
    return UTStoryQA(cfg).eval()


@needs_data
def test_ponder_time_by_role_supporting_other_question():
    """The halting-pattern study: mean ponder of supporting facts, other facts and the question."""
    task, model = _task2_with_act_model(num_steps=3, seed=1)
    raw = task._load()["validation"]
    data = task.splits["validation"]
    for i in (0, 7, 30):  # roles mark the supporting facts the file names, where memory holds them
        ex, roles = raw[i], data.roles[i]
        kept = min(len(ex.facts), 10)
        assert roles[-1] == 3 and int((roles[:-1] > 0).sum()) == kept
        assert int((roles == 1).sum()) == sum(s >= len(ex.facts) - 10 for s in ex.supporting)
    result = task.evaluate(model, "validation")
    sums = {m: {1: [], 2: [], 3: []} for m in ("ponder", "depth")}
    with torch.no_grad():
        for i in range(len(data)):
            stats = model(data.facts[i : i + 1], data.question[i : i + 1]).halting["encoder"]
            for r in (1, 2, 3):
                sums["ponder"][r] += stats.ponder_time[0][data.roles[i] == r].double().tolist()
                sums["depth"][r] += stats.n_updates[0][data.roles[i] == r].double().tolist()
    for m in ("ponder", "depth"):
        for r, name in ((1, "supporting"), (2, "other"), (3, "question")):
            expected = sum(sums[m][r]) / len(sums[m][r])
            assert result[f"{m}_{name}"] == pytest.approx(expected, rel=1e-5)
            assert result[f"task2/{m}_{name}"] == pytest.approx(expected, rel=1e-5)


@needs_data
def test_the_loss_is_the_answers_mean_cross_entropy_and_breaks_ties_when_asked():
    """``loss``: the mean cross-entropy of the right answers, against one story at a time in
    float64; ``tie_break: loss`` makes it choose among equal validation errors."""
    task, model = _task2_with_act_model(num_steps=3, seed=1)
    data = task.splits["validation"]
    result = task.evaluate(model, "validation")
    with torch.no_grad():
        nll = [-torch.log_softmax(model(data.facts[i : i + 1], data.question[i : i + 1]).logits.double(), -1)[0, data.labels[i]]
               for i in range(len(data))]
    assert result["loss"] == pytest.approx(float(sum(nll)) / len(nll), rel=1e-5)
    assert "tie_break" not in result  # the default: the first model to reach an error keeps it
    by_loss, _ = _task2_with_act_model(num_steps=3, seed=1, tie_break="loss")
    assert by_loss.evaluate(model, "validation")["tie_break"] == pytest.approx(-result["loss"], rel=1e-12)
    with pytest.raises(ConfigError, match="task.tie_break must be 'first' or 'loss', got 'last'"):
        _task2_with_act_model(num_steps=3, seed=1, tie_break="last")


@needs_data
def test_attention_stats_where_the_question_looks():
    """task.attention_stats: the question's attention, mean over heads and over the steps it took,
    on each listed supporting fact, the other facts and itself, recomputed here one story at a
    time from the raw file's supporting ids (memory slots placed independently)."""
    memory = 10
    task, model = _task2_with_act_model(num_steps=4, seed=3, attention_stats=True)
    raw, data = task._load()["validation"], task.splits["validation"]
    result = task.evaluate(model, "validation")
    totals = torch.zeros(6, dtype=torch.float64)
    with torch.no_grad():
        for i, ex in enumerate(raw):
            out = model(data.facts[i : i + 1], data.question[i : i + 1], need_weights=True)
            taken = int(torch.ceil(out.halting["encoder"].n_updates[0, -1]))
            look = sum(w["self"][0, :, -1].double().mean(0) for w in out.attentions["encoder"][:taken]) / taken
            kept = min(len(ex.facts), memory)
            slot = {s: memory - kept + s - (len(ex.facts) - kept) for s in ex.supporting}
            sup = [float(look[slot[s]]) if slot[s] >= memory - kept else 0.0 for s in ex.supporting]
            sup += [0.0] * (3 - len(sup))
            facts = float(look[memory - kept : memory].sum())
            totals += torch.tensor(sup + [facts - sum(sup), float(look[-1]), kept], dtype=torch.float64)
    expected = (totals / len(raw)).tolist()
    names = ("supporting1", "supporting2", "supporting3", "other", "question")
    for name, value in zip(names, expected):
        assert result[f"task2/attention_{name}"] == pytest.approx(value, abs=1e-5), name
    assert result["task2/story_facts"] == pytest.approx(expected[-1])
    assert sum(result[f"task2/attention_{n}"] for n in names) == pytest.approx(1.0, abs=1e-5)
    assert result["task2/attention_supporting3"] == 0.0  # task 2 lists two supporting facts
    plain = BabiTask({**task.options.__dict__, "attention_stats": False}, seed=0).evaluate(model, "validation")
    assert not any("attention" in k for k in plain)


@needs_data
def test_recency_baseline_and_the_error_where_it_is_right_and_where_wrong():
    """Task 16 (basic induction) asks a colour; answering the colour said last is right about
    half the time. Checked against the raw test file, parsed here on its own."""
    task = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [6, 16], "memory_size": 20,
                     "eval_batch_size": 64}, seed=0)
    colours = {"white", "green", "gray", "yellow"}
    assert task.candidates[16] == colours
    expected_hits, questions = 0, 0
    for line in (BABI / "en" / "qa16_basic-induction_test.txt").read_text().splitlines():
        number, text = line.split(" ", 1)
        if number == "1":
            last = None
        if "\t" in text:
            questions += 1
            expected_hits += text.split("\t")[1] == last
        else:
            last = next((w for w in reversed(text.rstrip(".").split()) if w in colours), last)
    data = task.splits["test"]
    model = _tiny_model(task, seed=3, num_steps=2, dropout=0, embedding_dropout=0)
    with torch.no_grad():  # a bias towards one colour, so that the untrained model errs both ways
        model.head.bias[task.answers.index("green")] += 1.0
    result = task.evaluate(model, "test")
    assert result["task16/recent_baseline_error"] == pytest.approx(100.0 * (1 - expected_hits / questions))
    with torch.no_grad():
        answers = torch.cat([model(data.facts[i:i + 50], data.question[i:i + 50]).logits.argmax(-1)
                             for i in range(0, len(data), 50)])
    groups = {True: [0, 0], False: [0, 0]}  # latest colour right? -> [questions, model wrong]
    for i in range(len(data)):
        if int(data.task[i]) == 16:
            group = groups[int(data.recent[i]) == int(data.labels[i])]
            group[0] += 1
            group[1] += int(answers[i]) != int(data.labels[i])
    assert groups[True][0] == expected_hits and 0 < groups[False][1] < groups[False][0]
    assert result["task16/error_if_recent_right"] == pytest.approx(100.0 * groups[True][1] / groups[True][0])
    assert result["task16/error_if_recent_wrong"] == pytest.approx(100.0 * groups[False][1] / groups[False][0])
    assert "task6/recent_baseline_error" not in result  # yes/no answers: no fact says them


@needs_data
def test_bucketed_batches_group_stories_by_length_and_cover_each_once_per_epoch():
    opts = {"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 2, 4], "memory_size": 70}
    plain = BabiTask(opts, seed=0)
    task = BabiTask({**opts, "bucket_width": 4}, seed=0)
    train = task.splits["train"]
    lengths = train.facts.ne(0).any(-1).sum(-1)
    budget, cap = 600, 32
    epoch = task._batcher.num_batches(budget, cap)
    seen, slots, plain_slots = [], 0, 0
    for step in range(epoch):
        batch = task.train_batch(step, batch_tokens=budget, max_batch_size=cap)
        rows = task._batcher.batch(task.seed, step, budget, cap)
        assert torch.equal(batch.facts, train.batch(rows).facts) and torch.equal(batch.labels, train.labels[rows])
        buckets = {(int(lengths[r]) - 1) // 4 for r in rows}
        assert len(buckets) == 1  # one length bucket per batch, so at most 3 padded slots
        assert batch.facts.shape[1] - int(lengths[rows].min()) <= 3
        assert len(rows) <= cap and (len(rows) == 1 or len(rows) * batch.facts.shape[1] <= budget)
        seen += rows.tolist()
        slots += batch.facts.shape[1] * len(rows)
        plain_batch = plain.train_batch(step, batch_tokens=budget, max_batch_size=cap)
        plain_slots += plain_batch.facts.shape[1] * len(plain_batch.labels)
    assert sorted(seen) == list(range(len(train)))
    assert slots < 0.6 * plain_slots  # padding mostly gone
    with pytest.raises(ConfigError, match="bucket_width"):
        BabiTask({**opts, "bucket_width": -1}, seed=0)



@needs_data
def test_batches_by_task_hold_one_task_each_and_cover_each_question_once_per_epoch():
    opts = {"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 2, 4], "memory_size": 70,
            "bucket_width": 4}
    mixed = BabiTask(opts, seed=0)
    task = BabiTask({**opts, "batch_by_task": True}, seed=0)
    train = task.splits["train"]
    budget, cap = 600, 32
    epoch = task._batcher.num_batches(budget, cap)
    seen, mixed_tasks = [], 0
    for step in range(epoch):
        rows = task._batcher.batch(task.seed, step, budget, cap)
        batch = task.train_batch(step, batch_tokens=budget, max_batch_size=cap)
        assert torch.equal(batch.labels, train.labels[rows])
        assert len(set(train.task[rows].tolist())) == 1  # one task per batch
        seen += rows.tolist()
        mixed_tasks += len(set(train.task[mixed._batcher.batch(mixed.seed, step, budget, cap)].tolist())) > 1
    assert sorted(seen) == list(range(len(train)))
    assert mixed_tasks > epoch // 4  # by default the tasks whose stories share a length bucket mix
    with pytest.raises(ConfigError, match="batch_by_task .* needs task.bucket_width > 0"):
        BabiTask({**opts, "bucket_width": 0, "batch_by_task": True}, seed=0)

def test_every_babi_config_loads():
    paths = sorted((Path(__file__).resolve().parents[2] / "configs" / "babi").glob("*.yaml"))
    assert len(paths) >= 6
    for path in paths:
        experiment = load_experiment(path)
        assert experiment.model_class == "UTStoryQA", path
        assert experiment.task.name == "babi", path


def _assert_baseline_split(task: BabiTask, number: int, baseline: str, right: list[bool]) -> dict:
    """A tiny model's test metrics: the ``baseline``'s error is the share of test questions not
    ``right``, and the model's error where it is right and where wrong is counted from its own
    answers, batch by batch, apart from the evaluation."""
    data = task.splits["test"]
    model = _tiny_model(task, seed=3, num_steps=2, dropout=0, embedding_dropout=0)
    result = task.evaluate(model, "test")
    assert result[f"task{number}/{baseline}_baseline_error"] == pytest.approx(100.0 * (1 - sum(right) / len(right)))
    with torch.no_grad():
        wrong = torch.cat([model(data.facts[i:i + 50], data.question[i:i + 50]).logits.argmax(-1)
                           for i in range(0, len(data), 50)]).ne(data.labels).tolist()
    for side, where in (("right", right), ("wrong", [not r for r in right])):
        errs = [w for w, keep in zip(wrong, where) if keep]
        assert result[f"task{number}/error_if_{baseline}_{side}"] == pytest.approx(100.0 * sum(errs) / len(errs))
    return result


@needs_data
def test_question_only_baseline_and_the_error_where_it_is_right_and_where_wrong():
    """Task 18 (size reasoning): a question's text alone often settles it (the chocolate is the
    smallest object in every story); the baseline answers what training answers it most often."""
    task = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [18], "memory_size": 20,
                     "eval_batch_size": 64}, seed=0)
    seen: dict[str, dict[str, int]] = {}
    for ex in task._load()["train"]:
        answers = seen.setdefault(" ".join(ex.question), {})
        answers[ex.answer] = answers.get(ex.answer, 0) + 1
    usual = {q: sorted(a.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for q, a in seen.items()}
    test = [line.split("\t") for line in (BABI / "en" / "qa18_size-reasoning_test.txt").read_text().splitlines()
            if "\t" in line]
    right = [usual.get(" ".join(q.split(" ", 1)[1].rstrip(" ?").lower().split())) == a for q, a, _ in test]
    assert 0 < sum(right) < len(right)

    result = _assert_baseline_split(task, 18, "question", right)
    assert "task18/recent_baseline_error" not in result  # yes/no answers: no fact says them


@needs_data
def test_lookup_baseline_and_the_error_on_questions_training_holds_verbatim():
    """Task 17 (positional reasoning) draws small stories from a small world: some test questions
    are training questions word for word, story and all; the errors on those and on the rest are
    reported apart."""
    task = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [17], "memory_size": 20,
                     "eval_batch_size": 64}, seed=0)
    training = {(tuple(map(tuple, ex.facts)), tuple(ex.question)) for ex in task._load()["train"]}
    test = read_babi(BABI / "en" / "qa17_positional-reasoning_test.txt", 17)
    held = [(tuple(map(tuple, ex.facts)), tuple(ex.question)) in training for ex in test]
    assert 0 < sum(held) < len(held)

    _assert_baseline_split(task, 17, "seen", held)
    model = _tiny_model(task, seed=3, num_steps=2, dropout=0, embedding_dropout=0)
    train = task.evaluate(model, "train")  # every training question is held by training
    assert train["task17/seen_baseline_error"] == 0.0 and "task17/error_if_seen_wrong" not in train


@needs_data
def test_a_joint_task_names_its_tasks_and_merges_their_metrics():
    joint = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 8], "memory_size": 20}, seed=0)
    assert joint.task_names() == ["task1", "task8"]
    assert joint.task_scores({"task1/error": 2.0, "task8/error": 7.5, "mean_error": 4.75}) == {"task1": -2.0, "task8": -7.5}
    merged = joint.merge_task_metrics({"task1": {"task1/error": 2.0, "task8/error": 90.0, "mean_error": 46.0},
                                       "task8": {"task1/error": 50.0, "task8/error": 7.5, "task8/ponder_time": 3.0}})
    assert merged == {"task1/error": 2.0, "task8/error": 7.5, "task8/ponder_time": 3.0,
                      "mean_error": 4.75, "failed_tasks": 1, "score": -4.75}
    counts = {"task1": {"task1/error": 2.0, "task1/questions": 100}, "task8": {"task8/error": 7.0, "task8/questions": 300}}
    counted = joint.merge_task_metrics(counts)  # 2 + 21 wrong of 400
    assert counted["pooled_error"] == 5.75 and counted["score"] == -4.5
    pooled = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 8], "memory_size": 20,
                       "selection": "pooled"}, seed=0)
    assert pooled.merge_task_metrics(counts)["score"] == -5.75
    with pytest.raises(ConfigError, match="pooled needs each task's number of questions"):
        pooled.merge_task_metrics({"task1": {"task1/error": 2.0, "task1/questions": 100}, "task8": {"task8/error": 7.5}})
    with pytest.raises(ConfigError, match="none for task8"):
        joint.merge_task_metrics({"task1": {"task1/error": 2.0}})
    single = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1], "memory_size": 20}, seed=0)
    assert single.task_names() == [] and single.task_scores({"task1/error": 2.0, "mean_error": 2.0}) == {}


@needs_data
def test_pooled_selection_weighs_each_task_by_its_validation_questions():
    """At 10k, task 3 validates on its 1k file's held-out stories, a tenth of task 1's
    questions: ``selection: pooled`` scores the error over all the questions together, recounted
    here from the model's answers; ``mean`` (the default) the average of the two tasks' errors."""
    opts = {"name": "babi", "data_dir": str(BABI), "set": "en-10k", "tasks": [1, 3], "memory_size": 20,
            "eval_batch_size": 256}
    task = BabiTask(opts, seed=0)
    model = _tiny_model(task, seed=3, num_steps=2, dropout=0, embedding_dropout=0)
    data = task.splits["validation"]
    with torch.no_grad():
        answers = torch.cat([model(data.facts[i : i + 256], data.question[i : i + 256]).logits.argmax(-1)
                             for i in range(0, len(data), 256)])
    wrong = {t: int((answers != data.labels)[data.task == t].sum()) for t in (1, 3)}
    questions = {t: int((data.task == t).sum()) for t in (1, 3)}
    assert questions[3] * 5 < questions[1]
    pooled = 100.0 * (wrong[1] + wrong[3]) / (questions[1] + questions[3])
    mean = (100.0 * wrong[1] / questions[1] + 100.0 * wrong[3] / questions[3]) / 2

    result = task.evaluate(model, "validation")
    assert {t: result[f"task{t}/questions"] for t in (1, 3)} == questions
    assert result["pooled_error"] == pooled and result["mean_error"] == pytest.approx(mean, abs=1e-9)
    assert abs(pooled - mean) > 0.1 and result["score"] == -result["mean_error"]
    by_pool = BabiTask({**opts, "selection": "pooled"}, seed=0).evaluate(model, "validation")
    assert by_pool["score"] == -pooled and by_pool["mean_error"] == result["mean_error"]  # from the counts: exact
    with pytest.raises(ConfigError, match="task.selection must be 'mean' or 'pooled', got 'median'"):
        BabiTask({**opts, "selection": "median"}, seed=0)


@needs_data
def test_one_task_of_a_joint_task_evaluates_its_questions_alone_as_the_whole_does():
    """``ut eval --per-task`` scores task N's model on task N's questions only: the same numbers
    for that task as the whole evaluation gives, from a twentieth of the work on a joint set."""
    joint = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1, 2], "memory_size": 10,
                      "eval_batch_size": 64}, seed=0)
    model = _tiny_model(joint, seed=3, num_steps=4, act=True, act_bias_init=-0.5, dropout=0, embedding_dropout=0)
    whole = joint.evaluate(model, "test")
    alone = joint.evaluate_task(model, "test", "task2")
    own = {k: v for k, v in whole.items() if k.startswith("task2/")}
    assert {k for k in alone if k.startswith("task")} == set(own)
    assert alone["task2/error"] == own["task2/error"]
    assert alone["task2/error"] == alone["mean_error"]
    assert alone == pytest.approx({**own, "mean_error": own["task2/error"], "pooled_error": own["task2/error"],
                                   "failed_tasks": int(own["task2/error"] > 5.0),
                                   "score": -own["task2/error"], "loss": alone["loss"],
                                   **{f"supporting2/{m}_{s}": alone[f"supporting2/{m}_{s}"]
                                      for m in DEPTH_MEASURES for s in ("mean", "std")},
                                   **{f"{m}_{r}": alone[f"{m}_{r}"] for m in DEPTH_MEASURES for r in ROLES[1:]}}, rel=1e-6)
    # task 2's questions are those with two supporting facts, so its mean ponder is theirs
    assert alone["supporting2/ponder_mean"] == pytest.approx(own["task2/ponder_time"], rel=1e-6)
    assert alone["supporting2/depth_mean"] == pytest.approx(own["task2/depth"], rel=1e-6)
    assert "supporting1/ponder_mean" not in alone
    with pytest.raises(ConfigError, match="no task 'task3' in tasks"):
        joint.evaluate_task(model, "test", "task3")


@needs_data
def test_plot_draws_attention_and_steps_per_fact_of_one_story(tmp_path):
    """``ut plot`` on a story model: the paper's Appendix D attention panels and Figure 3's steps per fact."""
    task, model = _task2_with_act_model(num_steps=3, seed=1)
    paths = task.plot(model, "test", 0, tmp_path / "story", story_task=2)
    assert [p.name for p in paths] == ["story-attention.png", "story-ponder.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in paths)


@needs_data
def test_computed_empty_slots_run_ponder_and_are_never_attended():
    """``empty_slots="compute"`` (tensor2tensor's fixed-shape stories): every memory slot is a
    position, empty ones masked as keys only. Read at the question, no real position can tell
    (the same logits as skipping them); they ponder, count in the ponder cost and the mean readout."""
    task = BabiTask({"name": "babi", "data_dir": str(BABI), "set": "en", "tasks": [1], "memory_size": 20,
                     "eval_batch_size": 64}, seed=0)
    batch = task.splits["test"].batch(torch.arange(0, 16))
    assert int(batch.position_offset[0]) > 0  # the batch dropped unused slots; compute puts them back
    outputs = {}
    for empty_slots in ("skip", "compute"):
        for pooling in ("last", "mean"):
            model = _tiny_model(task, seed=2, num_steps=3, act=True, act_bias_init=-0.5, dropout=0,
                                embedding_dropout=0, pooling=pooling, empty_slots=empty_slots)
            with torch.no_grad():
                outputs[empty_slots, pooling] = model(**batch.model_inputs(), need_weights=True)
    skip, compute = outputs["skip", "last"], outputs["compute", "last"]
    torch.testing.assert_close(compute.logits, skip.logits, atol=1e-5, rtol=1e-5)
    stats = compute.halting["encoder"]
    assert stats.padding is None and stats.n_updates.shape[1] == 21  # the whole memory and the question
    empty = torch.cat((batch.facts.new_zeros(16, int(batch.position_offset[0])).bool(),
                       batch.facts.eq(0).all(-1)), 1)
    assert bool(empty.any()) and (stats.n_updates[:, :-1][empty] >= 1).all()  # empty slots run
    empty_keys = torch.cat((empty, empty.new_zeros(16, 1)), 1)[:, None, None, :]  # [B, 1, 1, keys]
    for step in compute.attentions["encoder"]:  # [B, heads, queries, keys]: no query reads an empty slot
        assert step["self"].masked_select(empty_keys).abs().max() == 0
    assert compute.ponder_cost != pytest.approx(skip.ponder_cost)  # the empty slots count in it
    assert not torch.allclose(outputs["compute", "mean"].logits, outputs["skip", "mean"].logits, atol=1e-4)
    # the evaluation reports the empty slots' ponder where they were computed, and only there
    model = _tiny_model(task, seed=2, num_steps=3, act=True, act_bias_init=-0.5, empty_slots="compute")
    assert "ponder_empty" in task.evaluate(model, "test") and "depth_empty" in task.evaluate(model, "test")
    model = _tiny_model(task, seed=2, num_steps=3, act=True, act_bias_init=-0.5)
    assert "ponder_empty" not in task.evaluate(model, "test")
