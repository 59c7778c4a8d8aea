"""LISA plug-in (Bugliarello & Okazaki's adaptation of Strubell et al. 2018): the parent loss.

The loss is checked against a float64 transcription written from the definition (per sentence, per
query token: log-sum-exp over the sentence's real keys minus the parent's score, with the head's
scores recomputed from the layer input and the projection weights); the trainer path through the
command line with a SIGKILL and resume (tests/test_resume.py's harness), the logged term, decoding
without any parse, and the option errors.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from model_fixtures import single_thread
from plugin_fixtures import write_parents
from test_resume import MAX_UPDATES, assert_same_final, kill_after_checkpoint
from training_fixtures import cli_env, make_corpus, run_config, run_train_cli

from nmtvariants.data.vocab import EOS_ID, PAD_ID, Vocabulary
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import read_lines
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.models import build_model, capture, count_parameters, load_model, model_config
from nmtvariants.models.interfaces import AUX_PAD, SourceInputs
from nmtvariants.plugins.lisa import STREAM, TERM

VOCAB = 25
NO_DROPOUT = {"embedding_dropout": 0, "residual_dropout": 0, "attention_dropout": 0, "relu_dropout": 0}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with single_thread():
        yield


def tiny(variant: dict, **overrides) -> torch.nn.Module:
    cfg = model_config("tiny", {"d_model": 32, "n_heads": 4, "d_ff": 48, **NO_DROPOUT, **overrides}, variant)
    return build_model(cfg, VOCAB)


def random_batch(lengths: list[int], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Source ids (tokens + </s>, right-padded) and random first-subword parents (</s> -> itself)."""
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths) + 1
    src = torch.full((len(lengths), width), PAD_ID, dtype=torch.long)
    parents = torch.full((len(lengths), width), AUX_PAD, dtype=torch.long)
    for row, n in enumerate(lengths):
        src[row, :n] = torch.randint(4, VOCAB, (n,), generator=generator)
        src[row, n] = EOS_ID
        parents[row, :n] = torch.randint(0, n, (n,), generator=generator)
        parents[row, n] = n
    return src, parents


def recorded_loss(model, inputs: SourceInputs) -> dict[str, tuple[torch.Tensor, float]]:
    model.aux_losses.active = True
    try:
        model.encode_inputs(inputs)
    finally:
        model.aux_losses.active = False
    return model.aux_losses.take()


def bilinear_logits(scorer, h: torch.Tensor) -> torch.Tensor:
    """[a_q ; 1] U a_k^T with a = LeakyReLU(W h + b) (slope 0.01), per sentence, written out."""
    with torch.no_grad():
        a = h @ scorer.proj.weight.T + scorer.proj.bias
        a = torch.where(a > 0, a, 0.01 * a)
        dim = a.size(-1) // 2
        a_q, a_k = a[..., :dim], a[..., dim:]
        a_q = torch.cat([a_q, torch.ones_like(a_q[..., :1])], dim=-1)
        return torch.stack([a_q[b] @ scorer.bilinear @ a_k[b].T for b in range(h.size(0))])


@pytest.mark.parametrize(
    ("norm", "scorer"), [("pre", "dot"), ("post", "dot"), ("pre", "bilinear"), ("post", "bilinear")]
)
def test_the_loss_is_the_heads_cross_entropy_over_real_keys_in_float64(norm, scorer):
    torch.manual_seed(3)  # biased projections like the authors' fairseq ones
    options = {"layer": 2, "head": 3, "weight": 0.5, "scorer": scorer}
    model = tiny({"lisa": options}, norm=norm, attention_bias=True).double()
    src, parents = random_batch([5, 2, 7, 1], seed=11)
    with capture(model, attention=True, include=["encoder.layers.0", "encoder.layers.1.self.weights"]) as rec:
        terms = recorded_loss(model, SourceInputs([src], {STREAM: parents}))
    (total, weight) = terms[TERM]
    assert set(terms) == {TERM} and weight == 0.5 and total.dtype == torch.float64

    block = model.encoder_layers[1].self_attn  # layer 2
    x = rec["encoder.layers.0"][0]  # the layer's input
    h = block.norm(x) if norm == "pre" else x
    head, d_head = 2, 32 // 4
    cols = slice(head * d_head, (head + 1) * d_head)
    q = (h @ block.attn.q_proj.weight.T + block.attn.q_proj.bias)[..., cols].detach()
    k = (h @ block.attn.k_proj.weight.T + block.attn.k_proj.bias)[..., cols].detach()
    if scorer == "bilinear":
        logits = bilinear_logits(block.attn.score_transform.scorer, h)
    weights = rec["encoder.layers.1.self.weights"][0][:, head]
    expected = 0.0
    for b in range(src.size(0)):
        n = int(src[b].ne(PAD_ID).sum())  # real tokens incl. </s>
        for t in range(n):
            if scorer == "bilinear":
                scores = [float(logits[b, t, j]) for j in range(n)]
            else:
                scores = [float(q[b, t] @ k[b, j]) / math.sqrt(d_head) for j in range(n)]
            top = max(scores)
            log_z = top + math.log(sum(math.exp(s - top) for s in scores))
            expected += log_z - scores[int(parents[b, t])]
            # the head attends with those logits, over the real keys only
            probs = torch.tensor([math.exp(s - log_z) for s in scores], dtype=torch.float64)
            torch.testing.assert_close(weights[b, t, :n], probs, rtol=1e-9, atol=1e-12)
            assert float(weights[b, t, n:].abs().sum()) == 0.0
    assert float(total.detach()) == pytest.approx(expected, rel=1e-10)


