"""Auxiliary loss terms and integer streams in the trainer (in process, with the test plug-ins).

The gradient of a delayed update with an auxiliary term is compared with the gradient of the
objective written out by hand over the concatenated batches; the logged terms with a per-sentence
recomputation.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from plugin_fixtures import AUX_LOSS, PARENT_BIAS, parents_of, use_plugins, with_parents
from training_fixtures import make_corpus, run_config, run_train_cli

from nmtvariants.data.batching import BatchStream, UpdateStream, collate
from nmtvariants.data.vocab import PAD_ID
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import read_lines
from nmtvariants.models import load_model
from nmtvariants.models.interfaces import SourceInputs
from nmtvariants.models.variants import PLUGIN_PATH_VARIABLE, load_plugins
from nmtvariants.training.checkpoints import load_checkpoint
from nmtvariants.training.loss import label_smoothed_nll
from nmtvariants.training.train_config import parse_run_config
from nmtvariants.training.trainer import LossModule, Trainer, train

NO_DROPOUT = {"embedding_dropout": 0, "residual_dropout": 0, "attention_dropout": 0, "relu_dropout": 0}
WEIGHT = 0.25


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    return with_parents(make_corpus(root, pairs=120), root)


@pytest.fixture(autouse=True)
def plugins(monkeypatch):
    use_plugins(monkeypatch, PARENT_BIAS, AUX_LOSS)


def config_with(corpus, variant, model=None, **train_settings):
    config = run_config(corpus, model, **train_settings)
    config["variant"] = variant
    return config


def capture_last_encoder_layer(model):
    """The last encoder layer's output of each forward, recorded by a hook of the test's own."""
    seen = []
    model.encoder_layers[-1]._forward_hooks.clear()  # the copied plug-in hook points at the original
    model.encoder_layers[-1].register_forward_hook(
        lambda module, args, out: seen.append((out, args[1].pad_mask))
    )
    return seen


def test_delayed_update_with_an_aux_loss_equals_one_big_batch(corpus, tmp_path):
    variant = {"test_aux_loss": {"weight": WEIGHT}, "test_parent_bias": {}}
    config = parse_run_config(config_with(corpus, variant, NO_DROPOUT, update_freq=3))
    trainer = Trainer(config, tmp_path)
    reference = copy.deepcopy(trainer.model)
    states = capture_last_encoder_layer(reference)
    seen = {}
    trainer.optimizer.register_step_pre_hook(
        lambda *_: seen.update({n: p.grad.clone() for n, p in trainer.model.named_parameters()})
    )
    stream = UpdateStream(BatchStream(trainer.train_data, 200, config.train.seed, 40), update_freq=3)
    group = stream.next_update()
    trainer._train_update(group)

    big = collate(trainer.train_data, np.concatenate(group))
    memory = reference.encode(big.src, big.inputs.aux)
    logits = reference.decode(big.tgt_in, memory)
    loss, _ = label_smoothed_nll(logits, big.tgt_out, 0.1)
    ((out, pad),) = states
    l2 = (out.pow(2).mean(-1) * (~pad)).sum()
    ((loss + WEIGHT * l2) / big.num_tokens).backward()
    for name, param in reference.named_parameters():
        torch.testing.assert_close(seen[name], param.grad, rtol=1e-4, atol=1e-7, msg=name)
    assert seen["encoder_layers.0.self_attn.attn.score_transform.bias"].abs().sum() > 0  # the parents matter


def test_aux_terms_are_logged_and_validated_per_target_token(corpus, tmp_path, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    variant = {"test_aux_loss": {"weight": WEIGHT}}
    config = config_with(
        corpus,
        variant,
        NO_DROPOUT,
        max_updates=10,
        valid_every=10,
        log_every=5,
        progress=True,
        tensorboard=True,
    )
    train(parse_run_config(config), tmp_path)
    assert "aux_enc_l2=" in capsys.readouterr().err  # the progress bar
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert {"train/aux_enc_l2", "valid/valid_aux_enc_l2"} <= set(events.Tags()["scalars"])
    log = pd.read_csv(tmp_path / "train_log.csv")
    train_rows, valid_rows = log[log.split == "train"], log[log.split == "valid"]
    assert train_rows["aux_enc_l2"].notna().all() and (train_rows["aux_enc_l2"] > 0).all()
    logged = float(valid_rows["valid_aux_enc_l2"].iloc[-1])

    model = load_model(tmp_path / "final.pt").eval()
    states = capture_last_encoder_layer(model)
    vocab_lines = list(read_lines(corpus["vocab"]))
    stoi = {token: i for i, token in enumerate(vocab_lines)}
    total, tokens = 0.0, 0
    with torch.no_grad():
        for src, tgt in zip(read_lines(corpus["valid_src"]), read_lines(corpus["valid_tgt"]), strict=True):
            ids = [stoi[w] for w in src.split()] + [2]
            model.encode(torch.tensor([ids]))
            out, _ = states.pop()
            total += float(out.double().pow(2).mean(-1).sum())
            tokens += len(tgt.split()) + 1
    assert vocab_lines[2] == "</s>"
    assert logged == pytest.approx(WEIGHT * total / tokens, rel=1e-4)


def test_loss_module_adds_weighted_terms_to_the_objective(corpus, tmp_path):
    config = parse_run_config(config_with(corpus, {"test_aux_loss": {"weight": WEIGHT}}, NO_DROPOUT))
    trainer = Trainer(config, tmp_path)
    batch = collate(trainer.train_data, np.arange(4))
    objective, loss, _, aux = LossModule(trainer.model, 0.1)(batch.inputs, batch.tgt_in, batch.tgt_out)
    assert set(aux) == {"enc_l2"} and float(aux["enc_l2"]) > 0
    torch.testing.assert_close(objective.detach(), loss + aux["enc_l2"])
    assert not trainer.model.aux_losses.active and trainer.model.aux_losses.take() == {}
    trainer.model.encode(batch.src)  # outside the loss module (decoding): nothing is recorded
    assert trainer.model.aux_losses.take() == {}


def test_a_plugin_without_its_stream_says_which_stream_and_where(corpus, tmp_path):
    data = {k: v for k, v in corpus.items() if not k.endswith("_aux")}
    config = parse_run_config(config_with(data, {"test_parent_bias": {}}, max_updates=2))
    with pytest.raises(
        InputError, match=r"test_parent_bias: needs the integer stream 'parents'.*--aux parents=FILE"
    ):
        train(config, tmp_path)
    model = Trainer(parse_run_config(config_with(corpus, {"test_parent_bias": {}})), tmp_path / "b").model
    src = torch.tensor([[5, 6, 7, 2]])
    with pytest.raises(InputError, match=r"'parents'"):
        model.encode_inputs(SourceInputs([src]))
    parents = torch.tensor([[*parents_of(3), 3]])
    assert model.encode_inputs(SourceInputs([src], {"parents": parents}))[0].states.shape == (1, 4, 32)


def test_the_streams_follow_the_training_pairs(corpus, tmp_path):
    trainer = Trainer(parse_run_config(config_with(corpus, {"test_parent_bias": {}})), tmp_path)
    batch = collate(trainer.train_data, np.array([0, 5, 9]))
    lines = list(read_lines(corpus["train_src"]))
    for row, index in enumerate([0, 5, 9]):
        n = len(lines[trainer.train_data.line_numbers[index] - 1].split())
        assert int((batch.src[row] != PAD_ID).sum()) == n + 1
        assert batch.inputs.aux["parents"][row, : n + 1].tolist() == [*parents_of(n), n]
    assert trainer.valid_data is not None and "parents" in trainer.valid_data.aux


def test_nmtv_plugins_names_files_only(monkeypatch, tmp_path):
    monkeypatch.setenv(PLUGIN_PATH_VARIABLE, str(tmp_path))
    with pytest.raises(ConfigError, match=r"NMTV_PLUGINS: .* is not a \.py file"):
        load_plugins()


@pytest.mark.slow
def test_two_gloo_ranks_with_an_aux_loss_match_one_process_with_delayed_batches(corpus, tmp_path):
    from test_ddp import torchrun

    variant = {"test_aux_loss": {"weight": WEIGHT}, "test_parent_bias": {}}
    common = dict(max_updates=6, save_every=3, valid_every=3, log_every=3)
    run_train_cli(config_with(corpus, variant, NO_DROPOUT, update_freq=2, **common), tmp_path / "one")
    torchrun(config_with(corpus, variant, NO_DROPOUT, update_freq=1, **common), tmp_path / "two")
    one = load_checkpoint(tmp_path / "one" / "final.pt")["model"]
    two = load_checkpoint(tmp_path / "two" / "final.pt")["model"]
    for key in one:
        torch.testing.assert_close(two[key], one[key], rtol=1e-4, atol=2e-5, msg=key)
    log_one, log_two = (pd.read_csv(tmp_path / run / "train_log.csv") for run in ("one", "two"))
    for column in ("aux_enc_l2", "valid_aux_enc_l2"):
        a, b = log_one[column].dropna().tolist(), log_two[column].dropna().tolist()
        assert len(a) == len(b) > 0 and all(
            abs(x - y) < 1e-4 * max(1.0, abs(x)) for x, y in zip(a, b, strict=True)
        )
