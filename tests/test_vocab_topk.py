"""Beam search's pass over the vocabulary: the native kernel and the PyTorch path against float64.

The reference is computed independently per row in float64: log-softmax over every token, banned
tokens removed, sorted best first (ties cannot occur: the logits are drawn from a continuous
distribution).
"""

from __future__ import annotations

import pytest
import torch
from native_fixtures import NO_COMPILER, library_without_compiler

from nmtvariants import native
from nmtvariants.inference import vocab_topk
from nmtvariants.inference.vocab_topk import _torch_top_log_probs, top_log_probs

PATHS = {"dispatched": top_log_probs, "pytorch": _torch_top_log_probs}


def assert_close(actual: torch.Tensor, want: list, atol: float) -> None:
    torch.testing.assert_close(actual.double(), torch.tensor(want, dtype=torch.float64), atol=atol, rtol=0)


def reference(logits: torch.Tensor, count: int, banned: list[int]) -> tuple[list, list, list]:
    """Per row, in float64: the count best (log-probability, token) outside banned, and log-sum-exp."""
    log_probs, tokens, normalisers = [], [], []
    for row in logits.double():
        normaliser = float(torch.logsumexp(row, 0))
        ranked = sorted(
            ((float(value) - normaliser, token) for token, value in enumerate(row) if token not in banned),
            key=lambda pair: -pair[0],
        )[:count]
        ranked += [(float("-inf"), 0)] * (count - len(ranked))
        log_probs.append([value for value, _ in ranked])
        tokens.append([token for _, token in ranked])
        normalisers.append(normaliser)
    return log_probs, tokens, normalisers


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("rows", "vocab", "count", "scale"),
    [(12, 1003, 10, 3.0), (5, 40, 7, 1.0), (3, 9, 4, 30.0), (4, 20000, 16, 8.0)],
)
def test_best_tokens_and_log_probs_match_a_float64_reference(path, rows, vocab, count, scale):
    generator = torch.Generator().manual_seed(rows * vocab)
    logits = torch.randn(rows, vocab, generator=generator) * scale
    banned = [0, 1, 2] if vocab > 20 else [1]
    before = logits.clone()
    log_probs, tokens, normaliser = PATHS[path](logits, count, banned)
    want_log_probs, want_tokens, want_normaliser = reference(logits, count, banned)
    assert torch.equal(logits, before), "the logits are read, not modified"
    assert tokens.tolist() == want_tokens
    assert_close(log_probs, want_log_probs, atol=2e-5 * scale)
    assert_close(normaliser, want_normaliser, atol=2e-5 * scale)


@pytest.mark.parametrize("path", PATHS)
def test_a_banned_token_counts_in_the_normaliser_even_when_it_is_the_largest(path):
    logits = torch.tensor([[50.0, 1.0, 2.0, 3.0, 0.5], [-1.0, 4.0, 4.5, -2.0, 0.0]])
    log_probs, tokens, normaliser = PATHS[path](logits, 2, [0])
    want_log_probs, want_tokens, want_normaliser = reference(logits, 2, [0])
    assert tokens.tolist() == want_tokens == [[3, 2], [2, 1]]
    assert_close(normaliser, want_normaliser, atol=1e-5)
    assert_close(log_probs, want_log_probs, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_rows_with_fewer_allowed_tokens_than_asked_are_filled_with_minus_infinity(path):
    logits = torch.tensor([[0.5, 2.0, -1.0, 1.0]])
    log_probs, tokens, _ = PATHS[path](logits, 4, [1, 3])
    assert tokens.tolist() == [[0, 2, 0, 0]]
    assert_close(log_probs, reference(logits, 4, [1, 3])[0], atol=1e-6)
    assert log_probs[0, 2:].tolist() == [float("-inf")] * 2


def test_large_logits_do_not_overflow_the_normaliser():
    logits = torch.tensor([[1e4, 1e4 - 1.0, -1e4, 0.0], [-3e4, -3e4 + 2.0, -3e4 + 1.0, -3e4]])
    log_probs, tokens, normaliser = top_log_probs(logits, 2, [])
    want_log_probs, want_tokens, want_normaliser = reference(logits, 2, [])
    assert tokens.tolist() == want_tokens
    assert_close(normaliser, want_normaliser, atol=2e-3)  # one float32 ulp at 3e4
    assert_close(log_probs, want_log_probs, atol=2e-3)


def test_the_kernel_is_built_where_a_compiler_exists_and_named_by_the_cpu():
    state = vocab_topk.status()
    if (
        native.compiler() is None
        and not native.library_path(
            vocab_topk.LIBRARY_NAME, vocab_topk.SOURCE_FILE.read_text(), vocab_topk.FLAGS
        ).is_file()
    ):
        assert state.startswith("PyTorch ops (no C compiler"), state
    else:
        assert state.startswith("native kernel (vocab_topk-"), state
    # -march=native code is cached per CPU kind: another CPU's flags give another library
    source = vocab_topk.SOURCE_FILE.read_text()
    here = native.library_path("x", source, vocab_topk.FLAGS)
    assert native.library_path("x", source, ("-O3",)) != here
    assert here == native.library_path("x", source, vocab_topk.FLAGS)


def test_a_failing_build_falls_back_to_pytorch_and_says_why(tmp_path, monkeypatch):
    library_without_compiler(vocab_topk, tmp_path, monkeypatch)
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(3))
    _, tokens, _ = top_log_probs(logits, 4, [0])
    assert vocab_topk.status() == NO_COMPILER
    assert tokens.tolist() == reference(logits, 4, [0])[1]


def test_the_benchmark_times_three_ways_to_the_same_candidates():
    """benchmarks/vocab_topk.py compares like with like: each way's sentence-level best scores agree."""
    from benchmark_loader import load_benchmark

    ways = load_benchmark("vocab_topk").methods(torch, vocab_topk)
    generator = torch.Generator().manual_seed(11)
    logits = torch.randn(4 * 3, 500, generator=generator) * 3
    scores = -torch.rand(4, 3, generator=generator) * 5
    results = {name: way(logits.clone(), scores, 3).values for name, way in ways.items()}
    for name, values in results.items():
        torch.testing.assert_close(values, results["log_softmax + top-k"], atol=1e-5, rtol=0, msg=name)
