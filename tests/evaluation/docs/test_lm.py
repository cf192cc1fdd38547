"""The language-modelling tables (Penn Treebank models; agreement and LAMBADA on their test split)."""

from __future__ import annotations

from universal_transformer.evaluation import docs
from universal_transformer.evaluation.docs import TABLES, model_label

from ..conftest import make_record
from .records import algorithmic_record


LM_MODELS = {  # label -> (model_class, model section)
    "LSTM": ("LSTMLanguageModel", {"d_model": 160, "num_layers": 2}),
    "Transformer": ("UTLanguageModel", {"share_weights": False, "act": False}),
    "UT": ("UTLanguageModel", {"share_weights": True, "act": False}),
    "UT+ACT": ("UTLanguageModel", {"share_weights": True, "act": True}),
}
LINZEN_ITEMS = {0: 1824, 1: 1911, 2: 1889, 3: 1249, 4: 314}


def _lm(label, validation_perplexity, test=None, *, experiment=None, **fields):
    model_class, model = LM_MODELS[label]
    name = experiment or "lm/ptb-" + label.lower().replace("+", "-")
    validation = {"perplexity": validation_perplexity, "score": -validation_perplexity}  # lower perplexity, higher score
    return make_record(name, model_class=model_class, model=model, task={"name": "lm", "test": "ptb.test.txt"},
                       validation=validation, test=test or {}, **fields)


def _ptb(perplexity, ponder=None):
    test = {"perplexity": perplexity, "nll": 5.0, "tokens": 82430}
    if ponder is not None:
        test.update(ponder_time=ponder[0], ponder_std=ponder[1])
    return test


def _agreement(by_attractors, overall, gulordava, original, generated, *, items=LINZEN_ITEMS, skipped=(302, 72)):
    linzen, gul = "agreement/subj_agr_filtered/", "agreement/generated/"
    test = {f"{linzen}attractors{k}/accuracy": a for k, a in zip(items, by_attractors)}
    test.update({f"{linzen}attractors{k}/items": n for k, n in items.items()})
    test.update({f"{linzen}accuracy": overall, f"{linzen}items": sum(items.values()), f"{linzen}skipped_oov": skipped[0],
                 f"{linzen}prefix_unk_rate": 0.18, f"{gul}accuracy": gulordava, f"{gul}items": 338,
                 f"{gul}skipped_oov": skipped[1], f"{gul}original/accuracy": original, f"{gul}original/items": 40,
                 f"{gul}generated/accuracy": generated, f"{gul}generated/items": 298,
                 f"{gul}attractors0/accuracy": 0.99, f"{gul}attractors0/items": 269})  # not a column
    return test


def _lambada(name, accuracy, perplexity, rc_accuracy, oov, passages):
    at = f"lambada/{name}/"
    return {at + "accuracy": accuracy, at + "perplexity": perplexity, at + "rc_accuracy": rc_accuracy,
            at + "oov_targets": oov, at + "passages": passages, at + "target_in_context": 0.8,
            at + "ponder_time": 3.0, at + "ponder_std": 0.5}


def test_model_label_of_the_language_models():
    for label, (model_class, model) in LM_MODELS.items():
        assert model_label({"model_class": model_class, "model": model}) == label


def test_lm_ptb_table_best_seed_parameters_ponder_and_partial():
    records = [
        _lm("UT+ACT", 158.9, status="time_limit", steps=2100, best_step=2000, wall_time_seconds=6000.2,
            parameters=1_906_082),  # partial: no test metrics yet
        _lm("UT", 150.36, _ptb(143.87, (4.0, 0.0)), parameters=1_905_281, status="early_stopped", steps=3500,
            best_step=3000, wall_time_seconds=8420.6),
        _lm("UT", 155.2, _ptb(140.01, (4.0, 0.0)), seeds=[1], parameters=1_905_281),  # worse on validation
        _lm("Transformer", 171.07, _ptb(165.73, (4.0, 0.0))),  # a record without a parameter count
        _lm("LSTM", 160.44, _ptb(154.26), parameters=2_010_001, steps=3500, best_step=3500, wall_time_seconds=5412.3),
        _lm("UT+ACT", 99.0, _ptb(98.0), experiment="lm/lambada-ut-act"),  # not trained on PTB: not shown
        algorithmic_record("copy", "UT", 0.5, 0.1),
    ]
    assert TABLES["lm-ptb"](records) == "\n".join([
        "| model | parameters | validation perplexity | test perplexity | ponder time (test) | best step / steps "
        "| wall time | status |",
        "|---|---|---|---|---|---|---|---|",
        "| LSTM | 2.01M | 160.4 | 154.3 | - | 3500 / 3500 | 5412 s | done |",
        "| Transformer | - | 171.1 | 165.7 | 4.00 ± 0.00 | 800 / 1000 | 100 s | done |",
        "| UT | 1.91M | 150.4 | 143.9 | 4.00 ± 0.00 | 3000 / 3500 | 8421 s | early stopped |",
        "| UT+ACT | 1.91M | 158.9 | - | - | 2000 / 2100 | 6000 s | partial |",
    ])


