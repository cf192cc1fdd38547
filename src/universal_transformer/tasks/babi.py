"""bAbI question answering (the paper's Section 3.1): one task ("train single") or several ("train joint")."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..config import ConfigError
from ..data.babi import (
    BabiExample, BabiFormatError, most_recent_candidate, read_babi, seen_answers, story_key, task_file, tokenize,
    usual_answers,
)
from ..data.batch import StoryBatch
from ..data.bucketing import BucketBatcher
from ..modules.recurrence import HaltingStats
from .base import Task, TaskOptions

NUM_TASKS = 20
# What each position of the encoder input is, for the ponder-time study.
ROLES = ("empty", "supporting", "other", "question")
UNKNOWN = "<unk>"
# Two measures of how deep each position went, both averaged over the positions the model computed
# (metrics taskN/ponder_time and taskN/depth, each with _std, per role and per number of supporting facts):
# - ponder: the ponder time N + R, Graves' ponder cost and the quantity the loss adds (N steps
#   taken, R the remainder; 2.0 is halting after the first step);
# - depth: N alone, the number of steps, "the depth of the per-symbol recurrent processing
#   chain" that the paper's Section 3.1 reports as ponder time: the authors' bAbI code plots its
#   enc_ponder_times, tensor2tensor's n_updates, whole numbers (1 is halting after the first step).
DEPTH_MEASURES: dict[str, tuple[str, Callable[[HaltingStats], Tensor]]] = {
    "ponder": ("ponder_time", lambda stats: stats.ponder_time),
    "depth": ("depth", lambda stats: stats.n_updates),
}
# What the question attends to (task.attention_stats), per example; the last is the number of facts.
ATTENTION_COLUMNS = ("attention_supporting1", "attention_supporting2", "attention_supporting3",
                     "attention_other", "attention_question", "story_facts")


@dataclass
class EncodedSplit:
    # The facts as slot indices into a table of distinct sentences: a story's questions repeat its
    # facts, so the full [N, F, W] tensor would take 2 GB on the 10k joint training split.
    sentences: Tensor  # [S, W] word ids of each distinct fact; row 0 is the empty slot (all padding)
    slots: Tensor  # [N, F] per question and memory slot, its row of ``sentences`` (0 = empty)
    question: Tensor
    labels: Tensor
    task: Tensor  # [N] task number
    supporting: Tensor  # [N] number of supporting facts
    roles: Tensor  # [N, F + 1] per memory slot and the question: ROLES index (0 = empty slot)
    recent: Tensor  # [N] the recency baseline's answer (index into answers), -1 where it has none
    usual: Tensor  # [N] the question-only baseline's answer (usual_answers), -1 for a question training never asks
    support_rank: Tensor  # [N, F + 1] k at the k-th supporting fact as the question line lists it, else 0
    seen: Tensor  # [N] the lookup baseline's answer (seen_answers), -1 for a question training does not hold verbatim

    def __len__(self) -> int:
        return self.labels.shape[0]

    @property
    def facts(self) -> Tensor:
        """``[N, F, W]`` word ids of every memory slot, built on each call (for tests and plots;
        batches gather only their own stories)."""
        return self.sentences[self.slots]

    def subset(self, keep: Tensor) -> "EncodedSplit":
        """The questions where ``keep`` (``[N]`` bool) holds, sharing the table of sentences."""
        per_question = {f.name: getattr(self, f.name)[keep] for f in fields(self) if f.name != "sentences"}
        return EncodedSplit(sentences=self.sentences, **per_question)

    def story_lengths(self) -> Tensor:
        """``[N]`` facts per story: the memory slots it uses (what batches are padded to)."""
        return self.slots.ne(0).sum(-1)

    def batch(self, index: Tensor) -> StoryBatch:
        """The stories ``index``, without the leading fact slots that none of them uses.

        Stories are right-aligned (the newest fact next to the question), so dropping
        those slots and starting the positions at their count gives every fact the
        position it has in the full memory: the model computes the same thing, on a
        sequence as long as the batch's longest story rather than ``memory_size``.
        """
        slots = self.slots[index]
        used = slots.ne(0).any(0)
        first = int(used.int().argmax()) if bool(used.any()) else slots.shape[1]
        offset = torch.full((slots.shape[0],), first, dtype=torch.long) if first else None
        return StoryBatch(self.sentences[slots[:, first:]], self.question[index], self.labels[index], position_offset=offset)


def _sentences(examples: list[BabiExample]) -> Iterator[list[str]]:
    """Each fact and question of ``examples`` once: a story's questions share its fact lists
    (read_babi), which a plain walk would visit once per question (2.6 million on the 10k set)."""
    seen: set[int] = set()
    for ex in examples:
        for sentence in (*ex.facts, ex.question):
            if id(sentence) not in seen:
                seen.add(id(sentence))
                yield sentence


class _EncodedSplits(Mapping[str, EncodedSplit]):
    """The splits by name, each encoded on first access and kept; two names of one list of
    examples (``task.validation: test`` makes validation the test split) share one encoding."""

    def __init__(self, raw: dict[str, list[BabiExample]], encode: Callable[[list[BabiExample]], EncodedSplit]) -> None:
        self._raw, self._encode = raw, encode
        self._encoded: dict[str, EncodedSplit] = {}

    def __getitem__(self, name: str) -> EncodedSplit:
        if name not in self._encoded:
            same = next((other for other in self._encoded if self._raw[other] is self._raw[name]), None)
            self._encoded[name] = self._encoded[same] if same is not None else self._encode(self._raw[name])
        return self._encoded[name]

    def __contains__(self, name: object) -> bool:
        return name in self._raw  # without encoding it (Mapping's own would)

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def parse_tasks(value: Any) -> list[int]:
    if value == "all":
        return list(range(1, NUM_TASKS + 1))
    values = value if isinstance(value, list) else [value]
    try:
        tasks = sorted({int(v) for v in values})
    except (TypeError, ValueError):
        raise ConfigError(f"task.tasks must be a task number, a list of them, or 'all'; got {value!r}") from None
    if not tasks or any(not 1 <= t <= NUM_TASKS for t in tasks):
        raise ConfigError(f"task.tasks must name tasks 1..{NUM_TASKS}; got {value!r}")
    return tasks


# The model fields the data decide (vocabulary, answers, words per sentence, special ids).
DERIVED_MODEL_FIELDS = ("vocab_size", "num_classes", "fact_words", "pad_id", "bos_id", "eos_id")


@dataclass
class BabiOptions(TaskOptions):
    """``data_dir`` (the folder holding ``en`` and ``en-10k``), ``set`` (``en`` = 1k,
    ``en-10k`` = 10k), ``tasks`` (a number, a list, or ``all``), ``memory_size`` (the most
    recent facts kept), ``validation_fraction`` (of the stories of each task's training
    file, held out whole, chosen with ``split_seed``), ``eval_batch_size``, ``bucket_width``.

    ``bucket_width`` picks how training batches are formed. 0: ``max_batch_size`` random
    stories, padded to the longest of them (in a joint batch of the 20 tasks that is about 40
    fact slots for stories of 7.7 facts on average). N > 0: stories grouped by their number of
    facts in buckets of N (tensor2tensor batches by length too), as many per batch as fit
    ``train.batch_tokens`` counted in fact slots, at most ``max_batch_size``; 3.7 times as
    fast per story on the 10k joint set (benchmarks/batching.py), the same stories once per epoch.

    ``attention_stats`` adds to the evaluation where the question looks: per task, the
    question position's attention (mean over heads and over the steps the question took) on
    each supporting fact in the order the data lists them (``taskN/attention_supporting1..3``),
    on the other facts together and on itself, and the facts per story (uniform attention puts
    ``1 / (facts + 1)`` on each). Off by default: it keeps every step's attention weights.

    ``tie_break`` picks the kept model among equal validation errors. ``first``: the first to
    reach an error keeps it. ``loss``: the lower validation loss (``loss``, the mean
    cross-entropy of the answers, every evaluation reports it) wins, as the algorithmic task's
    teacher-forced loss does: 100 validation questions of a 1k task reach 0% long before the
    model stops improving (set ``train.stop_at_score`` to null to train on past that point).

    ``validation`` picks what the evaluations during training (and so early stopping, the kept
    model and ``train.keep_best_per_task``'s picks) read. ``held_out``: the stories held out of
    the training file (above). ``test``: the authors' tensor2tensor port's protocol, which has no
    validation set: train on the whole training file and evaluate on the test file, so that
    every choice is made on test questions and the test error reported is an optimistic one,
    for comparison with numbers chosen that way (``validation_fraction`` is then unused).

    ``train_fraction`` keeps that fraction of each task's training stories (those left after the
    held-out split, which it does not change), the first ones in the file's order, so that a
    larger fraction keeps a smaller one's stories and more. It asks how much data a recipe
    needs: each 1k training file is the first tenth of its 10k one, so the 10k set at 0.1 trains on
    as many stories as the 1k set (nearly the same ones), validated on the same held-out stories at
    every fraction.

    ``selection`` picks what the validation ``score`` (the kept model, early stopping,
    ``train.stop_at_score``) reads. ``mean``: the average error over tasks, each task counted
    once, as the paper reports it. ``pooled``: the error over all the validation questions
    counted together (``pooled_error``), so that a task weighs by its number of questions: at
    10k, task 3 trains and validates from its 1k file (100 validation questions against 1,000
    for each other task), and under ``mean`` its 100 questions moved the score more than the
    other 19 tasks together (docs/results.md, bAbI, the 10k joint legs: which evaluation was
    best is mostly task 3's draw); ``pooled`` gives them a tenth of another task's weight.
    Every evaluation reports both errors; scores of runs with different selections do not
    compare, and ``ut eval`` cannot change it (the kept model was chosen during training).

    ``repeat`` maps a task to how many times its training questions appear in an epoch (``{16:
    8}``; on a shell's command line ``--set 'task.repeat={16: 8}'``, in a grid file
    ``task.repeat={"16":8}``: YAML reads ``{16:8}`` as one base-60 number): it raises that task's
    share of each joint step without changing any other task's questions or validation. A
    diagnostic, not the paper's protocol, which samples the 20 tasks' training data as it comes.
    (``ut eval --split train`` of such a run counts the repeated questions as often as they appear.)

    ``vocabulary_tasks`` (null: ``tasks``; a list, or ``all``, holding every task of ``tasks``)
    builds what the data decide of the model (its vocabulary, answers and words per sentence) from
    these tasks' training data, while training, validation and test stay those of ``tasks``. A
    model trained on task 16 with ``vocabulary_tasks: all`` has the 20-task joint model's shape, so
    a joint run can start from its weights (``train.init_from``): a curriculum, the way to ask
    whether a joint model that never learns a task can keep it once it knows it.

    ``batch_by_task`` (with ``bucket_width`` > 0) makes every training batch one task's stories
    of one length bucket, as a single-task run's batches are, instead of mixing the tasks whose
    stories share the bucket; the epoch still visits every question once, the tasks' batches
    shuffled together. A diagnostic, not the paper's protocol: does a joint model fail a task that
    single-task models learn because each step's gradient mixes the tasks, or because the weights
    are shared between them?"""

    name = "babi"

    data_dir: str = "../shared/data/babi"
    set: str = "en"
    tasks: Any = 1
    memory_size: int = 50
    validation_fraction: float = 0.1
    split_seed: int = 0
    eval_batch_size: int = 500
    bucket_width: int = 0
    attention_stats: bool = False
    tie_break: str = "first"
    validation: str = "held_out"
    train_fraction: float = 1.0
    selection: str = "mean"
    repeat: Any = None
    vocabulary_tasks: Any = None
    batch_by_task: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tie_break not in ("first", "loss"):
            raise ConfigError(f"task.tie_break must be 'first' or 'loss', got {self.tie_break!r}")
        if self.validation not in ("held_out", "test"):
            raise ConfigError(f"task.validation must be 'held_out' or 'test', got {self.validation!r}")
        if self.selection not in ("mean", "pooled"):
            raise ConfigError(f"task.selection must be 'mean' or 'pooled', got {self.selection!r}")
        if self.set not in ("en", "en-10k"):
            raise ConfigError(f"task.set must be 'en' (1k) or 'en-10k' (10k), got {self.set!r}")
        self.repeat = _repeat_factors(self.repeat, parse_tasks(self.tasks))
        if self.vocabulary_tasks is not None:
            missing = sorted(set(parse_tasks(self.tasks)) - set(parse_tasks(self.vocabulary_tasks)))
            if missing:
                raise ConfigError(f"task.vocabulary_tasks ({self.vocabulary_tasks!r}) must hold every task trained; "
                                  f"it lacks {missing}, whose words the model could not read")
        if int(self.memory_size) < 1 or int(self.eval_batch_size) < 1:
            raise ConfigError("task.memory_size and task.eval_batch_size must be positive integers")
        if int(self.bucket_width) < 0:
            raise ConfigError(f"task.bucket_width must be 0 (no bucketing) or a number of facts, got {self.bucket_width!r}")
        if self.batch_by_task and not int(self.bucket_width):
            raise ConfigError("task.batch_by_task groups the length buckets by task: it needs task.bucket_width > 0")
        if not 0.0 < float(self.validation_fraction) < 1.0:
            raise ConfigError(f"task.validation_fraction must be in (0, 1), got {self.validation_fraction!r}")
        if not 0.0 < float(self.train_fraction) <= 1.0:
            raise ConfigError(f"task.train_fraction must be in (0, 1], got {self.train_fraction!r}")


def _repeat_factors(value: Any, tasks: list[int]) -> dict[int, int] | None:
    """``task.repeat`` as ``{task: factor}`` in task order, factors of 1 dropped (keys may be strings
    of numbers, as JSON writes them), or None where it changes nothing."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"task.repeat must map tasks to whole factors, e.g. {{16: 8}}, got {value!r}")
    factors = {}
    for key, factor in value.items():
        number = str(key) if isinstance(key, int) and not isinstance(key, bool) else key
        if not (isinstance(number, str) and number.isascii() and number.isdigit()) or int(number) not in tasks:
            raise ConfigError(
                f"task.repeat: {key!r} is not one of the tasks trained ({tasks}); YAML reads {{16:8}} as one "
                "number (968): write {16: 8}, quoted on a shell's command line, or {\"16\":8} in a grid file"
            )
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
            raise ConfigError(f"task.repeat: task {key}'s factor must be a whole number >= 1, got {factor!r}")
        if factor > 1:
            factors[int(number)] = factor
    return dict(sorted(factors.items())) or None


def error_percent(right: Tensor) -> float:
    """The error (%) of the questions ``right`` (bool) marks, from the counts: ``1 - mean`` in
    float32 made exactly 50 wrong of 1000 5.0000012%, a failed task (> 5%)."""
    return 100.0 * int((~right).sum()) / right.numel() if right.numel() else float("nan")


def _summary(result: dict[str, Any], names: list[str], selection: str) -> dict[str, Any]:
    """Average error (%) over the tasks ``names`` (``result["taskN/error"]``), failed tasks (> 5%,
    the paper's Section 3.1), the error over all their questions together (``taskN/questions``;
    absent from records made before they were counted) and the selection score
    (``BabiOptions.selection``)."""
    errors = [result[f"{name}/error"] for name in names]
    counts = [result.get(f"{name}/questions") for name in names]
    questions = None if None in counts else counts
    mean = sum(errors) / len(errors)
    summary = {"mean_error": mean, "failed_tasks": sum(e > 5.0 for e in errors)}
    if questions is not None:  # each task's wrong answers recounted from its error, so that equal counts tie exactly
        summary["pooled_error"] = 100.0 * sum(round(e * n / 100.0) for e, n in zip(errors, questions)) / sum(questions)
    if selection == "pooled" and questions is None:
        raise ConfigError("task.selection: pooled needs each task's number of questions (taskN/questions)")
    summary["score"] = -(summary["pooled_error"] if selection == "pooled" else mean)
    return summary


class BabiTask(Task):
    name = "babi"
    options_class = BabiOptions
    model_classes = ("UTStoryQA",)
    derived_model_fields = DERIVED_MODEL_FIELDS
    options: BabiOptions

    def __init__(self, options: BabiOptions | dict[str, Any], *, seed: int) -> None:
        super().__init__(options, seed=seed)
        opts = self.options
        self.data_dir = Path(opts.data_dir)
        self.set = opts.set
        self.tasks = parse_tasks(opts.tasks)
        self.memory_size = int(opts.memory_size)
        self.validation_fraction = float(opts.validation_fraction)
        self.split_seed = int(opts.split_seed)
        self.eval_batch_size = int(opts.eval_batch_size)
        self.notes: list[str] = []
        try:
            raw = self._load()
            # The words, answers and sentence length come from these and the other vocabulary tasks'
            # data (read once each): sets and a maximum, so the union is the joint model's.
            others = sorted(set(parse_tasks(opts.vocabulary_tasks)) - set(self.tasks)) if opts.vocabulary_tasks else []
            shaping = {split: raw[split] + more for split, more in self._load(others).items()} if others else raw
        except BabiFormatError as err:
            raise ConfigError(str(err)) from None
        if opts.validation == "test":
            self.notes.append("task.validation: test: trained on the whole training files and evaluated on the test "
                              "files during training, so the kept model was chosen on test questions")
        self.words = self._vocabulary(shaping["train"] + shaping["validation"])
        self.answers = sorted({ex.answer for ex in shaping["train"]}) + [UNKNOWN]
        known = set(self.answers)
        for split in ("validation", "test"):  # scored as the unknown answer: always an error, and said so
            for task, answer in sorted({(ex.task, ex.answer) for ex in raw[split] if ex.answer not in known}):
                print(f"note: task {task} {split}: the answer {answer!r} answers no training question; no model "
                      "can give it, so its questions count as errors", file=sys.stderr)
        self.fact_words = max(len(s) for s in _sentences(shaping["train"]))
        # The words that answer some training question of each task: the recency baseline's candidates.
        self.candidates: dict[int, set[str]] = {t: set() for t in self.tasks}
        for ex in raw["train"]:
            self.candidates[ex.task].add(ex.answer)
        self.usual_answers = usual_answers(raw["train"])
        self.seen_answers = seen_answers(raw["train"])
        # Each split is encoded when first used: `ut eval --split test` and `ut plot` of the 10k joint
        # set would otherwise encode the 172k training questions (2 GB) for nothing.
        self._raw = raw
        self.splits: Mapping[str, EncodedSplit] = _EncodedSplits(raw, self._encode)
        self._permutations: dict[int, Tensor] = {}
        self.bucket_width = int(opts.bucket_width)
        self.batch_by_task = bool(opts.batch_by_task)

    # -- data ------------------------------------------------------------------------

    def _load(self, tasks: list[int] | None = None) -> dict[str, list[BabiExample]]:
        """The questions of ``tasks`` (default: the tasks trained) by split."""
        train, validation, test = [], [], []
        for task in self.tasks if tasks is None else tasks:
            folder = self.data_dir / self.set
            try:
                path = task_file(folder, task, "train")
            except BabiFormatError:
                if self.set != "en-10k":
                    raise
                # ../shared/data/babi/README.md: en-10k lacks qa3's train file; its first
                # 1000 questions equal en/qa3's, which we use instead.
                path = task_file(self.data_dir / "en", task, "train")
                note = f"task {task}: {folder} has no train file; using {path} (1k) instead"
                if task in self.tasks:  # not for a task read for its vocabulary alone
                    self.notes.append(note)
                    print(f"note: {note}", file=sys.stderr)
            examples = read_babi(path, task)
            test += read_babi(task_file(self.data_dir / self.set, task, "test"), task)
            stories = max(ex.story for ex in examples) + 1
            if self.options.validation == "test":  # the port's protocol: no held-out stories
                train += self._first_stories(examples, list(range(stories)))
                continue
            # Hold out whole stories: questions of one story share its facts, so a split by
            # question would let validation questions be answered from memorised training stories.
            order = torch.randperm(stories, generator=torch.Generator().manual_seed(self.split_seed + task)).tolist()
            n_held = int(round(self.validation_fraction * stories))
            if not 0 < n_held < stories:
                raise ConfigError(
                    f"task.validation_fraction={self.validation_fraction} holds out {n_held} of the {stories} stories "
                    f"of {path}; validation and training each need at least one"
                )
            held = set(order[:n_held])
            validation += [ex for ex in examples if ex.story in held]
            train += self._first_stories(examples, [s for s in range(stories) if s not in held])
        for task, factor in (self.options.repeat or {}).items():  # after the split: held-out stories stay out
            train += [ex for ex in train if ex.task == task] * (factor - 1)
        return {"train": train, "validation": test if self.options.validation == "test" else validation, "test": test}

    def _first_stories(self, examples: list[BabiExample], stories: list[int]) -> list[BabiExample]:
        """The questions of the first ``train_fraction`` of ``stories`` (in file order; at least one)."""
        kept = set(stories[: max(1, round(float(self.options.train_fraction) * len(stories)))])
        return [ex for ex in examples if ex.story in kept]

    @staticmethod
    def _vocabulary(examples: list[BabiExample]) -> dict[str, int]:
        words = sorted({w for s in _sentences(examples) for w in s})
        # 0 = padding, 1 = unknown word; 2 is kept free so that the config's special ids stay valid.
        return {UNKNOWN: 1, **{w: i + 3 for i, w in enumerate(words)}}

    def _ids(self, sentence: list[str]) -> list[int]:
        return [self.words.get(w, 1) for w in sentence[: self.fact_words]]

    def _encode(self, examples: list[BabiExample]) -> EncodedSplit:
        # Built in NumPy. Each distinct fact gets a row of word ids (the questions of a story share
        # its fact lists, read_babi; keyed by identity, unique while ``examples`` holds them) and each
        # memory slot the row it shows. A fact of no words shows row 0, as an empty slot does, so
        # that a used slot is one with some word (ids are >= 1). Filling a [N, F, W] tensor slot by
        # slot in torch took 50 s on the 10k joint set.
        n, f, w = len(examples), self.memory_size, self.fact_words
        slots = np.zeros((n, f), dtype=np.int64)
        fact_ids: list[list[int]] = [[]]
        row_of: dict[int, int] = {}
        question = np.zeros((n, w), dtype=np.int64)
        answer_index = {a: i for i, a in enumerate(self.answers)}
        labels = [answer_index.get(ex.answer, len(self.answers) - 1) for ex in examples]
        roles = np.zeros((n, f + 1), dtype=np.int64)
        roles[:, -1] = ROLES.index("question")
        latest = np.full(n, -1, dtype=np.int64)
        usual = np.full(n, -1, dtype=np.int64)
        seen = np.full(n, -1, dtype=np.int64)
        support_rank = np.zeros((n, f + 1), dtype=np.int64)
        supporting_role, other_role = ROLES.index("supporting"), ROLES.index("other")
        for i, ex in enumerate(examples):
            baseline = most_recent_candidate(ex, self.candidates[ex.task])
            if baseline is not None:
                latest[i] = answer_index[baseline]
            if (answer := self.usual_answers.get((ex.task, tuple(ex.question)))) is not None:
                usual[i] = answer_index[answer]
            if (answer := self.seen_answers.get(story_key(ex))) is not None:
                seen[i] = answer_index[answer]
            recent = ex.facts[-f:]
            first = len(ex.facts) - len(recent)  # index in ex.facts of the oldest fact kept
            start = f - len(recent)  # right-aligned: the newest fact sits just before the question
            roles[i, start:f] = other_role
            for k, s in enumerate(ex.supporting, start=1):
                if s >= first:  # a supporting fact older than the memory keeps no slot
                    support_rank[i, start + s - first] = k
                    roles[i, start + s - first] = supporting_role
            rows = []
            for sentence in recent:
                if (row := row_of.get(id(sentence))) is None:
                    ids, row = self._ids(sentence), 0
                    if ids:
                        row = len(fact_ids)
                        fact_ids.append(ids)
                    row_of[id(sentence)] = row
                rows.append(row)
            slots[i, start:f] = rows
            ids = self._ids(ex.question)
            question[i, : len(ids)] = ids
        sentences = np.zeros((len(fact_ids), w), dtype=np.int64)
        for row, ids in enumerate(fact_ids):
            sentences[row, : len(ids)] = ids
        return EncodedSplit(
            torch.from_numpy(sentences), torch.from_numpy(slots), torch.from_numpy(question),
            torch.tensor(labels, dtype=torch.long), torch.tensor([ex.task for ex in examples]),
            torch.tensor([len(ex.supporting) for ex in examples]),
            torch.from_numpy(roles), torch.from_numpy(latest), torch.from_numpy(usual), torch.from_numpy(support_rank),
            torch.from_numpy(seen),
        )

    def model_overrides(self) -> dict[str, Any]:
        values = (len(self.words) + 2, len(self.answers), self.fact_words, 0, 1, 2)
        return dict(zip(DERIVED_MODEL_FIELDS, values))

    @cached_property
    def _batcher(self) -> BucketBatcher | None:
        """The length buckets of the training stories (``bucket_width`` > 0; with ``batch_by_task``,
        per task), made on first use."""
        if not self.bucket_width:
            return None
        train = self.splits["train"]
        groups = train.task.tolist() if self.batch_by_task else None
        return BucketBatcher(train.story_lengths().tolist(), width=self.bucket_width, sides=1, groups=groups)

    def train_batch(self, step: int, *, batch_tokens: int, max_batch_size: int) -> StoryBatch:
        """``max_batch_size`` examples, walking through seeded per-epoch permutations, or with
        ``bucket_width`` one length bucket's stories (``batch_tokens`` fact slots at most)."""
        data = self.splits["train"]
        if self._batcher is not None:
            return data.batch(self._batcher.batch(self.seed, step, batch_tokens, max_batch_size))
        n = len(data)
        start = step * max_batch_size
        index = []
        for g in range(start, start + max_batch_size):
            epoch, pos = divmod(g, n)
            if epoch not in self._permutations:
                gen = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
                self._permutations = {epoch: torch.randperm(n, generator=gen)}
            index.append(int(self._permutations[epoch][pos]))
        return data.batch(torch.tensor(index))

    # -- evaluation ------------------------------------------------------------------

    def evaluate(self, model: nn.Module, split: str) -> dict[str, Any]:
        """Error (%) per task, average error, failed tasks (> 5% error); ponder time per task, by
        number of supporting facts, and by what a position holds (a supporting fact, another
        fact, the question), each the mean over all such positions of the split.

        Per task where the recency baseline applies (:func:`most_recent_candidate`), what the
        errors are: ``taskN/recent_baseline_error``, the error (%) of answering with the candidate
        mentioned last, and the model's error on the questions where that answer is right and
        where it is wrong (``taskN/error_if_recent_right``, ``..._wrong``): a model that has learnt
        the task errs on neither; one that answers "the latest" errs on the second only. The same
        for the question-only baseline (:func:`usual_answers`: the answer training gives the
        question's text most often), ``taskN/question_baseline_error``, ``taskN/error_if_question_right``
        and ``..._wrong``: a model that answers from the question alone errs on the second only.
        And for the lookup baseline (:func:`seen_answers`: training's answer to the same question
        on the same story, where training holds it verbatim), ``taskN/seen_baseline_error`` (the
        share of questions training does not hold), ``taskN/error_if_seen_right`` (the error on
        those it holds, which memory can answer) and ``..._wrong`` (on the rest: the error that
        measures the reasoning).

        ``split`` may also be ``train`` (the training stories, less the held-out validation
        ones): a model that errs there as much as on validation underfits, it does not overfit."""
        return self._evaluate(model, split, self.tasks)

    def evaluate_task(self, model: nn.Module, split: str, name: str) -> dict[str, Any]:
        """:meth:`evaluate` on task ``name``'s questions alone (``ut eval --per-task``: a joint
        model's test set has every task's, which each task's model would otherwise all answer)."""
        if name not in self.task_names():
            raise ConfigError(f"no task {name!r} in tasks {self.tasks} (names: {', '.join(self.task_names())})")
        return self._evaluate(model, split, [int(name.removeprefix("task"))])

    @torch.no_grad()
    def _evaluate(self, model: nn.Module, split: str, tasks: list[int]) -> dict[str, Any]:
        if split not in ("validation", "test", "train"):
            raise ConfigError(f"unknown split {split!r}; bAbI evaluates validation, test and train")
        model.eval()
        data = self.splits[split]
        if tasks != self.tasks:
            data = data.subset(torch.isin(data.task, torch.tensor(tasks)))
        device = next(model.parameters()).device
        predicted, positions, looks, losses = [], [], [], []
        # Per measure of depth (DEPTH_MEASURES): per example the sum and sum of squares over its real
        # positions, and per role the sum and count.
        sums: dict[str, list[Tensor]] = {name: [] for name in DEPTH_MEASURES}
        squares: dict[str, list[Tensor]] = {name: [] for name in DEPTH_MEASURES}
        by_role: dict[str, list[Tensor]] = {name: [] for name in DEPTH_MEASURES}
        attention_stats = bool(self.options.attention_stats)
        # Stories in order of length, so that a batch is padded little; results go back in place below.
        order = torch.argsort(data.story_lengths(), stable=True)
        for i in range(0, len(data), self.eval_batch_size):
            index = order[i:i + self.eval_batch_size]
            batch = data.batch(index).to(device)
            out = model(**batch.model_inputs(), need_weights=attention_stats)
            predicted.append(out.logits.argmax(-1).cpu())
            losses.append(nn.functional.cross_entropy(out.logits.double(), batch.labels, reduction="sum"))
            stats = out.halting["encoder"]
            if attention_stats:
                looks.append(self._question_attention(out.attentions["encoder"], stats, data.support_rank[index]))
            real = (~stats.padding).double() if stats.padding is not None else torch.ones_like(stats.ponder_time, dtype=torch.float64)
            real = real.cpu()
            positions.append(real.sum(1))
            roles = data.roles[index][:, -real.shape[1]:]  # the batch kept the newest slots
            # [B, L, roles] over the positions the model computed (empty slots too with empty_slots="compute")
            one_hot = torch.nn.functional.one_hot(roles, len(ROLES)).double() * real[..., None]
            for name, (_, measure) in DEPTH_MEASURES.items():
                value = measure(stats).double().cpu() * real
                sums[name].append(value.sum(1))
                squares[name].append((value * value).sum(1))
                by_role[name].append(torch.stack((torch.einsum("bl,blr->br", value, one_hot), one_hot.sum(1)), -1))
        def in_place(parts: list[Tensor]) -> Tensor:
            ordered = torch.cat(parts)
            return torch.empty_like(ordered).index_copy_(0, order, ordered)

        hit = in_place(predicted) == data.labels
        # A group's mean and std are over all its positions, as the paper reports them.
        count = in_place(positions)
        total = {name: in_place(parts) for name, parts in sums.items()}
        square = {name: in_place(parts) for name, parts in squares.items()}
        role_sum = {name: in_place(parts) for name, parts in by_role.items()}  # [N, roles, (sum, count)]

        def mean_std(name: str, mask: Tensor) -> tuple[float, float]:
            n = count[mask].sum()
            mean = total[name][mask].sum() / n
            var = (square[name][mask].sum() / n - mean * mean).clamp_min(0.0) * n / (n - 1).clamp_min(1.0)
            return mean.item(), var.sqrt().item()

        def by_roles(name: str, mask: Tensor | None, prefix: str) -> None:
            for r, role in enumerate(ROLES):
                part = role_sum[name][:, r] if mask is None else role_sum[name][mask, r]
                role_total, role_count = part.sum(0).tolist()
                if role_count:
                    result[f"{prefix}{name}_{role}"] = role_total / role_count

        result: dict[str, Any] = {}
        for task in tasks:
            mask = data.task == task
            task_hit = hit[mask]
            result[f"task{task}/error"] = error_percent(task_hit)
            result[f"task{task}/questions"] = task_hit.numel()
            for name, baseline in (("recent", data.recent[mask]), ("question", data.usual[mask]),
                                   ("seen", data.seen[mask])):
                if bool(baseline.ge(0).any()):
                    right = baseline.eq(data.labels[mask])
                    result[f"task{task}/{name}_baseline_error"] = error_percent(right)
                    for side, where in (("right", right), ("wrong", ~right)):
                        if bool(where.any()):
                            result[f"task{task}/error_if_{name}_{side}"] = error_percent(task_hit[where])
            for name, (per_task, _) in DEPTH_MEASURES.items():
                result[f"task{task}/{per_task}"], result[f"task{task}/{name}_std"] = mean_std(name, mask)
                by_roles(name, mask, f"task{task}/")
        for name in DEPTH_MEASURES:
            for k in sorted(set(data.supporting.tolist())):
                result[f"supporting{k}/{name}_mean"], result[f"supporting{k}/{name}_std"] = mean_std(name, data.supporting == k)
            by_roles(name, None, "")
        if attention_stats:
            look = in_place(looks)  # [N, 6]
            for task in tasks:
                mean = look[data.task == task].mean(0).tolist()
                for name, value in zip(ATTENTION_COLUMNS, mean):
                    result[f"task{task}/{name}"] = value
        result.update(_summary(result, [f"task{task}" for task in tasks], self.options.selection))
        result["loss"] = torch.stack(losses).sum().item() / len(data)  # one device sync, not one per batch
        if self.options.tie_break == "loss":
            result["tie_break"] = -result["loss"]
        if self.notes:
            result["notes"] = list(self.notes)
        return result

    def task_names(self) -> list[str]:
        return [f"task{task}" for task in self.tasks] if len(self.tasks) > 1 else []

    def task_scores(self, metrics: dict[str, Any]) -> dict[str, float]:
        return {name: -metrics[f"{name}/error"] for name in self.task_names()}

    def merge_task_metrics(self, metrics: dict[str, dict[str, Any]]) -> dict[str, Any]:
        names = self.task_names()
        missing = [name for name in names if name not in metrics]
        if not names or missing:
            raise ConfigError(f"merging per-task metrics of tasks {self.tasks}: none for {', '.join(missing) or 'a single task'}")
        result = {k: v for name in names for k, v in metrics[name].items() if k.startswith(f"{name}/")}
        return {**result, **_summary(result, names, self.options.selection)}

    @staticmethod
    def _question_attention(steps: list[dict[str, Tensor]], stats: HaltingStats, support_rank: Tensor) -> Tensor:
        """``[B, 6]``: the question's attention (mean over heads and over the steps it took) on
        supporting facts 1, 2, 3 (as listed), on the other facts and on itself, and the number of
        facts (ATTENTION_COLUMNS)."""
        looks = torch.stack([w["self"][:, :, -1].float().mean(1) for w in steps], 1).cpu()  # [B, S, L]
        taken = stats.n_updates[:, -1].cpu().ceil().clamp(1, looks.shape[1])  # the question's steps
        live = (torch.arange(looks.shape[1])[None] < taken[:, None]).float()  # [B, S]
        look = (looks * live[..., None]).sum(1) / live.sum(1, keepdim=True)  # [B, L]
        rank = support_rank[:, -look.shape[1]:]  # the batch kept the newest slots
        real = torch.ones_like(look, dtype=torch.bool) if stats.padding is None else ~stats.padding.cpu()
        fact = real.clone()
        fact[:, -1] = False
        columns = [(look * rank.eq(k)).sum(1) for k in (1, 2, 3)]
        columns += [(look * (fact & rank.eq(0))).sum(1), look[:, -1], fact.sum(1).float()]
        return torch.stack(columns, 1).double()

    @classmethod
    def report(cls, roots: dict[str, Path], *, length: int | None = None, ponder: bool = False, runs: bool = False) -> str:
        """The paper's per-task error table (best seed on validation), optionally the ponder
        time per task and the run behind each cell; one column per root."""
        from ..evaluation.babi_report import (
            best_of_seeds, collect_runs, error_table, ponder_by_supporting_facts, ponder_table, role_ponder_table,
            runs_table,
        )

        columns = {name: best_of_seeds(collect_runs(root)) for name, root in roots.items()}
        parts = [error_table(columns)]
        if ponder:
            parts.append("Test ponder time per task, mean ± std over all positions:\n\n" + ponder_table(columns))
            parts.append("Test ponder time of supporting facts / other facts / the question:\n\n"
                         + role_ponder_table(columns))
        if runs:
            parts.append("Runs: steps done / step of the best model (evaluated) / training seconds:\n\n" + runs_table(columns))
        for name, column in columns.items():
            by_facts = ponder_by_supporting_facts(column)
            if by_facts:
                parts.append(f"{name}: test ponder time, tasks with 1/2/3 supporting facts: " + ", ".join(
                    f"task {t}: {m:.2f}" + (f"±{s:.2f}" if s is not None else "") for t, (m, s) in by_facts.items()))
        return "\n\n".join(parts)

    def plot(self, model: nn.Module, split: str, index: int, prefix: Path, *, story_task: int | None = None) -> list[Path]:
        """Attention over the facts per step and head (the paper's Appendix D) and ponder time per fact
        for question ``index`` of the split (of task ``story_task``'s questions, when given)."""
        from ..visualisation.babi import plot_attention, plot_ponder

        example, batch = self.example(split, index, story_task=story_task)
        return [
            plot_attention(model, example, batch, f"{prefix}-attention.png", answers=self.answers),
            plot_ponder(model, example, batch, f"{prefix}-ponder.png"),
        ]

    def example(self, split: str, index: int, *, story_task: int | None = None) -> tuple[BabiExample, StoryBatch]:
        """A single raw example and its batch (for plots): question ``index`` of the split, or of
        task ``story_task``'s questions in it."""
        if split not in self.splits:
            raise ConfigError(f"no split {split!r}; bAbI has {', '.join(self.splits)}")
        raw = self._raw[split]
        indices = list(range(len(raw)))
        if story_task is not None:
            if story_task not in self.tasks:
                raise ConfigError(f"task {story_task} is not among this run's tasks ({', '.join(map(str, self.tasks))})")
            indices = [i for i, ex in enumerate(raw) if ex.task == story_task]
        if not 0 <= index < len(indices):
            of = f"task {story_task}'s" if story_task is not None else "the"
            raise ConfigError(f"--index {index}: {of} {split} split has {len(indices)} questions")
        chosen = indices[index]
        return raw[chosen], self.splits[split].batch(torch.tensor([chosen]))


__all__ = ["DERIVED_MODEL_FIELDS", "BabiOptions", "BabiTask", "StoryBatch", "parse_tasks", "tokenize"]
