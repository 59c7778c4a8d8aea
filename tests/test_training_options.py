"""Training options a user sets in a run config, each checked against an independent computation:
training from `nmtvariants binarize` output, `clip_norm`, `max_epochs` and `compile`.

Only the public surface is used (the CLI, RunConfig, Trainer, its optimizer and its outputs); the
first batch and the epoch lengths are rebuilt here from the text files, not read from the trainer.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from training_fixtures import make_corpus, run_config

from nmtvariants.cli import main
from nmtvariants.data.batching import epoch_batches
from nmtvariants.data.vocab import BOS_ID, PAD_ID, Vocabulary
from nmtvariants.fileio import read_lines
from nmtvariants.models import load_model
from nmtvariants.training.checkpoints import load_checkpoint
from nmtvariants.training.loss import label_smoothed_nll
from nmtvariants.training.train_config import parse_run_config
from nmtvariants.training.trainer import Trainer, train

NO_DROPOUT = {"embedding_dropout": 0, "residual_dropout": 0, "attention_dropout": 0, "relu_dropout": 0}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(autouse=True)
def keep_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def lengths(corpus, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Token counts + </s> of each pair, from the text files."""
    return tuple(
        np.array([len(line.split()) + 1 for line in read_lines(corpus[f"{split}_{side}"])], dtype=np.int64)
        for side in ("src", "tgt")
    )


def train_losses(outdir) -> list[float]:
    log = pd.read_csv(outdir / "train_log.csv")
    return log[log.split == "train"].loss.tolist()


# ---------------------------------------------------------------------- binarised data
def test_training_from_binarized_data_equals_training_from_text(corpus, tmp_path):
    """`binarize` + `data.train_bin`/`valid_bin` trains bit-identical parameters to the text files."""
    for split in ("train", "valid"):
        code = main(
            [
                *("binarize", "--src", corpus[f"{split}_src"], "--tgt", corpus[f"{split}_tgt"]),
                *("--vocab", corpus["vocab"], "--output", str(tmp_path / f"{split}.npz")),
            ]
        )
        assert code == 0
    settings = {"max_updates": 8, "log_every": 1, "valid_every": 4}
    from_text = train(parse_run_config(run_config(corpus, **settings)), tmp_path / "text")
    binary = {"train_bin": str(tmp_path / "train.npz"), "valid_bin": str(tmp_path / "valid.npz")}
    from_bin = train(
        parse_run_config(run_config({**binary, "vocab": corpus["vocab"]}, **settings)), tmp_path / "bin"
    )
    assert from_text.update == from_bin.update == 8
    assert train_losses(tmp_path / "text") == train_losses(tmp_path / "bin")
    assert from_text.last_valid == from_bin.last_valid and "valid_nll" in from_bin.last_valid
    text_state = load_model(tmp_path / "text" / "final.pt").state_dict()
    bin_state = load_model(tmp_path / "bin" / "final.pt").state_dict()
    assert text_state.keys() == bin_state.keys()
    for name, tensor in text_state.items():
        assert torch.equal(tensor, bin_state[name]), name
    initial = Trainer(parse_run_config(run_config(corpus, **settings)), tmp_path / "fresh").model
    assert not torch.equal(initial.state_dict()["decoder_norm.weight"], text_state["decoder_norm.weight"])


# ---------------------------------------------------------------------- clip_norm
def first_batch_gradients(
    corpus, outdir: Path, label_smoothing: float
) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    """The gradient of the first update, computed here: the run's initial model (the trainer's seeded
    initialisation, before any step), the first batch of epoch 0 cut from the text files' lengths
    and encoded with the vocabulary, and the token-normalised label-smoothed loss."""
    config = parse_run_config(run_config(corpus, NO_DROPOUT, label_smoothing=label_smoothing))
    model = copy.deepcopy(Trainer(config, outdir).model)
    src_lengths, tgt_lengths = lengths(corpus, "train")
    cfg = config.train
    first = epoch_batches(src_lengths, tgt_lengths, cfg.batch_tokens, cfg.seed, 0, cfg.maxi_batch)[0]
    vocab = Vocabulary.load(corpus["vocab"])
    sources = list(read_lines(corpus["train_src"]))
    targets = list(read_lines(corpus["train_tgt"]))
    src = pad([vocab.encode(sources[i]) for i in first])
    out = [vocab.encode(targets[i]) for i in first]
    tgt_out = pad(out)
    tgt_in = pad([[BOS_ID, *ids[:-1]] for ids in out])
    loss, _ = label_smoothed_nll(model(src, tgt_in), tgt_out, label_smoothing)
    (loss / sum(map(len, out))).backward()
    return model, {name: param.grad.clone() for name, param in model.named_parameters()}


def pad(rows: list[list[int]]) -> torch.Tensor:
    width = max(map(len, rows))
    return torch.tensor([row + [PAD_ID] * (width - len(row)) for row in rows], dtype=torch.long)


