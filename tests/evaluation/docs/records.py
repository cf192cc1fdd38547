"""Hand-made run records of the experiments, shared by the tests of the tables."""

from __future__ import annotations

from ..conftest import make_record


MODELS = {  # label -> (model_class, model section)
    "LSTM": ("LSTMSeq2Seq", {"d_model": 128}),
    "Transformer": ("UniversalTransformer", {"share_weights": False}),
    "UT": ("UniversalTransformer", {"share_weights": True, "act": False}),
    "UT+ACT": ("UniversalTransformer", {"act": True}),
}


def algorithmic_record(task, label, char, seq, *, score=0.5, seed=0, family="algorithmic", **fields):
    """An algorithmic run of ``label`` (a key of MODELS): accuracies at lengths 40 and 400."""
    model_class, model = MODELS[label]
    test = {"len40/char_accuracy": char + 0.5, "len40/sequence_accuracy": seq + 0.5,
            "len400/char_accuracy": char, "len400/sequence_accuracy": seq}
    if label == "UT+ACT":
        test["len400/encoder_ponder_time"] = 2.25
    return make_record(f"{family}/{task}-{label}", model_class=model_class, model=model,
                       task={"name": "algorithmic", "task": task}, validation={"score": score},
                       test=test, seeds=[seed], **fields)


def lte_record(task, label, char, seq, *, score=0.5, seed=0, experiment=None, options=None, **fields):
    """A Learning to Execute run of ``label``: test char / sequence accuracy (task ``options`` beside the task's name)."""
    model_class, model = MODELS[label]
    return make_record(experiment or f"lte/{task}-{label}", model_class=model_class, model=model,
                       task={"name": "lte", "task": task, **(options or {})}, validation={"score": score},
                       test={"char_accuracy": char, "sequence_accuracy": seq}, seeds=[seed], **fields)


def babi_record(experiment, seed, score, errors, **fields):
    """A bAbI run: test error per task of ``errors`` (task -> %), ponder time 2 + task."""
    test = {f"task{t}/error": e for t, e in errors.items()}
    test.update({f"task{t}/ponder_time": 2.0 + t for t in errors})
    return make_record(experiment, task={"name": "babi", "set": "en"}, validation={"score": score}, test=test,
                       seeds=[seed], **fields)