def test_the_bilinear_head_adds_its_projection_and_matrix():
    plain = tiny({})
    assert (
        count_parameters(tiny({"lisa": {}})) - count_parameters(plain) == 32 * 16 + 16 + 9 * 8
    )  # dim = d_head 8
    assert count_parameters(tiny({"lisa": {"dim": 5}})) - count_parameters(plain) == 32 * 10 + 10 + 6 * 5


def test_the_dot_scorer_adds_no_parameters_and_leaves_the_model_unchanged():
    torch.manual_seed(0)
    plain = tiny({})
    lisa = tiny({"lisa": {"scorer": "dot"}})
    lisa.load_state_dict(plain.state_dict())  # no keys of its own
    assert count_parameters(lisa) == count_parameters(plain)
    src, parents = random_batch([4, 6], seed=2)
    tgt = src.flip(1).clamp(min=3)
    with torch.no_grad():
        torch.testing.assert_close(
            lisa(SourceInputs([src], {STREAM: parents}), tgt), plain(src, tgt), rtol=1e-5, atol=1e-6
        )


def test_the_loss_gradient_pulls_the_head_toward_the_parents():
    torch.manual_seed(1)
    model = tiny({"lisa": {}})
    src, parents = random_batch([6, 3, 5], seed=4)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        (total, weight) = recorded_loss(model, SourceInputs([src], {STREAM: parents}))[TERM]
        losses.append(float(total.detach()))
        optimizer.zero_grad()
        (weight * total).backward()
        optimizer.step()
    assert losses[-1] < 0.3 * losses[0]
    # the supervised head (layer 1, head 1) now puts most of its mass on the parents
    with capture(model, attention=True, include=["encoder.layers.0.self.weights"]) as rec:
        model.encode(src)
    weights = rec["encoder.layers.0.self.weights"][0][:, 0]
    real = parents.ne(AUX_PAD)
    on_parent = weights.gather(-1, parents.clamp(min=0)[..., None])[..., 0][real]
    assert float(on_parent.mean()) > 0.8


def test_decoding_needs_no_parse_and_training_without_it_says_what_to_give():
    torch.manual_seed(5)
    plain = tiny({}).eval()
    lisa = tiny({"lisa": {"scorer": "dot"}}).eval()
    lisa.load_state_dict(plain.state_dict())
    src, parents = random_batch([5, 3], seed=8)
    got = beam_search(lisa, SourceInputs([src]), beam_size=3)
    want = beam_search(plain, SourceInputs([src]), beam_size=3)
    assert [h[0].tokens for h in got] == [h[0].tokens for h in want]
    assert lisa.aux_losses.take() == {}  # nothing recorded while decoding
    with pytest.raises(InputError, match=r"lisa .*needs the integer stream 'parents_first'.*--mode first"):
        recorded_loss(lisa, SourceInputs([src]))

    bilinear = tiny({"lisa": {}}).eval()  # the authors' head: decodes without parents, one row at a time too
    batched = beam_search(bilinear, SourceInputs([src]), beam_size=3)
    for row in range(src.size(0)):
        n = int(src[row].ne(PAD_ID).sum())
        ((alone, *_),) = beam_search(bilinear, SourceInputs([src[row : row + 1, :n]]), beam_size=3)
        assert alone.tokens == batched[row][0].tokens
    with torch.no_grad():  # and the parents change nothing at test time
        torch.testing.assert_close(
            bilinear.encode(src, {STREAM: parents}).states, bilinear.encode(src).states
        )


def test_the_trainers_objective_adds_the_weighted_loss_of_each_batch(tmp_path):
    import numpy as np

    from nmtvariants.data.batching import collate
    from nmtvariants.training.loss import label_smoothed_nll
    from nmtvariants.training.train_config import parse_run_config
    from nmtvariants.training.trainer import LossModule, Trainer

    data = make_corpus(tmp_path / "corpus", pairs=40)
    for split in ("train", "valid"):
        path = write_parents(data[f"{split}_src"], tmp_path / f"{split}.parents_first")
        data[f"{split}_aux"] = {STREAM: str(path)}
    config = run_config(data, NO_DROPOUT)
    config["variant"] = {"lisa": {"weight": 0.25}}
    trainer = Trainer(parse_run_config(config), tmp_path / "run")
    batch = collate(trainer.train_data, np.arange(6))
    objective, _, _, aux = LossModule(trainer.model, 0.1)(batch.inputs, batch.tgt_in, batch.tgt_out)
    assert set(aux) == {TERM}
    with torch.no_grad():
        (total, weight) = recorded_loss(trainer.model, batch.inputs)[TERM]
        logits = trainer.model(batch.inputs, batch.tgt_in)
        nmt, _ = label_smoothed_nll(logits, batch.tgt_out, 0.1)
    assert weight == 0.25
    torch.testing.assert_close(aux[TERM], 0.25 * total)
    torch.testing.assert_close(objective.detach(), nmt + 0.25 * total, rtol=1e-5, atol=1e-5)