def gradients_at_first_step(corpus, outdir, clip_norm: float) -> dict[str, torch.Tensor]:
    """The gradients the optimizer steps with in update 1 of a run with ``clip_norm``."""
    config = parse_run_config(run_config(corpus, NO_DROPOUT, max_updates=1, clip_norm=clip_norm))
    trainer = Trainer(config, outdir)
    seen: dict[str, torch.Tensor] = {}

    def grab(optimizer, args, kwargs):
        seen.update({n: p.grad.clone() for n, p in trainer.model.named_parameters()})

    trainer.optimizer.register_step_pre_hook(grab)
    result = trainer.train()
    assert result.update == 1
    return seen


def total_norm(grads: dict[str, torch.Tensor]) -> float:
    return math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads.values()))


def test_clip_norm_scales_the_gradient_to_the_limit(corpus, tmp_path):
    label_smoothing = parse_run_config(run_config(corpus)).train.label_smoothing
    _, reference = first_batch_gradients(corpus, tmp_path / "init", label_smoothing)
    norm = total_norm(reference)
    assert norm > 0.1

    unclipped = gradients_at_first_step(corpus, tmp_path / "off", clip_norm=0.0)
    for name, grad in reference.items():
        torch.testing.assert_close(unclipped[name], grad, rtol=1e-4, atol=1e-7, msg=name)

    limit = norm / 4
    clipped = gradients_at_first_step(corpus, tmp_path / "on", clip_norm=limit)
    assert total_norm(clipped) == pytest.approx(limit, rel=1e-5)
    for name, grad in unclipped.items():  # same direction, every tensor scaled by limit / norm
        torch.testing.assert_close(clipped[name], grad * (limit / norm), rtol=1e-4, atol=1e-8, msg=name)

    loose = gradients_at_first_step(corpus, tmp_path / "loose", clip_norm=10 * norm)
    for name, grad in unclipped.items():  # a limit above the norm leaves the gradient untouched
        assert torch.equal(loose[name], grad), name


# ---------------------------------------------------------------------- max_epochs
@pytest.mark.parametrize(("max_epochs", "update_freq"), [(1, 1), (2, 5)])
def test_max_epochs_stops_after_the_epochs_batches(corpus, tmp_path, max_epochs, update_freq):
    """Updates = the epochs' batches grouped ``update_freq`` at a time, across the epoch boundary (a
    last, short group still counts: 2 x 12 batches of this corpus make 4 updates of 5 and one of 4);
    the batches of each epoch are cut here from the text files' lengths."""
    config = run_config(
        corpus,
        max_updates=10_000,
        max_epochs=max_epochs,
        update_freq=update_freq,
        save_every=1000,
        valid_every=1000,
        log_every=1000,
    )
    cfg = parse_run_config(config).train
    src_lengths, tgt_lengths = lengths(corpus, "train")
    batches = sum(
        len(epoch_batches(src_lengths, tgt_lengths, cfg.batch_tokens, cfg.seed, epoch, cfg.maxi_batch))
        for epoch in range(max_epochs)
    )
    expected = math.ceil(batches / update_freq)
    assert update_freq == 1 or batches % update_freq  # the case with a short last group
    result = train(parse_run_config(config), tmp_path)
    assert result.stop_reason == "max_epochs"
    assert result.update == expected
    state = load_checkpoint(tmp_path / "checkpoints" / f"checkpoint_{expected}.pt")
    assert state["update"] == expected
    rerun = train(parse_run_config(config), tmp_path)  # a finished run stays finished
    assert rerun.update == expected and rerun.stop_reason == "max_epochs"


# ---------------------------------------------------------------------- compile
@pytest.mark.slow  # CPU inductor compiles for over a minute on this machine
def test_compile_gives_the_loss_trajectory_of_eager_mode(corpus, tmp_path):
    settings = {"max_updates": 6, "log_every": 1, "valid_every": 3, "save_every": 100}
    eager = train(parse_run_config(run_config(corpus, NO_DROPOUT, **settings)), tmp_path / "eager")
    compiled = train(
        parse_run_config(run_config(corpus, NO_DROPOUT, compile=True, **settings)), tmp_path / "compiled"
    )
    assert eager.update == compiled.update == 6
    eager_losses, compiled_losses = train_losses(tmp_path / "eager"), train_losses(tmp_path / "compiled")
    assert len(eager_losses) == 6 and eager_losses[-1] < eager_losses[0]
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-4)
    assert compiled.last_valid["valid_nll"] == pytest.approx(eager.last_valid["valid_nll"], rel=1e-4)
    eager_state = load_model(tmp_path / "eager" / "final.pt").state_dict()
    compiled_state = load_model(tmp_path / "compiled" / "final.pt").state_dict()
    for name, tensor in eager_state.items():
        torch.testing.assert_close(compiled_state[name], tensor, rtol=1e-3, atol=1e-5, msg=name)