def test_lm_agreement_table_attractor_columns_item_counts_and_skipped():
    records = [
        _lm("UT", 150.0, _agreement([0.93, 0.81, 0.72, 0.64, 0.58], 0.86, 0.71, 0.66, 0.73)),
        _lm("LSTM", 160.0, _agreement([0.95, 0.77, 0.61, 0.55, 0.49], 0.83, 0.69, 0.62, 0.70)),
        _lm("UT+ACT", 158.0, status="time_limit"),  # no test metrics: no row
    ]
    assert TABLES["lm-agreement"](records) == "\n".join([
        "| model | 0 attractors (n=1824) | 1 (n=1911) | 2 (n=1889) | 3 (n=1249) | 4 (n=314) | Linzen all (n=7187) "
        "| Gulordava all (n=338) | original (n=40) | generated (n=298) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| LSTM | 0.95 | 0.77 | 0.61 | 0.55 | 0.49 | 0.83 | 0.69 | 0.62 | 0.70 |",
        "| UT | 0.93 | 0.81 | 0.72 | 0.64 | 0.58 | 0.86 | 0.71 | 0.66 | 0.73 |",
        "",
        "Ranking accuracy (the correct verb form above the wrong one); n = the items ranked. Items with a verb form "
        "outside the vocabulary cannot be ranked and are skipped: Linzen set 302; Gulordava set 72.",
    ])
    # Models that ranked different items: no count in the header, the skipped items per model.
    scores = _agreement([0.9, 0.8], 0.85, 0.7, 0.6, 0.75, items={0: 1800, 1: 1900}, skipped=(310, 72))
    other = _lm("Transformer", 170.0, scores, status="time_limit", steps=10, wall_time_seconds=9.0)
    table = TABLES["lm-agreement"]([*records, other])
    assert table.split("\n")[0].startswith("| model | 0 attractors | 1 | 2 (n=1889) |")
    assert "| Transformer | 0.90 | 0.80 | - | - | - | 0.85 |" in table
    assert "skipped: Linzen set 302 (LSTM), 310 (Transformer), 302 (UT); Gulordava set 72." in table
    assert table.endswith("partial = stopped at its time limit: lm/ptb-transformer (step 10, 9 s)")


def test_lm_lambada_table_rows_by_set_then_model():
    ut = {**_lambada("lambada_test", 0.031, 4316.14, 0.277, 2934, 5153),
          **_lambada("lambada_test_plain_text", 0.012, 5210.52, 0.241, 2210, 5153),
          **_lambada("lambada_control_test_data_plain_text", 0.046, 901.37, 0.109, 688, 5000)}
    lstm = _lambada("lambada_test_plain_text", 0.018, 4627.83, 0.253, 2210, 5153)
    records = [_lm("UT", 150.0, ut), _lm("LSTM", 160.0, lstm), _lm("Transformer", 170.0, _ptb(165.0))]
    assert TABLES["lm-lambada"](records) == "\n".join([
        "| set | model | accuracy | target perplexity | RC accuracy | OOV targets |",
        "|---|---|---|---|---|---|",
        "| test | LSTM | 0.018 | 4627.8 | 0.253 | 2210 of 5153 |",
        "| test | UT | 0.012 | 5210.5 | 0.241 | 2210 of 5153 |",
        "| control | UT | 0.046 | 901.4 | 0.109 | 688 of 5000 |",
        "| test (OpenAI) | UT | 0.031 | 4316.1 | 0.277 | 2934 of 5153 |",
    ])


def test_lm_tables_without_records():
    others = [algorithmic_record("copy", "UT", 0.5, 0.1), _lm("UT+ACT", 99.0, _ptb(98.0), experiment="lm/lambada-ut-act")]
    partial = _lm("UT", 150.0, status="time_limit")
    for name in ("lm-ptb", "lm-agreement", "lm-lambada"):
        assert TABLES[name]([]) == TABLES[name](others) == docs.NO_RECORDS
    assert TABLES["lm-agreement"]([partial]) == TABLES["lm-lambada"]([partial]) == docs.NO_RECORDS
    assert "| UT | - | 150.0 | - | - | 800 / 1000 | 100 s | partial |" in TABLES["lm-ptb"]([partial])