def test_the_loss_is_float32_under_bfloat16_autocast():
    torch.manual_seed(2)
    model = tiny({"lisa": {}})
    src, parents = random_batch([5, 3], seed=6)
    inputs = SourceInputs([src], {STREAM: parents})
    reference = float(recorded_loss(model, inputs)[TERM][0].detach())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        (total, _) = recorded_loss(model, inputs)[TERM]
    assert total.dtype == torch.float32 and float(total.detach()) == pytest.approx(reference, rel=0.05)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ([1], r"model\.variant\.lisa: expected a mapping"),
        ({"heads": 2}, r"model\.variant\.lisa: unknown option\(s\) heads"),
        ({"layer": 0}, r"model\.variant\.lisa\.layer: a 1-based layer"),
        ({"layer": 3}, r"model\.variant\.lisa\.layer: 3 but the encoder has 2"),
        ({"head": 5}, r"model\.variant\.lisa\.head: 5 but the layer has 4"),
        ({"head": True}, r"model\.variant\.lisa\.head: a 1-based head"),
        ({"weight": -1}, r"model\.variant\.lisa\.weight: a number >= 0"),
        ({"weight": "1"}, r"model\.variant\.lisa\.weight"),
        ({"scorer": "biaffine"}, r"model\.variant\.lisa\.scorer: must be one of bilinear, dot"),
        ({"scorer": "dot", "dim": 8}, r"model\.variant\.lisa\.dim: only the bilinear scorer"),
        ({"dim": 0}, r"model\.variant\.lisa\.dim: a positive integer"),
    ],
)
def test_option_errors_name_the_key(options, message):
    with pytest.raises(ConfigError, match=message):
        tiny({"lisa": options})


def test_lisa_refuses_a_layer_that_another_plugin_transforms():
    from nmtvariants.models.variants import register_variant, unregister_variant

    @register_variant("aaa_scores")  # installed before lisa (sorted order)
    def _install(model, options):
        model.encoder_layers[0].self_attn.attn.score_transform = torch.nn.Identity()

    try:
        with pytest.raises(ConfigError, match=r"model\.variant\.lisa\.layer: .* already has a score"):
            tiny({"aaa_scores": {}, "lisa": {}})
    finally:
        unregister_variant("aaa_scores")


@pytest.mark.slow
def test_lisa_trains_resumes_logs_its_term_and_translates_without_parents_through_the_cli(tmp_path):
    import subprocess
    import sys

    data = make_corpus(tmp_path / "corpus", pairs=150)
    for split in ("train", "valid"):
        path = write_parents(data[f"{split}_src"], tmp_path / f"{split}.parents_first")
        data[f"{split}_aux"] = {STREAM: str(path)}
    config = run_config(data, max_updates=MAX_UPDATES)
    config["variant"] = {"lisa": {"weight": 0.5}}
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run_train_cli(config, straight)
    kill_after_checkpoint(config, resumed, 10)
    assert "resumed from" in run_train_cli(config, resumed).stderr
    assert_same_final(straight, resumed)
    log = pd.read_csv(resumed / "train_log.csv")
    train_rows, valid_rows = log[log.split == "train"], log[log.split == "valid"]
    assert (train_rows[f"aux_{TERM}"] > 0).all() and (valid_rows[f"valid_aux_{TERM}"] > 0).all()
    assert float(train_rows[f"aux_{TERM}"].iloc[-1]) < float(train_rows[f"aux_{TERM}"].iloc[0])

    out = tmp_path / "hyp"
    checkpoint = str(resumed / "final.pt")
    command = [sys.executable, "-m", "nmtvariants", "translate", "--checkpoint", checkpoint,
               "--vocab", data["vocab"], "--input", data["valid_src"], "--output", str(out)]  # fmt: skip
    command += ["--beam", "2"]
    result = subprocess.run(command, env=cli_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    model = load_model(resumed / "final.pt").eval()
    assert isinstance(model.encoder_layers[0].self_attn.attn.score_transform, torch.nn.Module)
    vocab = Vocabulary.load(data["vocab"])
    sources = list(read_lines(data["valid_src"]))
    hyps = list(read_lines(out))
    assert len(hyps) == len(sources) > 0
    for src, hyp in zip(sources, hyps, strict=True):
        ((best, *_),) = beam_search(model, SourceInputs([torch.tensor([vocab.encode(src)])]), beam_size=2)
        assert hyp == vocab.decode(best.tokens)
