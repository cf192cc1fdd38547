"""The CUDA path against the CPU (``pytest -m gpu``; skipped without a GPU).

float32 results agree to float32 tolerances (different kernels sum in different orders;
TF32 is switched off); bf16 autocast tracks float32 within a looser bound.
"""

from __future__ import annotations

import pytest
import torch

from universal_transformer import UniversalTransformer, UTLanguageModel
from universal_transformer.generation import beam_search, generate, generate_uncached
from universal_transformer.training.config import ExperimentConfig
from universal_transformer.training.trainer import Trainer

from ..conftest import small_config

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

VARIANTS = {
    "ut": dict(),
    "act-packed": dict(act=True, act_bias_init=0.0, num_steps=3),
    "act-sepconv": dict(act=True, act_bias_init=0.0, num_steps=3, transition="sepconv"),
    "pre-norm": dict(norm="pre"),
}


@pytest.fixture(autouse=True)
def _no_tf32():
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def _pair(name):
    torch.manual_seed(0)
    cpu = UniversalTransformer(small_config(d_model=32, d_ff=64, **VARIANTS[name])).eval()
    gpu = UniversalTransformer(cpu.config).cuda().eval()
    gpu.load_state_dict(cpu.state_dict())
    return cpu, gpu


@pytest.mark.parametrize("name", VARIANTS)
def test_forward_and_gradients_match_the_cpu(name):
    cpu, gpu = _pair(name)
    src, tgt = torch.randint(3, 13, (4, 9)), torch.randint(3, 13, (4, 7))
    src[1, 6:] = 0
    outs = []
    for model, device in ((cpu, "cpu"), (gpu, "cuda")):
        out = model(src.to(device), tgt[:, :-1].to(device), labels=tgt[:, 1:].to(device))
        grads = torch.autograd.grad(out.loss, list(model.parameters()), allow_unused=True)
        outs.append((out, grads))
    (a, ga), (b, gb) = outs
    torch.testing.assert_close(b.logits.cpu(), a.logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(b.halting["encoder"].n_updates.cpu(), a.halting["encoder"].n_updates)
    for x, y in zip(ga, gb):
        if x is not None:
            torch.testing.assert_close(y.cpu(), x, atol=1e-4, rtol=1e-3)


def test_bf16_autocast_tracks_fp32_on_cuda():
    _, gpu = _pair("act-packed")
    src, tgt = torch.randint(3, 13, (8, 12), device="cuda"), torch.randint(3, 13, (8, 10), device="cuda")
    with torch.no_grad():
        ref = gpu(src, tgt[:, :-1], labels=tgt[:, 1:]).loss
        with torch.autocast("cuda", dtype=torch.bfloat16):
            low = gpu(src, tgt[:, :-1], labels=tgt[:, 1:]).loss
    assert abs(float(low) - float(ref)) < 0.05 * abs(float(ref))


def test_packed_act_equals_dense_on_cuda():
    _, packed = _pair("act-packed")
    dense = UniversalTransformer(packed.config).cuda().eval()
    dense.load_state_dict(packed.state_dict())
    dense.configure_runtime(act_packed=False)
    src, tgt = torch.randint(3, 13, (4, 9), device="cuda"), torch.randint(3, 13, (4, 7), device="cuda")
    with torch.no_grad():
        a, b = packed(src, tgt), dense(src, tgt)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-4, rtol=1e-4)
    assert torch.equal(a.halting["encoder"].n_updates, b.halting["encoder"].n_updates)


@pytest.mark.parametrize("name", ["ut", "act-packed", "act-sepconv"])
def test_cached_decoding_and_beam_search_on_cuda(name):
    _, gpu = _pair(name)
    lm = UTLanguageModel(gpu.config).cuda().eval()
    for model, inputs in ((gpu, torch.randint(3, 13, (3, 6), device="cuda")), (lm, torch.randint(3, 13, (3, 4), device="cuda"))):
        tokens = generate(model, inputs, max_new_tokens=10, stop_at_eos=False)
        expected, _ = generate_uncached(model, inputs, max_new_tokens=10)
        assert tokens.tolist() == expected.tolist()
    beams = beam_search(gpu, torch.randint(3, 13, (2, 6), device="cuda"), beam_size=3, max_new_tokens=8)
    assert len(beams.hypotheses) == 2 and all(len(h) == 1 for h in beams.hypotheses)


def test_short_learning_run_on_cuda(tmp_path):
    experiment = ExperimentConfig.from_dict({
        "model": dict(d_model=64, num_heads=4, d_ff=128, num_steps=2, dropout=0.0, embedding_dropout=0.0),
        "task": {"name": "algorithmic", "task": "copy", "train_min_length": 6, "train_max_length": 6,
                 "validation_lengths": [6], "test_lengths": [6], "eval_examples": 200, "eval_batch_size": 200},
        "train": {"steps": 1500, "lr": 3e-3, "schedule": "constant", "warmup_steps": 50, "batch_tokens": 2048,
                  "eval_every": 100, "stop_at_score": 0.99, "seed": 0, "precision": "auto"},
    })
    trainer = Trainer(experiment, tmp_path, device="cuda", progress=False)
    assert trainer.precision == ("bf16" if torch.cuda.is_bf16_supported() else "fp32")
    summary = trainer.fit()
    assert summary["test"]["len6/sequence_accuracy"] >= 0.9, summary["test"]
